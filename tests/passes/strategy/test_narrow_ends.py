"""A search narrowed by blocks, its ends joined to their blocks and its whole round bounded
by the strategy they complete (`strategy/narrow_bounds.py`), and its rounds' tables priced
once (`strategy/priced.py`): the same plans and costs as the whole DP, bit for bit, and
the same tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pase.passes.strategy import solve
from pase.passes.strategy.narrow import layer_least, restricted, solve_narrowed
from pase.passes.strategy.priced import PricedTables
from tests.passes.strategy.test_narrow import assert_same_search, tiny_gpt


@pytest.mark.parametrize("devices", [4, 8, 16])
@pytest.mark.parametrize("guess", [0.0, 1e-3, 0.1])
def test_blocks_narrowed_are_the_whole_dp(devices: int, guess: float,
                                          tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path, devices)
    whole = solve(problem)  # the un-narrowed DP: the tables are small
    narrowed = solve_narrowed(tiny_gpt(tmp_path, devices), solve, guess, blocks=True)
    assert_same_search(narrowed, whole)


def test_rounds_share_their_priced_entries(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    _, excess = layer_least(problem)
    priced = PricedTables(problem.config_lists)
    shared = replace(problem, _priced=priced)
    tables = 0
    for gap in (0.0, 1e-4, 1e-3, 1e-2):
        narrowed, _ = restricted(shared, excess, gap)
        alone, _ = restricted(problem, excess, gap)
        built, fresh = narrowed.cost_graph(), alone.cost_graph()
        for key, table in built.edge_costs.items():
            assert table.dtype == fresh.edge_costs[key].dtype
            assert np.array_equal(table, fresh.edge_costs[key])  # bit for bit (no NaN)
        tables += sum({id(t): t.size for t in built.edge_costs.values()}.values())
    # Each round priced only the pairs of configurations no earlier round had.
    assert 0 < priced.priced < tables / 2
    priced.close()
