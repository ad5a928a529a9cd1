"""Random graphs for the stage search's tests, and a `Partitioner` over them."""

from __future__ import annotations

import numpy as np
from random_graphs import DIMS, LAYER_KINDS, RandomGraph

from pase.frontend import parse_text
from pase.passes.strategy import (
    Partitioner,
    SearchOptions,
    StageSolver,
    TrainingOptions,
    graph_at_precision,
    mark_checkpoints,
    segments,
    stage_solver,
)
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import preset


def random_source(seed: int, chain: bool) -> str:
    rng = np.random.default_rng(seed)
    graph = RandomGraph(rng)
    graph.lines.append("  %x = input [b, d]")
    graph.values.append(("x", ("b", "d")))
    target = int(rng.integers(4, 9))
    kinds = [k for k in LAYER_KINDS if k != "gram"]   # (a gram sums over the batch)
    while graph.layers < target:
        graph.add_layer(kinds[int(rng.integers(len(kinds)))], chain)
    outputs = [name for name, _ in graph.values if name not in graph.used and name != "x"]
    header = ", ".join(f"{dim} = {size}" for dim, size in DIMS.items())
    body = "\n".join(graph.lines)
    return f"graph @g{seed}({header}) {{\n{body}\n  return %{', %'.join(outputs)}\n}}\n"


def partitioner(source: str, devices: int, machine: str = "v100-nvlink",
                every_cut: bool = True, training: TrainingOptions | None = None
                ) -> Partitioner:
    """A `Partitioner` over `source` (min-shard 1), charging `training` as
    pase-partition-stages does (its tensors at the precision's width, the segments'
    last layers checkpoints) where given."""
    graph = read_graph(parse_text(source))
    chosen = preset(machine)
    index = segments(graph.layers, graph.edges)
    cuts = range(1, len(graph.layers)) if every_cut else \
        [i for i in range(1, len(index)) if index[i] != index[i - 1]]
    assert graph.batch is not None
    if training is None:
        return Partitioner(graph.layers, graph.edges, graph.batch, devices, chosen,
                           list(cuts), stage_solver(chosen, graph.batch, min_shard=1))
    layers, edges = graph_at_precision(graph.layers, graph.edges, training)
    if training.recompute != "none":
        layers = mark_checkpoints(layers, index)
    solver = StageSolver(chosen, graph.batch, SearchOptions(min_shard=1, training=training))
    return Partitioner(layers, edges, graph.batch, devices, chosen, list(cuts), solver)
