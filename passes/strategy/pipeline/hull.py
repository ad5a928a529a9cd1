"""Lagrangian lower bounds on a stage range's work under a device-memory cap.

Before a stage range is solved under the cap, `Hull` gives each of its segments' least
cost + λ memory as a function of λ exactly, and `lagrangian_bound` the best bound
max over λ of (the sum over segments) − λ cap (`least.LeastCosts.capped_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.memory import RELATIVE_TOLERANCE, one_array_each, priced
from pase.passes.strategy.pipeline.bounds import SLACK

HULL_TOLERANCE = 1e-12
"""A strategy below the line through two points of a `Hull` by no more than this
(relative) is taken as on it."""


@dataclass
class Hull:
    """The least F + B + λ memory of a segment as a function of λ >= 0: the lower-left
    convex hull of its strategies' (F + B, memory), by Eisner and Severance's method
    (solve at λ = 0 and with each layer at its least memory; then at the λ where two
    neighbouring points tie, until no strategy is below their line), made lazily: only
    the gaps between neighbouring points that some λ asked for needs (`least`) are
    solved, the steps Eisner and Severance's method takes on the way to them, each as
    it would take it. Each point is a strategy's exact F + B and memory, and the least
    over the points of work + λ memory is exact at every λ whose point's gaps on both
    sides are closed (no strategy below their lines; by convexity none beats that
    point there), which `least` makes sure of before it answers. Below, a segment of
    one layer whose strategies are points on a parabola: asked at λ = 1, the method
    makes 7 of its 9 points (9 DP solves); the whole hull takes 17.

        >>> strategies = [(float(k * k), float(64 - 8 * k)) for k in range(9)]
        >>> graph = CostGraph(["layer"], [np.array([w for w, _ in strategies])])
        >>> memory = [np.array([m for _, m in strategies])]
        >>> hull = Hull.of(graph, memory, MemoryBudget(1 << 30))
        >>> hull.least(1.0), hull.solves, hull.work.tolist()
        (48.0, 9, [0.0, 4.0, 9.0, 16.0, 25.0, 36.0, 64.0])
        >>> hull.complete().solves, len(hull.work)
        (17, 9)
    """

    solve: Callable[[float, Sequence[np.ndarray] | None], tuple[float, float]]
    """The least F + B + λ memory's strategy (its F + B and memory), the layers allowed
    (default all)."""
    lean: Sequence[np.ndarray]
    """Each layer's configurations of least memory."""
    least_memory: float
    """The least memory of any strategy (each layer at its least)."""
    points: list[tuple[float, float]] = field(default_factory=list)
    """(F + B, memory): F + B ascending, memory strictly descending."""
    closed: list[bool] = field(default_factory=list)
    """Per gap between points k and k + 1: whether no strategy is below their line."""
    solves: int = 0
    """The DP solves made so far."""
    right: bool = False
    """Whether the strategy with each layer at its least memory was solved."""

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

        hull = cls(point, one_array_each([weight == weight.min() for weight in weights]),
                   sum(float(weight.min()) for weight in weights))
        hull.points.append(hull.made(0.0))
        return hull

    @property
    def work(self) -> np.ndarray:
        """The points' F + B made so far, ascending."""
        return np.array([p[0] for p in self.points])

    @property
    def memory(self) -> np.ndarray:
        """Their memory, descending."""
        return np.array([p[1] for p in self.points])

    def made(self, rate: float, allowed: Sequence[np.ndarray] | None = None
             ) -> tuple[float, float]:
        self.solves += 1
        return self.solve(rate, allowed)

    def least(self, rate: float) -> float:
        """The least work + `rate` memory, exactly (the gaps it needs made first)."""
        while self.refine(rate):
            pass
        return self.made_least(rate)

    def made_least(self, rate: float) -> float:
        """The least work + `rate` memory over the points made so far: at least the
        exact least (equal once `refine(rate)` makes nothing)."""
        return float((self.work + rate * self.memory).min())

    def refine(self, rate: float) -> bool:
        """One DP solve towards `least(rate)` exact, or False where it is already: a
        gap beside a point that is least at `rate` (over the points made, a part in
        10^9 either way of its range of λ, against the ties' roundings) is solved at
        its λ: closed, or split at the strategy found below its line."""
        if rate <= 0.0:
            return False  # (the first point is the least work: least at λ = 0)
        if self.widen():
            return True
        ties = [(b[0] - a[0]) / (a[1] - b[1])
                for a, b in zip(self.points, self.points[1:], strict=False)]
        lows, highs = [0.0, *ties], [*ties, math.inf]
        for k, (low, high) in enumerate(zip(lows, highs, strict=True)):
            if not low * (1 - 1e-9) <= rate <= high * (1 + 1e-9):
                continue
            for gap in (k - 1, k):
                if 0 <= gap < len(self.closed) and not self.closed[gap]:
                    self.split(gap, ties[gap])
                    return True
        return False

    def widen(self) -> bool:
        """Make the point of least memory (each layer at its least), unless made: one
        DP solve (whether it made it)."""
        if self.right:
            return False
        self.right = True
        right = self.made(0.0, self.lean)
        if right[1] < self.points[0][1]:
            self.points.append(right)
            self.closed.append(False)
        return True

    def split(self, gap: int, rate: float) -> None:
        """Solve gap `gap` at `rate`, its points' tie: Eisner and Severance's step."""
        a, b = self.points[gap], self.points[gap + 1]
        line = a[0] + rate * a[1]
        c = self.made(rate)
        if c[0] + rate * c[1] >= line - HULL_TOLERANCE * abs(line) or not b[1] < c[1] < a[1]:
            self.closed[gap] = True
            return
        self.points.insert(gap + 1, c)
        self.closed[gap:gap + 1] = [False, False]

    def complete(self) -> Hull:
        """Every gap made: the whole hull, as Eisner and Severance's method makes it."""
        self.widen()
        while not all(self.closed):
            gap = self.closed.index(False)
            a, b = self.points[gap], self.points[gap + 1]
            self.split(gap, (b[0] - a[0]) / (a[1] - b[1]))
        return self


