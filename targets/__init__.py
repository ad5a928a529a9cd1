"""Targets: xDSL `Target`s that `pase-opt -t NAME` (and `xdsl-opt`) print a module with.

    pase-opt models/mlp.dnn -t dnn        # the graph as .dnn source
    pase-opt models/mlp.dnn -p 'pase-search{devices=8}' -t jax -o step.py   # a JAX step

`get_all_targets()` maps each name to a closure that imports its target on demand, as
`xdsl.targets.get_all_targets` does.
"""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    def get_dnn() -> type[Target]:
        from pase.targets.dnn import DnnTarget

        return DnnTarget

    def get_jax() -> type[Target]:
        from pase.targets.jax import JaxTarget

        return JaxTarget

    return {"dnn": get_dnn, "jax": get_jax}
