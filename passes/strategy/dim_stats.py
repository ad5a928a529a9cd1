"""Per-dim statistics of pairs of per-dim layouts (`dim_pricing.least_overlap`'s
shortcut): for one tensor dim, a sender's (s, f, l) and a receiver's, the overlap of
their blocks on device 0, where it is first 0, where it first changes, and its least
value and where, computed for every pair of an edge's per-dim descriptions at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pase.passes.strategy.dim_pricing import DimLayouts

NEVER = 1 << 62
"""A device index past every device: "no such device" in `pair_stats`."""

# About this many (pair, device) entries per step.
_ENTRIES = 1 << 18


_TABLES: dict[tuple[object, ...], np.ndarray] = {}


def stats_table(states_a: list[tuple[int, int, int]], states_b: list[tuple[int, int, int]],
                per_node: int, devices: int, compiled: bool = False) -> np.ndarray:
    """`pair_stats` of every pair of per-dim layouts, (len(states_a), len(states_b), 5);
    memoised, as edges that share an end (or its kind of tensor) share these lists."""
    key = (tuple(states_a), tuple(states_b), per_node, devices)
    table = _TABLES.get(key)
    if table is None:
        table = pair_stats(np.array(states_a, dtype=np.int64).reshape(-1, 3),
                            np.array(states_b, dtype=np.int64).reshape(-1, 3),
                           per_node, devices, compiled)
        if len(_TABLES) >= 1024:
            _TABLES.clear()
        _TABLES[key] = table
    return table


def pair_stats(held: np.ndarray, needed: np.ndarray, per_node: int,
               devices: int, compiled: bool = False) -> np.ndarray:
    """For one tensor dim, every pair of a sender's (s, f, l) in `held` (A, 3) and a
    receiver's in `needed` (B, 3), as if every device worked, (A, B, 5): the overlap of
    their blocks on device 0, the first device d < devices where it is 0, the first where
    it differs from device 0's (`NEVER` where there is none), its least value over all
    devices and the first device with that value. With `per_node` > 0 the sender's block
    is its node's bounding box (`node_box_bounds`).

    The overlap depends on d through d // g (g = gcd of the strides, and of `per_node`)
    and repeats with period lcm(s·f of both, `per_node`), so devices 0, g, 2g, ... below
    the period are all a pair visits. Pairs met before are taken from `_STATS`; the
    others that visit the same devices (the same g and count) are computed together, in
    blocks of about `_ENTRIES` entries. With `compiled` (where llvmlite compiles) every
    pair is walked by `jit.dim_stats`, in less time than the memo's Python per pair: the
    same integers."""
    if compiled and _jit_available():
        return _new_stats(np.repeat(held, len(needed), axis=0), np.tile(needed, (len(held), 1)),
                          per_node, devices, True).reshape(len(held), len(needed), 5)
    keys = [(*a, *b) for a in map(tuple, held.tolist()) for b in map(tuple, needed.tolist())]
    known = _STATS.setdefault((per_node, devices), {})
    missing = sorted({key for key in keys if key not in known})
    if missing:
        if len(known) + len(missing) > 1 << 20:
            known.clear()
        pairs = np.array(missing, dtype=np.int64).reshape(-1, 6)
        new = _new_stats(pairs[:, :3], pairs[:, 3:], per_node, devices, False)
        for key, row in zip(missing, new.tolist(), strict=True):
            known[key] = row
    return np.array([known[key] for key in keys],
                    dtype=np.int64).reshape(len(held), len(needed), 5)


def _jit_available() -> bool:
    """`jit.compiler.jit_available`, imported only where compiled pricing is asked for
    (a small search never loads llvmlite)."""
    from pase.passes.strategy.jit.compiler import jit_available

    return jit_available()


_STATS: dict[tuple[int, int], dict[tuple[int, ...], list[int]]] = {}
"""`pair_stats`' rows by (per_node, devices) and the pair's six numbers."""


def _new_stats(a: np.ndarray, b: np.ndarray, per_node: int, devices: int,
               compiled: bool) -> np.ndarray:
    """`pair_stats` of pairs (a[i], b[i]) (each (n, 3)): (n, 5); with `compiled`, by the
    compiled walk of `jit.dim_stats` (the same integers), else in numpy groups."""
    period = np.lcm(np.lcm(a[:, 0] * a[:, 1], b[:, 0] * b[:, 1]), per_node or 1)
    step = np.gcd(per_node if per_node else a[:, 0], b[:, 0])
    count = -(-np.minimum(period, devices) // step)
    if compiled:
        from pase.passes.strategy.jit.dim_stats import pair_stats_jit

        return pair_stats_jit(a, b, step, count, per_node)
    stats = np.empty((len(a), 5), dtype=np.int64)
    _, inverse = np.unique(np.stack([step, count], axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    for members in np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1):
        chunk = max(1, _ENTRIES // int(count[members[0]]))
        for lo in range(0, len(members), chunk):
            chosen = members[lo:lo + chunk]
            stats[chosen] = _group_stats(a[chosen], b[chosen], int(step[chosen[0]]),
                                         int(count[chosen[0]]), per_node)
    return stats


def _group_stats(held: np.ndarray, needed: np.ndarray, step: int, count: int,
                 per_node: int) -> np.ndarray:
    """`pair_stats` of pairs (held[i], needed[i]) (each (G, 3)) that visit the same
    devices 0, step, ..., (count - 1)·step: (G, 5). A node's box along one dim, in
    closed form: its devices' d // s run over u0..u1, whose residues mod f are all of
    0..f-1 where u0 % f + u1 - u0 reaches f, else u0 % f .. u1 % f."""
    device = np.arange(count, dtype=np.int64) * step
    s_a, f_a, l_a = (held[:, k, None] for k in range(3))
    s_b, f_b, l_b = (needed[:, k, None] for k in range(3))
    b_lo = (device[None, :] // s_b) % f_b * l_b
    if per_node:
        first = (device // per_node * per_node)[None, :]
        low = first // s_a
        start = low % f_a
        end = start + (first + per_node - 1) // s_a - low
        wraps = end >= f_a
        a_lo = np.where(wraps, 0, start) * l_a
        a_hi = (np.where(wraps, f_a - 1, end) + 1) * l_a
    else:
        a_lo = (device[None, :] // s_a) % f_a * l_a
        a_hi = a_lo + l_a
    overlap = np.maximum(np.minimum(a_hi, b_lo + l_b) - np.maximum(a_lo, b_lo), 0)
    zero = overlap == 0
    change = overlap != overlap[:, :1]
    least = np.argmin(overlap, axis=1)
    stats = np.empty((len(held), 5), dtype=np.int64)
    stats[:, 0] = overlap[:, 0]
    stats[:, 1] = np.where(zero.any(axis=1), zero.argmax(axis=1) * step, NEVER)
    stats[:, 2] = np.where(change.any(axis=1), change.argmax(axis=1) * step, NEVER)
    stats[:, 3] = overlap[np.arange(len(held)), least]
    stats[:, 4] = least * step
    return stats


def dim_states(layouts: DimLayouts, k: int) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """The distinct (s, f, l) of dim k among `layouts`, and each layout's index among them."""
    seen: dict[tuple[int, int, int], int] = {}
    rows = zip(layouts.stride[:, k].tolist(), layouts.factor[:, k].tolist(),
               layouts.length[:, k].tolist(), strict=True)
    index = np.array([seen.setdefault(row, len(seen)) for row in rows], dtype=np.int64)
    return list(seen), index
