"""Random graphs for the stage search's tests, a `Partitioner` over them or over a small
generated GPT, and the 1F1B plans the walk finds with and without memory caps."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
from pase.passes.strategy.machines import Machine, preset
from pase.passes.strategy.pipeline.plan import PipelinePlan
from tests.models.test_generate import generate

GPT_TRAINING = TrainingOptions(optimizer="adam", precision="bf16", recompute="full")


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


def partitioner(source: str, devices: int, machine: str | Machine = "v100-nvlink",
                every_cut: bool = True, training: TrainingOptions | None = None
                ) -> Partitioner:
    """A `Partitioner` over `source` (min-shard 1), charging `training` as
    pase-partition-stages does (its tensors at the precision's width, the segments'
    last layers checkpoints) where given."""
    graph = read_graph(parse_text(source))
    chosen = preset(machine) if isinstance(machine, str) else machine
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


def gpt_partitioner(path: Path, machine: Machine | None = None,
                    vocabulary: int = 128) -> Partitioner:
    """A 4-block GPT (written to `path`; of `vocabulary` words) on 8 DGX A100 devices (or
    `machine`), its stages cut at its segments' ends and charged as benchmarks/gpt.py
    charges it (`GPT_TRAINING`)."""
    generate().main(["--layers", "4", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", str(vocabulary), "--batch", "8", "-o", str(path)])
    return partitioner(path.read_text(), 8, machine or "a100-80gb-dgx", every_cut=False,
                       training=GPT_TRAINING)


def capped_plans(plans: Partitioner, shapes: Sequence[tuple[int, int]],
                 shares: Sequence[float]) -> list[PipelinePlan | None]:
    """For each (stages, micro-batches) of `shapes`, the uncapped 1F1B plan, then the plan
    under each of `shares` of its memory per device (None where none fits)."""
    found: list[PipelinePlan | None] = []
    for stages, micro in shapes:
        free = plans.best(stages, micro, "1f1b")
        assert free is not None
        found += [free, *(plans.best(stages, micro, "1f1b", memory=free.memory * share)
                          for share in shares)]
    return found
