"""The exact search under a memory cap: PaSE's DP with (cost, memory) frontiers on the
configurations the Lagrangian keeps.

`memory.solve_capped` relaxes the cap with a multiplier λ (LARAC): every strategy x that
fits costs at least L(λ) = min(cost + λ·memory) − λ·cap, and the λ maximising it bounds
the constrained optimum within a fraction of a percent on PaSE's graphs. What that leaves
open is a duality gap, which only a search closes. Here it is closed exactly:

1. min-sum diffusion (`bound.py`) on the graph priced at λ gives, for every configuration
   a of every layer v, a bound B_v(a) on cost + λ·memory of every strategy with x_v = a;
   a strategy that fits with x_v = a so costs at least B_v(a) − λ·cap (reduced-cost
   fixing: for x that fits, cost(x) ≥ cost(x) + λ·(memory(x) − cap));
2. with a threshold T, only the configurations with B_v(a) − λ·cap ≤ T are kept, and the
   DP with a (cost, memory) frontier per table entry (`frontier.py`), its points pruned
   by the same bounds, finds the least-cost strategy among them that fits;
3. if that costs at most T, every strategy that fits and costs as much survived, so it is
   the optimum; otherwise every strategy that fits costs more than T (a proven bound).
   The first T is 0.02% above the Lagrangian bound: that round is cheap and its answer,
   even above T, is usually the optimum or near it; the next round is at the best cost
   known, where success is certain (where a round finds no strategy that fits, T grows
   fourfold in distance instead).

`close_gap` runs these rounds. `milp` is kept for `benchmarks/capped.py`, which measures
the search against it (and for the record in `docs/cost-model.md`, where it lost): the
standard MILP of a pairwise cost graph, one binary per (kept) layer
configuration, one continuous variable per configuration pair of every edge, tied to the
binaries by the marginal rows (each row/column of an edge's pairs sums to the binary of
its configuration), and memory as one row, solved by HiGHS on one thread.

>>> import numpy as np
>>> from pase.passes.strategy.costgraph import CostGraph
>>> graph = CostGraph(["a", "b"], [np.array([1.0, 3.0]), np.array([1.0, 2.0])])
>>> graph.add_edge(0, 1, np.array([[0.0, 5.0], [5.0, 0.0]]))
>>> memory = [np.array([4.0, 1.0]), np.array([4.0, 1.0])]
>>> result = milp(graph, memory, 5.0)
>>> result.choice, result.cost, result.optimal
((1, 1), 5.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.costgraph import CostGraph

if TYPE_CHECKING:
    import highspy

    from pase.passes.strategy.bound import _Diffusion

MIP_RELATIVE_GAP = 1e-10
"""HiGHS stops when its incumbent is within this of its bound (relative); the strategy is
then called optimal (`memory.RELATIVE_TOLERANCE` is 1e-9)."""


@dataclass(frozen=True)
class MilpResult:
    """The MILP's answer: the best strategy it found (`choice`, None if none fits among
    the kept configurations), its exact cost (`graph.total_cost`) and memory, the bound
    HiGHS proved on every kept strategy that fits (`bound`), whether the search finished
    (`optimal`: the strategy is the least of the kept ones, or none fits), and the
    branch-and-bound nodes it took."""

    choice: tuple[int, ...] | None
    cost: float
    memory: float
    bound: float
    optimal: bool
    nodes: int


def milp(graph: CostGraph, memory: Sequence[np.ndarray], cap: float,
         keep: Sequence[np.ndarray] | None = None,
         start: Sequence[int] | None = None,
         node_limit: int | None = None,
         pairs: dict[tuple[int, int], np.ndarray] | None = None,
         time_limit: float | None = None, cutoff: float | None = None) -> MilpResult:
    """The least-cost strategy of `graph` among the configurations `keep` (boolean masks;
    default all) whose memory (`memory[v][x_v]` summed) is at most `cap`, by HiGHS.
    `start`, a strategy of kept configurations that fits, seeds the search; `node_limit`
    bounds its branch-and-bound nodes; `pairs` (per edge, kept rows by kept columns)
    leaves out the pairs no strategy of interest takes. `time_limit` (seconds of HiGHS's
    clock) is for benchmarks only: the search bounds nodes, never time. With `cutoff`,
    HiGHS drops every branch whose bound exceeds it: a finished search then proves that
    no kept strategy that fits costs at most `cutoff` unless it returns one."""
    masks = [np.ones(cost.size, dtype=bool) for cost in graph.vertex_costs] \
        if keep is None else [np.asarray(mask, dtype=bool) for mask in keep]
    kept = [np.flatnonzero(mask) for mask in masks]
    # (Imported here: HiGHS is needed only by searches under a cap that binds, and
    # pase-opt's start-up should not pay for it.)
    import highspy

    model = _Model(graph, memory, cap, kept, pairs)
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("random_seed", 0)
    highs.setOptionValue("mip_rel_gap", MIP_RELATIVE_GAP)
    highs.setOptionValue("mip_abs_gap", 0.0)
    highs.setOptionValue("mip_feasibility_tolerance", 1e-9)
    highs.setOptionValue("primal_feasibility_tolerance", 1e-9)
    if node_limit is not None:
        highs.setOptionValue("mip_max_nodes", max(int(node_limit), 1))
    if time_limit is not None:
        highs.setOptionValue("time_limit", float(time_limit))
    if cutoff is not None:
        highs.setOptionValue("objective_bound", cutoff / model.scale * (1 + MIP_RELATIVE_GAP))
    highs.passModel(model.lp())
    seeded = [model.pair(number, start[u], start[v]) for number, (u, v)
              in enumerate(model.edges)] \
        if start is not None and all(masks[v][c] for v, c in enumerate(start)) else [-1]
    if min(seeded, default=0) >= 0 and start is not None:
        values = np.zeros(model.columns)
        values[[model.column(v, c) for v, c in enumerate(start)]] = 1.0
        values[seeded] = 1.0
        seed = highspy.HighsSolution()
        seed.col_value = values.tolist()
        seed.value_valid = True
        highs.setSolution(seed)
    highs.run()
    status = highs.getModelStatus()
    info = highs.getInfo()
    nodes = int(info.mip_node_count)
    finished = status in (highspy.HighsModelStatus.kOptimal,
                          highspy.HighsModelStatus.kInfeasible)
    if info.primal_solution_status != 2:  # no feasible point
        return MilpResult(None, math.inf, math.inf,
                          math.inf if finished else model.unscale(info.mip_dual_bound),
                          finished, nodes)
    values = np.asarray(highs.getSolution().col_value)
    choice = model.decode(values)
    cost = graph.total_cost(choice)
    weight = math.fsum(float(vector[c]) for vector, c in zip(memory, choice, strict=True))
    bound = min(cost, model.unscale(info.mip_dual_bound))
    return MilpResult(choice, cost, weight, cost if finished else bound, finished, nodes)


class _Model:
    """The MILP's columns and rows (module docstring), costs scaled to about 1; `pairs`
    (boolean, kept rows by kept columns of each edge) leaves out the pairs no strategy
    of interest takes."""

    def __init__(self, graph: CostGraph, memory: Sequence[np.ndarray], cap: float,
                 kept: list[np.ndarray],
                 pairs: dict[tuple[int, int], np.ndarray] | None = None) -> None:
        self.kept = kept
        self.edges = list(graph.edge_costs)
        self.offsets = np.cumsum([0, *(len(k) for k in kept)])
        self.integral = int(self.offsets[-1])
        self.scale = max(math.fsum(float(np.abs(cost).max()) for cost in graph.vertex_costs),
                         1e-30)
        self.cap = cap
        self.weights = np.concatenate([np.asarray(memory[v], dtype=np.float64)[k]
                                       for v, k in enumerate(kept)])
        costs = [graph.vertex_costs[v][k] / self.scale for v, k in enumerate(kept)]
        # Each edge's pairs: their (row, column) in its kept table, and their column in
        # the MILP (`where[number][a, b]`, -1 for a pair left out).
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.where: list[np.ndarray] = []
        column = self.integral
        for u, v in self.edges:
            table = graph.edge_costs[(u, v)][np.ix_(kept[u], kept[v])]
            mask = np.ones(table.shape, dtype=bool) if pairs is None else pairs[(u, v)]
            rows, cols = np.nonzero(mask)
            where = np.full(table.shape, -1, dtype=np.int64)
            where[rows, cols] = column + np.arange(rows.size)
            column += rows.size
            self.pairs.append((rows, cols))
            self.where.append(where)
            costs.append(table[rows, cols] / self.scale)
        self.columns = column
        self.cost = np.concatenate(costs)

    def column(self, vertex: int, config: int) -> int:
        return int(self.offsets[vertex] + np.searchsorted(self.kept[vertex], config))

    def pair(self, number: int, a: int, b: int) -> int:
        """The column of the pair (a, b) of edge `number` (-1 if left out)."""
        u, v = self.edges[number]
        row = int(np.searchsorted(self.kept[u], a))
        col = int(np.searchsorted(self.kept[v], b))
        return int(self.where[number][row, col])

    def unscale(self, value: float) -> float:
        return float(value) * self.scale if math.isfinite(value) else -math.inf

    def decode(self, values: np.ndarray) -> tuple[int, ...]:
        return tuple(int(kept[int(np.argmax(values[self.offsets[v]:self.offsets[v + 1]]))])
                     for v, kept in enumerate(self.kept))

    def lp(self) -> highspy.HighsLp:
        import highspy

        vertices = len(self.kept)
        configs = np.arange(self.integral)
        # One configuration per layer; memory as one row, in units of the cap.
        rows = [np.repeat(np.arange(vertices), np.diff(self.offsets)), np.full(self.integral,
                                                                                vertices)]
        cols = [configs, configs]
        vals = [np.ones(self.integral), self.weights / self.cap]
        lower = [np.ones(vertices), np.array([-highspy.kHighsInf])]
        upper = [np.ones(vertices), np.array([1.0])]
        row = vertices + 1
        for number, (u, v) in enumerate(self.edges):
            height, width = self.where[number].shape
            pair_rows, pair_cols = self.pairs[number]
            columns = self.where[number][pair_rows, pair_cols]
            # Configuration a of u: its pairs sum to x_ua; configuration b of v: to x_vb.
            rows += [row + pair_rows, row + np.arange(height),
                     row + height + pair_cols, row + height + np.arange(width)]
            cols += [columns, self.offsets[u] + np.arange(height),
                     columns, self.offsets[v] + np.arange(width)]
            vals += [np.ones(columns.size), -np.ones(height),
                     np.ones(columns.size), -np.ones(width)]
            lower.append(np.zeros(height + width))
            upper.append(np.zeros(height + width))
            row += height + width
        all_rows, all_cols = np.concatenate(rows), np.concatenate(cols)
        order = np.lexsort((all_rows, all_cols))
        lp = highspy.HighsLp()
        lp.num_col_ = self.columns
        lp.num_row_ = row
        lp.col_cost_ = self.cost
        lp.col_lower_ = np.zeros(self.columns)
        lp.col_upper_ = np.ones(self.columns)
        lp.row_lower_ = np.concatenate(lower)
        lp.row_upper_ = np.concatenate(upper)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(np.bincount(
            all_cols, minlength=self.columns))]).astype(np.int32)
        lp.a_matrix_.index_ = all_rows[order].astype(np.int32)
        lp.a_matrix_.value_ = np.concatenate(vals)[order]
        lp.integrality_ = [highspy.HighsVarType.kInteger] * self.integral + \
            [highspy.HighsVarType.kContinuous] * (self.columns - self.integral)
        return lp


FIRST_STEP = 2e-4
"""The first threshold is this far (relative) above the Lagrangian bound (0.1 % made the
proof round on the Transformer at P = 64 run at a T above its optimum: 69 M points
instead of 21 M);
each round that finds no strategy that fits multiplies the distance by `GROWTH`."""
PROBE_POINTS = 100_000
"""A first round that makes more points than this (it is stopped there) is dear: the tight
round (`TIGHT_STEP`) is tried before it is made again whole (`_rounds`)."""
TIGHT_STEP = 2e-5
"""The tight round is at this far (relative) above the bound (`_tight`), and kept only if
it proves its strategy optimal: where the Lagrangian's duality gap is tiny it makes far
fewer points than the first round (gpt2-adam of `benchmarks/capped.py`, where λ ties
ZeRO-2 and ZeRO-3: 8.0 M instead of 24.0 M at `FIRST_STEP`, the same strategy);
elsewhere it finds none, and the rounds go on as without it."""
TIGHT_SHARE = 3
"""The tight round may make at most this fraction (1/`TIGHT_SHARE`) of the effort's points
(of `memory.DEFAULT_EFFORT`'s when the effort is unbounded)."""
GROWTH = 4
"""A round that finds no strategy that fits grows T's distance to the bound this much."""
POINTS_PER_EFFORT = 1000
"""The effort bound counts the frontier DP's points in units of this many."""
SWEEPS = 12
"""Min-sum diffusion sweeps for the per-configuration bounds (they settle in about 10 on
PaSE's graphs: the bound then equals L(λ) to 1e-8)."""
SETTLED = 1e-7
"""Diffusion started from the parts' moves of a graph of repeated blocks
(`repeats.block_moves`) is swept until a sweep raises its lower bound by at most this
fraction of it (`_settle`)."""
CLOSE = 1e-5
"""A search the effort stops whose diffusion was more than this fraction below the least
cost + λ·memory (LARAC's bound + λ·cap) is made once more with the diffusion swept on
until it settles (`close_gap`, `_approach`): on GPT-2 under Adam and ZeRO
(`benchmarks/capped.py` case gpt2-adam) 12 sweeps leave it 1.3·10^-4 below, about 50
close it."""
MORE_SWEEPS = 100
"""The most sweeps `_approach` adds."""
MARGIN = 1e-9
"""A per-configuration bound is trusted to this fraction of the sum of every table's
largest |cost| (rounding; `bound.MARGIN`)."""

REUSE_ENTRIES = 1 << 14
"""A capped search's DP solve of a graph with fewer vertex and edge table entries than this
keeps no reuse cache (`dp.solve_dp`'s `reuse`, `reuses`): keying its steps costs more
than the steps it finds again (a 36-layer node of `benchmarks/capped.py --training`'s
small-rc-auto, 5,053 entries: 3.3-4.0 ms a solve without it, 5.2-5.3 ms with it); the
same results either way (a reused step's tables are those the step would make)."""


def reuses(graph: CostGraph) -> bool:
    """Whether a capped search's DP solve of `graph` keeps a reuse cache (`REUSE_ENTRIES`,
    a count)."""
    return sum(graph.sizes) + sum(table.size for table in graph.edge_costs.values()) \
        >= REUSE_ENTRIES


Strategy = tuple[tuple[int, ...], float, float]
"""A strategy (one configuration index per layer), its cost and its memory."""


@dataclass(frozen=True)
class Closed:
    """What the exact stage proved: the best strategy that fits (`best`), a proven lower
    bound on every strategy that fits (`bound`, `best`'s cost when it is optimal), the
    frontier DP's points (`nodes`), and whether the effort bound stopped the search."""

    best: Strategy
    bound: float
    nodes: int
    stopped: bool


class ReducedCosts:
    """Lower bounds on the cost of the strategies that fit, from min-sum diffusion
    (`bound.py`) on the graph priced at cost + `rate`·memory, less `rate`·cap (module
    docstring): `lower` on all of them, `per_config[v][a]` on those with x_v = a, and
    `pairs` on those with (x_u, x_v) = (a, b) for each edge. `target`, LARAC's bound
    L(`rate`) where known, is what the diffusion may reach (`_approach`)."""

    def __init__(self, graph: CostGraph, memory: Sequence[np.ndarray], cap: float,
                 rate: float, jit: str = "auto", target: float = -math.inf) -> None:
        from pase.passes.strategy.bound import _Diffusion  # its moves are the bounds
        from pase.passes.strategy.memory import priced
        from pase.passes.strategy.repeats import block_moves

        priced_graph = CostGraph(graph.names, priced(graph.vertex_costs, list(memory), rate),
                                 dict(graph.edge_costs))
        self.diffusion = _Diffusion(priced_graph, jit)
        warm = block_moves(priced_graph, jit)
        if warm is None:
            for _ in range(SWEEPS):
                self.diffusion.sweep()
        else:
            self.diffusion.warm(warm)
            _settle(self.diffusion)
        _approach(self.diffusion, target + rate * cap)
        lower, per_config, _ = self.diffusion.bounds()
        self.shift = rate * cap
        self.lower = lower - self.shift
        self.per_config = [bound - self.shift for bound in per_config]
        # c'_v: the vertex costs with the moves added (as `_Diffusion.bounds` makes them).
        self.unary = self.diffusion.moved_costs()
        self._stars: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def stars(self, number: int) -> tuple[np.ndarray, np.ndarray]:
        """For edge `number` (u, v), min over b of c'_uv(a, b) + c'_v(b) for each a of u,
        and the same from v's side: the stars over every configuration of the other end,
        as in the bounds (made once, for every round's `pairs`)."""
        found = self._stars.get(number)
        if found is None:
            u, v = self.diffusion.edges[number]
            at_u, at_v = self.diffusion.moves[number]
            full = self.diffusion.graph.edge_costs[(u, v)] - at_u[:, None] - at_v[None, :]
            found = self._stars[number] = ((full + self.unary[v][None, :]).min(axis=1),
                                           (full + self.unary[u][:, None]).min(axis=0))
        return found

    def pairs(self, kept: Sequence[np.ndarray], limit: float
              ) -> dict[tuple[int, int], np.ndarray]:
        """For each edge, which pairs of kept configurations (indices `kept`) may be in a
        strategy costing at most `limit`: a strategy with x_u = a costs at least
        per_config[u][a], whose term for the edge is min_b (c'_uv(a, b) + c'_v(b));
        taking b instead adds the difference (and the same from v's side)."""
        masks = {}
        graph = self.diffusion.graph
        for number, (u, v) in enumerate(self.diffusion.edges):
            at_u, at_v = self.diffusion.moves[number]
            rows, cols = kept[u], kept[v]
            moved = graph.edge_costs[(u, v)][np.ix_(rows, cols)] - at_u[rows, None] \
                - at_v[None, cols]
            star_u, star_v = self.stars(number)
            star_u, star_v = star_u[rows], star_v[cols]
            from_u = self.per_config[u][rows, None] + moved + self.unary[v][None, cols] \
                - star_u[:, None]
            from_v = self.per_config[v][None, cols] + moved + self.unary[u][rows, None] \
                - star_v[None, :]
            masks[(u, v)] = np.maximum(from_u, from_v) <= limit
        return masks


def _settle(diffusion: _Diffusion) -> None:
    """Sweep `diffusion` (started from the parts' moves) until a sweep raises its lower
    bound by at most `SETTLED` of it, or `SWEEPS` times."""
    lower = diffusion.lower()[0]
    for _ in range(SWEEPS):
        diffusion.sweep()
        before, lower = lower, diffusion.lower()[0]
        if lower - before <= SETTLED * abs(lower):
            return


def _approach(diffusion: _Diffusion, target: float) -> None:
    """If the lower bound of `diffusion` is more than `CLOSE` of `target` (the least of
    the graph it prices: no bound exceeds it) below it, sweep on until a sweep raises it
    by at most `SETTLED` of it, or `MORE_SWEEPS` times. Every sweep is a
    reparametrisation, so every bound it gives is valid: the search stays exact. (No
    target, -inf: nothing to sweep, and no bound read.)"""
    if target == -math.inf:
        return
    lower = diffusion.lower()[0]
    if lower >= target - CLOSE * abs(target):
        return
    for _ in range(MORE_SWEEPS):
        diffusion.sweep()
        before, lower = lower, diffusion.lower()[0]
        if lower - before <= SETTLED * abs(lower):
            return


def close_gap(graph: CostGraph, memory: Sequence[np.ndarray], cap: float, rate: float,
              incumbent: Strategy, bound: float, effort: int | None = None,
              enough: Callable[[float], bool] | None = None, jit: str = "auto",
              ceiling: float = math.inf, order: str = "genseq", fold: bool = False) -> Closed:
    """The least-cost strategy of `graph` whose memory is at most `cap` (module docstring),
    given LARAC's best multiplier `rate`, a strategy that fits (`incumbent`) and a proven
    lower bound (`bound`). `effort` bounds the frontier DP's points over all rounds, in
    units of `POINTS_PER_EFFORT` (None: no bound); `enough` is told each bound proven and
    may end the search (`memory.solve_capped`, raising `memory.BoundReached`).
    `ceiling`, a cost no strategy of interest reaches (a better strategy found outside:
    `recomputed`'s best), caps every round's threshold: a round at it that finds nothing
    at most it proves the bound `ceiling` (told to `enough`) and ends the search there,
    with `incumbent` not proven. `order` is the frontier DP's elimination order
    (`orders.elimination_order`: genseq, bfs or minfill, as `pase-search`'s option): the
    same least cost once proven, the tie among equal-cost optima and the points made
    (so where `effort` stops it) its own; `fold`, `frontier_search`'s, alike.

    A search the effort stops, whose diffusion was more than `CLOSE` below LARAC's bound
    L(rate) (+ rate·cap), is made once more from what it proved, with the diffusion swept
    on towards it (`_approach`) and an effort of its own: its reduced costs keep less.
    (Only then: swept on from the start, the bounds change which of several equal-cost
    optima the rounds return, on the bundled Transformer at P = 8 under 2.194 GiB.)"""
    larac = bound
    reduced = ReducedCosts(graph, memory, cap, rate, jit)
    closed = _rounds(graph, memory, cap, rate, reduced, incumbent, bound, effort, enough,
                     ceiling, order, fold)
    target = larac + rate * cap
    if not closed.stopped or reduced.lower + rate * cap >= target - CLOSE * abs(target):
        return closed
    swept = ReducedCosts(graph, memory, cap, rate, jit, larac)
    again = _rounds(graph, memory, cap, rate, swept, closed.best, closed.bound, effort,
                    enough, ceiling, order, fold)
    return Closed(again.best, max(again.bound, closed.bound), closed.nodes + again.nodes,
                  again.stopped)


def _rounds(graph: CostGraph, memory: Sequence[np.ndarray], cap: float, rate: float,
            reduced: ReducedCosts, incumbent: Strategy, bound: float, effort: int | None,
            enough: Callable[[float], bool] | None, ceiling: float = math.inf,
            order: str = "genseq", fold: bool = False) -> Closed:
    """`close_gap`'s rounds on the reduced costs `reduced` (`order` and `fold` its)."""
    from pase.passes.strategy.frontier import frontier_search
    from pase.passes.strategy.memory import RELATIVE_TOLERANCE, BoundReached

    lower = reduced.lower
    tables = [*graph.vertex_costs, *graph.edge_costs.values()]
    margin = MARGIN * math.fsum(float(np.abs(t).max()) for t in tables) + MARGIN * cap * rate
    bound = max(bound, lower - margin)
    step = FIRST_STEP * abs(bound)
    threshold = bound + step
    moves = dict(zip(reduced.diffusion.edges, reduced.diffusion.moves, strict=True))
    points = 0
    first = True
    while True:
        if incumbent[1] <= bound * (1 + RELATIVE_TOLERANCE):
            return Closed(incumbent, min(bound, incumbent[1]), points, False)
        if bound >= ceiling:
            if enough is not None and enough(bound):
                raise BoundReached(bound)
            return Closed(incumbent, bound, points, False)
        limit = min(threshold, incumbent[1], ceiling)
        left = _left(effort, points)
        if left is not None and left <= 0:
            return Closed(incumbent, bound, points, True)
        kept = _kept(reduced, limit + margin)
        probe = first and (left is None or left > PROBE_POINTS)
        plain = False
        result = frontier_search(graph, memory, cap, limit, rate, reduced.unary, moves, *kept,
                                 margin, PROBE_POINTS if probe else left, order, fold=fold)
        points += result.points
        if probe and not result.finished:
            # A dear first round: the tight round first, then this one whole.
            proven, made = _tight(graph, memory, cap, rate, reduced, moves, incumbent, bound,
                                  margin, _left(effort, points), order, fold)
            points += made
            if proven is not None:
                return Closed(proven, proven[1], points, False)
            # The tight round failed: the first round is likely to find no strategy at
            # most T either (t16-dp4 and t64 of `benchmarks/capped.py`: the Lagrangian's
            # gap is wider than `TIGHT_STEP`), and would then be made again without the
            # window (below), so it is made without it at once; where it finds one, the
            # plain search finds the least of them too.
            result = frontier_search(graph, memory, cap, limit, rate, reduced.unary, moves,
                                     *kept, margin, _left(effort, points), order,
                                     window=False, fold=fold)
            points += result.points
            plain = True
        first = False
        if not plain and result.finished and limit < min(incumbent[1], ceiling) and \
                (result.choice is None or result.cost > limit + margin):
            # The window (`frontier_search`'s) changes only the best strategy met above T:
            # where none costs at most T, the round is made again without it, so that the
            # rounds after it (which start from that strategy) are the plain search's.
            result = frontier_search(graph, memory, cap, limit, rate, reduced.unary, moves,
                                     *kept, margin, _left(effort, points), order,
                                     window=False, fold=fold)
            points += result.points
        if not result.finished:
            return Closed(incumbent, bound, points, True)
        if result.choice is not None and result.cost < incumbent[1] and result.memory <= cap:
            incumbent = (result.choice, result.cost, result.memory)
        if result.choice is not None and result.cost <= limit + margin:
            # Every strategy that fits and costs at most `limit` was kept: the least of
            # them is the optimum.
            return Closed(incumbent, incumbent[1], points, False)
        bound = max(bound, limit)
        if enough is not None and enough(bound):
            raise BoundReached(bound)
        if result.choice is not None:
            # The least kept strategy, though above T, is a good incumbent: the round at
            # its cost cannot miss.
            threshold = incumbent[1]
        else:
            step *= GROWTH
            threshold = bound + step


def _kept(reduced: ReducedCosts, limit: float
          ) -> tuple[list[np.ndarray], dict[tuple[int, int], np.ndarray]]:
    """The configurations (masks) and edge pairs whose reduced-cost bounds are at most
    `limit`: what a round at that threshold searches."""
    keep = [per <= limit for per in reduced.per_config]
    return keep, reduced.pairs([np.flatnonzero(mask) for mask in keep], limit)


def _left(effort: int | None, points: int) -> int | None:
    """The points the effort leaves after `points` (None: no bound)."""
    return None if effort is None else effort * POINTS_PER_EFFORT - points


def _tight(graph: CostGraph, memory: Sequence[np.ndarray], cap: float, rate: float,
           reduced: ReducedCosts, moves: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]],
           incumbent: Strategy, bound: float, margin: float, left: int | None,
           order: str = "genseq", fold: bool = False) -> tuple[Strategy | None, int]:
    """The tight round (`TIGHT_STEP`) and its points: the optimum, proven, if a strategy
    that fits costs at most the bound + `TIGHT_STEP`·|bound| (the one the first of
    `_rounds` would prove optimal too, from the same reduced costs: the incumbent where
    it costs as much); else None, and nothing else is kept from it (the rounds after it
    run as they would without it). It makes at most `left` points, and at most
    1/`TIGHT_SHARE` of the effort's."""
    from pase.passes.strategy.frontier import frontier_search
    from pase.passes.strategy.memory import DEFAULT_EFFORT

    limit = min(bound + TIGHT_STEP * abs(bound), incumbent[1])
    share = DEFAULT_EFFORT * POINTS_PER_EFFORT // TIGHT_SHARE if left is None else \
        left // TIGHT_SHARE
    result = frontier_search(graph, memory, cap, limit, rate, reduced.unary, moves,
                             *_kept(reduced, limit + margin), margin, share, order,
                             fold=fold)
    if result.finished and result.choice is not None and result.cost <= limit + margin \
            and result.memory <= cap:
        if result.cost < incumbent[1]:
            return (result.choice, result.cost, result.memory), result.points
        return incumbent, result.points
    return None, result.points
