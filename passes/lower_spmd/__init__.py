"""`pase-lower-spmd`: the `dnn` graph with its strategy becomes one SPMD `dist.program`.

Each layer runs on the device grid of its `pase.config` (split dims in iteration-space
order, or `pase.grid_order` for einsum gradients), row-major onto devices 0..q-1. Every
value gets a sharding from the op that produces it; where a consumer needs another
sharding, a `dist.redistribute` is inserted (tag `"u->v"` forward, `"u<-v"` for a
gradient flowing back from v to u); where a layer leaves partial sums (a split reduction
dim, or an operand gradient over split dims it does not range over) a
`dist.all_reduce` follows (tag: the layer). Inputs and parameters enter in the layout
of their first reader. The result moves exactly the words docs/cost-model.md charges,
which `pase-run --check` verifies.

Option `devices=P` (from 1 to 8,192, `MAX_DEVICES`) sets the program's device count;
omitted, it is the device count of the graph's `pase.strategy`, the one pase-search
optimized for.

    pase-opt models/mlp.dnn -p 'pase-search{devices=4},pase-autodiff,pase-lower-spmd'

The lowering itself is in two files: `plain.py` (`Lowering`, one step on the layers'
grids) and `pipelined.py` (`PipelineLowering`, S stages on disjoint device groups and
M micro-batches in the order of the schedule), which reuses the plain one per op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.rewriter import Rewriter

from pase.core.diagnostics import Diagnostic
from pase.core.placement import MAX_DEVICES
from pase.dialect import dnn
from pase.dialect.pase import pipeline_of
from pase.passes.lower_spmd.pipelined import PipelineLowering
from pase.passes.lower_spmd.plain import Lowering, placement
from pase.passes.options import PasePass

__all__ = ["LowerSpmdPass", "Lowering", "PipelineLowering", "placement"]


@dataclass(frozen=True)
class LowerSpmdPass(PasePass):
    """Lower every `dnn.graph` to a `dist.program` on `devices` devices.

    `devices` is from 1 to `MAX_DEVICES`; omitted (None), each graph's program gets the device count
    of its `pase.strategy` (from pase-search):

        pase-lower-spmd              the strategy's device count
        pase-lower-spmd{devices=8}   8 devices (at least as many as the largest layer grid)
    """

    name = "pase-lower-spmd"

    devices: int | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.devices is not None and not 1 <= self.devices <= MAX_DEVICES:
            raise Diagnostic(f"pase-lower-spmd: devices must be between 1 and {MAX_DEVICES:,}, "
                             f"or omitted to use the strategy's device count; got "
                             f"{self.devices:,}")
        for graph in [g for g in op.walk() if isinstance(g, dnn.GraphOp)]:
            pipeline = pipeline_of(graph)
            devices = self._devices(graph)
            if pipeline is not None and (pipeline.stages.data > 1 or
                                         pipeline.microbatches.data > 1):
                if devices < pipeline.devices.data:
                    raise Diagnostic(f"pase-lower-spmd on @{graph.sym_name.data}: the "
                                     f"pipeline runs on {pipeline.devices.data} devices, "
                                     f"more than devices={devices}")
                program = PipelineLowering(graph, pipeline.devices.data, pipeline).run()
                if devices > pipeline.devices.data:
                    program.devices = IntAttr(devices)
            else:
                program = Lowering(graph, devices).run()
            Rewriter.replace_op(graph, program)

    def _devices(self, graph: dnn.GraphOp) -> int:
        if self.devices is not None:
            return self.devices
        pipeline = pipeline_of(graph)
        if pipeline is not None:
            return pipeline.devices.data
        strategy = graph.strategy
        if strategy is None:
            raise Diagnostic(f"pase-lower-spmd on @{graph.sym_name.data}: give devices=P or "
                             "run pase-search first")
        return strategy.devices.data

