"""The passes of pase, one per file, named after the pass.

`get_all_passes()` maps each public pass name to a closure that imports its class on
demand; `pase-opt` registers them all.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def get_annotate_configs() -> type[ModulePass]:
        from pase.passes.annotate_configs import AnnotateConfigsPass

        return AnnotateConfigsPass

    def get_search() -> type[ModulePass]:
        from pase.passes.search import PaseSearchPass

        return PaseSearchPass

    def get_autodiff() -> type[ModulePass]:
        from pase.passes.autodiff import AutodiffPass

        return AutodiffPass

    def get_lower_spmd() -> type[ModulePass]:
        from pase.passes.lower_spmd import LowerSpmdPass

        return LowerSpmdPass

    return {"pase-annotate-configs": get_annotate_configs, "pase-search": get_search,
            "pase-autodiff": get_autodiff, "pase-lower-spmd": get_lower_spmd}


PASS_SUMMARIES: dict[str, str] = {
    "pase-annotate-configs{devices=P min-shard=4}":
        "attach pase.num_configs, the number of valid PaSE configurations, to every layer",
    "pase-search{devices=P machine=pase-default order=genseq method=dp min-shard=4\n"
    "            compat=pase strategy=\"FILE\" export=\"FILE\" report=true memory-gib=4\n"
    "            jit=auto}":
        "the optimal strategy: #pase.config on every layer, #pase.strategy on the graph",
    "pase-autodiff{lr=0.01}":
        "append the backward pass (einsums and dnn.vjp) and an SGD step (dnn.sgd)",
    "pase-lower-spmd{devices=P}":
        "one SPMD dist.program: per-device blocks, all-reduces and redistributions",
}
