"""pase: parallelization strategies for DNN training, as an xDSL compiler.

The top-level folders of the repository are the subpackages: `pase.frontend`
(the `.dnn` language), `pase.dialect` (`dnn`, `pase`), `pase.passes` (one pass per
file, `pase.passes.strategy` the pure search engine), `pase.runtime` and `pase.tools`.
"""

__version__ = "0.1.0"
