"""The Pareto filter of the frontier DP (`frontier.py`): of points grouped by a table entry,
each with a cost and a memory, the ones no other point of the same entry beats in both
(of equal pairs, the first), in order of entry, then memory.

Sorted by entry, memory, cost (stably), a point stays when its cost is below that of
every point before it in its entry: a running minimum, segmented by entry. Where memory
is whole numbers (bytes, as `memory.memory_vectors` makes it), entry and memory pack into
one integer key, and each key's least cost (the first of equals) is found either by one
sort of the keys or, where the keys span few values, by a scatter of minima with no sort
at all (`least_per_key`); of those, the running minimum keeps the frontier
(`frontier_mask`). Where memory is not whole the three keys are sorted and the costs
ranked (`ranked_mask`). Every way returns the same indices in the same order.

A join (`frontier._Search.join`) makes the points of two factors pairwise; the pairs that
share an entry and a memory are mostly many (ZeRO's choices under Adam give memories on
a lattice, so sums coincide), and only the least of each can be on the frontier:
`pair_representatives` finds those from the two sides' keys without making the pairs'
other fields, and the join prunes and filters the representatives alone.

>>> entry = np.array([0, 0, 0, 1])
>>> memory = np.array([2.0, 1.0, 2.0, 5.0])
>>> cost = np.array([1.0, 3.0, 0.5, 9.0])
>>> pareto_index(entry, memory, cost).tolist()
[1, 2, 3]
"""

from __future__ import annotations

import numpy as np

EXACT = float(1 << 53)
"""Integers below this are exact as floats (and their sums of two fit an int64)."""
DENSE = 1
"""`least_per_key` scatters into an array over every key value where there are at most
this many values per key given (plus `DENSE_FREE`); else it sorts. (At 1 its two arrays
take no more memory than the keys and costs given: a join's memory stays within what the
effort bounds, `memory.DEFAULT_EFFORT`.)"""
DENSE_FREE = 1 << 10


