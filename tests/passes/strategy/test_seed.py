"""The stage walk started from a balanced plan's step (`pipeline/seed.py`) finds the plan
the walk finds without it, with no more stage ranges solved."""

from __future__ import annotations

from pathlib import Path

import pytest
from stage_plans import capped_plans, gpt_partitioner

from pase.passes.strategy.pipeline import search
from pase.passes.strategy.pipeline.plan import PipelinePlan


def searched(path: Path, seeded: bool, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[list[PipelinePlan | None], int]:
    """The plans of 2 and 4 stages, uncapped and under a cap that binds, and how many
    stage ranges were solved, with or without the seed."""
    if not seeded:
        monkeypatch.setattr(search, "seed", lambda *_: None)
    plans = gpt_partitioner(path)
    found = capped_plans(plans, ((2, 4), (4, 2)), (0.9,))
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
