"""The exact search of problems too large to price whole: configurations ruled out by their
layer costs alone, before any edge is priced.

An edge's redistribution never costs less than nothing, so a strategy x costs at least
the sum of its layers' costs:

    F(x) >= sum_v c_v(x_v) = L + sum_v e_v(x_v),   L = sum_v min c_v,
                                                    e_v(a) = c_v(a) - min c_v  (a's excess).

An optimal strategy x* therefore has e_v(x*_v) <= F(x*) - L <= F(y) - L for every layer v
and any strategy y. `solve_narrowed` guesses a gap g (`GAP_GUESS` of L), keeps each
layer's configurations of excess at most g, and solves that problem exactly: its optimum
y costs U. If U - L <= g, every optimal strategy of the whole problem was kept (each of
its layers has excess <= F(x*) - L <= U - L <= g), so y is one of them: the exact optimum.
Otherwise a second round keeps the excesses up to U - L, which the same argument makes
exact. Both comparisons carry `bound.MARGIN` of slack against rounding.

The kept configurations stay in their order, so the restricted DP's lowest-index choice
among equal costs is the whole DP's (the configuration the whole DP picks is kept, and one
with a lower index and the same cost would have been picked there too). Layers of one kind
that share a configuration list keep one restricted list, so repeated blocks still share
their tables. On GPT-3 175B at 3,072 devices (15,187 configurations of the q projection),
the q -> scores table alone is 1.5e8 entries, and each entry's price walks up to 3,072
devices; its layouts are as many as its configurations, so pricing per pair of layouts
(which `cost.edge_costs` does already) cannot shrink it; the layer costs can.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> narrowed = solve_narrowed(problem, lambda restricted: solve(restricted))
    >>> narrowed.cost == solve(problem).cost
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from pase.passes.strategy.bound import MARGIN
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.priced import PricedTables
from pase.passes.strategy.problem import Problem, Solution

GAP_GUESS = 1e-3
"""The first round's gap, as a fraction of the layers' least total cost. On GPT-3 175B at
128 devices the optimum is 1.7e-4 of it above that total."""
GROWTH = 16
"""The most a round's edge tables may grow over the last round's (in entries, each
distinct table once, predicted from the configurations kept: `table_entries`) when a
round's optimum leaves a wider gap to prove; the gap then grows only that far."""
NARROW_MIN_ENTRIES = 1 << 24
"""The fewest entries of a problem's largest edge table for which `solve` narrows first
(GPT-3 175B from 512 devices up); smaller problems are searched whole, as before."""


def largest_edge_entries(problem: Problem) -> int:
    """The entries of the problem's largest edge table (configurations of one end times
    those of the other), without building it."""
    sizes = [len(configs) for configs in problem.config_lists]
    return max((sizes[e.producer] * sizes[e.consumer] for e in problem.edges), default=0)


def layer_excess(problem: Problem) -> tuple[float, list[np.ndarray]]:
    """L (the sum of each layer's least cost) and each layer's excesses over its least
    cost, computed once per layer kind and configuration list."""
    least, excess = layer_least(problem)
    return math.fsum(least), excess


def layer_least(problem: Problem) -> tuple[list[float], list[np.ndarray]]:
    """Each layer's least cost and its excesses over it (`layer_excess`)."""
    kinds = problem._kinds()[0]
    vectors: dict[tuple[int, int], np.ndarray] = {}
    excess = []
    least = []
    for layer, kind, configs in zip(problem.layer_data, kinds, problem.config_lists,
                                    strict=True):
        key = (kind, id(configs))
        if key not in vectors:
            vectors[key] = problem._layer_costs(layer, configs).total
        costs = vectors[key]
        least.append(float(costs.min()))
        excess.append(costs - costs.min())
    return least, excess


def restricted(problem: Problem, excess: list[np.ndarray], gap: float | Sequence[float]
               ) -> tuple[Problem, list[np.ndarray]]:
    """The problem with each layer's configurations of excess at most `gap` (one for all
    layers, or one per layer), and the indices kept per layer (increasing); layers of
    one kind, list and gap share the new list."""
    gaps = [gap] * len(problem.layer_data) if isinstance(gap, float | int) else list(gap)
    return masked(problem, problem, [over <= most for over, most in zip(excess, gaps,
                                                                         strict=True)])


