"""A capped search's small DP solves keep no reuse cache (`capped.REUSE_ENTRIES`): the
same strategies, costs and bounds as with one."""

from __future__ import annotations

import pytest

from pase.passes.strategy import capped, dp
from pase.passes.strategy.memory import solve_capped
from tests.passes.strategy.test_memory import caps, random_problem


@pytest.mark.parametrize("seed", range(4))
def test_small_capped_solves_reuse_nothing_and_find_the_same(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = random_problem(seed)
    limits = caps(problem)
    flags: list[bool] = []
    real = dp.solve_dp

    def logged(*args: object, reuse: bool = True, **keywords: object) -> dp.DPResult:
        flags.append(reuse)
        return real(*args, reuse=reuse, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr("pase.passes.strategy.bound.solve_dp", logged)
    found = [solve_capped(problem, cap) for cap in limits]
    assert flags
    assert not any(flags)  # (random graphs are far below REUSE_ENTRIES)
    monkeypatch.setattr(capped, "REUSE_ENTRIES", 0)
    flags.clear()
    again = [solve_capped(problem, cap) for cap in limits]
    assert flags
    assert all(flags)
    assert [(s.choice, s.cost.hex(), s.lower_bound.hex(), s.solves) for s in found] == \
        [(s.choice, s.cost.hex(), s.lower_bound.hex(), s.solves) for s in again]
