"""The exact search under a memory cap: PaSE's DP with a cost/memory frontier per entry.

The DP of `dp.py` keeps, for every configuration of a step's dependent set, the least
cost of the layers eliminated so far. Under a cap that is not enough: a dearer partial
strategy that needs less memory may be the one that fits. So here each entry keeps every
(cost, memory) pair no other pair of that entry beats in both (a Pareto frontier; memory
is a sum of per-layer terms, so the layers still to come add the same to both). Frontiers
of whole tables would be huge; four prunings keep them small:

- the cap: a partial strategy whose memory, plus the least memory of every layer still
  open, is over the cap is dropped;
- a threshold T on cost, with the Lagrangian bound: the graph reparametrised by min-sum
  diffusion at LARAC's multiplier λ (`capped.ReducedCosts`) has tables (`unary`, edge
  tables less their `moves`) that sum, for every strategy, to cost + λ·memory; a partial
  strategy's tables plus the least of each table it has not used (given the
  configurations its entry fixes) bound cost + λ·memory of all its completions, and a
  completion that fits costs at least that less λ·cap. Points whose bound is over T go.
  Diffusion makes every table's least value part of one near-optimal whole, so the bound
  is the Lagrangian's, tightened by every configuration the entry fixes;
- the configurations and edge pairs `keep` and `pairs` leave out (those whose own bound
  is over T) are never made;
- the memory window: a completion costs its reparametrised total less λ times its
  memory, which is at most the cap and at most what the point holds with every open
  layer at its largest kept configuration; a point whose bound less λ times that is over
  T goes (`_Search.prune`).

If a strategy that fits costs at most T, the search finds the least of them (proven
optimal); otherwise it proves that every strategy that fits costs more than T, and may
still return the best it met. `limit` bounds the points made (the effort: a count).

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 3.0]), np.array([1.0, 2.0])])
>>> graph.add_edge(0, 1, np.array([[0.0, 5.0], [5.0, 0.0]]))
>>> memory = [np.array([4.0, 1.0]), np.array([4.0, 1.0])]
>>> found = frontier_search(graph, memory, 5.0, threshold=10.0)
>>> found.choice, found.cost, found.finished
((1, 1), 5.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.orders import elimination_order
from pase.passes.strategy.pareto import (
    frontier_mask,
    pair_representatives,
    pareto_index,
    representatives_by_rows,
)

EdgeKey = tuple[int, int]
ROW_PAIRS = 256
"""A join whose left points have at least this many pairs each on average finds the least
pair of each entry and memory one left point at a time (`pareto.representatives_by_rows`)
instead of making every pair's indices."""


@dataclass(frozen=True)
class FrontierResult:
    """The least-cost strategy that fits found among the points kept (`choice`, None if
    none), its cost and memory; `finished` says the search ran to the end (else `limit`
    stopped it, and nothing is proven); `points` counts the points made."""

    choice: tuple[int, ...] | None
    cost: float
    memory: float
    finished: bool
    points: int


class PointLimit(Exception):
    """The search made more points than its limit."""


@dataclass
class _Points:
    """A factor: over `axes` (vertex ids, sorted), the points of its frontiers. `entry`
    is each point's flat index over the axes' kept configurations; `cost`, `memory`
    and `reduced` (the reparametrised cost + λ·memory) are of the tables in `terms`;
    `parts` maps each eliminated step's factor whose points it combines to their
    indices."""

    axes: tuple[int, ...]
    terms: frozenset[int]
    entry: np.ndarray
    cost: np.ndarray
    memory: np.ndarray
    reduced: np.ndarray
    parts: dict[int, np.ndarray]


@dataclass
class _Step:
    """What eliminating `vertex` kept, for walking back: per point of its result, the
    vertex's configuration and the points of the steps it combined."""

    vertex: int
    config: np.ndarray
    parts: dict[int, np.ndarray]


