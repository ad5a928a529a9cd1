"""Lagrangian lower bounds on a stage range's work under a device-memory cap.

Before a stage range is solved under the cap, `Hull` gives each of its segments' least
cost + λ memory as a function of λ exactly, and `lagrangian_bound` the best bound
max over λ of (the sum over segments) − λ cap (`least.LeastCosts.capped_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.memory import RELATIVE_TOLERANCE, one_array_each, priced
from pase.passes.strategy.pipeline.bounds import SLACK

HULL_TOLERANCE = 1e-12
"""A strategy below the line through two points of a `Hull` by no more than this
(relative) is taken as on it."""


@dataclass(frozen=True)
class Hull:
    """The least F + B + λ memory of a segment as a function of λ >= 0: the lower-left
    convex hull of its strategies' (F + B, memory), by Eisner and Severance's method
    (solve at λ = 0 and with each layer at its least memory; then at the λ where two
    neighbouring points tie, until no strategy is below their line). Each point is a
    strategy's exact F + B and memory, and the function is the least over the points
    of work + λ memory, exact for every λ: between two neighbours the true function
    is concave and equal to the points' line at both ends' ties."""

    work: np.ndarray
    """Ascending."""
    memory: np.ndarray
    """Descending (strictly, but where work ties)."""

    @classmethod
    def of(cls, graph: CostGraph, weights: Sequence[np.ndarray],
           budget: MemoryBudget) -> Hull:
        def point(rate: float, allowed: Sequence[np.ndarray] | None = None
                  ) -> tuple[float, float]:
            costs = priced(graph.vertex_costs, list(weights), rate,
                           None if allowed is None else list(allowed))
            used = budget.used
            try:
                choice = solve_graph(CostGraph(graph.names, costs, dict(graph.edge_costs)),
                                     budget=budget).choice
            finally:
                budget.release(budget.used - used)
            return (graph.total_cost(choice),
                    sum(float(weight[c]) for weight, c in zip(weights, choice, strict=True)))

        left = point(0.0)
        right = point(0.0, one_array_each([weight == weight.min() for weight in weights]))
        points = [left]
        if right[1] < left[1]:
            pending = [(left, right)]
            inner = []
            while pending:  # depth first, left to right: the points come in order
                a, b = pending.pop()
                rate = (b[0] - a[0]) / (a[1] - b[1])
                line = a[0] + rate * a[1]
                c = point(rate)
                if c[0] + rate * c[1] >= line - HULL_TOLERANCE * abs(line) or \
                        not b[1] < c[1] < a[1]:
                    inner.append(b)
                    continue
                pending.append((c, b))
                pending.append((a, c))
            points.extend(inner)
        return cls(np.array([p[0] for p in points]), np.array([p[1] for p in points]))

    def least(self, rate: float) -> float:
        """The least work + `rate` memory."""
        return float((self.work + rate * self.memory).min())


def lagrangian_bound(hulls: Sequence[tuple[Hull, int]], cap: float) -> float:
    """max over λ >= 0 of sum(count * hull.least(λ)) − λ cap for (hull, count) pairs, or
    inf if even their least memory exceeds `cap` (the sum is concave in λ: its maximum
    is at the first λ, among the hulls' ties, past which it no longer rises)."""
    if sum(count * float(hull.memory[-1]) for hull, count in hulls) > cap:
        return math.inf
    slope = sum(count * float(hull.memory[0]) for hull, count in hulls) - cap
    rate = 0.0
    if slope > 0:
        ties = []
        for hull, count in hulls:
            drops = hull.memory[:-1] - hull.memory[1:]
            ties.append(np.stack([(hull.work[1:] - hull.work[:-1]) / np.where(
                drops > 0, drops, 1.0), count * drops]))
        joined = np.concatenate(ties, axis=1)
        order = np.argsort(joined[0], kind="stable")
        falls = slope - np.cumsum(joined[1][order])
        at = int(np.argmax(falls <= 0))  # some tie brings it to <= 0: the least fits
        rate = float(joined[0][order][at])
    total = sum(count * hull.least(rate) for hull, count in hulls) - rate * cap
    return total * (1 - SLACK)


def larac_steps(solve: Callable[[float], tuple[float, float, float]], cap: float,
                fits: tuple[float, float], over: tuple[float, float], bound: float,
                best: float | None, solves: int, stop_at: float = math.inf
                ) -> tuple[float, float | None]:
    """LARAC (Jüttner et al., 2001) from a strategy within `cap` and one over it, each
    (cost, memory), in at most `solves` solves (`solve(λ)`: the least cost + λ memory,
    and that strategy's cost and memory), or sooner once the bound reaches `stop_at`;
    `bound`, L at λ = `best`, is the best found before. Returns the best L(λ) and its λ.
    Any such pair starts it: each step solves at the λ where the two tie and keeps what
    it finds on its side of the cap, until nothing beats their line; both are then
    minimisers at that λ, one over the cap and one within, so L (concave) is greatest
    there. Every value is L at some λ >= 0: a lower bound wherever LARAC stops."""
    for _ in range(solves):
        if not (fits[0] > over[0] and fits[1] < over[1]):
            break
        rate = (fits[0] - over[0]) / (over[1] - fits[1])
        value, cost, weight = solve(rate)
        if value - rate * cap > bound:
            bound, best = value - rate * cap, rate
            if bound >= stop_at:
                break
        tie = over[0] + rate * over[1]
        if value >= tie - RELATIVE_TOLERANCE * abs(tie):
            break
        if weight <= cap:
            fits = (cost, weight)
        else:
            over = (cost, weight)
    return bound, best
