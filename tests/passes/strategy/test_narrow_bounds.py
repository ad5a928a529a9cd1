"""The whole round narrowed by each group's bounds given a known strategy
(`strategy/narrow_bounds.py`): every configuration it drops is in no strategy as cheap as
that one (checked by solving the whole problem with the configuration pinned), and it
drops many of those the layers' excesses keep."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pase.passes.strategy import solve
from pase.passes.strategy.narrow import layer_least, restricted, solve_narrowed
from pase.passes.strategy.narrow_blocks import (
    block_gaps,
    group_optima,
    group_problem,
    layer_groups,
)
from pase.passes.strategy.narrow_bounds import bounded, group_keeps, merged_ends, solve_merged
from pase.passes.strategy.problem import Assignment, Problem
from tests.passes.strategy.test_narrow import configurations, tiny_gpt


def pinned(problem: Problem, layer: int, config: int) -> Problem:
    """`problem` with layer `layer` given its configuration `config` alone."""
    lists = list(problem.config_lists)
    lists[layer] = [lists[layer][config]]
    return Problem(problem.graph, problem.devices, problem.machine, problem.layer_data,
                   problem.edges, lists, problem.batch_dim, problem.model, problem.pins,
                   problem.min_shard)


def solved_groups(problem: Problem) -> tuple[list[range], list[float], list[np.ndarray],
                                              list[float], float, Assignment]:
    """The problem's groups, its layers' least costs and excesses, and the groups' optima,
    stitched cost and strategy (`group_optima`)."""
    groups = layer_groups(problem)
    assert groups is not None
    minima, excess = layer_least(problem)
    optima, stitched, assignment = group_optima(problem, groups,
                                                lambda part: solve_narrowed(part, solve))
    return groups, minima, excess, optima, stitched, assignment


def test_dropped_configurations_are_in_no_cheaper_strategy(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path, 4)
    whole = solve(problem)
    groups, minima, excess, optima, stitched, _ = solved_groups(problem)
    # A strategy dearer than the optimum: the bound must keep all that cost as much.
    upper = whole.cost + 0.5 * (stitched - whole.cost) if stitched > whole.cost \
        else whole.cost * (1 + 1e-3)
    widened, kept = restricted(problem, excess, block_gaps(minima, groups, optima, upper))
    keeps = group_keeps(problem, widened, groups, optima, upper)
    dropped = [(layer, int(kept[layer][index])) for layer, keep in enumerate(keeps)
               for index in np.flatnonzero(~keep)]
    assert dropped  # the bounds rule out configurations the excesses keep
    # Every dropped configuration, pinned, costs more than `upper` (a sample of them,
    # spread over the layers).
    for layer, config in dropped[:: max(1, len(dropped) // 12)]:
        assert solve(pinned(problem, layer, config)).cost > upper
    narrowed, indices = bounded(problem, widened, kept, groups, optima, upper)
    assert configurations(narrowed) < configurations(widened)
    # The optimal strategy is kept, and is the narrowed problem's optimum, bit for bit.
    result = solve(narrowed)
    assert (result.cost, result.assignment) == (whole.cost, whole.assignment)
    assert whole.stats is not None
    assert all(whole.stats.choice[v] in set(indices[v].tolist())
               for v in range(len(indices)))


def test_repeated_blocks_keep_shared_lists(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    groups, minima, excess, optima, stitched, _ = solved_groups(problem)
    upper = stitched
    assert math.isfinite(upper)
    widened, kept = restricted(problem, excess, block_gaps(minima, groups, optima, upper))
    narrowed, _ = bounded(problem, widened, kept, groups, optima, upper)
    # The four blocks' layers in the same places share one list object each.
    blocks = groups[1:-1]
    for offset in range(len(blocks[0])):
        lists = {id(narrowed.config_lists[layers[offset]]) for layers in blocks}
        assert len(lists) == 1


def test_merged_ends_bound_the_whole_more_tightly(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    whole = solve(problem)
    groups, minima, excess, optima, stitched, assignment = solved_groups(problem)
    assert [len(group) for group in merged_ends(problem, groups)] == [18, 15, 15, 18]
    merged, merged_optima, completed = solve_merged(problem, minima, excess, groups, optima,
                                                    assignment, solve)
    assert merged == merged_ends(problem, groups)
    # Each merged group's optimum is its own whole search's.
    for layers, optimum in zip(merged, merged_optima, strict=True):
        assert optimum == solve(group_problem(problem, layers)).cost
    # A lower bound of the whole, at least the groups' one; the completed strategy is a
    # strategy of the whole, no dearer than the groups' optima stitched together.
    assert math.fsum(optima) <= math.fsum(merged_optima) <= whole.cost
    assert whole.cost <= problem.cost(completed) <= stitched