class _Tables:
    """The graph on the kept configurations: costs, memory, reparametrised costs (inf on
    pairs left out), each table's least reparametrised value, and the row minima of
    the edge tables (the least of an edge given one end)."""

    def __init__(self, graph: CostGraph, memory: Sequence[np.ndarray],
                 unary: Sequence[np.ndarray], moves: dict[EdgeKey, tuple[np.ndarray, np.ndarray]],
                 keep: Sequence[np.ndarray], pairs: dict[EdgeKey, np.ndarray] | None) -> None:
        self.kept = [np.flatnonzero(mask) for mask in keep]
        self.sizes = [int(k.size) for k in self.kept]
        self.cost = [graph.vertex_costs[v][k] for v, k in enumerate(self.kept)]
        self.memory = [np.asarray(memory[v], dtype=np.float64)[k]
                       for v, k in enumerate(self.kept)]
        self.reduced = [np.asarray(unary[v], dtype=np.float64)[k]
                        for v, k in enumerate(self.kept)]
        self.edges = list(graph.edge_costs)
        self.edge_cost: list[np.ndarray] = []
        self.edge_reduced: list[np.ndarray] = []
        self.row_minima: list[tuple[np.ndarray, np.ndarray]] = []
        for u, v in self.edges:
            rows, cols = self.kept[u], self.kept[v]
            table = graph.edge_costs[(u, v)][np.ix_(rows, cols)]
            at_u, at_v = moves[(u, v)]
            reduced = table - at_u[rows, None] - at_v[None, cols]
            if pairs is not None:
                reduced = np.where(pairs[(u, v)], reduced, math.inf)
            self.edge_cost.append(table)
            self.edge_reduced.append(reduced)
            self.row_minima.append((reduced.min(axis=1, initial=math.inf),
                                    reduced.min(axis=0, initial=math.inf)))
        vertices = len(self.kept)
        self.term_min = np.array([float(r.min(initial=math.inf)) for r in self.reduced]
                                 + [float(r.min(initial=math.inf)) for r in self.edge_reduced])
        self.memory_min = np.array([float(m.min(initial=math.inf)) for m in self.memory])
        self.memory_max = np.array([float(m.max(initial=-math.inf)) for m in self.memory])
        self.memory_spread = self.memory_max - self.memory_min
        self.incident: list[list[int]] = [[] for _ in range(vertices)]
        for number, (u, v) in enumerate(self.edges):
            self.incident[u].append(number)
            self.incident[v].append(number)


def frontier_search(graph: CostGraph, memory: Sequence[np.ndarray], cap: float,
                    threshold: float, rate: float = 0.0,
                    unary: Sequence[np.ndarray] | None = None,
                    moves: dict[EdgeKey, tuple[np.ndarray, np.ndarray]] | None = None,
                    keep: Sequence[np.ndarray] | None = None,
                    pairs: dict[EdgeKey, np.ndarray] | None = None,
                    margin: float = 0.0, limit: int | None = None,
                    order: str = "genseq", window: bool = True,
                    fold: bool = False) -> FrontierResult:
    """The least-cost strategy of `graph` whose memory is at most `cap`, if one costs at
    most `threshold` (module docstring). `unary` and `moves` reparametrise the graph
    priced at `rate` (default: the graph's own costs + `rate`·memory, no moves); `keep`
    and `pairs` restrict the configurations and the pairs of kept configurations of each
    edge; `margin` is added to `threshold` against rounding; `limit` bounds the points
    made. `window` drops the points whose completions cannot hold enough memory to cost
    at most `threshold` (`_Search.prune`): the same answer when one costs at most
    `threshold`, fewer points, but the best strategy met above it may differ. `fold`
    folds the layers of one kept configuration away (`_Folded`): the same least cost,
    fewer joins and points, but a tie (or costs a rounding apart) may go the other way."""
    if unary is None:
        unary = [cost + rate * np.asarray(weight, dtype=np.float64)
                 for cost, weight in zip(graph.vertex_costs, memory, strict=True)]
    if moves is None:
        moves = {(u, v): (np.zeros(graph.sizes[u]), np.zeros(graph.sizes[v]))
                 for u, v in graph.edge_costs}
    if keep is None:
        keep = [np.ones(size, dtype=bool) for size in graph.sizes]
    reduced_limit = threshold + margin + rate * cap
    folded = _Folded.of(graph, memory, unary, moves, keep, pairs) if fold else None
    if folded is not None and folded.empty:
        return FrontierResult(None, math.inf, math.inf, True, 0)
    if folded is not None:
        graph, memory, unary, moves, keep, pairs = folded.parts
        cap, reduced_limit = cap - folded.memory, reduced_limit - folded.reduced
    tables = _Tables(graph, memory, unary, moves, keep, pairs)
    search = _Search(tables, cap, reduced_limit, limit, rate if window else 0.0)
    if not np.isfinite(tables.term_min).all():
        return FrontierResult(None, math.inf, math.inf, True, 0)
    try:
        found = search.run(elimination_order(graph.neighbours(), order))
    except PointLimit:
        return FrontierResult(None, math.inf, math.inf, False, search.points)
    if found is None:
        return FrontierResult(None, math.inf, math.inf, True, search.points)
    choice = tuple(int(tables.kept[v][c]) for v, c in enumerate(found))
    if folded is not None:
        graph, memory, choice = folded.graph, folded.memory_vectors, folded.expand(choice)
    weight = math.fsum(float(vector[c]) for vector, c in zip(memory, choice, strict=True))
    return FrontierResult(choice, graph.total_cost(choice), weight, True, search.points)


