"""The segments' Lagrangian hulls made lazily (`pipeline.hull.Hull`): only the gaps the
λ asked for need, each as Eisner and Severance's method makes it, and the bound over
them (`lagrangian_bound`) the one the whole hulls give, never above the least work that
fits, in fewer DP solves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.pipeline.hull import Hull, lagrangian_bound
from tests.passes.strategy.test_partition import _random_graph as random_graph


def strategies(graph: CostGraph, weights: list[np.ndarray], configs: int
               ) -> list[tuple[float, float]]:
    """Every strategy's (cost, memory)."""
    return [(graph.total_cost(choice),
             sum(float(w[c]) for w, c in zip(weights, choice, strict=True)))
            for choice in itertools.product(range(configs), repeat=len(weights))]


@pytest.mark.parametrize("seed", range(6))
def test_a_lazy_hull_is_exact_at_every_rate_asked(seed: int) -> None:
    # Asked at one λ at a time, each answer the least work + λ memory over every
    # strategy (brute force), the points made only the whole hull's.
    rng = np.random.default_rng(seed)
    graph, weights = random_graph(rng, vertices=4, configs=5)
    every = strategies(graph, weights, 5)
    budget = MemoryBudget(1 << 30)
    whole = Hull.of(graph, weights, budget).complete()
    for rate in (3e-4, 1e-4, 1e-3, 0.0, 3e-3, 1e-2, 0.1):
        hull = Hull.of(graph, weights, budget)
        least = min(work + rate * memory for work, memory in every)
        assert hull.least(rate) == pytest.approx(least, rel=1e-9, abs=1e-12)
        assert set(hull.points) <= set(whole.points)
        assert hull.solves <= whole.solves
    assert all(whole.closed)


@pytest.mark.parametrize("seed", range(8))
def test_the_bound_over_lazy_hulls_is_the_whole_hulls(seed: int) -> None:
    # Three segments, some repeated, as stages of up to six: the bound over lazy hulls
    # equals the bound over whole ones (a part in 10^12), is at most the least work of
    # the strategies that fit (brute force over the segments' own strategies: the
    # edges between segments cost no less than 0), and takes fewer DP solves.
    rng = np.random.default_rng(50 + seed)
    parts = [random_graph(rng, vertices=2, configs=5) for _ in range(3)]
    budget = MemoryBudget(1 << 30)
    whole = [Hull.of(graph, weights, budget).complete() for graph, weights in parts]
    own = [strategies(graph, weights, 5) for graph, weights in parts]
    lazy_solves, whole_solves = 0, sum(hull.solves for hull in whole)
    for counts in ((1, 1, 1), (2, 0, 1), (1, 2, 0)):
        least_memory = sum(count * min(m for _, m in points)
                           for points, count in zip(own, counts, strict=True))
        most = sum(count * max(m for _, m in points)
                   for points, count in zip(own, counts, strict=True))
        for share in (0.05, 0.3, 0.6, 0.9):
            cap = least_memory + share * (most - least_memory)
            lazy = [Hull.of(graph, weights, budget) for graph, weights in parts]
            bound = lagrangian_bound([(hull, count) for hull, count
                                      in zip(lazy, counts, strict=True) if count], cap)
            exact = lagrangian_bound([(hull, count) for hull, count
                                      in zip(whole, counts, strict=True) if count], cap)
            assert bound == pytest.approx(exact, rel=1e-12)
            picks = [points for points, count in zip(own, counts, strict=True)
                     for _ in range(count)]
            fits = [sum(p[0] for p in pick) for pick in itertools.product(*picks)
                    if sum(p[1] for p in pick) <= cap]
            assert bound <= min(fits)
            lazy_solves += sum(hull.solves for hull in lazy)
        assert lagrangian_bound([(Hull.of(graph, weights, budget), count)
                                 for (graph, weights), count in zip(parts, counts,
                                                                    strict=True)
                                 if count], least_memory * 0.999) == math.inf
    assert lazy_solves < 12 * whole_solves  # (12 bounds, each from hulls made afresh)
