"""`pase-merge-layers`: group layers into segments that a stage boundary never cuts.

Each forward layer gets `pase.segment = #pase.segment<k>`, numbering the segments in
program order from 0. A segment ends at a clean cut, where as few tensors cross from
earlier layers to later ones as anywhere in the graph (`pase.passes.strategy.pipeline.segments`
gives the rule): between transformer blocks, Inception modules or ResNet blocks only the
residual stream or the module's output crosses; in a chain every link is clean.

    pase-opt models/transformer.dnn -p pase-merge-layers
    %x1 = dnn.add %x0, %o0 {pase.segment = #pase.segment<1>} : ...

The gradient layers pase-autodiff adds are not segmented: run this pass before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.dialect import dnn
from pase.dialect.pase import SEGMENT_ATTR_NAME, SegmentAttr
from pase.passes.options import PasePass
from pase.passes.strategy import read_graph, segments


@dataclass(frozen=True)
class MergeLayersPass(PasePass):
    """Mark every layer with the segment it belongs to (#pase.segment)."""

    name = "pase-merge-layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for graph in [g for g in op.walk() if isinstance(g, dnn.GraphOp)]:
            data = read_graph(graph)
            for layer, index in zip(graph.layers, segments(data.layers, data.edges),
                                    strict=True):
                layer.attributes[SEGMENT_ATTR_NAME] = SegmentAttr(index)
