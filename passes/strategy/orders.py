"""Elimination orders over an undirected graph, and the dependent sets they produce.

Eliminating a vertex connects its remaining neighbours to each other; the neighbours it has at
that moment are PaSE's dependent set D(i), and the DP's table for the vertex spans the
configurations of the vertex and its dependent set. A good order keeps those sets small.

- `genseq`: PaSE's GENERATESEQ, the minimum-degree order. Among vertices of the same degree
  it takes the one whose factors have absorbed the fewest eliminated vertices (then the
  lowest id): a block of a repeated stack is then reduced from the inside before the
  chain's running sum reaches it, so identical blocks give bitwise identical DP steps,
  which the DP computes once (`dp._ReuseCache`). PaSE leaves ties open.
- `bfs`: the breadth-first order of PaSE's naive DP, for comparison.
- `minfill`: the vertex whose elimination adds the fewest new edges first.

>>> cycle = [{1, 3}, {0, 2}, {1, 3}, {0, 2}]
>>> order = elimination_order(cycle, "genseq")
>>> order, [sorted(dependent) for dependent in dependent_sets(cycle, order)]
([0, 2, 1, 3], [[1, 3], [1, 3], [3], []])

(Once 0 is gone, 1 and 3 have absorbed it and 2 has not, so 2 goes next.)
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence

ORDER_METHODS = ("genseq", "bfs", "minfill")
REMEMBERED = 256
"""The most orders (and dependent sets) kept for graphs met again: a capped search solves
one graph at many multipliers, a pipeline search the stages of one model many times."""

_remembered: OrderedDict[Hashable, list[int] | list[frozenset[int]]] = OrderedDict()


def _recall(key: Hashable, make: Callable[[], list]) -> list:
    """`make()`, kept under `key` (the least recently used of `REMEMBERED` go); a copy
    each time, so callers may change what they get."""
    found = _remembered.get(key)
    if found is None:
        found = _remembered[key] = make()
        if len(_remembered) > REMEMBERED:
            _remembered.popitem(last=False)
    else:
        _remembered.move_to_end(key)
    return list(found)


def _shape(neighbours: Sequence[set[int]]) -> tuple[frozenset[int], ...]:
    """What an order depends on: the adjacency itself."""
    return tuple(frozenset(adjacent) for adjacent in neighbours)


def elimination_order(neighbours: Sequence[set[int]], method: str) -> list[int]:
    """The order in which to eliminate the vertices, by `method` (one of `ORDER_METHODS`).

    `neighbours[v]` is the set of vertices adjacent to v; it is not modified.

    >>> elimination_order([{1}, {0, 2}, {1}], "bfs")
    [0, 1, 2]

    An order depends only on the adjacency, so one made before for the same adjacency (a
    graph solved again at another multiplier λ, or whose configurations pruning thinned)
    is taken again (`REMEMBERED`).
    """
    if method not in ORDER_METHODS:
        raise ValueError(f"unknown elimination order '{method}'; valid orders are "
                         f"{', '.join(ORDER_METHODS)}")
    return _recall(("order", method, _shape(neighbours)),
                   lambda: _made_order(neighbours, method))


def _made_order(neighbours: Sequence[set[int]], method: str) -> list[int]:
    if method == "bfs":
        return _breadth_first_order(neighbours)
    if method == "genseq":
        return _minimum_degree_order(neighbours)
    return _minimum_fill_order(neighbours)


def dependent_sets(neighbours: Sequence[set[int]], order: Sequence[int]) -> list[frozenset[int]]:
    """For each vertex of `order`, in that order, its neighbours when it is eliminated.

    >>> dependent_sets([{1, 2}, {0}, {0}], [0, 1, 2])
    [frozenset({1, 2}), frozenset({2}), frozenset()]
    """
    return _recall(("dependent", _shape(neighbours), tuple(order)),
                   lambda: _made_dependent_sets(neighbours, order))


def _made_dependent_sets(neighbours: Sequence[set[int]], order: Sequence[int]
                         ) -> list[frozenset[int]]:
    current = [set(adjacent) for adjacent in neighbours]
    dependent: list[frozenset[int]] = []
    for vertex in order:
        dependent.append(frozenset(current[vertex]))
        _eliminate(current, vertex)
    return dependent


def _eliminate(current: list[set[int]], vertex: int) -> None:
    """Remove `vertex` from the graph `current`, connecting its neighbours to each other."""
    adjacent = current[vertex]
    for neighbour in adjacent:
        current[neighbour] |= adjacent
        current[neighbour].discard(neighbour)
        current[neighbour].discard(vertex)
    current[vertex] = set()


def _fill_key(current: list[set[int]], vertex: int) -> tuple[int, int, int]:
    adjacent = current[vertex]
    missing_pairs = sum(len(adjacent - current[neighbour]) - 1 for neighbour in adjacent) // 2
    return (missing_pairs, len(adjacent), vertex)


def _minimum_fill_order(neighbours: Sequence[set[int]]) -> list[int]:
    """Repeatedly eliminate the vertex whose elimination adds the fewest edges (then the
    least degree, then the lowest id).

    A vertex's fill changes only when its neighbourhood or a neighbour's does: eliminating
    v changes the neighbourhoods of v's neighbours, so only they and their neighbours get
    a new key. A heap with stale entries skipped then finds the next vertex; on a chain or
    a sparse graph each step costs O(log n), not a scan of every remaining vertex.
    """
    current = [set(adjacent) for adjacent in neighbours]
    keys = [_fill_key(current, vertex) for vertex in range(len(current))]
    heap = list(keys)
    heapq.heapify(heap)
    eliminated = [False] * len(current)
    order: list[int] = []
    while heap:
        entry = heapq.heappop(heap)
        vertex = entry[-1]
        if eliminated[vertex] or entry != keys[vertex]:
            continue
        order.append(vertex)
        eliminated[vertex] = True
        adjacent = current[vertex]
        _eliminate(current, vertex)
        touched = set(adjacent)
        for neighbour in adjacent:
            touched |= current[neighbour]
        for changed in touched:
            key = _fill_key(current, changed)
            if key != keys[changed]:
                keys[changed] = key
                heapq.heappush(heap, key)
    return order


def _minimum_degree_order(neighbours: Sequence[set[int]]) -> list[int]:
    """GENERATESEQ: repeatedly eliminate the vertex of least degree; among those, the one
    adjacent to the fewest eliminated vertices (counted through the factors its
    elimination would consume: the eliminated vertices connected to it by eliminated
    vertices), then the lowest id.

    Only the neighbours of an eliminated vertex change key, so a heap with stale entries
    skipped finds the next vertex in O(log n).
    """
    current = [set(adjacent) for adjacent in neighbours]
    absorbed: list[frozenset[int]] = [frozenset()] * len(current)
    eliminated = [False] * len(current)

    def key(vertex: int) -> tuple[int, int, int]:
        return (len(current[vertex]), len(absorbed[vertex]), vertex)

    heap = [key(vertex) for vertex in range(len(current))]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        entry = heapq.heappop(heap)
        vertex = entry[-1]
        if eliminated[vertex] or entry != key(vertex):
            continue
        order.append(vertex)
        eliminated[vertex] = True
        merged = absorbed[vertex] | {vertex}
        absorbed[vertex] = frozenset()  # never read again: a chain kept n^2/2 ids alive
        adjacent = current[vertex]
        _eliminate(current, vertex)
        for neighbour in adjacent:
            absorbed[neighbour] = absorbed[neighbour] | merged
            heapq.heappush(heap, key(neighbour))
    return order


def _breadth_first_order(neighbours: Sequence[set[int]]) -> list[int]:
    """Breadth-first from vertex 0, then from the smallest vertex of each unreached component."""
    visited = [False] * len(neighbours)
    order: list[int] = []
    for root in range(len(neighbours)):
        if visited[root]:
            continue
        visited[root] = True
        queue = deque([root])
        while queue:
            vertex = queue.popleft()
            order.append(vertex)
            for neighbour in sorted(neighbours[vertex]):
                if not visited[neighbour]:
                    visited[neighbour] = True
                    queue.append(neighbour)
    return order
