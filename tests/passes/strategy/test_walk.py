"""The stage walk's accelerations change nothing but its speed: on a small GPT the walk
finds, stage for stage, the plans it finds without them.

- `pipeline/choices.py`, the tests before a solve asked of every next cut at once: the
  same prefixes visited and stages solved as when each cut is tried one at a time;
- `pipeline/roundtrip.py`, the round-trip bounds (before and after a stage is solved):
  fewer prefixes visited, the same plans."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from stage_plans import GPT_TRAINING, gpt_partitioner, partitioner

from pase.passes.strategy import Partitioner
from pase.passes.strategy.pipeline import walk
from pase.passes.strategy.pipeline.capped_work import capped_works
from pase.passes.strategy.pipeline.choices import Choices
from pase.passes.strategy.pipeline.plan import PipelinePlan
from pase.passes.strategy.pipeline.roundtrip import RoundTrip, least_backward
from pase.passes.strategy.pipeline.walk import Prefix
from tests.models.test_generate import generate


def every_cut(self: Choices, prefix: Prefix, index: int, left: int) -> list[int]:
    """The plain walk's choices: every cut after the prefix that leaves one a stage."""
    later = [cut for cut in self.cut_list if cut > prefix.after]
    return later[:len(later) - left + 1]


def walked(partitioner: Partitioner, stages: int, micro: int,
           monkeypatch: pytest.MonkeyPatch) -> tuple[list[PipelinePlan | None], int, int]:
    """The plans of `stages` stages of `micro` micro-batches, unconstrained, then under
    a cap that binds from the ranges' bounds (`ranges`: the second round's walk); the
    solves, and the prefixes the walks visited."""
    visits = []
    run = walk.Walk.run

    def counted(self: walk.Walk) -> PipelinePlan | None:
        try:
            return run(self)
        finally:
            visits.append(self.visits)

    monkeypatch.setattr(walk.Walk, "run", counted)
    free = partitioner.best(stages, micro, "1f1b")
    assert free is not None
    capped = partitioner.best(stages, micro, "1f1b", memory=free.memory * 0.9, ranges=True)
    monkeypatch.undo()
    return [free, capped], partitioner.solver.solves, sum(visits)


def test_the_cuts_asked_at_once_walk_as_one_at_a_time(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fast = walked(gpt_partitioner(tmp_path / "a.dnn"), 4, 4, monkeypatch)
    monkeypatch.setattr(Choices, "after", every_cut)
    plain = walked(gpt_partitioner(tmp_path / "b.dnn"), 4, 4, monkeypatch)
    assert fast == plain  # the plans stage for stage, the solves, the prefixes visited
    assert all(plan is not None for plan in fast[0])


def compute_bound_gpt(path: Path) -> Partitioner:
    """An 8-block GPT on 8 DGX A100 devices whose step is mostly compute (hidden 256,
    sequence 256, batch 16), where the round trip of the stages after a stage counts."""
    generate().main(["--layers", "8", "--hidden", "256", "--heads", "4", "--sequence",
                     "256", "--vocabulary", "128", "--batch", "16", "-o", str(path)])
    return partitioner(path.read_text(), 8, "a100-80gb-dgx", every_cut=False,
                       training=GPT_TRAINING)


class Blind(RoundTrip):
    """The round-trip bounds switched off: each 0."""

    def rest(self, *_: object) -> float:
        return 0.0

    def next_stage(self, *_: object) -> float:
        return 0.0

    def next_stages(self, stages_after: int, start: int, ends: np.ndarray, *_: object
                    ) -> np.ndarray:
        return np.zeros(len(ends))

    def solved(self, *_: object) -> float:
        return 0.0


def test_the_round_trip_bounds_find_the_same_plans(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    partitioner = compute_bound_gpt(tmp_path / "a.dnn")
    plans, _, visits = walked(partitioner, 4, 8, monkeypatch)
    least = least_backward(partitioner, 2, 8)
    solved = [(start, stop, stage) for (start, stop, _, _, _, _), stage
              in partitioner.table._stages.items() if stage is not None]
    assert len(solved) > 10
    for start, stop, stage in solved:  # (recomputed forwards included: recompute=full)
        assert least[stop] - least[start] <= stage.cost.backward * (1 + 1e-9)
        assert least[stop] - least[start] > 0.5 * stage.cost.backward
    # The ranges' F + B under the cap as stage s (holding 4 - s micro-batches) bound the
    # stages solved under it.
    positions = (0, *partitioner.cuts, len(partitioner.layers))
    capped = [key for key, stage in partitioner.table._stages.items()
              if stage is not None and key[4] is not None]
    assert capped
    for start, stop, _, _, memory, held in capped:
        works = capped_works(partitioner, 4, 8, "1f1b", memory, positions)
        stage = partitioner.table._stages[(start, stop, 2, 8, memory, held)]
        assert stage is not None
        bound = works[4 - held, positions.index(start), positions.index(stop)]
        assert 0 < bound <= stage.work
    monkeypatch.setattr(walk, "RoundTrip", Blind)
    plain, _, plain_visits = walked(compute_bound_gpt(tmp_path / "b.dnn"), 4, 8,
                                    monkeypatch)
    assert plans == plain
    assert all(plan is not None for plan in plans)
    assert visits < plain_visits


class AllMade(RoundTrip):
    """The ranges' F + B under the cap made for every range (not only for those whose
    bound without it is below the step to beat)."""

    def capped(self, walk: walk.Walk, trip: np.ndarray, beat: float) -> np.ndarray:
        return super().capped(walk, trip, math.inf)


def test_the_cap_bounds_made_lazily_walk_as_all_made(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # `RoundTrip.capped` makes the ranges' capped F + B (`capped_works`) only where the
    # bound without it is below the step to beat: the walks visit the same prefixes,
    # solve the same stages and find the same plans as with every range's made, and
    # fewer are made; those made are the same.
    lazy = compute_bound_gpt(tmp_path / "a.dnn")
    found = walked(lazy, 4, 8, monkeypatch)
    monkeypatch.setattr(walk, "RoundTrip", AllMade)
    full = compute_bound_gpt(tmp_path / "b.dnn")
    assert found == walked(full, 4, 8, monkeypatch)
    assert all(plan is not None for plan in found[0])
    (key, made), = lazy.capped_works.items()
    every = full.capped_works[key]
    assert 0 < made.done.sum() < every.done.sum()
    assert (made.works[made.done] == every.works[made.done]).all()
    assert (made.works[~made.done] == 0).all()
