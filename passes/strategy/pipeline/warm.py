"""Capped stage solves warm-started from their neighbours' multipliers.

The stage walk solves many ranges of one graph under the same cap on the same devices,
each a little longer or shorter than the last; their LARAC multipliers λ (the price of a
byte at the Lagrangian bound's best, `memory.solve_capped`) are close. `WarmStarts`
keeps the last λ found per key (the stage solver's: devices, cap and micro-batches, so
that the seed's stages, each holding a different number of micro-batches, start from each
other too) and starts the next such solve there (`solve_capped`'s `start`): it then needs
a few DP solves near λ instead of LARAC's walk from the least-memory strategy. The
answer is the same proven optimum (`solve_capped`), so the walk finds the same plan.

A stage is solved under the cap only where its unconstrained optimum, solved just
before, does not fit (`stages.StageTable.stage`); `unconstrained` keeps that solve's
result per stage and `solve` hands it to `solve_capped` (`free`), which would otherwise
solve it again first.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> from pase.passes.strategy.memory import memory_vectors, strategy_memory
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> least = sum(float(vector.min()) for vector in memory_vectors(problem))
    >>> cap = (least + strategy_memory(problem, solve(problem).assignment)) / 2
    >>> starts = WarmStarts()
    >>> cold = starts.solve(problem, cap, ("mlp", 8))
    >>> warm = starts.solve(problem, cap, ("mlp", 8))
    >>> warm.cost == cold.cost, warm.rate == cold.rate > 0
    (True, True)
    >>> from pase.passes.strategy.options import DEFAULT_OPTIONS
    >>> kept = starts.unconstrained(problem, DEFAULT_OPTIONS, "mlp")
    >>> kept.cost == solve(problem).cost, "mlp" in starts.free  # (a plain problem)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.exact import solve as solve_free
from pase.passes.strategy.memory import CappedSolution, solve_capped
from pase.passes.strategy.options import SearchOptions
from pase.passes.strategy.problem import Problem, Solution


class WarmStarts:
    """`solve_capped`, each solve started at the λ last found under the same `key`."""

    def __init__(self) -> None:
        self.rates: dict[Hashable, float] = {}
        self.free: dict[Hashable, DPResult] = {}
        """The unconstrained optima kept by `unconstrained`, by its `key`."""

    def unconstrained(self, problem: Problem, options: SearchOptions, key: Hashable,
                      memory_budget: int | MemoryBudget | None = None) -> Solution:
        """`exact.solve(problem, options)`, its result kept under `key` for `solve`'s
        `free` where it is the one `solve_capped` would find first: the DP's "genseq"
        order, pruned and bounded, on the problem's own graph (a plain `Problem` may be
        narrowed first, and is not kept)."""
        solution = solve_free(problem, options, memory_budget=memory_budget)
        if type(problem) is not Problem and solution.stats is not None \
                and options.order == "genseq" and options.pruning and options.bounding:
            self.free[key] = solution.stats
        return solution

    def solve(self, problem: Problem, cap: float, key: Hashable,
              free: Hashable | None = None, **options: Any) -> CappedSolution:
        """`solve_capped(problem, cap, **options)` started at `key`'s λ (cold the first
        time); a binding cap's λ found is kept for the next. `free`, the key under
        which `unconstrained` solved the same problem, if it did and kept it."""
        capped = solve_capped(problem, cap, start=self.rates.get(key),
                              free=self.free.get(free), **options)
        if capped.rate > 0:
            self.rates[key] = capped.rate
        return capped
