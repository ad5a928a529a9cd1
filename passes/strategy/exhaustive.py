"""Brute-force search over every strategy, for small graphs and for checking the DP.

The vertices split into a head and a tail: the tail's strategies form one numpy table (the sum of
the tail's vertex and edge costs), and each head strategy, in lexicographic order, adds its own
costs to that table with broadcasting. Ties go to the lexicographically smallest strategy.

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 0.0]), np.array([0.0, 0.0])])
>>> graph.add_edge(0, 1, np.array([[0.0, 0.0], [2.0, 0.0]]))
>>> solve_exhaustive(graph).choice
(1, 1)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import DPResult, SearchError

CHUNK_ENTRIES = 1 << 18


def solve_exhaustive(graph: CostGraph, limit: int = 10**7,
                     weights: Sequence[np.ndarray] | None = None,
                     cap: float = math.inf) -> DPResult:
    """The cheapest of all prod(K_v) strategies; refuses with `SearchError` above `limit`.

    With `weights` (one vector per vertex, like the vertex costs: a resource such as
    memory, summed over the chosen configurations), only strategies whose weight is at
    most `cap` count; if none does, the result's cost is inf. The result has `order=()`,
    `max_dependent_set=0` and `table_entries` = the number of strategies.

    >>> graph = CostGraph(["a"], [np.array([2.0, 1.0, 1.0])])
    >>> solve_exhaustive(graph).choice, solve_exhaustive(graph).table_entries
    ((1,), 3)
    """
    sizes = graph.sizes
    strategies = math.prod(sizes)
    if strategies > limit:
        raise SearchError(f"exhaustive search would try {strategies:,} strategies, over the "
                          f"limit of {limit:,}; use method=dp")
    split = _head_size(sizes)
    head, tail = range(split), range(split, len(sizes))
    tail_shape = tuple(sizes[vertex] for vertex in tail)
    tail_table = _tail_costs(graph, split, tail_shape)
    tail_weight = None
    if weights is not None:
        tail_weight = np.zeros(tail_shape, dtype=np.float64)
        for offset, weight in enumerate(weights[split:]):
            tail_weight += _along(np.asarray(weight, dtype=np.float64), offset, len(tail_shape))
    head_to_tail = [(u, v, edge_cost) for (u, v), edge_cost in graph.edge_costs.items()
                    if u < split <= v]
    within_head = [(u, v, edge_cost) for (u, v), edge_cost in graph.edge_costs.items() if v < split]

    best_cost = math.inf
    best_choice: tuple[int, ...] = tuple([0] * len(sizes))
    candidate = np.empty(tail_shape, dtype=np.float64)
    for head_choice in itertools.product(*(range(sizes[vertex]) for vertex in head)):
        head_cost = sum(float(graph.vertex_costs[vertex][head_choice[vertex]]) for vertex in head)
        head_cost += sum(float(edge[head_choice[u], head_choice[v]]) for u, v, edge in within_head)
        np.add(tail_table, head_cost, out=candidate)
        for u, v, edge_cost in head_to_tail:
            edge_row = _along(edge_cost[head_choice[u]], v - split, len(tail))
            np.add(candidate, edge_row, out=candidate)
        if weights is not None and tail_weight is not None:
            head_weight = sum(float(weights[vertex][head_choice[vertex]]) for vertex in head)
            candidate[tail_weight + head_weight > cap] = math.inf
        position = int(np.argmin(candidate))
        cost = float(candidate.flat[position])
        if cost < best_cost:
            best_cost = cost
            best_choice = head_choice + tuple(int(index) for index
                                              in np.unravel_index(position, tail_shape))
    return DPResult(choice=best_choice, cost=best_cost, order=(), max_dependent_set=0,
                    table_entries=strategies,
                    peak_table_bytes=tail_table.nbytes + candidate.nbytes)


def _head_size(sizes: list[int]) -> int:
    """The fewest leading vertices whose removal leaves a tail table of at most CHUNK_ENTRIES."""
    tail_entries = math.prod(sizes)
    split = 0
    while split < len(sizes) and tail_entries > CHUNK_ENTRIES:
        tail_entries //= sizes[split]
        split += 1
    return split


def _tail_costs(graph: CostGraph, split: int, tail_shape: tuple[int, ...]) -> np.ndarray:
    """The cost of every tail strategy, counting only vertices and edges inside the tail."""
    tail_table = np.zeros(tail_shape, dtype=np.float64)
    for offset, vertex_cost in enumerate(graph.vertex_costs[split:]):
        tail_table += _along(vertex_cost, offset, len(tail_shape))
    for (u, v), edge_cost in graph.edge_costs.items():
        if u >= split:
            index: list[slice | None] = [np.newaxis] * len(tail_shape)
            index[u - split] = index[v - split] = slice(None)
            tail_table += edge_cost[tuple(index)]
    return tail_table


def _along(vector: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """`vector` as an `ndim`-dimensional view that varies only along `axis`."""
    shape = [1] * ndim
    shape[axis] = vector.size
    return vector.reshape(shape)
