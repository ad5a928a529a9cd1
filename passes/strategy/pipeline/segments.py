"""Where a pipeline stage boundary may cut a graph: pase-merge-layers' segments.

Layers are taken in program order (a topological order). A cut after layer i sends every
tensor made at or before i and read after it from one stage group to the next, so a cut
is *clean* when as few tensors cross it as anywhere in the graph: the residual stream
between transformer blocks, the output of an Inception module or a ResNet block, each
link of a chain. Layers between two clean cuts form a segment, which no stage boundary
splits; the stage DP chooses among the clean cuts only.

A tensor crosses as one however many layers after the cut read it; an input read on
both sides of a cut crosses too (from its first reader's layout, as pase charges it).
A parameter does not count: a tied embedding read by the first and the last layer
crosses every cut between them alike, so it would only hide the structure; the stage DP
still charges its transfer wherever it crosses.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> crossings(mlp.layers, mlp.edges)
    [1, 1, 1]
    >>> segments(mlp.layers, mlp.edges)
    [0, 1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Sequence

from pase.passes.strategy.vertices import Edge, Layer


def crossings(layers: Sequence[Layer], edges: Sequence[Edge]) -> list[int]:
    """For each cut after layer i (i = 0..len(layers)-2), how many tensors but
    parameters cross it."""
    last_read: dict[tuple[int, str], int] = {}
    for edge in edges:
        if edge.carried and _is_param(layers[edge.producer], edge):
            continue
        if edge.producer > edge.consumer:
            raise ValueError(f"edge from layer {edge.producer} back to layer "
                             f"{edge.consumer}: layers must be in topological order")
        key = (edge.producer, edge.carried)
        last_read[key] = max(last_read.get(key, 0), edge.consumer)
    counts = [0] * max(len(layers) - 1, 0)
    for (producer, _), reader in last_read.items():
        for cut in range(producer, reader):
            counts[cut] += 1
    return counts


def segments(layers: Sequence[Layer], edges: Sequence[Edge]) -> list[int]:
    """Each layer's segment index: segments end at the clean cuts (the fewest crossings)."""
    counts = crossings(layers, edges)
    fewest = min(counts, default=0)
    index = [0] * len(layers)
    for i in range(1, len(layers)):
        index[i] = index[i - 1] + (counts[i - 1] == fewest)
    return index


def _is_param(holder: Layer, edge: Edge) -> bool:
    """Whether the tensor `edge` carries from its first reader is a parameter."""
    return any(param and use == edge.held
               for use, param in zip(holder.operands, holder.params, strict=False))
