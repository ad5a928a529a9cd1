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

import numpy as np

from pase.passes.strategy.bound import MARGIN
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.cost import Config
from pase.passes.strategy.narrow_blocks import group_key, group_problem
from pase.passes.strategy.problem import Problem
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
    kinds = problem._kinds()[0]
    lists: dict[tuple[object, ...], tuple[list[Config], np.ndarray]] = {}
    config_lists = []
    indices = []
    for kind, configs, within, keep in zip(kinds, widened.config_lists, kept, keeps,
                                           strict=True):
        key = (kind, id(configs), keep.tobytes())
        if key not in lists:
            chosen = np.flatnonzero(keep)
            lists[key] = ([configs[i] for i in chosen], within[chosen])
        config_lists.append(lists[key][0])
        indices.append(lists[key][1])
    narrowed = Problem(problem.graph, problem.devices, problem.machine, problem.layer_data,
                       problem.edges, config_lists, problem.batch_dim, problem.model,
                       problem.pins, problem.min_shard)
    narrowed._kind_numbers = problem._kinds()
    narrowed._priced = problem._priced
    return narrowed, indices