def masked(problem: Problem, source: Problem, masks: Sequence[np.ndarray],
           within: Sequence[np.ndarray] | None = None) -> tuple[Problem, list[np.ndarray]]:
    """`problem` with each layer's configurations those `masks` keep of `source`'s list
    (`source` is `problem` or a narrowed copy whose indices into `problem`'s lists are
    `within`), and the indices kept per layer into `problem`'s lists (increasing);
    layers of one kind and list that keep the same configurations share the new list."""
    kinds = problem._kinds()[0]
    lists: dict[tuple[object, ...], tuple[list, np.ndarray]] = {}
    config_lists = []
    kept = []
    for layer, (kind, configs, keep) in enumerate(zip(kinds, source.config_lists, masks,
                                                      strict=True)):
        key = (kind, id(configs), keep.tobytes())
        if key not in lists:
            indices = np.flatnonzero(keep)
            lists[key] = ([configs[i] for i in indices],
                          indices if within is None else within[layer][indices])
        config_lists.append(lists[key][0])
        kept.append(lists[key][1])
    narrowed = Problem(problem.graph, problem.devices, problem.machine, problem.layer_data,
                       problem.edges, config_lists, problem.batch_dim, problem.model,
                       problem.pins, problem.min_shard)
    narrowed._kind_numbers = problem._kinds()
    narrowed._priced = problem._priced
    return narrowed, kept


def solve_narrowed(problem: Problem, solve: Callable[[Problem], Solution],
                   guess: float = GAP_GUESS, blocks: bool = False,
                   budget: MemoryBudget | None = None) -> Solution:
    """The exact optimum of `problem` by `solve` (an exact search of a problem) on the
    configurations its layer costs cannot rule out (the module docstring): one round when
    the guessed gap holds, two otherwise. With `blocks`, a problem whose layers repeat in
    blocks is narrowed block by block instead (`narrow_blocks.py`: each distinct block
    solved once, narrowed as here, then one round on the whole). The solution's stats
    index `problem`'s own configuration lists. `problem` is a plain `Problem`, whose cost
    graph's vertex vectors are its layer costs (a pipeline stage's charges others)."""
    if type(problem) is not Problem:
        raise TypeError(f"narrowing needs a plain Problem, not {type(problem).__name__}")
    if problem._priced is not None:
        return _narrowed(problem, solve, guess, blocks, budget)
    # The rounds' problems (and the groups', with theirs) share the entries priced.
    priced = PricedTables(problem.config_lists, budget)
    try:
        return _narrowed(replace(problem, _priced=priced), solve, guess, blocks, budget)
    finally:
        priced.close()


def _narrowed(problem: Problem, solve: Callable[[Problem], Solution], guess: float,
              blocks: bool, budget: MemoryBudget | None) -> Solution:
    """`solve_narrowed` of a problem that shares its rounds' priced entries."""
    minima, excess = layer_least(problem)
    least = math.fsum(minima)
    groups = _groups(problem) if blocks else None
    if groups is not None:
        narrowed, kept, solution = _by_blocks(problem, solve, guess, minima, excess, groups,
                                              budget)
    else:
        gap = guess * least
        while True:
            narrowed, kept = restricted(problem, excess, gap * (1 + MARGIN) + MARGIN * least)
            solution = solve(narrowed)
            proven = solution.cost - least
            if proven <= gap:
                break
            gap = _next_gap(problem, excess, gap, proven, MARGIN * least)
    stats = solution.stats
    if stats is not None:
        stats = replace(stats, choice=tuple(int(kept[v][c])
                                            for v, c in enumerate(stats.choice)))
    return Solution(solution.assignment, solution.cost, stats)


