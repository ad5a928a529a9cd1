"""The whole round of a search narrowed by blocks, bounded by a completed strategy
(`strategy/narrow_ends.py`), and its rounds' tables priced once (`strategy/priced.py`):
the same plans and costs as the whole DP, bit for bit, and the same tables."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pase.passes.strategy import solve
from pase.passes.strategy.narrow import layer_least, restricted, solve_narrowed
from pase.passes.strategy.narrow_blocks import block_gaps, group_optima, layer_groups
from pase.passes.strategy.narrow_ends import completed_cost, ends_problem
from pase.passes.strategy.priced import PricedTables
from tests.passes.strategy.test_narrow import assert_same_search, configurations, tiny_gpt


def test_completed_strategy_narrows_the_whole_round(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    whole = solve(problem)
    groups = layer_groups(problem)
    assert groups is not None
    minima, excess = layer_least(problem)
    optima, stitched, assignment = group_optima(problem, groups,
                                                lambda part: solve_narrowed(part, solve))
    assumed = math.fsum(optima) * 1.1
    under_guess, _ = restricted(problem, excess, block_gaps(minima, groups, optima, assumed))
    part = ends_problem(problem, under_guess, groups, assignment)
    assert part is not None
    # The embeddings and the head of the output, with the blocks' layers they meet pinned.
    assert [len(configs) for configs in part.config_lists].count(1) == 3
    upper = completed_cost(problem, under_guess, groups, assignment, solve)
    # A real strategy: no cheaper than the optimum; cheaper than the groups' optima
    # stitched together (the embeddings' own optimum does not suit the first block).
    assert whole.cost * (1 - 1e-12) <= upper < stitched
    by_upper, _ = restricted(problem, excess, block_gaps(minima, groups, optima, upper))
    assert configurations(by_upper) < configurations(under_guess)
    # (A chain of blocks, as here, is narrowed by its chain bounds instead:
    # test_narrow_chain.py.)


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