class _Folded:
    """A frontier search's graph with its layers of one kept configuration folded away
    (a round's reduced costs often keep one configuration of most layers): each such
    layer's own terms, and those of its edges to others of them, are constants (`memory`,
    what they hold; `reduced`, their reparametrised cost), and each of its edges to a
    layer of several is a vector on that layer, added to its cost and reparametrised
    cost (pairs left out of the edge leave that configuration out). The search on `parts`
    (the other layers, under the cap less `memory` and the threshold less `reduced`) finds
    every strategy the whole search would keep, each with the same cost and memory bar
    the constants: the same least; it makes fewer points, and no join per folded layer."""

    def __init__(self, graph: CostGraph, memory: Sequence[np.ndarray],
                 unary: Sequence[np.ndarray], moves: dict[EdgeKey, tuple[np.ndarray, np.ndarray]],
                 keep: Sequence[np.ndarray], pairs: dict[EdgeKey, np.ndarray] | None,
                 single: list[int]) -> None:
        self.graph, self.memory_vectors = graph, memory
        self.single = single  # the one kept configuration of each layer, or -1
        self.rest = [v for v, c in enumerate(single) if c < 0]
        number = {v: i for i, v in enumerate(self.rest)}
        costs = [graph.vertex_costs[v].copy() for v in self.rest]
        moved = [np.asarray(unary[v], dtype=np.float64).copy() for v in self.rest]
        kept = [keep[v].copy() for v in self.rest]
        terms = [float(np.asarray(unary[v])[c]) for v, c in enumerate(single) if c >= 0]
        edges: dict[EdgeKey, np.ndarray] = {}
        edge_moves: dict[EdgeKey, tuple[np.ndarray, np.ndarray]] = {}
        edge_pairs: dict[EdgeKey, np.ndarray] = {}
        self.empty = False
        for (u, v), table in graph.edge_costs.items():
            at_u, at_v = moves[(u, v)]
            allowed = None if pairs is None else pairs[(u, v)]
            a, b = single[u], single[v]
            if a >= 0 and b >= 0:
                self.empty |= allowed is not None and not bool(allowed[0, 0])
                terms.append(float(table[a, b] - at_u[a] - at_v[b]))
            elif a >= 0 or b >= 0:
                rest, column = (v, table[a, :]) if a >= 0 else (u, table[:, b])
                moved_column = (column - at_u[a] - at_v) if a >= 0 else (column - at_u - at_v[b])
                costs[number[rest]] += column
                moved[number[rest]] += moved_column
                if allowed is not None:
                    ok = allowed[0, :] if a >= 0 else allowed[:, 0]
                    kept[number[rest]][np.flatnonzero(keep[rest])[~ok]] = False
            else:
                edges[(number[u], number[v])] = table
                edge_moves[(number[u], number[v])] = (at_u, at_v)
        if pairs is not None:  # (over the configurations still kept)
            still = [mask[np.flatnonzero(keep[v])] for v, mask in zip(self.rest, kept, strict=True)]
            for (u, v), allowed in pairs.items():
                if single[u] < 0 and single[v] < 0:
                    i, j = number[u], number[v]
                    edge_pairs[(i, j)] = allowed[np.ix_(still[i], still[j])]
        self.empty |= not all(bool(mask.any()) for mask in kept)
        self.memory = math.fsum(float(memory[v][c]) for v, c in enumerate(single) if c >= 0)
        self.reduced = math.fsum(terms)
        part = CostGraph([graph.names[v] for v in self.rest], costs, edges)
        self.parts = (part, [memory[v] for v in self.rest], moved, edge_moves, kept,
                      None if pairs is None else edge_pairs)

    @classmethod
    def of(cls, graph: CostGraph, memory: Sequence[np.ndarray], unary: Sequence[np.ndarray],
           moves: dict[EdgeKey, tuple[np.ndarray, np.ndarray]], keep: Sequence[np.ndarray],
           pairs: dict[EdgeKey, np.ndarray] | None) -> _Folded | None:
        """The folded search, or None where no layer, or every layer, keeps one
        configuration, or one keeps none (the search says so itself)."""
        counts = [int(np.count_nonzero(mask)) for mask in keep]
        if 1 not in counts or min(counts) == 0 or max(counts) == 1:
            return None
        single = [int(np.flatnonzero(mask)[0]) if n == 1 else -1
                  for mask, n in zip(keep, counts, strict=True)]
        return cls(graph, memory, unary, moves, keep, pairs, single)

    def expand(self, choice: Sequence[int]) -> tuple[int, ...]:
        """A strategy of `parts` as one of the whole graph."""
        whole = list(self.single)
        for v, c in zip(self.rest, choice, strict=True):
            whole[v] = int(c)
        return tuple(whole)


