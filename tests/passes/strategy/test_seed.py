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


def test_the_capped_bounds_stop_at_the_seeds_step(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Under a cap, with a step to beat from elsewhere (`search`'s second pass), `best`
    # evaluates the seed before the ranges' bounds under the cap (`capped_whole`), which
    # then stop at the seed's step rather than at the looser step given: the same plan
    # as every cut tried, each range's bound made no further than that step.
    plans = gpt_partitioner(tmp_path / "a.dnn")
    free = plans.best(4, 4, "1f1b")
    assert free is not None
    cap = free.memory * 0.9
    exhaustive = plans.best(4, 4, "1f1b", cap, "exhaustive")
    assert exhaustive is not None
    beats: list[float] = []
    seeds: list[PipelinePlan | None] = []
    bounds, seeded = search.CappedWhole.bounds, search.seed

    def spied_bounds(self: search.CappedWhole, *args: object) -> object:
        beats.append(float(args[-1]))  # type: ignore[arg-type]
        return bounds(self, *args)  # type: ignore[arg-type]

    def spied_seed(*args: object) -> PipelinePlan | None:
        seeds.append(seeded(*args))  # type: ignore[arg-type]
        return seeds[-1]

    monkeypatch.setattr(search.CappedWhole, "bounds", spied_bounds)
    monkeypatch.setattr(search, "seed", spied_seed)
    given = exhaustive.step * 1.5
    found = gpt_partitioner(tmp_path / "b.dnn").best(4, 4, "1f1b", cap, bound=given)
    monkeypatch.undo()
    assert found is not None
    assert (found.step, found.assignment, found.memory) == \
        (exhaustive.step, exhaustive.assignment, exhaustive.memory)
    first, = seeds
    assert first is not None
    assert beats == [first.step]
    assert exhaustive.step <= first.step < given