def table_entries(problem: Problem, excess: list[np.ndarray], gap: float) -> int:
    """The entries of the distinct edge tables (one per edge kind) of `problem` narrowed
    to the configurations of excess at most `gap`: what pricing them costs, nearly."""
    kept = [int(np.count_nonzero(over <= gap)) for over in excess]
    tables = {kind: kept[edge.producer] * kept[edge.consumer]
              for edge, kind in zip(problem.edges, problem._kinds()[1], strict=True)}
    return sum(tables.values())


def _next_gap(problem: Problem, excess: list[np.ndarray], gap: float, proven: float,
              slack: float) -> float:
    """The next round's gap after a round narrowed to `gap` found an optimum `proven`
    above L (more than `gap`): `proven`, which is certain to hold, unless its tables would
    hold over `GROWTH` times the last round's entries; then the widest gap within that
    (found among the excesses between the two), whose round is cheaper and whose optimum
    may prove itself or lower `proven`. Either way the gap grows, so rounds end. `slack`
    is the margin `restricted` is given above a gap."""
    limit = GROWTH * table_entries(problem, excess, gap * (1 + MARGIN) + slack)
    if table_entries(problem, excess, proven * (1 + MARGIN) + slack) <= limit:
        return proven
    # (Layers of one kind and list have the same excesses: each read once.)
    distinct = {(kind, id(configs)): over for kind, configs, over
                in zip(problem._kinds()[0], problem.config_lists, excess, strict=True)}
    values = np.unique(np.concatenate([over[(over > gap) & (over < proven)]
                                       for over in distinct.values()]))
    low, high = 0, len(values)  # the widest values[:low] within the limit
    while low < high:
        middle = (low + high + 1) // 2
        if table_entries(problem, excess, float(values[middle - 1]) * (1 + MARGIN) + slack) \
                <= limit:
            low = middle
        else:
            high = middle - 1
    if low:
        return float(values[low - 1])
    return float(values[0]) if len(values) else proven


def _groups(problem: Problem) -> list[range] | None:
    # Imported here: narrow_blocks builds on this module.
    from pase.passes.strategy.narrow_blocks import layer_groups

    return layer_groups(problem)


def _by_blocks(problem: Problem, solve: Callable[[Problem], Solution], guess: float,
               minima: list[float], excess: list[np.ndarray], groups: list[range],
               budget: MemoryBudget | None) -> tuple[Problem, list[np.ndarray], Solution]:
    """`solve_narrowed` block by block (`narrow_blocks.py`): each distinct group solved
    once; then a strategy of the whole priced (`narrow_ends.py`: the blocks' optima, the
    head and the tail solved given them). Where that costs no more than the groups' optima
    plus `guess` of them, one round narrowed by it is certain: its optimum is the whole
    one. Otherwise the whole is narrowed as if a strategy cost that much; if its optimum
    (or the strategy) costs no more, that held and it is the optimum; otherwise a last
    round narrows with the best of them. Returns the narrowed problem, the kept indices
    and its optimum."""
    from pase.passes.strategy.narrow_blocks import block_gaps, group_optima
    from pase.passes.strategy.narrow_chain import find_chain, solve_chain
    from pase.passes.strategy.narrow_ends import completed_cost

    optima, stitched, assignment = group_optima(problem, groups,
                                                lambda part: solve_narrowed(part, solve, guess))
    chain = find_chain(problem, groups)
    if chain is not None:
        return solve_chain(problem, minima, excess, groups, optima, chain, stitched, solve,
                           guess, budget)
    total = math.fsum(optima)
    assumed = total * (1 + guess)
    narrowed, kept = restricted(problem, excess, block_gaps(minima, groups, optima, assumed))
    upper = min(stitched, completed_cost(problem, narrowed, groups, assignment, solve))
    if upper <= assumed:
        narrowed, kept = restricted(problem, excess, block_gaps(minima, groups, optima, upper))
        return narrowed, kept, solve(narrowed)
    solution = solve(narrowed)
    upper = min(upper, solution.cost)
    if upper > assumed:
        final, kept_final = restricted(problem, excess,
                                       block_gaps(minima, groups, optima, upper))
        if not all(np.array_equal(a, b) for a, b in zip(kept, kept_final, strict=True)):
            narrowed, kept, solution = final, kept_final, solve(final)
    return narrowed, kept, solution
