"""The passes of pase, one per file, named after the pass.

`get_all_passes()` maps each public pass name to a closure that imports its class on
demand, as `xdsl.transforms.get_all_passes` does; `pase.universe.PASE` publishes them to
`pase-opt` and to plain `xdsl-opt`. Their options are checked by `pase.passes.options`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def get_annotate_configs() -> type[ModulePass]:
        from pase.passes.annotate_configs import AnnotateConfigsPass

        return AnnotateConfigsPass

    def get_search() -> type[ModulePass]:
        from pase.passes.search import PaseSearchPass

        return PaseSearchPass

    def get_merge_layers() -> type[ModulePass]:
        from pase.passes.merge_layers import MergeLayersPass

        return MergeLayersPass

    def get_partition_stages() -> type[ModulePass]:
        from pase.passes.partition_stages import PartitionStagesPass

        return PartitionStagesPass

    def get_scale() -> type[ModulePass]:
        from pase.passes.scale import ScalePass

        return ScalePass

    def get_autodiff() -> type[ModulePass]:
        from pase.passes.autodiff import AutodiffPass

        return AutodiffPass

    def get_lower_spmd() -> type[ModulePass]:
        from pase.passes.lower_spmd import LowerSpmdPass

        return LowerSpmdPass

    return {"pase-annotate-configs": get_annotate_configs, "pase-search": get_search,
            "pase-merge-layers": get_merge_layers,
            "pase-partition-stages": get_partition_stages,
            "pase-scale": get_scale, "pase-autodiff": get_autodiff,
            "pase-lower-spmd": get_lower_spmd}