def pareto_index(entry: np.ndarray, memory: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """The indices of the points (`entry`, `memory`, `cost` each) no other point of the
    same entry beats in both cost and memory (of equal pairs, the first), in order of
    entry, then memory (module docstring)."""
    if entry.size <= 1:
        return np.arange(entry.size)
    key = packed_key(entry, memory, cost)
    if key is None:
        order = np.lexsort((cost, memory, entry))
        return order[ranked_mask(entry[order], cost[order])]
    least = least_per_key(key, cost, int(key.max()) + 1)
    return least[frontier_mask(entry[least], cost[least])]


def packed_key(entry: np.ndarray, memory: np.ndarray, cost: np.ndarray) -> np.ndarray | None:
    """entry·levels + memory level as one int64 per point (its order is the order by
    entry, then memory); None where the memory is not whole, the key would pass
    `EXACT`, or a cost is not finite."""
    level = memory - memory.min()
    top = float(level.max())
    if not (np.isfinite(top) and np.isfinite(cost).all()):
        return None
    if (float(entry.max()) + 1) * (top + 1) >= EXACT or \
            not np.array_equal(level, np.floor(level)):
        return None
    return entry.astype(np.int64) * int(top + 1) + level.astype(np.int64)


def least_per_key(key: np.ndarray, cost: np.ndarray, span: int) -> np.ndarray:
    """For each key value (non-negative, below `span`) that occurs, the index of its
    least cost (of equal costs, the first index), in order of key: what a stable sort by
    key, then cost, puts first of each key."""
    if span <= DENSE * key.size + DENSE_FREE:
        least = np.full(span, np.inf)
        np.minimum.at(least, key, cost)
        hit = np.flatnonzero(cost == least[key])
        first = np.full(span, key.size, dtype=np.int64)
        np.minimum.at(first, key[hit], hit)
        return first[first < key.size]
    order = np.argsort(key, kind="stable")
    sorted_key, sorted_cost = key[order], cost[order]
    new = np.empty(key.size, dtype=bool)
    new[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new[1:])
    group = np.cumsum(new) - 1
    least = np.minimum.reduceat(sorted_cost, np.flatnonzero(new))
    hit = np.flatnonzero(sorted_cost == least[group])
    # Stable: the first hit of each group is its first index of the least cost.
    firsts = np.empty(hit.size, dtype=bool)
    firsts[0] = True
    np.not_equal(group[hit[1:]], group[hit[:-1]], out=firsts[1:])
    return order[hit[firsts]]


def pair_representatives(flats: tuple[np.ndarray, np.ndarray],
                         memories: tuple[np.ndarray, np.ndarray],
                         costs: tuple[np.ndarray, np.ndarray],
                         from_left: np.ndarray, from_right: np.ndarray) -> np.ndarray | None:
    """Of the pairs (`from_left`[i], `from_right`[i]) of a join, whose entry is the sum of
    the sides' `flats`, memory of `memories` and cost of `costs`, the index of each
    (entry, memory)'s least cost (the first of equals), in order of entry, then memory:
    the only pairs `pareto_index` can keep of them. None where a side's memory is not
    whole or a cost not finite (the caller filters all the pairs then)."""
    if from_left.size <= 1:
        return np.arange(from_left.size)
    lattice = _lattice(flats, memories, costs)
    if lattice is None:
        return None
    keys, span = lattice
    key = keys[0][from_left] + keys[1][from_right]
    cost = costs[0][from_left] + costs[1][from_right]
    return least_per_key(key, cost, span)


def representatives_by_rows(flats: tuple[np.ndarray, np.ndarray],
                            memories: tuple[np.ndarray, np.ndarray],
                            costs: tuple[np.ndarray, np.ndarray], order: np.ndarray,
                            start: np.ndarray, stop: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray] | None:
    """`pair_representatives` of the pairs (l, `order`[k]) for each left point l and
    start[l] <= k < stop[l], in that order, as (left, right) indices, without making the
    pairs: one pass per left point (for joins of few left points, each with many right
    ones). The right points of one left point must have distinct entries or memories
    (true of a join's right side: one entry's points of a frontier differ in memory, and
    they share the left point's shared configurations): each pass then updates every
    key once, and the first of equal least costs is kept by updating only on less.
    None where `pair_representatives` would be, or where the keys span too many values
    for a scatter (`DENSE`)."""
    lattice = _lattice(flats, memories, costs)
    if lattice is None:
        return None
    keys, span = lattice
    total = int((stop - start).sum())
    if span > DENSE * total + DENSE_FREE:
        return None
    right_key, right_cost = keys[1][order], costs[1][order]
    least = np.full(span, np.inf)
    left = np.full(span, -1, dtype=np.int64)
    right = np.empty(span, dtype=np.int64)
    for point in np.flatnonzero(stop > start).tolist():
        first, last = int(start[point]), int(stop[point])
        key = keys[0][point] + right_key[first:last]
        cost = costs[0][point] + right_cost[first:last]
        less = cost < least[key]
        key = key[less]
        least[key] = cost[less]
        left[key] = point
        right[key] = order[first:last][less]
    found = np.flatnonzero(left >= 0)
    return left[found], right[found]


def _lattice(flats: tuple[np.ndarray, np.ndarray], memories: tuple[np.ndarray, np.ndarray],
             costs: tuple[np.ndarray, np.ndarray]
             ) -> tuple[tuple[np.ndarray, np.ndarray], int] | None:
    """Each side's part of a pair's packed key (entry·span + memory level, the levels in
    units of the memories' common divisor: a pair's key is its sides' parts summed) and
    the span of the keys; None where a side's memory is not whole, a cost not finite,
    or a key would pass `EXACT`."""
    levels = []
    for memory, cost in zip(memories, costs, strict=True):
        level = memory - memory.min()
        if not (np.isfinite(level).all() and np.isfinite(cost).all()) or \
                float(level.max()) >= EXACT or not np.array_equal(level, np.floor(level)):
            return None
        levels.append(level.astype(np.int64))
    unit = int(np.gcd.reduce(np.concatenate(levels))) or 1
    span = (int(levels[0].max()) + int(levels[1].max())) // unit + 1
    entries = int(flats[0].max()) + int(flats[1].max()) + 1
    if float(entries) * span >= EXACT:
        return None
    return (flats[0] * span + levels[0] // unit, flats[1] * span + levels[1] // unit), \
        entries * span


def frontier_mask(entry: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Which points (sorted by entry, then memory) cost less than every earlier point of
    their entry: the running minimum of −entry + i·cost (entries ascend, so its real part
    is the current entry's and its imaginary part that entry's least cost so far)."""
    keep = np.empty(entry.size, dtype=bool)
    if entry.size == 0:
        return keep
    running = np.empty(entry.size, dtype=np.complex128)
    running.real = -entry.astype(np.float64)
    running.imag = cost
    np.minimum.accumulate(running, out=running)
    keep[0] = True
    keep[1:] = (entry[1:] != entry[:-1]) | (cost[1:] < running.imag[:-1])
    return keep


def ranked_mask(entry: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """`frontier_mask` of points sorted by entry, memory, cost, by ranking the costs as
    integers and shifting each entry's ranks below all earlier entries' (any costs)."""
    _, rank = np.unique(cost, return_inverse=True)
    group = np.concatenate([[0], np.cumsum(entry[1:] != entry[:-1])])
    shifted = rank.astype(np.int64) - group * (int(rank.max()) + 1)
    running = np.minimum.accumulate(shifted)
    keep = np.empty(entry.size, dtype=bool)
    keep[0] = True
    keep[1:] = shifted[1:] < running[:-1]
    return keep
