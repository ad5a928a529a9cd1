"""Dense blocks (DenseNet's), solved exactly by counting before the DP sees them.

In a dense block every layer reads the concatenation of the block's input p and the outputs
x_1..x_{j-1} of all the layers before it, and the block ends in one concatenation F of all of
them. Layer j's concatenation g_j reaches x_j through a path of layers (norm, relu, conv,
...), so contracting those paths gives a complete graph on the block's layers: the treewidth,
and with it the DP's largest dependent set, grows with the block (25 vertices in
DenseNet-121's third block; a table of 9.8e9 entries even after bounds), whatever the
elimination order.

The x_i all have one shape and the concatenations one configuration list, so every edge
x_i -> g_j carries the same table E(d, c) (a source configuration d, a concatenation
configuration c), and every edge p -> g_j the same E0. Then what the later concatenations
cost x_i depends on them only through how many of them take each configuration:

    sum_{j > i} E(d_i, c_j) = sum_k m_k(i) E(d_i, k),   m_k(i) = #{j > i : c_j = k}.

Configurations whose columns of E and E0 are equal merge into one class k. The block is then
a DP over the count vectors m (multisets of classes), layer by layer from the last: with the
later layers' counts m, layer j (its concatenation's class k, the path's configurations, and
x_j's configuration) costs W_j(m, k) = min_d (C_j(k, d) + sum_k' m_k' E(d, k')), where
C_j is the path's cost minimized over its interior, and the counts become m + e_k. A class
that another matches or beats on E, E0 and every C_j is never needed (the other takes its
place at no cost), and a source configuration that another matches or beats on its path and
every column of E neither. DenseNet-121's third block (23 concatenations and F, 7 classes of
which 6 are needed) has 2.2e5 count vectors at most per layer, 1.1e6 in all, not 9.8e9 table
entries. The block's result is a table over (p, F) that replaces the block in the
graph, and its argmins give back every interior configuration: the optimum is the one the DP
over the whole graph finds (the same cost up to rounding; among equal costs it may pick
another strategy, as another elimination order would).

A block of two layers: p -> c1 -> x1 and g2 -> c2 -> x2 (the paths), g2 and F reading p and
the earlier outputs:

    >>> sizes = {"p": 1, "c1": 2, "x1": 2, "g2": 2, "c2": 2, "x2": 2, "F": 2}
    >>> graph = CostGraph(list(sizes), [np.zeros(size) for size in sizes.values()])
    >>> read, path = np.array([[0.0, 4.0], [4.0, 0.0]]), np.ones((2, 2))
    >>> for u, v, table in [(0, 1, np.ones((1, 2))), (1, 2, path), (3, 4, path), (4, 5, path),
    ...                     (2, 3, read), (2, 6, read), (5, 6, read),
    ...                     (0, 3, np.zeros((1, 2))), (0, 6, np.zeros((1, 2)))]:
    ...     graph.add_edge(u, v, table)
    >>> [(b.stem, b.sources, b.concats, b.paths) for b in find_dense_blocks(graph, 2)]
    [(0, (2, 5), (3, 6), ((1,), (4,)))]
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.factors import argmin_dtype

MIN_LAYERS = 4
"""The fewest layers of a block that is reduced: smaller ones are cheap for the DP (and
DenseNet's smallest block has 6)."""
MAX_STATES = 1 << 29
"""The most count vectors times classes a block's DP may hold (else the DP sees the block)."""
CHUNK_STATES = 1 << 16
"""The count vectors whose sums a step forms at once."""

Expand = Callable[[Sequence[int]], tuple[int, ...]]


@dataclass(frozen=True)
class DenseBlock:
    """A dense block's vertices: `stem` (p), `sources` (x_1..x_n), `concats` (g_2..g_n and
    last F, the block's output) and `paths` (path j from p or g_j to x_j, its interior in
    order, p's first)."""

    stem: int
    sources: tuple[int, ...]
    concats: tuple[int, ...]
    paths: tuple[tuple[int, ...], ...]

    def interior(self) -> set[int]:
        """The vertices the block's reduction removes (all but p and F)."""
        return {*self.sources, *self.concats[:-1], *(v for path in self.paths for v in path)}


def oriented(graph: CostGraph, u: int, v: int) -> np.ndarray:
    """The edge table between u and v with u's configurations as rows."""
    return graph.edge_costs[(u, v)] if u < v else graph.edge_costs[(v, u)].T


def find_dense_blocks(graph: CostGraph, min_layers: int = MIN_LAYERS) -> list[DenseBlock]:
    """The graph's dense blocks of at least `min_layers` layers, disjoint, by their last
    concatenation's index."""
    neighbours = graph.neighbours()
    blocks: list[DenseBlock] = []
    used: set[int] = set()
    for final in range(len(graph.names)):
        if len(neighbours[final]) < min_layers + 1 or final in used:
            continue
        groups: dict[tuple[object, ...], list[int]] = {}
        for u in sorted(neighbours[final]):
            stored = graph.edge_costs[(min(u, final), max(u, final))]
            sample = np.ascontiguousarray(stored[:: max(1, stored.shape[0] // 16),
                                                 :: max(1, stored.shape[1] // 16)])
            key = (stored.shape, u < final,
                   hashlib.blake2b(sample.data, digest_size=16).digest())
            groups.setdefault(key, []).append(u)
        for members in groups.values():
            if len(members) >= min_layers:
                block = _block_of(graph, neighbours, final, members)
                if block is not None and not (used & {*block.interior(), final, block.stem}):
                    blocks.append(block)
                    used |= {*block.interior(), final}
                    break
    return blocks


def _block_of(graph: CostGraph, neighbours: list[set[int]], final: int,
              members: list[int]) -> DenseBlock | None:
    """The dense block whose sources are among `members` (neighbours of `final` with
    alike tables), or None if they do not make one."""
    table = oriented(graph, members[0], final)
    sources = [u for u in members if np.array_equal(oriented(graph, u, final), table)]
    readers = {x: {y for y in neighbours[x] if oriented(graph, x, y).shape == table.shape
                   and np.array_equal(oriented(graph, x, y), table)} for x in sources}
    sources.sort(key=lambda x: (-len(readers[x]), x))
    n = len(sources)
    if [len(readers[x]) for x in sources] != list(range(n, 0, -1)) or readers[sources[-1]] != {
            final}:
        return None
    concats = []
    for earlier, later in zip(sources, sources[1:], strict=False):
        extra = readers[earlier] - readers[later]
        if not readers[later] < readers[earlier] or len(extra) != 1:
            return None
        concats.append(extra.pop())
    concats.append(final)
    source_set = set(sources)
    others = [neighbours[g] - source_set for g in concats]
    stems = set.intersection(*others)
    if len(stems) != 1:
        return None
    stem = stems.pop()
    stem_table = oriented(graph, stem, final)
    if any(not np.array_equal(oriented(graph, stem, g), stem_table) for g in concats):
        return None
    paths = []
    for j, source in enumerate(sources):
        start = stem if j == 0 else concats[j - 1]
        if j and (len(others[j - 1]) != 2
                  or neighbours[start] & source_set != set(sources[:j])):
            return None
        rest = neighbours[source] - readers[source]
        if len(rest) != 1:
            return None
        path = _path(neighbours, source, rest.pop(), start)
        if path is None:
            return None
        paths.append(tuple(reversed(path)))
    block = DenseBlock(stem, tuple(sources), tuple(concats), tuple(paths))
    vertices = [*block.sources, *block.concats, *(v for p in block.paths for v in p), stem]
    return block if len(set(vertices)) == len(vertices) else None


def _path(neighbours: list[set[int]], source: int, first: int, start: int) -> list[int] | None:
    """The vertices from `first` (a neighbour of `source`) on to `start`, exclusive, if each
    has exactly two neighbours (a path); else None."""
    path: list[int] = []
    previous, current = source, first
    while current != start:
        if len(neighbours[current]) != 2 or current in path or len(path) > len(neighbours):
            return None
        path.append(current)
        previous, current = current, next(iter(neighbours[current] - {previous}))
    return path


def path_cost(graph: CostGraph, start: int, path: Sequence[int], end: int
              ) -> tuple[np.ndarray, list[np.ndarray]]:
    """C[a, b]: the least cost of the path's interior and of `end` (vertex costs and edges,
    not `start`'s vertex cost) with `start` at a and `end` at b; and per step the argmin
    tables that give the interior back (`path_choice`)."""
    vertices = [start, *path, end]
    cost = oriented(graph, start, vertices[1]) + graph.vertex_costs[vertices[1]][None, :]
    argmins = []
    for u, v in zip(vertices[1:-1], vertices[2:], strict=True):
        total = cost[:, :, None] + oriented(graph, u, v)[None, :, :]
        best = np.argmin(total, axis=1)
        argmins.append(best)
        cost = np.take_along_axis(total, best[:, None, :], axis=1)[:, 0, :]
        cost = cost + graph.vertex_costs[v][None, :]
    return cost, argmins


def path_choice(argmins: list[np.ndarray], a: int, b: int) -> list[int]:
    """The path's interior configurations, in order, with its start at a and end at b."""
    choice = []
    for best in reversed(argmins):
        b = int(best[a, b])
        choice.append(b)
    return choice[::-1]


class BlockSolver:
    """A dense block's counting DP (the module docstring): `table[p, F]`, the least cost of
    the block's interior, its edges and F's edges to it with p and F fixed; `choice(p, F)`
    the interior's configurations."""

    def __init__(self, graph: CostGraph, block: DenseBlock, budget: MemoryBudget) -> None:
        self.graph, self.block = graph, block
        x, final, stem = block.sources[0], block.concats[-1], block.stem
        table, stem_table = oriented(graph, x, final), oriented(graph, stem, final)
        columns = np.vstack([table, stem_table])
        _, first, self.class_of = np.unique(columns.T, axis=0, return_index=True,
                                            return_inverse=True)
        # Classes numbered by their first configuration, so that ties go to the lowest.
        renumber = np.argsort(np.argsort(first))
        self.class_of = renumber[self.class_of.reshape(-1)]
        representatives = np.sort(first)
        self.classes = len(representatives)
        self.table, self.stem_table = table[:, representatives], stem_table[:, representatives]
        self.paths = [path_cost(graph, stem if j == 0 else block.concats[j - 1], path, x_j)
                      for j, (path, x_j) in enumerate(zip(block.paths, block.sources,
                                                          strict=True))]
        # Per layer j >= 1: its concatenation's class and x_j's configuration -> the least
        # cost of g_j, its path and x_j, and g_j's configuration that has it.
        self.by_class = [self._class_costs(j) for j in range(1, len(block.sources))]
        self.kept = self._undominated()
        self.levels, self.charged = _levels(len(block.sources), self.classes, self.kept,
                                            table.shape[0], stem_table.shape[0], budget)
        self._solve()

    def _class_costs(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        concat = self.block.concats[j - 1]
        cost = self.paths[j][0] + self.graph.vertex_costs[concat][:, None]
        by_class = np.full((self.classes, cost.shape[1]), np.inf)
        best_config = np.zeros((self.classes, cost.shape[1]), dtype=np.int64)
        for config in range(cost.shape[0]):
            k = self.class_of[config]
            better = cost[config] < by_class[k]
            by_class[k] = np.where(better, cost[config], by_class[k])
            best_config[k] = np.where(better, config, best_config[k])
        return by_class, best_config

    def _undominated(self) -> list[int]:
        """The classes no other kept class dominates: a class at most as dear on every
        source's edge, the input's edge and every layer's path can take a dominated one's
        place in any strategy without raising its cost, so the optimum survives."""
        kept = list(range(self.classes))
        for k in range(self.classes):
            if any(other != k and (self.table[:, other] <= self.table[:, k]).all()
                   and (self.stem_table[:, other] <= self.stem_table[:, k]).all()
                   and all((cost[other] <= cost[k]).all() for cost, _ in self.by_class)
                   for other in kept):
                kept.remove(k)
        return kept

    def _solve(self) -> None:
        n, classes, kept = len(self.block.sources), self.classes, self.kept
        value = np.where(np.eye(classes, dtype=bool), 0.0, np.inf)  # level 1: F's class
        self.sources_best: list[np.ndarray] = []  # per level k: d given (state, kept class)
        self.class_best: list[np.ndarray] = []  # per level k+1: the class added (state, f)
        for k in range(1, n):
            by_class, _ = self.by_class[n - k - 1]  # layer j = n - k adds its concatenation
            step, best_source = _min_over_source(self._states(k), self.table,
                                                 by_class[kept])
            self.sources_best.append(best_source)
            value, added = self._next_level(k, value, step)
            self.class_best.append(added)
        states = self._states(n)
        step, self.first_best = _min_over_source(states, self.table, self.paths[0][0])
        step += states.astype(np.float64) @ self.stem_table.T
        self.result = np.full((step.shape[1], classes), np.inf)
        self.last_state = np.zeros((step.shape[1], classes), dtype=np.int64)
        columns = np.arange(step.shape[1])
        for start in range(0, step.shape[0], CHUNK_STATES):
            part = slice(start, start + CHUNK_STATES)
            for f in range(classes):
                total = value[part, f][:, None] + step[part]
                chosen = np.argmin(total, axis=0)
                better = total[chosen, columns] < self.result[:, f]
                self.result[better, f] = total[chosen, columns][better]
                self.last_state[better, f] = chosen[better] + start

    def _states(self, k: int) -> np.ndarray:
        """Level k's count vectors, one row each, from their keys."""
        n = len(self.block.sources)
        powers = (n + 1) ** np.arange(self.classes, dtype=np.int64)
        return ((self.levels[k][:, None] // powers[None, :]) % (n + 1)).astype(np.int16)

    def _next_level(self, k: int, value: np.ndarray, step: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Level k+1's values (its states by F's class) from level k's and the step costs
        W[state, kept class]; and which class each came by (the lowest of equal ones)."""
        n, keys = len(self.block.sources), self.levels[k + 1]
        powers = (n + 1) ** np.arange(self.classes, dtype=np.int64)
        best = np.empty((keys.size, value.shape[1]))
        added = np.zeros(best.shape, dtype=np.uint8)
        for start in range(0, keys.size, CHUNK_STATES):
            chunk = keys[start:start + CHUNK_STATES]
            chunk_best = np.full((chunk.size, value.shape[1]), np.inf)
            chunk_added = added[start:start + CHUNK_STATES]
            for position, g in enumerate(self.kept):
                has = (chunk // powers[g]) % (n + 1) > 0
                # (Every state less one of a kept class is a state of level k.)
                before = np.searchsorted(self.levels[k], chunk[has] - powers[g])
                candidate = np.full(chunk_best.shape, np.inf)
                candidate[has] = value[before] + step[before, position][:, None]
                better = candidate < chunk_best
                chunk_best = np.where(better, candidate, chunk_best)
                chunk_added[better] = g
            best[start:start + CHUNK_STATES] = chunk_best
        return best, added

    def choice(self, stem_config: int, final_config: int) -> dict[int, int]:
        """Every interior vertex's configuration in the block's optimum with p and F so."""
        block, n = self.block, len(self.block.sources)
        f = int(self.class_of[final_config])
        state = int(self.last_state[stem_config, f])
        chosen: dict[int, int] = {}
        source = int(self.first_best[state, stem_config])
        chosen[block.sources[0]] = source
        chosen.update(zip(block.paths[0], path_choice(self.paths[0][1], stem_config, source),
                          strict=True))
        for k in range(n, 1, -1):
            j = n - k + 1  # this level added concatenation j (0-based source j)
            states = self._states(k)
            g = int(self.class_best[k - 2][state, f])
            earlier = states[state].copy()
            earlier[g] -= 1
            state = int(np.searchsorted(self.levels[k - 1], _keys(earlier[None, :], n))[0])
            source = int(self.sources_best[k - 2][state, self.kept.index(g)])
            config = int(self.by_class[j - 1][1][g, source])
            chosen[block.sources[j]] = source
            chosen[block.concats[j - 1]] = config
            chosen.update(zip(block.paths[j], path_choice(self.paths[j][1], config, source),
                              strict=True))
        return chosen


def _min_over_source(states: np.ndarray, table: np.ndarray, own: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """W[s, a] = min_d (own[a, d] + sum_k states[s, k] table[d, k]) and its argmin d.

    The counts are at least 0, so a d that another d' matches or beats in own[a] and in
    every column of the table is never needed for that a (the lowest of equal ones stays).
    """
    step = np.empty((states.shape[0], own.shape[0]))
    best = np.empty(step.shape, dtype=argmin_dtype(own.shape[1]))
    needed = [[d for d in range(own.shape[1])
               if not any(other != d and own[a, other] <= own[a, d]
                          and (table[other] <= table[d]).all()
                          and (other < d or own[a, other] < own[a, d]
                               or (table[other] < table[d]).any())
                          for other in range(own.shape[1]))]
              for a in range(own.shape[0])]
    for start in range(0, states.shape[0], CHUNK_STATES):
        part = slice(start, start + CHUNK_STATES)
        reads = states[part].astype(np.float64) @ table.T  # (states, source configs)
        rows = np.arange(reads.shape[0])
        for a, configs in enumerate(needed):
            total = reads[:, configs] + own[a, configs][None, :]
            chosen = np.argmin(total, axis=1)
            best[part, a] = np.asarray(configs)[chosen]
            step[part, a] = total[rows, chosen]
    return step, best


def _keys(states: np.ndarray, n: int) -> np.ndarray:
    """Each count vector's number in base n + 1 (distinct, ordered as the levels keep them)."""
    powers = (n + 1) ** np.arange(states.shape[1], dtype=np.int64)
    return states.astype(np.int64) @ powers


def _levels(n: int, classes: int, kept: list[int], sources: int, stems: int,
            budget: MemoryBudget) -> tuple[list[np.ndarray], int]:
    """Per level k (1..n), the keys (`_keys`, ascending) of the count vectors of `classes`
    counts summing to k that the DP meets (F's class, any, and k - 1 of the `kept`
    classes; level 0 is empty); and the bytes charged to `budget` for the block's DP
    (`sources` and `stems`: the configurations of x and p)."""
    dropped = classes - len(kept)
    sizes = [math.comb(k + len(kept) - 1, len(kept) - 1)
             + dropped * math.comb(k + len(kept) - 2, len(kept) - 1) for k in range(1, n + 1)]
    if sum(sizes) * classes > MAX_STATES or (n + 1) ** classes >= 1 << 62:
        raise _TooLarge
    # Per state: its key and two argmin rows; on the largest level its counts, the values
    # in and out and the steps' costs; per chunk the sums.
    widest = max(sources, stems, classes)
    charged = (sum(sizes) * (8 + len(kept) + classes)
               + max(sizes) * (2 * classes + 16 * classes + 9 * widest)
               + min(CHUNK_STATES, max(sizes)) * (24 * sources + 32 * classes))
    budget.charge(charged, f"the counting DP of a dense block of {n} layers")
    levels = [np.zeros(0, dtype=np.int64)]
    powers = (n + 1) ** np.arange(classes, dtype=np.int64)
    keys = powers.copy()  # level 1: F's class
    for _ in range(n):
        levels.append(keys)
        grown = np.sort((keys[:, None] + powers[None, kept]).reshape(-1))
        keys = grown[np.concatenate(([True], grown[1:] != grown[:-1]))]
    return levels, charged


class _TooLarge(Exception):
    """A block whose counting DP would not fit `MAX_STATES` (the DP sees it instead)."""


@dataclass(frozen=True)
class Reduction:
    """A graph with its dense blocks reduced: `graph`, `expand` (its choice -> the whole
    graph's), `held` (the bytes the blocks' DPs hold in the budget until `expand` is done
    with; the caller releases them) and `layers` (each block's number of layers)."""

    graph: CostGraph
    expand: Expand
    held: int
    layers: tuple[int, ...]


def reduce_dense_blocks(graph: CostGraph, budget: MemoryBudget) -> Reduction | None:
    """The graph with each dense block's interior replaced by one table over (p, F), or
    None without blocks."""
    solvers = []
    for block in find_dense_blocks(graph):
        try:
            solvers.append(BlockSolver(graph, block, budget))
        except _TooLarge:
            continue
    if not solvers:
        return None
    removed = set().union(*(solver.block.interior() for solver in solvers))
    replaced = {tuple(sorted((s.block.stem, s.block.concats[-1]))) for s in solvers}
    kept = [v for v in range(len(graph.names)) if v not in removed]
    index = {v: i for i, v in enumerate(kept)}
    reduced = CostGraph([graph.names[v] for v in kept], [graph.vertex_costs[v] for v in kept])
    for (u, v), table in graph.edge_costs.items():
        if u in index and v in index and (u, v) not in replaced:
            reduced.add_edge(index[u], index[v], table)
    for solver in solvers:
        reduced.add_edge(index[solver.block.stem], index[solver.block.concats[-1]],
                         solver.result[:, solver.class_of])

    def expand(choice: Sequence[int]) -> tuple[int, ...]:
        whole = [0] * len(graph.names)
        for v, c in zip(kept, choice, strict=True):
            whole[v] = int(c)
        for solver in solvers:
            block = solver.block
            whole_choice = solver.choice(whole[block.stem], whole[block.concats[-1]])
            for v, c in whole_choice.items():
                whole[v] = c
        return tuple(whole)

    return Reduction(reduced, expand, sum(solver.charged for solver in solvers),
                     tuple(len(solver.block.sources) for solver in solvers))
