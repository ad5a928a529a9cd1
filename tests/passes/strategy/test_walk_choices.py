"""The walk's tests before a solve asked of every next cut at once (`pipeline/choices.py`)
change nothing: the capped walk on a tiny GPT visits the same prefixes, solves the same
stages and finds the same plans as when it tries every cut one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.passes.strategy.pipeline import walk
from pase.passes.strategy.pipeline.choices import Choices
from pase.passes.strategy.pipeline.plan import PipelinePlan
from pase.passes.strategy.pipeline.walk import Prefix
from tests.passes.strategy.test_seed import gpt_partitioner


def every_cut(self: Choices, prefix: Prefix, index: int, left: int) -> list[int]:
    """The plain walk's choices: every cut after the prefix that leaves one a stage."""
    later = [cut for cut in self.cut_list if cut > prefix.after]
    return later[:len(later) - left + 1]


def walked(path: Path, plain: bool, monkeypatch: pytest.MonkeyPatch
           ) -> tuple[list[PipelinePlan | None], int, int]:
    """The plans of 4 stages of 4 micro-batches, unconstrained, then under a cap that
    binds from the ranges' bounds (`ranges`: the second round's walk); the solves, and
    the prefixes the walks visited."""
    visits = []
    run = walk.Walk.run

    def counted(self: walk.Walk) -> PipelinePlan | None:
        try:
            return run(self)
        finally:
            visits.append(self.visits)

    monkeypatch.setattr(walk.Walk, "run", counted)
    if plain:
        monkeypatch.setattr(Choices, "after", every_cut)
    partitioner = gpt_partitioner(path)
    free = partitioner.best(4, 4, "1f1b")
    assert free is not None
    capped = partitioner.best(4, 4, "1f1b", memory=free.memory * 0.9, ranges=True)
    monkeypatch.undo()
    return [free, capped], partitioner.solver.solves, sum(visits)


def test_the_cuts_asked_at_once_walk_as_one_at_a_time(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fast = walked(tmp_path / "a.dnn", False, monkeypatch)
    plain = walked(tmp_path / "b.dnn", True, monkeypatch)
    assert fast == plain  # the plans stage for stage, the solves, the prefixes visited
    assert all(plan is not None for plan in fast[0])
