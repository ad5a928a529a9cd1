"""The stage walk started from a balanced plan's step (`pipeline/seed.py`) finds the plan
the walk finds without it, with no more stage ranges solved."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from stage_plans import capped_plans, gpt_partitioner

from pase.passes.strategy import Partitioner
from pase.passes.strategy.pipeline import search
from pase.passes.strategy.pipeline.plan import PipelinePlan
from pase.passes.strategy.pipeline.seed import seed, seed_cuts


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


def headed_gpt(path: Path) -> Partitioner:
    """`gpt_partitioner`'s GPT with a vocabulary of 4,096 on its hidden size of 64: its
    head has the most compute of any stage range, so stages of equal least compute put
    fewer blocks with the head than stages of equal layer counts do."""
    return gpt_partitioner(path, vocabulary=4096)


def test_the_seed_tries_equal_layer_counts_and_keeps_the_faster(tmp_path: Path) -> None:
    plans = headed_gpt(tmp_path / "g.dnn")
    assert seed_cuts(plans, 2, 4) == [[0, 58], [0, 33]]
    compute, counted = (plans.evaluate(bounds, 4, "1f1b") for bounds in ([0, 58], [0, 33]))
    assert counted.step < compute.step
    first = seed(plans, 2, 4, "1f1b", None, math.inf)
    assert first is not None
    assert first == counted
    # Neither when both must beat a bound below them; the first when only it beats one.
    assert seed(plans, 2, 4, "1f1b", None, counted.step) is None
    assert seed(plans, 4, 8, "1f1b", None, math.inf) == plans.evaluate([0, 28, 58, 65], 8,
                                                                      "1f1b")


def test_the_seed_of_equal_layer_counts_finds_the_unseeded_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded = headed_gpt(tmp_path / "a.dnn")
    plain = headed_gpt(tmp_path / "b.dnn")
    found = [seeded.best(stages, micro, "1f1b") for stages, micro in ((2, 4), (4, 2))]
    monkeypatch.setattr(search, "seed", lambda *_: None)
    assert found == [plain.best(stages, micro, "1f1b") for stages, micro in ((2, 4), (4, 2))]
    assert found[0] is not None
    assert found[0].step <= plain.evaluate([0, 33], 4, "1f1b").step
