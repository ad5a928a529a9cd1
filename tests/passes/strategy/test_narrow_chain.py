"""The whole round of a chain of blocks narrowed by bounds that count the joins between
the blocks (`strategy/narrow_chain.py`): every configuration dropped is in no strategy as
cheap as the bound's U, and the search is the whole DP's, bit for bit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem, solve
from pase.passes.strategy.narrow import layer_least, masked, restricted, solve_narrowed
from pase.passes.strategy.narrow_blocks import block_gaps, group_optima, layer_groups
from pase.passes.strategy.narrow_chain import chain_bounds, find_chain, joined_gaps
from tests.passes.strategy.test_narrow import (
    MODELS,
    assert_same_search,
    configurations,
    counted_solve,
    tiny_gpt,
)


def test_chain_of_a_gpt_and_of_nothing(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    groups = layer_groups(problem)
    chain = find_chain(problem, groups)
    assert chain is not None
    assert groups is not None
    # The embeddings, four blocks joined by their last residual add, the output head.
    assert len(chain.blocks) == 4
    assert problem.layer_data[chain.blocks[0].start + chain.boundary].name == "h0_res2"
    assert (chain.head.start, chain.tail.stop) == (0, len(problem.layer_data))
    mlp = build_problem(parse_file(str(MODELS / "mlp.dnn")), devices=8)
    assert find_chain(mlp, layer_groups(mlp)) is None


def first_round(problem: Any) -> tuple[Any, Any, Any, Any, Any, Any]:
    """The problem's optimum, layer groups, chain, layer minima and excess, and the
    groups' optima: what a chain round starts from."""
    whole = solve(problem)
    groups = layer_groups(problem)
    chain = find_chain(problem, groups)
    assert chain is not None
    assert groups is not None
    minima, excess = layer_least(problem)
    optima, _, _ = group_optima(problem, groups, lambda part: solve_narrowed(part, solve))
    return whole, groups, chain, minima, excess, optima


@pytest.mark.parametrize("devices", [8, 16])
def test_dropped_configurations_cost_more_than_u(devices: int, tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path, devices)
    whole, groups, chain, minima, excess, optima = first_round(problem)
    upper = whole.cost
    widened, kept = restricted(problem, excess, block_gaps(minima, groups, optima, upper))
    bounds = chain_bounds(problem, widened, chain)
    # A lower bound of every strategy, above the groups' optima (it counts the joins).
    assert math.fsum(optima) <= bounds.total <= whole.cost
    keeps = bounds.keeps(upper)
    narrowed, _ = masked(problem, widened, keeps, kept)
    assert configurations(narrowed) < configurations(widened)
    # The dropped configuration of least bound in each layer, pinned, costs more than U.
    checked = 0
    for layer, (keep, bound) in enumerate(zip(keeps, bounds.per_config, strict=True)):
        if keep.all():
            continue
        dropped = int(np.argmin(np.where(keep, np.inf, bound)))
        pins = [np.ones(len(configs), dtype=bool) for configs in widened.config_lists]
        pins[layer] = np.arange(len(keep)) == dropped
        pinned, _ = masked(problem, widened, pins, kept)
        assert solve(pinned).cost > upper
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("guess", [0.0, 1e-3, 0.01, 0.1])
def test_chain_search_is_the_whole_dp(guess: float, tmp_path: Path) -> None:
    whole = solve(tiny_gpt(tmp_path, 16))
    rounds: list[int] = []
    narrowed = solve_narrowed(tiny_gpt(tmp_path, 16),
                              counted_solve(rounds, lambda part: len(part.layer_data)), guess,
                              blocks=True)
    assert_same_search(narrowed, whole)
    # The groups' rounds, then at most two whole rounds.
    assert 1 <= rounds.count(len(whole.assignment)) <= 2


def test_joined_gaps_drop_only_dearer_strategies(tmp_path: Path) -> None:
    """The lists a strategy costing U leaves, narrowed before pricing by an earlier
    round's chain bounds (`joined_gaps`): fewer configurations, and the dropped one of
    least excess in each layer, pinned, costs more than U; None where the earlier round's
    level leaves no room (its strategies out of its lists cost no more than its bounds)."""
    problem = tiny_gpt(tmp_path, 16)
    whole, groups, chain, minima, excess, optima = first_round(problem)
    upper = whole.cost
    for guess, engaged in ((0.0, False), (0.01, True)):
        level = math.fsum(optima) * (1 + guess)
        first, _ = restricted(problem, excess, block_gaps(minima, groups, optima, level))
        bounds = chain_bounds(problem, first, chain)
        gaps = joined_gaps(minima, groups, optima, chain, bounds, level, upper)
        assert (gaps is not None) == engaged
    assert gaps is not None
    plain = block_gaps(minima, groups, optima, upper)
    widened, _ = restricted(problem, excess, plain)
    narrowed, _ = restricted(problem, excess, [min(a, b) for a, b in zip(plain, gaps,
                                                                          strict=True)])
    assert configurations(narrowed) < configurations(widened)
    checked = 0
    for layer, (over, gap, most) in enumerate(zip(excess, gaps, plain, strict=True)):
        dropped = np.flatnonzero((over > gap) & (over <= most))
        if not len(dropped):
            continue
        pins = [np.ones(len(configs), dtype=bool) for configs in problem.config_lists]
        pins[layer] = np.arange(len(over)) == dropped[np.argmin(over[dropped])]
        pinned, _ = masked(problem, problem, pins)
        assert solve(pinned).cost > upper
        checked += 1
    assert checked > 0
