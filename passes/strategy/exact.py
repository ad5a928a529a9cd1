"""The exact search of one problem: `solve` (a problem, as `SearchOptions` say) and
`solve_graph` (a cost graph, which the capped and the pipeline search build too).

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> solution = solve(problem, SearchOptions(method="exhaustive"))
    >>> solution.cost == solve(problem).cost
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from pase.passes.strategy.bound import _restrict, solve_bounded
from pase.passes.strategy.budget import MemoryBudget, SearchError, as_budget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dense_blocks import reduce_dense_blocks
from pase.passes.strategy.dp import DPResult, solve_dp
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.narrow import NARROW_MIN_ENTRIES, largest_edge_entries, solve_narrowed
from pase.passes.strategy.options import DEFAULT_OPTIONS, SearchOptions
from pase.passes.strategy.problem import Problem, Solution
from pase.passes.strategy.prune import prune
from pase.passes.strategy.tables import collector_paused


def solve(problem: Problem, options: SearchOptions | str = DEFAULT_OPTIONS, *,
          memory_budget: int | MemoryBudget | None = None,
          progress: Callable[[int, int, int], None] | None = None,
          method: str | None = None, order: str | None = None) -> Solution:
    """The optimal strategy as `options` say: `method="dp"` (exact, PaSE's DP over an
    elimination order) or `method="exhaustive"` (brute force, small graphs).
    `method` and `order` may be given as keywords instead (DESIGN.md's stable call,
    `solve(problem, method="dp", order="genseq")`), and a method in the place of
    `options` (`solve(problem, "exhaustive")`) is taken as `method`; a keyword that
    differs from the `options` given with it (`solve(problem, SearchOptions(method="dp"),
    method="exhaustive")`) is a TypeError (`_called_options`).

    With `method="dp"`, each dense block (DenseNet's, `pase.passes.strategy.dense_blocks`)
    is first solved exactly by counting and replaced by one table over its input and
    output. With `pruning`, dominated and duplicate configurations are dropped first
    (`pase.passes.strategy.prune`); the optimum is the same. With `bounding`, a problem
    whose largest edge table would hold `narrow.NARROW_MIN_ENTRIES` entries or more is
    first narrowed to the configurations its layer costs cannot rule out
    (`pase.passes.strategy.narrow`), the same optimum; the DP then runs on the
    configurations that bounds cannot rule out (`pase.passes.strategy.bound`):
    the same strategy, bit for bit. `jit` ("auto", "on", "off")
    picks the llvmlite kernel or numpy for the DP (bit-identical results); `progress`
    hears of each eliminated layer. `memory_budget` (bytes, or the `MemoryBudget` that
    `from_layers` charged the configurations to; else `options.memory_budget`) bounds the
    cost tables, pruning and the DP together.
    """
    options = _called_options(options, method, order)
    if options.method not in ("dp", "exhaustive"):
        raise SearchError(f"unknown method '{options.method}'; use dp or exhaustive")
    with collector_paused():
        budget = as_budget(options.memory_budget if memory_budget is None else memory_budget)
        # (Only a plain problem: a pipeline stage's graph charges other vertex costs.)
        if (options.method == "dp" and options.bounding and type(problem) is Problem
                and problem.tables is None
                and largest_edge_entries(problem) >= NARROW_MIN_ENTRIES):
            return solve_narrowed(problem, lambda narrowed: _solve_released(
                narrowed, options, budget, progress), blocks=True, budget=budget)
        return _solve_whole(problem, options, budget, progress)


def _solve_whole(problem: Problem, options: SearchOptions, budget: MemoryBudget,
                 progress: Callable[[int, int, int], None] | None) -> Solution:
    """`solve` on the whole problem's cost tables."""
    # The unpruned tables stay cached on the problem: they count throughout.
    result = solve_graph(problem.cost_graph(budget), options.method, options.order,
                         budget, options.exhaustive_limit, options.pruning, options.jit,
                         progress, options.bounding)
    return Solution(problem.assignment(result.choice), result.cost, result)


def _solve_released(problem: Problem, options: SearchOptions, budget: MemoryBudget,
                    progress: Callable[[int, int, int], None] | None) -> Solution:
    """`_solve_whole` on one round's narrowed problem, whose tables are released from
    `budget` after it (the round's problem is dropped)."""
    solution = _solve_whole(problem, options, budget, progress)
    budget.release(sum(problem.cost_graph().buffers().values()))
    return solution


def _called_options(options: SearchOptions | str, method: str | None,
                    order: str | None) -> SearchOptions:
    """The options of a `solve` call: `options`, a method given in its place, and the
    `method` and `order` keywords, each stated once. A keyword that differs from the
    options given with it is one TypeError naming both (the options' own would be taken
    silently or overridden silently, either way not what one of them says)."""
    given = options is not DEFAULT_OPTIONS
    if isinstance(options, str):  # solve(problem, "dp"): the method
        options = replace(DEFAULT_OPTIONS, method=options)
    if not isinstance(options, SearchOptions):
        raise TypeError(f"solve takes SearchOptions (or the method) second, not "
                        f"{type(options).__name__}; or give method= and order=")
    for keyword, value, own in (("method", method, options.method),
                                ("order", order, options.order)):
        if value is not None and given and value != own:
            raise TypeError(f"solve got {keyword}={value!r} and options whose {keyword} is "
                            f"{own!r}; give the {keyword} once, in the options or as "
                            f"{keyword}= alone")
    return replace(options, method=options.method if method is None else method,
                   order=options.order if order is None else order)


def solve_graph(graph: CostGraph, method: str = "dp", order: str = "genseq",
                budget: MemoryBudget | None = None, exhaustive_limit: int = 10**7,
                pruning: bool = True, jit: str = "auto",
                progress: Callable[[int, int, int], None] | None = None,
                bounding: bool = True, reuse: bool = True) -> DPResult:
    """`solve`'s search on a cost graph (its dense blocks reduced first, then pruned with
    `pruning`, the DP bounded with `bounding`, its steps reused with `reuse`, `solve_dp`'s);
    the choice indexes
    `graph`'s own vertex vectors. `pase.passes.strategy.memory` solves graphs whose
    vertex costs carry an added term this way."""
    budget = budget if budget is not None else as_budget(4 << 30)
    reduction = reduce_dense_blocks(graph, budget) if method == "dp" else None
    if reduction is not None:
        graph = reduction.graph
    kept = [np.arange(size) for size in graph.sizes]
    if pruning:
        graph, kept = prune(graph, budget)
    charged = 0
    if method == "dp":
        graph, kept, charged = _finite_part(graph, kept, budget)
    try:
        if method == "dp" and bounding:
            result = solve_bounded(graph, order, budget, jit, progress, reuse)
        elif method == "dp":
            result = solve_dp(graph, order, budget, jit, progress, reuse=reuse)
        else:
            result = solve_exhaustive(graph, exhaustive_limit)
    finally:
        budget.release(charged)
    choice = tuple(int(kept[v][c]) for v, c in enumerate(result.choice))
    if reduction is None:
        return replace(result, choice=choice)
    budget.release(reduction.held)
    return replace(result, choice=reduction.expand(choice), dense_blocks=reduction.layers)


def _finite_part(graph: CostGraph, kept: list[np.ndarray], budget: MemoryBudget
                 ) -> tuple[CostGraph, list[np.ndarray], int]:
    """`graph` without the configurations whose own cost is inf (a capped search's
    configurations it leaves out: `memory.priced`), `kept` mapped alike, and the bytes
    charged for the copies; unchanged when there are none, or when a layer has no finite
    configuration (no strategy is finite then; the DP says so). No finite strategy uses
    them, and among the others the DP's minima and their lowest-index minimisers are the
    same, so the choice is the same; but the bounds (`bound.solve_bounded`), which need
    finite tables, now apply: without them the capped search's least-memory solve of a
    GPT stage at 256 devices took a plain DP of 9.5e10 entries.

        >>> graph = CostGraph(["a", "b"], [np.array([np.inf, 2.0]), np.array([1.0, 3.0])])
        >>> graph.add_edge(0, 1, np.array([[0.0, 1.0], [5.0, 0.0]]))
        >>> part, kept, _ = _finite_part(graph, [np.arange(2), np.arange(2)], as_budget(1 << 20))
        >>> part.sizes, [k.tolist() for k in kept]
        ([1, 2], [[1], [0, 1]])
    """
    masks = [np.isfinite(cost) for cost in graph.vertex_costs]
    if all(bool(mask.all()) for mask in masks) or not all(bool(m.any()) for m in masks):
        return graph, kept, 0
    part, within, charged = _restrict(graph, masks, budget)
    return part, [k[w] for k, w in zip(kept, within, strict=True)], charged
