"""The stage walk started from a balanced plan's step (`pipeline/seed.py`) finds the plan
the walk finds without it, with no more stage ranges solved."""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.frontend import parse_file
from pase.passes.strategy import (
    Partitioner,
    SearchOptions,
    StageSolver,
    TrainingOptions,
    graph_at_precision,
    mark_checkpoints,
    segments,
)
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import Machine, preset
from pase.passes.strategy.pipeline import search
from pase.passes.strategy.pipeline.plan import PipelinePlan
from tests.models.test_generate import generate

TRAINING = TrainingOptions(optimizer="adam", precision="bf16", recompute="full")


def gpt_partitioner(path: Path, machine: Machine | None = None) -> Partitioner:
    """A 4-block GPT on 8 DGX A100 devices (or `machine`), charged as benchmarks/gpt.py
    charges it."""
    generate().main(["--layers", "4", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", "128", "--batch", "8", "-o", str(path)])
    graph = read_graph(parse_file(str(path)))
    assert graph.batch is not None
    index = segments(graph.layers, graph.edges)
    layers, edges = graph_at_precision(graph.layers, graph.edges, TRAINING)
    layers = mark_checkpoints(layers, index)
    machine = machine or preset("a100-80gb-dgx")
    cuts = [i for i in range(1, len(index)) if index[i] != index[i - 1]]
    return Partitioner(layers, edges, graph.batch, 8, machine, cuts,
                       StageSolver(machine, graph.batch,
                                   SearchOptions(min_shard=1, training=TRAINING)))


def searched(path: Path, seeded: bool, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[list[PipelinePlan | None], int]:
    """The plans of 2 and 4 stages, uncapped and under a cap that binds, and how many
    stage ranges were solved, with or without the seed."""
    if not seeded:
        monkeypatch.setattr(search, "seed", lambda *_: None)
    plans = gpt_partitioner(path)
    found: list[PipelinePlan | None] = []
    for stages, micro in ((2, 4), (4, 2)):
        free = plans.best(stages, micro, "1f1b")
        assert free is not None
        found += [free, plans.best(stages, micro, "1f1b", memory=free.memory * 0.9)]
    monkeypatch.undo()
    return found, plans.solver.solves


def test_the_seeded_walk_finds_the_unseeded_plan(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    seeded, seeded_solves = searched(tmp_path / "a.dnn", True, monkeypatch)
    plain, plain_solves = searched(tmp_path / "b.dnn", False, monkeypatch)
    assert seeded == plain  # every stage's bounds, configurations, times; the step
    assert any(plan is not None and plan.stages[0].stop < plan.stages[-1].start
               for plan in seeded)
    assert seeded_solves <= plain_solves