class _Search:
    """One run of the frontier DP: points above `reduced_limit` (threshold + λ·cap, on
    the reparametrised bound; `rate` is λ) or over `cap` are dropped, and those whose
    completions cannot hold enough memory to cost at most the threshold (`prune`)."""

    def __init__(self, tables: _Tables, cap: float, reduced_limit: float,
                 limit: int | None, rate: float = 0.0) -> None:
        self.tables = tables
        self.cap = cap
        self.reduced_limit = reduced_limit
        self.limit = limit
        self.rate = rate
        self.points = 0
        self.total_min = math.fsum(float(m) for m in tables.term_min)
        self.steps: dict[int, _Step] = {}

    def original(self) -> tuple[dict[int, _Points], list[set[int]]]:
        """The graph's own tables as factors (a point per configuration or kept pair),
        by key, and the keys of those that touch each vertex."""
        tables = self.tables
        vertices = len(tables.sizes)
        factors: dict[int, _Points] = {}
        touching: list[set[int]] = [set() for _ in range(vertices)]
        for v in range(vertices):
            factors[v] = _Points((v,), frozenset([v]), np.arange(tables.sizes[v]),
                                 tables.cost[v], tables.memory[v], tables.reduced[v], {})
            touching[v].add(v)
        for number, (u, v) in enumerate(tables.edges):
            reduced = tables.edge_reduced[number]
            entry = np.flatnonzero(np.isfinite(reduced).ravel())
            key = vertices + number
            factors[key] = _Points((u, v), frozenset([key]), entry,
                                   tables.edge_cost[number].ravel()[entry],
                                   np.zeros(entry.size), reduced.ravel()[entry], {})
            touching[u].add(key)
            touching[v].add(key)
        return factors, touching

    def run(self, sequence: Sequence[int]) -> tuple[int, ...] | None:
        """Eliminate in `sequence`; the least-cost strategy that fits among the points
        left (kept-configuration indices), or None."""
        factors, touching = self.original()
        keys = len(factors)
        for vertex in sequence:
            consumed = sorted(touching[vertex], key=lambda key: (factors[key].entry.size, key))
            joined = factors[consumed[0]]
            for key in consumed[1:]:
                joined = self.join(joined, factors[key])
            for key in consumed:
                for axis in factors.pop(key).axes:
                    touching[axis].discard(key)
            result = self.project(joined, vertex, keys)
            factors[keys] = result
            for axis in result.axes:
                touching[axis].add(keys)
            keys += 1
        # Every factor left is over no vertex (one per connected component).
        remaining = sorted(factors)
        if not remaining:
            return ()
        final = factors[remaining[0]]
        for key in remaining[1:]:
            final = self.join(final, factors[key])
        # A step with one factor joins nothing, so nothing pruned its points: the cap is
        # checked here on every strategy left (its memory is whole now).
        fitting = np.flatnonzero(final.memory <= self.cap)
        if fitting.size == 0:
            return None
        best = int(fitting[np.lexsort((final.memory[fitting], final.cost[fitting]))[0]])
        return self.walk_back(final, best)

    def as_part(self, factor: _Points, key: int) -> _Points:
        """`factor` (a step's result, under `key`) as its points' own source."""
        if key in self.steps:
            return _Points(factor.axes, factor.terms, factor.entry, factor.cost,
                           factor.memory, factor.reduced,
                           {key: np.arange(factor.entry.size)})
        return factor

    def join(self, left: _Points, right: _Points) -> _Points:
        """Every pair of points of `left` and `right` that agree on their shared axes,
        summed, then pruned (`prune`). Pairs whose bound is over the threshold even with
        each table read by both sides taken at its least given one side's configurations
        are never made: per shared configuration, the right points sorted by their part
        of the bound, each left point takes those under what its part leaves."""
        sizes = self.tables.sizes
        axes = tuple(sorted(set(left.axes) | set(right.axes)))
        terms = left.terms | right.terms
        shared = [axis for axis in left.axes if axis in right.axes]
        left_coords = _coordinates(left, sizes)
        right_coords = _coordinates(right, sizes)
        left_key = _flat([left_coords[a] for a in shared], [sizes[a] for a in shared],
                         left.entry.size)
        right_key = _flat([right_coords[a] for a in shared], [sizes[a] for a in shared],
                          right.entry.size)
        items = self.bound_items(terms, axes, left.axes)
        base = self.base(terms)
        left_part = left.reduced + self.evaluate(items, "left", left_coords, left.entry.size)
        right_part = right.reduced + self.evaluate(items, "right", right_coords,
                                                   right.entry.size)
        values, rank = np.unique(right_part, return_inverse=True)
        ranks = max(values.size, 1)
        composite = right_key * ranks + rank.astype(np.int64)
        order = np.argsort(composite, kind="stable")
        sorted_composite = composite[order]
        room = np.searchsorted(values, self.reduced_limit - base - left_part, side="right")
        start = np.searchsorted(sorted_composite, left_key * ranks, side="left")
        stop = np.searchsorted(sorted_composite, left_key * ranks + room, side="left")
        counts = stop - start
        total = int(counts.sum())
        self.points += total
        if self.limit is not None and self.points > self.limit:
            raise PointLimit
        strides = _strides(axes, sizes)
        flats = (_flat_part(left_coords, strides, left.entry.size),
                 _flat_part({a: c for a, c in right_coords.items() if a not in left_coords},
                            strides, right.entry.size))
        # Of the pairs that share an entry and a memory only the least costly can be on
        # the frontier: where they can be found from the sides' keys, only they are made
        # whole and tested (a pair the least of its entry and memory beats passes the
        # tests only if that one does: its bound is as much more as its cost).
        sides = ((left.memory, right.memory), (left.cost, right.cost))
        rows = None if not total or total < ROW_PAIRS * left.entry.size else \
            representatives_by_rows(flats, *sides, order, start, stop)
        least: np.ndarray | None = None
        if rows is not None:
            from_left, from_right = rows
        else:
            from_left = np.repeat(np.arange(left.entry.size), counts)
            offsets = np.cumsum(counts) - counts
            from_right = order[start[from_left] + np.arange(total) - offsets[from_left]]
            least = pair_representatives(flats, *sides, from_left, from_right)
            if least is not None:
                from_left, from_right = from_left[least], from_right[least]
        coords = {axis: (left_coords[axis][from_left] if axis in left_coords
                         else right_coords[axis][from_right]) for axis in axes}
        memory = left.memory[from_left] + right.memory[from_right]
        reduced = left.reduced[from_left] + right.reduced[from_right]
        # Only the pairs the cap, the threshold and the window keep are made whole (their
        # entry and cost), and of those only the frontier's (their parts).
        kept = self.prune(terms, axes, coords, memory, reduced)
        from_left, from_right, memory, reduced = (from_left[kept], from_right[kept],
                                                  memory[kept], reduced[kept])
        entry = flats[0][from_left] + flats[1][from_right]
        cost = left.cost[from_left] + right.cost[from_right]
        best = pareto_index(entry, memory, cost) if least is None and rows is None else \
            np.flatnonzero(frontier_mask(entry, cost))
        from_left, from_right = from_left[best], from_right[best]
        parts = {key: index[from_left] for key, index in left.parts.items()}
        parts.update({key: index[from_right] for key, index in right.parts.items()})
        return _Points(axes, terms, entry[best], cost[best], memory[best], reduced[best], parts)

    def base(self, terms: frozenset[int]) -> float:
        """The least of every table not in `terms`."""
        return self.total_min - math.fsum(
            self.tables.term_min[np.fromiter(terms, np.int64, len(terms))].tolist())

    def bound_items(self, terms: frozenset[int], axes: tuple[int, ...],
                    left_axes: tuple[int, ...]) -> list[tuple[str, str, int, int]]:
        """What the configurations on `axes` add to `base(terms)` for the tables not in
        `terms` that read them: (side, kind, table number, vertex). A table whose
        configurations all lie on one side's axes (`left_axes`, else the right's) is
        that side's, read exactly ("unary", "pair"); one with an end off the axes, or
        one end on each side only, is read at its least given the left's end ("row")."""
        tables = self.tables
        vertices = len(tables.sizes)
        items = []
        for axis in axes:
            side = "left" if axis in left_axes else "right"
            if axis not in terms:
                items.append((side, "unary", axis, axis))
            for number in tables.incident[axis]:
                if vertices + number in terms:
                    continue
                u, v = tables.edges[number]
                other = v if axis == u else u
                if other not in axes:
                    items.append((side, "row", number, axis))
                elif (other in left_axes) == (axis in left_axes):
                    if axis == u:  # counted once, from u
                        items.append((side, "pair", number, axis))
                elif side == "left":  # one end on each side: the left's reads it
                    items.append((side, "row", number, axis))
        return items

    def evaluate(self, items: list[tuple[str, str, int, int]], side: str,
                 coords: dict[int, np.ndarray], count: int) -> np.ndarray:
        """The sum of `side`'s items at each point."""
        tables = self.tables
        vertices = len(tables.sizes)
        total = np.zeros(count)
        for owner, kind, number, axis in items:
            if owner != side:
                continue
            if kind == "unary":
                total += tables.reduced[axis][coords[axis]] - tables.term_min[axis]
                continue
            u, v = tables.edges[number]
            if kind == "pair":
                value = tables.edge_reduced[number][coords[u], coords[v]]
            else:
                value = tables.row_minima[number][0 if axis == u else 1][coords[axis]]
            total += value - tables.term_min[vertices + number]
        return total

    def prune(self, terms: frozenset[int], axes: tuple[int, ...],
              coords: dict[int, np.ndarray], memory: np.ndarray,
              reduced: np.ndarray) -> np.ndarray:
        """Which points (over `axes`, of the tables in `terms`, each with its `coords`,
        `memory` and `reduced`) are not over the cap or the threshold (given the tables
        they have not used, as the configurations of their entry fix them), in order;
        `join` then keeps of them those no other point of their entry beats in both cost
        and memory.

        A completion's cost is its reparametrised total R less λ times its memory M,
        and R is at least the point's `bound`: so it costs at most the threshold T only
        if λ·M ≥ bound − T. M is at most the cap, and at most the point's memory with
        each layer still open at its largest kept configuration (`high`): the point goes
        unless bound − λ·min(cap, high) ≤ T (λ·cap alone is the plain threshold test).
        Where λ makes many configurations cost the same (ZeRO's gathers priced per byte
        at the memory they save), this drops the partial strategies that hold too little
        memory to reach the cap, which the plain test keeps."""
        tables = self.tables
        items = self.bound_items(terms, axes, axes)
        bound = reduced + self.base(terms) + self.evaluate(items, "left", coords, memory.size)
        # The layers still open: neither eliminated (in `terms`) nor on the axes.
        still = np.ones(len(tables.sizes), dtype=bool)
        still[[term for term in terms if term < still.size]] = False
        still[list(coords)] = False
        open_memory = math.fsum(tables.memory_min[still].tolist())
        weight = memory + open_memory
        for axis in axes:
            if axis not in terms:
                weight = weight + tables.memory[axis][coords[axis]]
        fits = (bound <= self.reduced_limit) & (weight <= self.cap)
        if self.rate > 0:
            room = math.fsum(tables.memory_spread[still].tolist())
            high = weight + room
            fits &= (high >= self.cap) | \
                (bound - self.rate * high <= self.reduced_limit - self.rate * self.cap)
        return np.flatnonzero(fits)

    def project(self, factor: _Points, vertex: int, key: int) -> _Points:
        """Eliminate `vertex`: its configuration goes from the entry to the step's record
        (under `key`), and the points of each entry left are pruned to its frontier."""
        sizes = self.tables.sizes
        coords = _coordinates(factor, sizes)
        axes = tuple(axis for axis in factor.axes if axis != vertex)
        entry = _flat([coords[a] for a in axes], [sizes[a] for a in axes], factor.entry.size)
        projected = _pareto(_Points(axes, factor.terms, entry, factor.cost, factor.memory,
                                    factor.reduced, {**factor.parts,
                                                     -1: coords[vertex]}))
        config = projected.parts.pop(-1)
        self.steps[key] = _Step(vertex, config, projected.parts)
        return self.as_part(projected, key)

    def walk_back(self, final: _Points, best: int) -> tuple[int, ...]:
        choice = [0] * len(self.tables.sizes)
        pending = [(key, int(index[best])) for key, index in final.parts.items()]
        while pending:
            key, point = pending.pop()
            step = self.steps[key]
            choice[step.vertex] = int(step.config[point])
            pending.extend((part, int(index[point])) for part, index in step.parts.items())
        return tuple(choice)