def lagrangian_bound(hulls: Sequence[tuple[Hull, int]], cap: float) -> float:
    """max over λ >= 0 of sum(count * hull.least(λ)) − λ cap for (hull, count) pairs, or
    inf if even their least memory exceeds `cap` (the sum is concave in λ: its maximum
    is at the first λ, among the hulls' ties, past which it no longer rises). Over the
    points made so far, the sum is at least the exact one, and equal where every hull is
    exact (`Hull.refine`): its maximum there, made exact, is the exact maximum (no λ can
    do better against a function that is at least the exact one everywhere)."""
    if sum(count * hull.least_memory for hull, count in hulls) > cap:
        return math.inf
    slope = sum(count * float(hull.points[0][1]) for hull, count in hulls) - cap
    rate = 0.0
    if slope > 0:
        for hull, _ in hulls:
            hull.widen()
    while slope > 0:
        rate = best_rate(hulls, slope)
        if not any([hull.refine(rate) for hull, _ in hulls]):
            break
    total = sum(count * hull.made_least(rate) for hull, count in hulls) - rate * cap
    return total * (1 - SLACK)


def best_rate(hulls: Sequence[tuple[Hull, int]], slope: float) -> float:
    """The first λ among the hulls' ties (over their points made) past which their sum
    less λ cap no longer rises, its slope at λ = 0 being `slope` > 0."""
    ties = []
    for hull, count in hulls:
        work, memory = hull.work, hull.memory
        drops = memory[:-1] - memory[1:]
        ties.append(np.stack([(work[1:] - work[:-1]) / np.where(drops > 0, drops, 1.0),
                              count * drops]))
    joined = np.concatenate(ties, axis=1)
    order = np.argsort(joined[0], kind="stable")
    falls = slope - np.cumsum(joined[1][order])
    at = int(np.argmax(falls <= 0))  # some tie brings it to <= 0: the least fits
    return float(joined[0][order][at])


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
