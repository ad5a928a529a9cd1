"""The whole round narrowed by each group's per-configuration bounds, given a strategy of
the whole graph: configurations that cannot be part of any strategy as cheap, dropped
before the whole round's tables are built.

`narrow_blocks.block_gaps` keeps a configuration a of layer v (of group g) when its excess
e_v(a) = c_v(a) - min c_v is within U - sum_{h != g} lb_h - L_g, U the cost of a known
strategy: it bounds the group's cost F_g(x_g) >= L_g + e_v(x_v) by the layers' costs
alone. At 3,072 devices that keeps every configuration a block's edges make dear, and the
whole round's DP (96 blocks) outgrew the memory budget: one table of 5.5e10 entries.
Bounding F_g given x_v = a by the group's own edges too is far tighter:

    F(x) >= F_g(x_g) + sum_{h != g} F_h(x_h) >= B_g(v = a) + sum_{h != g} lb_h,

where B_g(v = a) <= min { F_g(y) : y_v = a } is min-sum diffusion's bound on the group
alone (`repeats._part_bounds`, `bound.py`) and lb_h = min F_h each group's exact optimum
(`narrow_blocks.group_optima`). A strategy costing at most U keeps, in every layer, a
configuration with B_g(v = a) <= U - sum_{h != g} lb_h. The bound B_g holds for the
strategies of the group whose configurations are in the lists it was computed on: those
of the excess bound at the same U (`block_gaps`), which hold every strategy costing at
most U. So every optimal strategy survives, and kept configurations stay in their
order: the narrowed problem's DP picks the very strategy the whole DP picks
(`narrow.py`'s argument). Each distinct group (the repeated blocks are one) is bounded
once; layers of one kind whose groups keep the same configurations share one list, so
the blocks still share their tables.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> from pase.passes.strategy.narrow import layer_least, restricted
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> least, excess = layer_least(problem)
    >>> optimum = solve(problem).cost
    >>> groups = [range(0, 4)]
    >>> widened, kept = restricted(problem, excess, optimum - sum(least) + 1e-9)
    >>> narrowed, _ = bounded(problem, widened, kept, groups, [optimum], optimum)
    >>> solve(narrowed).cost == optimum
    True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from pase.passes.strategy.bound import MARGIN
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.narrow import masked, restricted
from pase.passes.strategy.narrow_blocks import block_gaps, group_key, group_problem
from pase.passes.strategy.problem import Assignment, Problem, Solution
from pase.passes.strategy.repeats import _part_bounds


def group_keeps(problem: Problem, widened: Problem, groups: list[range],
                optima: list[float], upper: float, budget: MemoryBudget | None = None,
                jit: str = "auto") -> list[np.ndarray]:
    """Per layer, which of `widened`'s configurations (`problem` narrowed by
    `block_gaps(..., upper)`) have a group bound B_g(v = a) within
    `upper` - sum_{h != g} lb_h (the module docstring; `optima` holds lb_g per group),
    each distinct group bounded once on its tables (priced through `problem`'s
    `PricedTables`, charged to `budget` while bounded)."""
    total = math.fsum(optima)
    slack = MARGIN * (abs(upper) + math.fsum(abs(cost) for cost in optima))
    keeps: list[np.ndarray] = [np.ones(0, dtype=bool)] * len(problem.layer_data)
    solved: dict[tuple[object, ...], list[np.ndarray]] = {}
    for layers, optimum in zip(groups, optima, strict=True):
        key = (group_key(widened, layers), optimum)
        if key not in solved:
            part = group_problem(problem, layers,
                                 [widened.config_lists[index] for index in layers])
            graph = part.cost_graph(budget)
            try:
                _, per_config, _ = _part_bounds(graph, jit)
                tables = [*graph.vertex_costs, *graph.edge_costs.values()]
                margin = MARGIN * math.fsum(float(np.abs(t).max()) for t in tables
                                            if t.size)
            finally:
                if budget is not None:
                    budget.release(sum(graph.buffers().values()))
            limit = upper - (total - optimum) + slack + margin
            solved[key] = [bound <= limit for bound in per_config]
        for index, keep in zip(layers, solved[key], strict=True):
            keeps[index] = keep
    return keeps


def bounded(problem: Problem, widened: Problem, kept: list[np.ndarray], groups: list[range],
            optima: list[float], upper: float, budget: MemoryBudget | None = None
            ) -> tuple[Problem, list[np.ndarray]]:
    """`widened` (with `kept`, its indices into `problem`'s lists) narrowed to the
    configurations `group_keeps` keeps, and their indices into `problem`'s lists; layers
    of one kind and list that keep the same configurations share the new list."""
    keeps = group_keeps(problem, widened, groups, optima, upper, budget)
    return masked(problem, widened, keeps, kept)


def merged_ends(problem: Problem, groups: list[range]) -> list[range]:
    """`groups` with the first (last) group, where it occurs once (a GPT's embeddings, its
    output head) and the next (previous) one repeats, joined to that one: the groups
    whose optima bound the whole graph with the joins at its ends counted (the
    embeddings' own optimum does not suit the first block; both together do)."""
    if len(groups) < 3:
        return list(groups)
    keys = [group_key(problem, layers) for layers in groups]
    counts = Counter(keys)
    merged = list(groups)
    if counts[keys[0]] == 1 and counts[keys[1]] > 1:
        merged[0:2] = [range(groups[0].start, groups[1].stop)]
    if counts[keys[-1]] == 1 and counts[keys[-2]] > 1:
        merged[-2:] = [range(groups[-2].start, groups[-1].stop)]
    return merged


def solve_grouped(problem: Problem, least: list[float], excess: list[np.ndarray],
                  groups: list[range], optima: list[float], upper: float,
                  solve: Callable[[Problem], Solution], guess: float = 0.0,
                  budget: MemoryBudget | None = None, last: bool = False
                  ) -> tuple[Problem, list[np.ndarray], Solution]:
    """The optimum of `problem` by `solve` on the configurations that a strategy costing
    `upper` leaves (`block_gaps`, then `bounded`), given each group's optimum `optima`
    and each layer's least cost `least` and excesses `excess`. Where `upper` is above the
    optima plus `guess` of them, a first round narrows as if a strategy cost that much:
    every strategy as cheap is kept, so an optimum no dearer is the whole one; otherwise
    that optimum is a strategy, and a last round narrows by the best known. Returns the
    narrowed problem, its indices into `problem`'s lists and its optimum. With `last`
    (no later search prices `problem`'s tables), the entries kept across rounds
    (`PricedTables`) are dropped before the last round's DP, once its tables are built."""
    assumed = math.fsum(optima) * (1 + guess)
    if upper > assumed:
        narrowed, kept, solution = _round(problem, least, excess, groups, optima, assumed,
                                          solve, budget)
        if solution.cost <= assumed:
            return narrowed, kept, solution
        upper = min(upper, solution.cost)
    return _round(problem, least, excess, groups, optima, upper, solve, budget, last)


def _round(problem: Problem, least: list[float], excess: list[np.ndarray],
           groups: list[range], optima: list[float], upper: float,
           solve: Callable[[Problem], Solution], budget: MemoryBudget | None,
           last: bool = False) -> tuple[Problem, list[np.ndarray], Solution]:
    """`solve_grouped`'s round given `upper`; with `last`, the kept entries dropped once
    its tables are built (they would be counted twice on `budget` during its DP)."""
    widened, kept = restricted(problem, excess, block_gaps(least, groups, optima, upper))
    narrowed, kept = bounded(problem, widened, kept, groups, optima, upper, budget)
    if last and problem._priced is not None:
        narrowed.cost_graph(budget)
        problem._priced.close()
    return narrowed, kept, solve(narrowed)


def solve_merged(problem: Problem, least: list[float], excess: list[np.ndarray],
                 groups: list[range], optima: list[float], assignment: Assignment,
                 solve: Callable[[Problem], Solution], guess: float = 0.0,
                 budget: MemoryBudget | None = None
                 ) -> tuple[list[range], list[float], Assignment]:
    """`merged_ends(problem, groups)`, the optimum of each merged group (each distinct
    one solved once by `solve_grouped` on its two groups, their optima `optima` given,
    bounded by `assignment`, their optima put together), and `assignment` with the merged
    groups' optimal configurations."""
    merged = merged_ends(problem, groups)
    group_of = {(layers.start, layers.stop): number for number, layers in enumerate(groups)}
    completed = dict(assignment)
    solved: dict[tuple[object, ...], Solution] = {}
    merged_optima = []
    for layers in merged:
        number = group_of.get((layers.start, layers.stop))
        if number is not None:
            merged_optima.append(optima[number])
            continue
        key = group_key(problem, layers)
        if key not in solved:
            part = group_problem(problem, layers)
            inner = [range(g.start - layers.start, g.stop - layers.start) for g in groups
                     if layers.start <= g.start and g.stop <= layers.stop]
            names = [problem.layer_data[index].name for index in layers]
            solved[key] = solve_grouped(
                part, [least[i] for i in layers], [excess[i] for i in layers], inner,
                [optima[group_of[(g.start + layers.start, g.stop + layers.start)]]
                 for g in inner],
                part.cost({name: assignment[name] for name in names}), solve, guess,
                budget)[2]
        solution = solved[key]
        merged_optima.append(solution.cost)
        for index, config in zip(layers, solution.assignment.values(), strict=True):
            completed[problem.layer_data[index].name] = config
    return merged, merged_optima, completed