def _coordinates(factor: _Points, sizes: Sequence[int]) -> dict[int, np.ndarray]:
    """Each axis's configuration (kept index) at each point."""
    if not factor.axes:
        return {}
    shape = tuple(sizes[axis] for axis in factor.axes)
    return dict(zip(factor.axes, np.unravel_index(factor.entry, shape), strict=True))


def _flat(coords: Sequence[np.ndarray], shape: Sequence[int], count: int) -> np.ndarray:
    if not coords:
        return np.zeros(count, dtype=np.int64)
    return np.ravel_multi_index(tuple(coords), tuple(shape)).astype(np.int64)


def _strides(axes: Sequence[int], sizes: Sequence[int]) -> dict[int, int]:
    """Each axis's stride in the flat index over `axes` (`_flat`'s, row-major)."""
    strides, step = {}, 1
    for axis in reversed(axes):
        strides[axis] = step
        step *= sizes[axis]
    return strides


def _flat_part(coords: dict[int, np.ndarray], strides: dict[int, int],
               count: int) -> np.ndarray:
    """The part of the flat index (`_strides`) that the axes of `coords` give: `_flat`
    of a join is its sides' parts summed (the same integers)."""
    flat = np.zeros(count, dtype=np.int64)
    for axis, coord in coords.items():
        flat += coord.astype(np.int64) * strides[axis]
    return flat


def _select(factor: _Points, mask: np.ndarray) -> _Points:
    return _Points(factor.axes, factor.terms, factor.entry[mask], factor.cost[mask],
                   factor.memory[mask], factor.reduced[mask],
                   {key: index[mask] for key, index in factor.parts.items()})


def _pareto(factor: _Points) -> _Points:
    """The points no other point of the same entry beats in both cost and memory (of
    equal pairs, the first), in order of entry, then memory (`pareto.pareto_index`)."""
    if factor.entry.size <= 1:
        return factor
    return _select(factor, pareto_index(factor.entry, factor.memory, factor.cost))
