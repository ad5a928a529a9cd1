"""Stage solves shared across the micro-batches a stage holds and across structurally
equal ranges (`pipeline/stages.py`: `StageSolver._from_fewer`, `_floor`, and
`StageTable`'s ranges by signature) change no plan: the capped walk finds, stage for
stage, the plan it finds with each capped sub-problem solved on its own."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from stage_plans import capped_plans, gpt_partitioner

from pase.passes.strategy.machines import preset
from pase.passes.strategy.pipeline import stages
from pase.passes.strategy.pipeline.plan import PipelinePlan


class _Forgets(dict):
    """A cache that never holds anything (the sharing switched off)."""

    def __contains__(self, key: object) -> bool:
        return False


def plans(path: Path, shared: bool, monkeypatch: pytest.MonkeyPatch
          ) -> tuple[list[PipelinePlan | None], int]:
    """The plans of 4 stages, uncapped and under caps that bind (so that stages are solved
    under them, holding 1 to 4 micro-batches), and how many sub-problems were solved.
    The machine charges FLOPs only (no HBM bandwidth, so no roofline), under whose costs
    these caps make the sharing save solves."""
    partitioner = gpt_partitioner(path, replace(preset("a100-80gb-dgx"), hbm_bandwidth=0.0))
    if not shared:
        monkeypatch.setattr(stages.StageSolver, "_from_fewer", lambda *_: None)
        monkeypatch.setattr(stages.StageSolver, "_floor",
                            lambda self, signature, _: self._floors.get(signature))
        partitioner.table._shapes = _Forgets()
    found = capped_plans(partitioner, ((4, 4),), (0.9, 0.75))
    monkeypatch.undo()
    return found, partitioner.solver.solves


def test_shared_stage_solves_find_the_same_plans(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    shared, shared_solves = plans(tmp_path / "a.dnn", True, monkeypatch)
    alone, alone_solves = plans(tmp_path / "b.dnn", False, monkeypatch)
    assert shared == alone  # every stage's configurations, times and bytes; the step
    assert sum(plan is not None for plan in shared) == 3
    assert shared_solves < alone_solves


def test_a_range_s_shape_is_its_cut_s_signature(tmp_path: Path) -> None:
    table = gpt_partitioner(tmp_path / "g.dnn").table
    last = len(table.layers)
    for start in range(last):
        for stop in range(start + 1, last + 1):
            signature, carried = table.shape(start, stop, 2)
            part = table.cut(start, stop, 2)
            assert signature == part.signature
            assert carried == tuple(bool(edge.carried) and edge.backward
                                    for edge in part.edges)


def test_range_bounds_below_a_step_found_find_the_same_plan(tmp_path: Path) -> None:
    """`range_bounds` with `beat` leaves unsolved the ranges whose segment bounds reach
    it; the walk with those bounds, from that bound, finds the plan found without."""
    first = gpt_partitioner(tmp_path / "a.dnn")
    free = first.best(4, 4, "1f1b")
    assert free is not None
    cap = free.memory * 0.9
    plan = first.best(4, 4, "1f1b", memory=cap)
    assert plan is not None
    beat = math.nextafter(plan.step, math.inf)
    counts = []
    for limit in (beat, math.inf):
        again = gpt_partitioner(tmp_path / "b.dnn")
        again.range_bounds(4, 4, "1f1b", cap, limit)
        counts.append(again.solver.solves)
    assert counts[0] < counts[1]
    again = gpt_partitioner(tmp_path / "c.dnn")
    assert again.best(4, 4, "1f1b", memory=cap, bound=beat, ranges=True) == plan
