"""Exact pruning of configurations before the DP.

A configuration a of layer v can go when another configuration b of v is at least as good
everywhere: its layer cost is no higher and, for every incident edge and every configuration
of the neighbour, its edge cost is no higher. Any strategy using a then costs at least as much
with b instead, so the optimum survives. Configurations with identical cost rows are merged
(the lowest index stays). Removing configurations of one layer shrinks its neighbours' rows,
which can expose more dominance, so the pass repeats until nothing changes.

Finding every dominated row is quadratic in K; each row is instead tested against the few
rows with the smallest totals, which is where dominators are. Whatever is removed is
provably dominated, so the result is exact whichever rows the test misses.

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 2.0, 1.0]), np.array([0.0, 0.0])])
>>> graph.add_edge(0, 1, np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]))
>>> pruned, kept = prune(graph)
>>> [k.tolist() for k in kept]
[[0], [0]]
"""

from __future__ import annotations

import contextlib

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph

CANDIDATES = 16
FIRST_COLUMNS = 16
"""A candidate is compared with the rows alive on this many columns first (most rows differ
there), then on the rest with those that passed."""
GATHERED = 4
STAGED_ENTRIES = 1 << 15
"""Rows with fewer entries in all are tested the plain way (`_plain_survivors`): the staged
test's extra numpy calls cost more there (measured: 40 x 200 rows 145 us plain, 251
staged; 100 x 1,000 rows 1,445 against 484)."""
"""Those rows are copied out for the rest of the comparison where they are under a
`GATHERED`-th of all rows; otherwise every row is compared in place."""

ViewKey = tuple[int, tuple[int, ...], tuple[int, ...]]


def _view_key(table: np.ndarray) -> ViewKey:
    """What fixes a view's contents while its buffer lives: where its data starts, its shape
    and strides (the graph keeps a view of each shared table per edge)."""
    return (table.__array_interface__["data"][0], table.shape, table.strides)


def rows_bytes(configs: int, width: int) -> int:
    """The most `_survivors` holds at once for a vertex of `configs` configurations whose
    rows have `width` entries: the rows (float64), each row's bytes in the set of seen
    rows, and one dominance mask.

        >>> rows_bytes(10, 5)
        1650
    """
    return configs * (width * (8 + 8 + 1) + 80)


def _rows(vertex_costs: list[np.ndarray], edge_costs: dict[tuple[int, int], np.ndarray],
          incident: list[tuple[int, int]], vertex: int,
          extra: np.ndarray | None = None) -> np.ndarray:
    """Layer cost and every incident edge's costs, one row per configuration of `vertex`
    (and `extra`, a resource of each configuration, as one more column)."""
    parts = [vertex_costs[vertex][:, None]]
    if extra is not None:
        parts.append(extra[:, None])
    for u, v in incident:
        parts.append(edge_costs[(u, v)] if u == vertex else edge_costs[(u, v)].T)
    return np.ascontiguousarray(np.hstack(parts))


def _survivors(rows: np.ndarray) -> np.ndarray:
    """Indices of rows neither identical to an earlier row nor dominated by a candidate.

    Each candidate is compared on the first `FIRST_COLUMNS` columns, then on the rest with
    the rows alive that passed: the same comparisons of the same entries, so the same
    rows go (an identical row or one already dominated is not
    compared again; it is gone either way)."""
    if rows.size < STAGED_ENTRIES:
        return _plain_survivors(rows)
    alive = _firsts(rows)
    totals = rows.sum(axis=1)
    for candidate in np.argsort(totals, kind="stable")[:CANDIDATES]:
        if not alive[candidate]:
            continue
        row = rows[candidate]
        first = (rows[:, :FIRST_COLUMNS] >= row[:FIRST_COLUMNS]).all(axis=1) & alive
        tested = np.flatnonzero(first)
        if tested.size and rows.shape[1] > FIRST_COLUMNS:
            if tested.size * GATHERED < rows.shape[0]:
                rest = (rows[tested, FIRST_COLUMNS:] >= row[FIRST_COLUMNS:]).all(axis=1)
            else:  # (most rows passed: comparing in place beats copying them)
                rest = (rows[:, FIRST_COLUMNS:] >= row[FIRST_COLUMNS:]).all(axis=1)[tested]
            tested = tested[rest]
        alive[tested[tested != candidate]] = False
    return np.flatnonzero(alive)


