"""Exact pruning by bounds: configurations that no optimal strategy uses, dropped before the DP.

A strategy x costs F(x) = sum_v c_v(x_v) + sum_uv c_uv(x_u, x_v). Moving cost from an edge to
one of its ends, c'_uv = c_uv - l(x_u) and c'_u = c_u + l(x_u) (a reparametrization), leaves
F(x) unchanged for every x, so after any such moves a strategy with x_v = a costs at least

    bound_v(a) = c'_v(a) + sum_{u in N(v)} min_b (c'_uv(a, b) + c'_u(b))
                 + (the minimum of every other vertex and edge term).

Min-sum diffusion (Schlesinger's; Werner 2007, "A linear programming approach to max-sum
problems") chooses the moves: at each vertex in turn it pools the vertex's cost with the row
minima of its edges and shares the pool out evenly again, which never lowers the overall
bound `lower` = the sum of all term minima (the LP relaxation's dual). On PaSE's graphs a
few sweeps bring `lower` within 0.1-1 % of the optimum, and most configurations of the big
vertices then have bound_v(a) far above it.

`solve_bounded` uses the bounds without giving up exactness. With a threshold T, it keeps
the configurations whose bound is at most T (plus a margin far above rounding) and runs the
DP on what is left. If that optimum costs at most T, every strategy costing as much survived
(its configurations' bounds are below its cost), so it is the optimum of the whole graph, and
the very strategy the DP finds there: the DP's tables are minima over strategies of sums
rounded in a fixed order, each surviving entry on the optimal path has the same minimizer,
and ties go to the lowest index, whose order pruning keeps. Otherwise the threshold grows;
it is never above the cost of a strategy already known (decoded from the bounds), where
success is certain. T is chosen so that the DP's table entries, predicted from the numbers
of configurations kept, fit a limit that grows 16-fold per round.

Vertices of repeated blocks (the same cost vector and incident tables) keep the union of
their survivors, so that their pruned tables stay shared and the DP still reuses their steps.

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 9.0, 2.0]), np.array([0.0, 5.0])])
>>> graph.add_edge(0, 1, np.array([[0.0, 1.0], [0.0, 0.0], [3.0, 0.0]]))
>>> result = solve_bounded(graph)
>>> result.choice, result.cost
((0, 0), 1.0)
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.budget import MemoryBudget, as_budget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import (
    JIT_MIN_ENTRIES,
    DPResult,
    compiled_eliminate,
    eliminate,
    solve_dp,
)
from pase.passes.strategy.orders import dependent_sets, elimination_order

if TYPE_CHECKING:
    from pase.passes.strategy.diffusion_kernel import SweepKernel

MAX_SWEEPS = 24
# Edge tables smaller than this are minimized by numpy (a kernel call costs more).
KERNEL_MIN_ENTRIES = 1 << 12
# The first round's limit on the DP's table entries; each failed round multiplies it by 16.
FIRST_ROUND_ENTRIES = 1 << 26
# After a round that failed, a round runs at the certain threshold (the best strategy known)
# where that DP is predicted to compute at most this many times the round's limit: a round
# below it that failed too would cost its own DP and then that one.
FINAL_REACH = 4
# A DP predicted to compute fewer entries runs in numpy (about 0.1 s) rather than compile
# the kernel's variants (about 0.1 s each).
NUMPY_DP_ENTRIES = 1 << 26
# Below this the bounds cannot pay for themselves: the plain DP runs.
MIN_DP_ENTRIES = 1 << 24
# What a sweep costs per edge entry (7 reads), in the DP's table entries (measured: the DP
# computes 1.5e9 entries/s, a sweep reads 0.9e9 edge entries/s with numpy or the kernel).
SWEEP_ENTRIES = 12
# The plain DP must be predicted to cost this many sweeps for the bounds to be tried.
SWEEPS_WORTH = 8
# Sweeps stop once one raises `lower` by less than this fraction of the gap to `upper`.
STALL = 0.02
# Rounding in the bounds and in a strategy's sum is some 1e-13 of the largest |cost| a
# strategy could add up to; a bound is trusted only to this fraction of it.
MARGIN = 1e-9

EdgeKey = tuple[int, int]


@dataclass(frozen=True)
class Bounds:
    """`lower` bounds the optimum; `per_config[v][a]` bounds every strategy with x_v = a;
    `upper` is the cost of `decoded`, the best strategy read off the bounds so far;
    `margin` is how far above a threshold a bound is still kept (`MARGIN` of the sum of
    every table's largest |cost|)."""

    lower: float
    per_config: list[np.ndarray]
    upper: float
    decoded: tuple[int, ...]
    sweeps: int
    margin: float


def solve_bounded(graph: CostGraph, order: str | Sequence[int] = "genseq",
                  memory_budget: int | MemoryBudget = 4 << 30, jit: str = "auto",
                  progress: Callable[[int, int, int], None] | None = None,
                  reuse: bool = True) -> DPResult:
    """`solve_dp(graph, ...)`'s result (the same choice and cost, bit for bit), found on
    the configurations the bounds cannot rule out. Graphs whose costs are not all finite,
    and those where the bounds would not pay for themselves (the DP is small, or its
    repeated steps make it cheap and the bounds converge slowly), go to `solve_dp`
    unchanged. `memory_budget` is charged as `solve_dp` charges it."""
    budget = as_budget(memory_budget)
    if not isinstance(memory_budget, MemoryBudget):
        budget.count(sum(graph.buffers().values()))
    sequence = (elimination_order(graph.neighbours(), order) if isinstance(order, str)
                else [int(vertex) for vertex in order])
    if len(sequence) != len(graph.names) or not graph.edge_costs:
        return solve_dp(graph, order, budget, jit, progress, reuse=reuse)
    plan = _plan_of(graph, sequence, reuse)
    sweep_entries = SWEEP_ENTRIES * sum(table.size for table in graph.edge_costs.values())
    plain = plan.entries(np.array(graph.sizes, dtype=np.float64))
    # The bounds take a few sweeps at least (deep stacks of repeated blocks make the sweeps
    # dear and the plain DP, which reuses their steps, cheap).
    if plain < max(MIN_DP_ENTRIES, SWEEPS_WORTH * sweep_entries) or not _finite(graph):
        return solve_dp(graph, order, budget, jit, progress, reuse=reuse)
    # Per edge end: its move, the star minima and a few vectors in flight; one edge-sized sum.
    sizes = graph.sizes
    working = 8 * (6 * sum(sizes[u] + sizes[v] for u, v in graph.edge_costs)
                   + max(table.size for table in graph.edge_costs.values()))
    # Imported here: repeats.py builds on this module's diffusion.
    from pase.passes.strategy.repeats import block_bounds

    with budget.holding(working, "the bounds' working arrays"):
        # Repeated blocks are bounded once each (repeats.py); other graphs as a whole.
        bounds = block_bounds(graph, plan, plain, jit)
        if bounds is None:
            bounds = diffusion_bounds(graph, plan, plain, jit)
    if bounds is None:
        return solve_dp(graph, order, budget, jit, progress, reuse=reuse)
    return _bounded_rounds(graph, bounds, plan, sequence, order, budget, jit, progress,
                           reuse)


def _bounded_rounds(graph: CostGraph, bounds: Bounds, plan: _Plan, sequence: Sequence[int],
                    order: str | Sequence[int], budget: MemoryBudget, jit: str,
                    progress: Callable[[int, int, int], None] | None, reuse: bool
                    ) -> DPResult:
    """`solve_bounded`'s rounds: each a DP on what a threshold keeps, until one proves its
    optimum (module docstring). A round whose threshold leaves some vertex nothing keeps
    each vertex's least bound too (`_floored`): a superset of what the threshold keeps,
    so an optimum within the threshold is proven as before, and otherwise it is a
    strategy, whose cost lowers `upper` (skipped where its DP is predicted over
    `FINAL_REACH` times the round's limit, and once a floored round has run: a vertex
    left nothing means every strategy costs more than the threshold, so a floored round
    never proves its optimum, and a second one only looks for a cheaper strategy). After
    a round that could not prove its optimum, a round whose DP at `upper` is predicted
    within `FINAL_REACH` times its limit runs at `upper` (certain to prove it)."""
    limit = float(FIRST_ROUND_ENTRIES)
    upper = bounds.upper
    failed = floored_ran = False
    while True:
        if failed and plan.entries(_counts(bounds, upper, plan.roles)) <= FINAL_REACH * limit:
            threshold = upper
        else:
            threshold = _threshold(bounds, upper, plan, limit)
        final = threshold >= upper
        if final:
            threshold = upper
        keep = _kept(bounds, threshold, plan.roles)
        floored = not all(mask.any() for mask in keep)
        if floored:
            keep = _floored(bounds, threshold, plan.roles)
        counts = np.array([np.count_nonzero(mask) for mask in keep], dtype=np.float64)
        entries = plan.entries(counts)
        if floored and (floored_ran or entries > FINAL_REACH * limit):
            # (A floored DP far over the limit, or a second one: no floored round proves
            # its optimum, every strategy costing more than its threshold, and the first
            # one's strategy already lowered `upper`.)
            limit *= 16
            continue
        floored_ran = floored_ran or floored
        # A small DP is quicker in numpy than compiling kernels for it (same results).
        small = entries < NUMPY_DP_ENTRIES
        step_jit = "off" if jit == "auto" and small else jit
        restricted, kept, charged = _restrict(graph, keep, budget)
        try:
            result = solve_dp(restricted, sequence, budget, step_jit, progress, reuse=reuse,
                              order_name=order if isinstance(order, str) else None)
        finally:
            budget.release(charged)
        choice = tuple(int(kept[v][c]) for v, c in enumerate(result.choice))
        if final or result.cost <= threshold + bounds.margin / 2:
            return replace(result, choice=choice)
        upper = min(upper, graph.total_cost(choice))
        failed = True
        limit *= 16


def _floored(bounds: Bounds, threshold: float, roles: Sequence[int]) -> list[np.ndarray]:
    """`_kept(bounds, threshold, roles)` with, at every vertex, its configurations of
    least bound kept as well (per role, those of any of its vertices)."""
    limit = threshold + bounds.margin
    by_role: dict[int, np.ndarray] = {}
    for role, bound in zip(roles, bounds.per_config, strict=True):
        mask = bound <= max(limit, float(bound.min()))
        by_role[role] = by_role[role] | mask if role in by_role else mask
    return [by_role[role] for role in roles]


def diffusion_bounds(graph: CostGraph, plan: _Plan, plain: float = math.inf,
                     jit: str = "auto") -> Bounds | None:
    """The per-configuration bounds after min-sum diffusion sweeps (forward, then backward
    over the vertices), or None where the plain DP (`plain` table entries to compute) is
    the cheaper way.

    The DP over what the best known strategy's cost keeps is predicted after each sweep
    (`_Plan.entries`). Sweeps go on while the next one, shrinking that prediction by the
    factor the last one did, would save more than it costs; they stop too once a sweep
    raises `lower` by less than `STALL` of the gap to `upper`, or after `MAX_SWEEPS`.
    """
    diffusion = _Diffusion(graph, jit)
    tables = [*graph.vertex_costs, *graph.edge_costs.values()]
    margin = MARGIN * math.fsum(float(np.abs(table).max()) for table in tables)
    sweep_entries = SWEEP_ENTRIES * sum(table.size for table in graph.edge_costs.values())
    best: Bounds | None = None
    predicted = math.inf
    for sweep in range(1, MAX_SWEEPS + 1):
        diffusion.sweep()
        lower, per_config, decoded = diffusion.bounds()
        upper = graph.total_cost(decoded)
        if best is not None and best.upper <= upper:
            upper, decoded = best.upper, best.decoded
        gained = lower - (best.lower if best is not None else -math.inf)
        best = Bounds(lower, per_config, upper, decoded, sweep, margin)
        before, predicted = predicted, plan.entries(_counts(best, upper, plan.roles))
        saving = predicted * (1 - predicted / before) if before > predicted else 0.0
        if saving < sweep_entries or gained < STALL * (upper - lower):
            break
    if best is None or predicted > plain:
        return None
    return best


PLANS = 64
"""The most `_Plan`s kept for graphs solved again (`_plan_of`)."""
_plans: OrderedDict[tuple[object, ...], _Plan] = OrderedDict()


def _plan_of(graph: CostGraph, sequence: Sequence[int], reuse: bool) -> _Plan:
    """`_Plan(graph, sequence, reuse)`, made once for graphs that differ only in their
    numbers: a plan reads the graph's edges, its order, and which tables are the very
    same buffers, so the same for every multiplier λ of a capped search (`memory.priced`
    keeps shared vectors shared) and for stages solved again."""
    numbers: dict[tuple[int, tuple[int, ...], tuple[int, ...]], int] = {}
    pattern = tuple(numbers.setdefault(_buffer_key(table), len(numbers))
                    for table in [*graph.vertex_costs, *graph.edge_costs.values()])
    key = (tuple(sequence), reuse, tuple(graph.edge_costs), pattern)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _Plan(graph, sequence, reuse)
        if len(_plans) > PLANS:
            _plans.popitem(last=False)
    else:
        _plans.move_to_end(key)
    return plan


class _Plan:
    """The DP's steps as the elimination order makes them, computed on names instead of
    numbers: `roles` numbers the vertices (equal for vertices with the very same cost
    vector and incident tables in the same order and orientation: the layers of repeated
    blocks), and `entries(counts)` predicts the table entries the DP computes with
    `counts[v]` configurations per vertex, a step whose inputs are those of an earlier one
    counted once, as the DP's reuse cache counts them (`reuse=False`: every step)."""

    def __init__(self, graph: CostGraph, sequence: Sequence[int], reuse: bool) -> None:
        self.roles = _roles(graph)
        dependent = dependent_sets(graph.neighbours(), sequence)
        # The factors as solve_dp keys them: vertex vectors, then edges, then results.
        factors: dict[int, tuple[tuple[int, ...], object]] = {}
        factors_of: list[set[int]] = [set() for _ in graph.names]
        for vertex, cost in enumerate(graph.vertex_costs):
            factors[vertex] = ((vertex,), _buffer_key(cost))
            factors_of[vertex].add(vertex)
        for (u, v), table in graph.edge_costs.items():
            key = len(factors)
            factors[key] = ((u, v), _buffer_key(table))
            factors_of[u].add(key)
            factors_of[v].add(key)
        keys = itertools.count(len(factors))
        steps: dict[tuple[object, ...], int] = {}
        self.steps: list[tuple[int, tuple[int, ...]]] = []
        for vertex, dependent_set in zip(sequence, dependent, strict=True):
            layout = (*sorted(dependent_set), vertex)
            consumed = sorted(factors_of[vertex])
            name = tuple((tuple(layout.index(axis) for axis in factors[key][0]),
                          factors[key][1]) for key in consumed)
            for key in consumed:
                for axis in factors.pop(key)[0]:
                    factors_of[axis].discard(key)
            number = steps.setdefault(name, len(steps)) if reuse else len(self.steps)
            if number == len(self.steps):
                self.steps.append((vertex, layout[:-1]))
            if dependent_set:
                key = next(keys)
                factors[key] = (layout[:-1], ("step", number))
                for axis in layout[:-1]:
                    factors_of[axis].add(key)

    def entries(self, counts: np.ndarray) -> float:
        return math.fsum(float(counts[vertex]) * math.prod(float(counts[a]) for a in axes)
                         for vertex, axes in self.steps)


SWEEP_KERNEL_AFTER = 2048
"""Row minima (one per edge end, four per edge a sweep) a process sweeps in numpy before
its small graphs' sweeps go to the compiled kernel (`diffusion_kernel.py`), whose first
use costs some 0.06 s CPU (the engine and the compilation): about a third of that in
numpy's calls, so a search that sweeps little never pays for it, and one that sweeps
much pays a third more at most."""
_numpy_sweeps = [0]
"""The row minima swept in numpy so far in this process (`SWEEP_KERNEL_AFTER`)."""


class _Diffusion:
    """The moves l of min-sum diffusion, two vectors per edge (one per end); the edge
    tables themselves are never copied."""

    def __init__(self, graph: CostGraph, jit: str) -> None:
        self.graph = graph
        self.edges: list[EdgeKey] = list(graph.edge_costs)
        self.incident: list[list[int]] = [[] for _ in graph.names]
        for number, (u, v) in enumerate(self.edges):
            self.incident[u].append(number)
            self.incident[v].append(number)
        # moves[number] = (l at the edge's first end, l at its second end)
        self.moves = [(np.zeros(graph.sizes[u]), np.zeros(graph.sizes[v]))
                      for u, v in self.edges]
        self.unary = [cost.copy() for cost in graph.vertex_costs]
        # The DP's kernel (1.5-2x numpy here) pays for its compilation (0.1-0.3 s) once the
        # edge tables hold some 3e7 entries; it adds and compares as numpy does, so the
        # bounds are the same either way.
        entries = sum(table.size for table in graph.edge_costs.values())
        self.kernel = jit == "on" or (jit == "auto" and entries >= 32 * JIT_MIN_ENTRIES)
        if self.kernel:
            self.kernel = compiled_eliminate(jit == "on") is not eliminate
        # Below that, a whole sweep is one compiled call (numpy's some ten small calls per
        # edge end cost more than their arithmetic there), once the process has swept
        # enough to pay for its compilation; the same floats either way.
        self.sweeper: SweepKernel | None = None
        if not self.kernel and jit != "off" and _numpy_sweeps[0] >= SWEEP_KERNEL_AFTER:
            # Imported here so that llvmlite loads only when the bounds use a kernel.
            from pase.passes.strategy.diffusion_kernel import SweepKernel

            if SweepKernel.fits(graph):
                self.sweeper = SweepKernel(graph, self.edges, self.incident)
                self._load()

    def _load(self) -> None:
        """Hand the moves and moved costs to the sweep kernel and take its views of them."""
        if self.sweeper is not None:
            self.sweeper.load(self.moves, self.unary)
            self.moves, self.unary = self.sweeper.moves(), self.sweeper.unary()

    def warm(self, moves: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """Start from `moves` (per edge, in `edges`' order): any moves are a
        reparametrization, so the bounds stay valid whatever the start."""
        self.moves = list(moves)
        self.unary = self.moved_costs()
        self._load()

    def moved_costs(self) -> list[np.ndarray]:
        """c'_v: the vertex costs with the moves added (recomputed from the moves, so that
        the reparametrization is the graph's own)."""
        unary = [cost.copy() for cost in self.graph.vertex_costs]
        for number, (u, v) in enumerate(self.edges):
            at_u, at_v = self.moves[number]
            unary[u] += at_u
            unary[v] += at_v
        return unary

    def row_minima(self, number: int, vertex: int, other_cost: np.ndarray | None = None
                   ) -> np.ndarray:
        """For each configuration a of `vertex`, min over the other end's b of the moved edge
        cost c'(a, b) (plus `other_cost[b]`, if given)."""
        u, _ = self.edges[number]
        table = self.graph.edge_costs[self.edges[number]]
        at_u, at_v = self.moves[number]
        mine, theirs = (at_u, at_v) if vertex == u else (at_v, at_u)
        added = -theirs if other_cost is None else other_cost - theirs
        # Axis 0 is the edge's first end, axis 1 its second; minimize over the other end.
        other_axis = 1 if vertex == u else 0
        if not self.kernel or table.size < KERNEL_MIN_ENTRIES:
            minimum = np.min(table + (added[None, :] if other_axis else added[:, None]),
                             axis=other_axis)
            return minimum - mine
        # Imported here so that llvmlite loads only when the bounds use the kernel.
        from pase.passes.strategy.jit.eliminate import minima

        return minima(table, added, other_axis) - mine

    def sweep(self) -> None:
        if self.sweeper is not None:
            self.sweeper.run()
            self.moves, self.unary = self.sweeper.moves(), self.sweeper.unary()
            return
        order = range(len(self.graph.names))
        _numpy_sweeps[0] += 4 * len(self.edges)
        for vertex in [*order, *reversed(order)]:
            numbers = self.incident[vertex]
            if not numbers:
                continue
            minima = [self.row_minima(number, vertex) for number in numbers]
            share = (self.unary[vertex] + sum(minima)) / (len(numbers) + 1)
            for number, minimum in zip(numbers, minima, strict=True):
                u, _ = self.edges[number]
                at_u, at_v = self.moves[number]
                if vertex == u:
                    self.moves[number] = (at_u + minimum - share, at_v)
                else:
                    self.moves[number] = (at_u, at_v + minimum - share)
            self.unary[vertex] = share

    def lower(self) -> tuple[float, list[np.ndarray], list[float], list[float]]:
        """`bounds`' `lower` alone (one row minimum per edge, where `bounds` takes three),
        with the moved vertex costs c'_v and the vertex and edge minima it sums."""
        unary = self.moved_costs()
        vertex_minima = [float(cost.min()) for cost in unary]
        edge_minima = [float(self.row_minima(number, u).min())
                       for number, (u, _) in enumerate(self.edges)]
        return math.fsum(vertex_minima) + math.fsum(edge_minima), unary, vertex_minima, \
            edge_minima

    def bounds(self) -> tuple[float, list[np.ndarray], tuple[int, ...]]:
        """`lower`, the per-configuration bounds, and a strategy decoded greedily from them."""
        lower, unary, vertex_minima, edge_minima = self.lower()
        per_config = []
        stars: dict[tuple[int, int], np.ndarray] = {}
        for vertex, cost in enumerate(unary):
            bound = cost + (lower - vertex_minima[vertex])
            for number in self.incident[vertex]:
                u, v = self.edges[number]
                other = v if vertex == u else u
                stars[(number, vertex)] = self.row_minima(number, vertex, unary[other])
                bound = bound + (stars[(number, vertex)] - edge_minima[number]
                                 - vertex_minima[other])
            per_config.append(bound)
        return lower, per_config, self._decode(unary, per_config, stars)

    def _decode(self, unary: list[np.ndarray], per_config: list[np.ndarray],
                stars: dict[tuple[int, int], np.ndarray]) -> tuple[int, ...]:
        """Each vertex in turn takes the configuration of least moved cost given the
        choices of the neighbours taken before it (its bound where none is)."""
        choice: list[int] = [-1] * len(unary)
        for vertex in range(len(unary)):
            score = per_config[vertex].copy()
            for number in self.incident[vertex]:
                u, v = self.edges[number]
                other = v if vertex == u else u
                if choice[other] < 0:
                    continue
                table = self.graph.edge_costs[(u, v)]
                at_u, at_v = self.moves[number]
                if vertex == u:
                    column = table[:, choice[other]] - at_u - at_v[choice[other]]
                else:
                    column = table[choice[other], :] - at_v - at_u[choice[other]]
                score += column + unary[other][choice[other]] - stars[(number, vertex)]
            choice[vertex] = int(np.argmin(score))
        return tuple(choice)


def _finite(graph: CostGraph) -> bool:
    # Each shared table (repeated blocks) read once.
    tables = {_buffer_key(table): table
              for table in [*graph.vertex_costs, *graph.edge_costs.values()]}
    return all(bool(np.isfinite(table).all()) for table in tables.values())


def _counts(bounds: Bounds, threshold: float, roles: Sequence[int]) -> np.ndarray:
    return np.array([np.count_nonzero(mask) for mask in _kept(bounds, threshold, roles)],
                    dtype=np.float64)


def _roles(graph: CostGraph) -> list[int]:
    """A number per vertex, equal for vertices with the very same cost vector and incident
    tables in the same order and orientation (the layers of repeated blocks)."""
    incident: list[list[tuple[object, bool]]] = [[] for _ in graph.names]
    for (u, v), table in graph.edge_costs.items():
        key = _buffer_key(table)
        incident[u].append((key, True))
        incident[v].append((key, False))
    numbers: dict[tuple[object, ...], int] = {}
    return [numbers.setdefault((_buffer_key(cost), *incident[vertex]), len(numbers))
            for vertex, cost in enumerate(graph.vertex_costs)]


def _buffer_key(table: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    return (table.__array_interface__["data"][0], table.shape, table.strides)


def _kept(bounds: Bounds, threshold: float, roles: Sequence[int]) -> list[np.ndarray]:
    """Which configurations survive `threshold`: per role, those of any of its vertices."""
    limit = threshold + bounds.margin
    by_role: dict[int, np.ndarray] = {}
    for role, bound in zip(roles, bounds.per_config, strict=True):
        mask = bound <= limit
        by_role[role] = mask if role not in by_role else by_role[role] | mask
    return [by_role[role] for role in roles]


def _threshold(bounds: Bounds, upper: float, plan: _Plan, limit: float) -> float:
    """The largest threshold in [lower, upper] whose kept configurations the DP is predicted
    to solve in at most `limit` table entries (`lower` if none is)."""
    if plan.entries(_counts(bounds, upper, plan.roles)) <= limit:
        return upper
    low, high = bounds.lower, upper
    for _ in range(40):
        middle = (low + high) / 2
        if plan.entries(_counts(bounds, middle, plan.roles)) <= limit:
            low = middle
        else:
            high = middle
    return low


def _restrict(graph: CostGraph, keep: Sequence[np.ndarray], budget: MemoryBudget
              ) -> tuple[CostGraph, list[np.ndarray], int]:
    """The graph on the kept configurations, each original index list, and the bytes charged
    for its tables (shared tables sliced alike are sliced once)."""
    kept = [np.flatnonzero(mask) for mask in keep]
    charged = 0
    sliced: dict[tuple[object, ...], np.ndarray] = {}

    def take(table: np.ndarray, rows: np.ndarray, columns: np.ndarray | None) -> np.ndarray:
        nonlocal charged
        key = (_buffer_key(table), rows.tobytes(), None if columns is None else columns.tobytes())
        if key not in sliced:
            size = rows.size * (1 if columns is None else columns.size)
            budget.charge(8 * size, "a cost table pruned by bounds")
            charged += 8 * size
            sliced[key] = table[rows] if columns is None else table[np.ix_(rows, columns)]
        return sliced[key]

    vertex_costs = [take(cost, kept[v], None) for v, cost in enumerate(graph.vertex_costs)]
    edge_costs = {(u, v): take(table, kept[u], kept[v])
                  for (u, v), table in graph.edge_costs.items()}
    return CostGraph(graph.names, vertex_costs, edge_costs), kept, charged