def _plain_survivors(rows: np.ndarray) -> np.ndarray:
    """`_survivors` on few rows: each row's bytes looked up in a set, each candidate compared
    with every row at once (fewer numpy calls)."""
    alive = np.zeros(rows.shape[0], dtype=bool)
    seen: set[bytes] = set()
    for index in range(rows.shape[0]):
        key = rows[index].tobytes()
        if key not in seen:
            seen.add(key)
            alive[index] = True
    for candidate in np.argsort(rows.sum(axis=1), kind="stable")[:CANDIDATES]:
        if alive[candidate]:
            dominated = (rows >= rows[candidate]).all(axis=1)
            dominated[candidate] = False
            alive &= ~dominated
    return np.flatnonzero(alive)


def _firsts(rows: np.ndarray) -> np.ndarray:
    """Which rows have bytes no earlier row has. Rows are hashed as integers (their 64-bit
    words times fixed odd numbers, summed modulo 2^64: equal bytes, equal hashes); only
    rows sharing a hash are compared by their bytes.

        >>> _firsts(np.array([[0.0, 1.0], [-0.0, 1.0], [0.0, 1.0]])).tolist()
        [True, True, False]
    """
    _, inverse, counts = np.unique(row_hashes(rows), return_inverse=True,
                                   return_counts=True)
    alive = counts[inverse] == 1
    seen: set[bytes] = set()
    for index in np.flatnonzero(~alive):
        key = rows[index].tobytes()
        if key not in seen:
            seen.add(key)
            alive[index] = True
    return alive


def row_hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bytes: its words times fixed odd numbers, summed modulo
    2^64 (rows of equal bytes have equal hashes; integer arithmetic, so exactly)."""
    words = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    multipliers = np.random.default_rng(0).integers(
        1, 1 << 63, words.shape[1], dtype=np.uint64) | np.uint64(1)
    hashes: np.ndarray = words @ multipliers
    return hashes


def prune(graph: CostGraph, budget: MemoryBudget | None = None, max_rounds: int = 8,
          extra: list[np.ndarray] | None = None) -> tuple[CostGraph, list[np.ndarray]]:
    """The graph restricted to undominated configurations, and for each vertex the
    original indices of the configurations it kept (ascending).

    With `extra` (one vector per vertex: a resource a constraint bounds, such as memory
    per device), a configuration also needs no more of it than its dominator, so the
    optimum under a cap on the resource's sum survives too.

    With `budget`, each vertex's rows are charged while they exist and each pruned copy
    for as long as it lives (the copies of earlier rounds until pruning ends).
    """
    kept = [np.arange(cost.size) for cost in graph.vertex_costs]
    vertex_costs = list(graph.vertex_costs)
    edge_costs = dict(graph.edge_costs)
    incident: list[list[tuple[int, int]]] = [[] for _ in graph.names]
    for u, v in edge_costs:
        incident[u].append((u, v))
        incident[v].append((u, v))
    # Repeated blocks share one edge matrix (`Problem.cost_graph`); slicing a shared matrix
    # the same way twice gives the one result, so the pruned tables stay shared too.
    sliced: dict[tuple[ViewKey, int, bytes], tuple[np.ndarray, np.ndarray]] = {}

    def take(matrix: np.ndarray, axis: int, survivors: np.ndarray) -> np.ndarray:
        key = (_view_key(matrix), axis, survivors.tobytes())
        if key not in sliced:  # (the entry keeps `matrix` alive, so its buffer stays)
            shape = list(matrix.shape)
            shape[axis] = survivors.size
            if budget is not None:
                budget.charge(8 * shape[0] * shape[1], "a pruned cost table")
            sliced[key] = (matrix, np.take(matrix, survivors, axis=axis))
        return sliced[key][1]

    # A vertex whose cost vector and incident tables (in the same order and orientation)
    # are the very arrays of an earlier vertex has that vertex's rows, hence its survivors:
    # identical layers of repeated blocks are pruned once, and their pruned vectors shared.
    survivors_of: dict[tuple[object, ...], tuple[list[np.ndarray], np.ndarray]] = {}
    pruned_vectors: dict[tuple[ViewKey, bytes], tuple[np.ndarray, np.ndarray]] = {}

    def survivors_for(vertex: int) -> np.ndarray:
        tables = [vertex_costs[vertex], *(edge_costs[edge] for edge in incident[vertex])]
        key = (*(_view_key(table) for table in tables),
               *(u == vertex for u, _ in incident[vertex]))
        if key not in survivors_of:  # (the entry keeps the tables alive, so their buffers stay)
            width = 1 + sum(edge_costs[edge].size // vertex_costs[vertex].size
                            for edge in incident[vertex])
            with _holding(budget, rows_bytes(vertex_costs[vertex].size, width),
                          f"pruning the configurations of layer '{graph.names[vertex]}'"):
                survivors_of[key] = (tables, _survivors(_rows(vertex_costs, edge_costs,
                                                              incident[vertex], vertex)))
        return survivors_of[key][1]

    def pruned_vector(vertex: int, survivors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vector = vertex_costs[vertex]
        key = (_view_key(vector), survivors.tobytes())
        if key not in pruned_vectors:
            pruned_vectors[key] = (vector, vector[survivors])
            _charge(budget, pruned_vectors[key][1].nbytes)
        return pruned_vectors[key][1], kept[vertex][survivors]

    dirty = set(range(len(graph.names)))
    for _ in range(max_rounds):
        if not dirty:
            break
        touched: set[int] = set()
        for vertex in sorted(dirty):
            if vertex_costs[vertex].size == 1:
                continue
            if extra is None:
                survivors = survivors_for(vertex)
            else:  # (a resource column per vertex: its rows are its own)
                width = 2 + sum(edge_costs[edge].size // vertex_costs[vertex].size
                                for edge in incident[vertex])
                with _holding(budget, rows_bytes(vertex_costs[vertex].size, width),
                              f"pruning the configurations of layer "
                              f"'{graph.names[vertex]}'"):
                    survivors = _survivors(_rows(vertex_costs, edge_costs, incident[vertex],
                                                 vertex, extra[vertex][kept[vertex]]))
            if survivors.size == vertex_costs[vertex].size:
                continue
            vertex_costs[vertex], kept[vertex] = pruned_vector(vertex, survivors)
            _charge(budget, kept[vertex].nbytes)
            for u, v in incident[vertex]:
                matrix = edge_costs[(u, v)]
                edge_costs[(u, v)] = take(matrix, 0 if u == vertex else 1, survivors)
                touched.add(v if u == vertex else u)
        dirty = touched
    pruned = CostGraph(graph.names, vertex_costs, edge_costs)
    if budget is not None:
        # The copies of earlier rounds go with `sliced`; the final ones stay charged.
        final = set(pruned.buffers())
        budget.release(sum(table.nbytes for _, table in sliced.values()
                           if table.__array_interface__["data"][0] not in final))
    return pruned, kept


def _charge(budget: MemoryBudget | None, nbytes: int) -> None:
    if budget is not None:
        budget.charge(nbytes, "a pruned cost vector")


def _holding(budget: MemoryBudget | None, nbytes: int, what: str
             ) -> contextlib.AbstractContextManager[None]:
    return budget.holding(nbytes, what) if budget is not None else contextlib.nullcontext()
