"""Redistribution priced from each layout's per-dim description, not from per-device arrays:
the same numbers as `cost.redistribution_words` and `placed_redistribution.placed_seconds`,
in memory that does not grow with the devices.

Under canonical placement (docs/cost-model.md) a tensor's layout under a configuration is,
per tensor dim k, a split factor f, a grid stride s and a block length l: device d < q
holds [c·l, c·l + l) with c = (d // s) % f (f = 1, s = 1, l = the dim's size where the
dim is whole; l = 0 where blocks are empty), and devices q.. hold nothing. `DimLayouts`
keeps those numbers, O(layouts × rank), where `cost._unique_blocks` kept every device's
block, O(layouts × devices × rank).

The least overlap of two layouts a and b over the devices both work on,

    least(a, b) = min_{d < m} prod_k ov_k(d),   ov_k(d) = |A_k(d) ∩ B_k(d)|,  m = min(q_a, q_b),

is what the flat rule needs (forward words = |B| − least where q_b <= q_a, and so on).
Each factor ov_k depends on d only through the two digits of dim k, so per pair of per-dim
descriptions (a few thousand distinct ones per edge, shared by many layout pairs) one walk
over a period finds ov_k at device 0, the first device where it is 0, and the first where
it differs from device 0's value (`dim_stats.pair_stats`, all pairs of one edge's per-dim
descriptions at once). Then, exactly:

- if some dim is 0 on some device d < m, the product is 0 there: least = 0;
- if no dim changes before m, every device has the same product: least = prod_k ov_k(0);
- if one dim j changes and reaches its least value before m, least = that value times
  prod_{k != j} ov_k(0);
- otherwise the pair is walked device by device (`_walk_least`), its blocks computed from
  the descriptions.

On the DGX presets the InfiniBand words come from the same least overlap with each held
block replaced by its node's bounding box (period lcm(s·f, devices per node)); the pairs
the bounds leave open are walked by `placed_redistribution.received_by_link` on blocks
built for them only. `tests/passes/strategy/test_dim_pricing.py` checks every function
here against the per-device originals on random layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pase.passes.strategy.dim_stats import NEVER, _jit_available, dim_states, stats_table
from pase.passes.strategy.vertices import Edge, Layer, TensorUse, config_grids

Config = dict[str, int]


# About this many (pair, device, dim) entries per step of the device-by-device walks.
_ENTRIES = 1 << 18
# At most this many bytes of per-device blocks on each side of the links walk at a time.
_TILE_BYTES = 1 << 25
# About this many entries of (pairs of layouts) matrices per step of the per-dim pricing.
_CHUNK_ENTRIES = 1 << 20


@dataclass(frozen=True)
class DimLayouts:
    """Distinct canonical block layouts of one tensor, per dim: `working` (A,) the devices
    0..q-1 each works on, and `stride`, `factor`, `length` (A, rank): device d < q holds
    [c·l, c·l + l) of dim k, c = (d // s) % f. `devices` is the machine's device count.

        >>> # [b = 8, h = 16] under {b: 2, h: 2}: strides 2 and 1, blocks 4 x 8
        >>> layouts = DimLayouts(np.array([4]), np.array([[2, 1]]), np.array([[2, 2]]),
        ...                      np.array([[4, 8]]), 4)
        >>> layouts.blocks(np.array([0]))[0, 3].tolist()     # device 3: (b, h) = (1, 1)
        [[4, 8], [8, 16], [0, 1]]
    """

    working: np.ndarray
    stride: np.ndarray
    factor: np.ndarray
    length: np.ndarray
    devices: int

    @classmethod
    def of(cls, layer: Layer, configs: Sequence[Config], use: TensorUse,
           devices: int) -> tuple[DimLayouts, np.ndarray]:
        """The distinct layouts of `use` over `configs`, in the order of their first
        configuration, and each configuration's index among them (as `cost._unique_blocks`
        numbers them)."""
        names = layer.space.names
        factors, strides = config_grids(names, configs)
        working = factors.prod(axis=1)
        count, rank = len(configs), len(use.sizes)
        stride = np.ones((count, rank), dtype=np.int64)
        factor = np.ones((count, rank), dtype=np.int64)
        length = np.empty((count, rank), dtype=np.int64)
        for k, (dim, size) in enumerate(zip(use.dims, use.sizes, strict=True)):
            if dim is None or dim not in names:
                length[:, k] = size
                continue
            j = names.index(dim)
            block = size // factors[:, j]
            split = (factors[:, j] > 1) & (block > 0)
            factor[:, k] = np.where(split, factors[:, j], 1)
            stride[:, k] = np.where(split, strides[:, j], 1)
            length[:, k] = block
        key = np.concatenate([working[:, None], stride, factor, length], axis=1)
        seen: dict[tuple[int, ...], int] = {}
        index = np.array([seen.setdefault(row, len(seen)) for row in map(tuple, key.tolist())],
                         dtype=np.int64)
        first = np.zeros(len(seen), dtype=np.int64)
        first[index[::-1]] = np.arange(count - 1, -1, -1)
        return cls(working[first], stride[first], factor[first], length[first],
                   devices), index

    def __len__(self) -> int:
        return len(self.working)

    def take(self, lo: int, hi: int) -> DimLayouts:
        """Layouts lo..hi-1."""
        return DimLayouts(self.working[lo:hi], self.stride[lo:hi], self.factor[lo:hi],
                          self.length[lo:hi], self.devices)

    @property
    def rank(self) -> int:
        return self.length.shape[1]

    @cached_property
    def volume(self) -> np.ndarray:
        """Elements of each layout's blocks (one device's), float64."""
        return np.prod(self.length, axis=1).astype(np.float64)

    @cached_property
    def key(self) -> bytes:
        """A digest of the layouts' numbers (a memo key)."""
        from pase.passes.strategy.placed_redistribution import _digest

        return _digest(self.working, self.stride, self.factor, self.length, self.devices)

    def blocks(self, rows: np.ndarray) -> np.ndarray:
        """Layouts `rows` as `cost.blocks` gives them: int64 (len(rows), devices, rank + 1,
        2) of [lo, hi), the last dim the presence dim."""
        device = np.arange(self.devices, dtype=np.int64)
        lo = _coordinates(device, self.stride[rows], self.factor[rows]) \
            * self.length[rows][:, None, :]
        result = np.zeros((len(rows), self.devices, self.rank + 1, 2), dtype=np.int64)
        result[:, :, :-1, 0] = lo
        result[:, :, :-1, 1] = lo + self.length[rows][:, None, :]
        result[:, :, -1, 1] = 1
        result *= (device[None, :] < self.working[rows][:, None])[:, :, None, None]
        return result


def _coordinates(device: np.ndarray, stride: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """(layouts, devices, rank) grid coordinates (d // s) % f of `device` (D,) under
    `stride` and `factor` (layouts, rank)."""
    return (device[None, :, None] // stride[:, None, :]) % factor[:, None, :]


def node_box_bounds(device: np.ndarray, stride: np.ndarray, factor: np.ndarray,
                    length: np.ndarray, working: np.ndarray,
                    per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """For layouts (stride, factor, length (L, rank), working (L,)) and devices `device`
    (D,), increasing: the bounding box [lo, hi) of the blocks that the working devices of
    each device's node hold, (L, D, rank) each ([0, 0) where the node holds nothing)."""
    node = device // per_node
    first = int(node[0]) if len(node) else 0
    nodes = np.arange(first, int(node[-1]) + 1 if len(node) else first)
    mates = nodes[:, None] * per_node + np.arange(per_node)[None, :]       # (n, N)
    alive: np.ndarray = mates[None, :, :] < working[:, None, None]         # (L, n, N)
    coords = (mates[None, :, :, None] // stride[:, None, None, :]) % factor[:, None, None, :]
    big = np.iinfo(np.int64).max
    low = np.where(alive[..., None], coords, big).min(axis=2)
    high = np.where(alive[..., None], coords, -1).max(axis=2)
    held: np.ndarray = np.asarray(alive.any(axis=2))[..., None]
    lo = np.where(held, low * length[:, None, :], 0)
    hi = np.where(held, (high + 1) * length[:, None, :], 0)
    at = node - first
    return lo[:, at], hi[:, at]


def least_overlap(held: DimLayouts, needed: DimLayouts, per_node: int = 0,
                  compiled: bool = False) -> np.ndarray:
    """(A, B) float64: the least overlap of each pair's blocks over the devices both work
    on (`cost.least_overlap` of the per-device layouts, the same floats). With `per_node`,
    each held block is its node's bounding box (`placed_redistribution.node_boxes`),
    over the devices 0..min(box_q, q_b) - 1, box_q the devices of the nodes that hold
    something: the per-dim shortcut over the nodes whose devices all work, the last node
    of a layout whose devices end within a node walked. Rows a few at a time, so that
    the result is the only (A, B) array it holds."""
    tables = []
    for k in range(held.rank):
        states_a, index_a = dim_states(held, k)
        states_b, index_b = dim_states(needed, k)
        tables.append((index_a, index_b,
                       stats_table(states_a, states_b, per_node, held.devices, compiled)))
    least = np.empty((len(held), len(needed)))
    for lo, hi in _row_chunks(len(held), len(needed)):
        least[lo:hi] = _least_rows(held.take(lo, hi), needed, per_node,
                                   [(a[lo:hi], b, table) for a, b, table in tables], compiled)
    return least


def _row_chunks(rows: int, cols: int) -> list[tuple[int, int]]:
    """Slices of `rows` of about `_CHUNK_ENTRIES` entries of a (rows, cols) matrix."""
    step = max(1, _CHUNK_ENTRIES // max(1, cols))
    return [(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


def _least_rows(held: DimLayouts, needed: DimLayouts, per_node: int,
                tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                compiled: bool = False) -> np.ndarray:
    """`least_overlap` of some held layouts, `tables` their per-dim statistics (per dim:
    each side's index among its per-dim layouts, `dim_stats.pair_stats` of every pair of
    those); with `compiled`, each entry's shortcut and the walks by `jit.least`."""
    count_a, count_b = len(held), len(needed)
    full = held.working
    reach = held.working
    if per_node:
        # Nodes whose devices all work (the shortcut's premise), then at most one more.
        full = held.working // per_node * per_node
        reach = np.minimum(-(-held.working // per_node) * per_node, held.devices)
    shared = np.minimum(reach[:, None], needed.working[None, :])
    shared_full = np.minimum(full[:, None], needed.working[None, :])
    if compiled:
        from pase.passes.strategy.jit.least import least_rows_jit

        least, walked = least_rows_jit(
            [table for _, _, table in tables], np.stack([a for a, _, _ in tables], axis=1),
            np.stack([b for _, b, _ in tables], axis=1), full, needed.working)
        return _walked(held, needed, per_node, tables, shared, shared_full, least, walked,
                       compiled)
    # Per pair: the first device where some dim's overlap is 0, how many dims change
    # before `shared_full`, the product of each dim's value at device 0 (or, where it
    # changes, its least value), and whether each changing dim reaches its least value
    # before `shared_full`.
    first_zero = np.full((count_a, count_b), NEVER, dtype=np.int64)
    changing = np.zeros((count_a, count_b), dtype=np.int64)
    value = np.ones((count_a, count_b), dtype=np.int64)
    reached = np.ones((count_a, count_b), dtype=bool)
    for index_a, index_b, table in tables:
        pick = np.ix_(index_a, index_b)
        np.minimum(first_zero, table[:, :, 1][pick], out=first_zero)
        changes = table[:, :, 2][pick] < shared_full
        changing += changes
        value *= np.where(changes, table[:, :, 3][pick], table[:, :, 0][pick])
        reached &= ~changes | (table[:, :, 4][pick] < shared_full)
    # No dim 0 anywhere: if at most one dim changes, and reaches its least value on a
    # device both work on, the product's least value is that value times the others'.
    least = np.where(first_zero < shared_full, 0, value).astype(np.float64)
    least[shared_full == 0] = np.inf
    walked = (first_zero >= shared_full) & ((changing > 1) | ~reached)
    del value, changing, reached, first_zero
    return _walked(held, needed, per_node, tables, shared, shared_full, least, walked)


def _walked(held: DimLayouts, needed: DimLayouts, per_node: int,
            tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]], shared: np.ndarray,
            shared_full: np.ndarray, least: np.ndarray, walked: np.ndarray,
            compiled: bool = False) -> np.ndarray:
    """`least` with the pairs the shortcut leaves open (`walked`) walked, and the last
    node of each held layout whose devices end within it."""
    rows, cols = np.nonzero(walked)
    del walked
    least[rows, cols] = _walk_changing(held, needed, rows, cols, shared_full[rows, cols],
                                       tables, per_node, compiled)
    # The last node of a layout whose devices end within it, device by device.
    rows, cols = np.nonzero(shared > shared_full)
    least[rows, cols] = np.minimum(least[rows, cols], _walk_tail(
        held, needed, rows, cols, shared_full[rows, cols], shared[rows, cols], per_node))
    return least


def _walk_tail(held: DimLayouts, needed: DimLayouts, rows: np.ndarray, cols: np.ndarray,
               start: np.ndarray, stop: np.ndarray, per_node: int) -> np.ndarray:
    """The least overlap of pairs (rows[i], cols[i]) over devices start[i] <= d <
    stop[i], all on the last node of held layout rows[i] (which holds its node's box
    there), in groups of pairs whose window starts at the same node."""
    result = np.empty(len(rows))
    for first in np.unique(start).tolist():
        members = np.flatnonzero(start == first)
        device = np.arange(first, first + per_node, dtype=np.int64)
        device = device[device < held.devices]
        step = max(1, _ENTRIES // (len(device) * per_node * max(1, held.rank)))
        for lo in range(0, len(members), step):
            chosen = members[lo:lo + step]
            a, b = rows[chosen], cols[chosen]
            a_lo, a_hi = node_box_bounds(device[:1], held.stride[a], held.factor[a],
                                         held.length[a], held.working[a], per_node)
            b_lo = _coordinates(device, needed.stride[b], needed.factor[b]) \
                * needed.length[b][:, None, :]
            b_hi = b_lo + needed.length[b][:, None, :]
            overlap = np.maximum(np.minimum(a_hi, b_hi) - np.maximum(a_lo, b_lo), 0)
            overlap = overlap.prod(axis=2)
            overlap = np.where(device[None, :] < stop[chosen][:, None], overlap,
                               np.iinfo(np.int64).max)
            result[chosen] = overlap.min(axis=1)
    return result


def _walk_changing(held: DimLayouts, needed: DimLayouts, rows: np.ndarray,
                   cols: np.ndarray, shared: np.ndarray,
                   tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                   per_node: int, compiled: bool = False) -> np.ndarray:
    """The least overlap of pairs (rows[i], cols[i]) over devices d < shared[i] whose
    overlap is 0 in no dim: the product of the dims that do not change before shared[i]
    (`tables`, per dim: each side's index among its per-dim layouts and `dim_stats.pair_stats` of
    every pair of them) times the least product of those that change, walked once per
    distinct pair of changing per-dim layouts and window. The window is cut to the period
    of both layouts' grids (and nodes), over which the overlaps repeat on devices whose
    nodes all work; with `compiled`, walked by `jit.least`."""
    period = np.lcm(np.lcm(_periods(held)[rows], _periods(needed)[cols]), max(1, per_node))
    shared = np.minimum(shared, period)
    changes = np.empty((len(rows), held.rank), dtype=bool)
    constant = np.ones(len(rows), dtype=np.int64)
    keys = [shared]
    for k, (index_a, index_b, table) in enumerate(tables):
        a, b = index_a[rows], index_b[cols]
        changes[:, k] = table[a, b, 2] < shared
        constant *= np.where(changes[:, k], 1, table[a, b, 0])
        keys += [np.where(changes[:, k], a, -1), np.where(changes[:, k], b, -1)]
    walked = _walk_once(held, needed, rows, cols, np.zeros(len(rows), np.int64), shared,
                        changes, np.stack(keys, axis=1), per_node, compiled)
    return (constant * walked.astype(np.int64)).astype(np.float64)


def _periods(layouts: DimLayouts) -> np.ndarray:
    """(A,) the period of each layout's grid coordinates over the devices."""
    return np.lcm.reduce(layouts.stride * layouts.factor, axis=1)


def _walk_once(held: DimLayouts, needed: DimLayouts, rows: np.ndarray, cols: np.ndarray,
               start: np.ndarray, stop: np.ndarray, dims: np.ndarray, keys: np.ndarray,
               per_node: int, compiled: bool = False) -> np.ndarray:
    """`_walk_least` of the pairs, walking only the first pair of each distinct row of
    `keys` (which determine the result); with `compiled` (windows from device 0), by
    `jit.least`."""
    if not len(rows):
        return np.empty(0)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    if compiled:
        from pase.passes.strategy.jit.least import walk_least_jit

        walked = walk_least_jit((held.stride, held.factor, held.length, held.working),
                                (needed.stride, needed.factor, needed.length),
                                rows[first], cols[first], stop[first], dims[first], per_node)
        return walked[inverse.ravel()]
    walked = _walk_least(held, needed, rows[first], cols[first], start[first], stop[first],
                         dims[first], per_node)
    return walked[inverse.ravel()]


def _walk_least(held: DimLayouts, needed: DimLayouts, rows: np.ndarray, cols: np.ndarray,
                start: np.ndarray, stop: np.ndarray, dims: np.ndarray,
                per_node: int) -> np.ndarray:
    """The least product over the `dims` (bool, pairs × rank) of the overlaps of pairs
    (rows[i], cols[i]) over devices start[i] <= d < stop[i], device by device, from blocks
    computed for those pairs only (node boxes with `per_node`). Pairs of equal windows go
    together."""
    result = np.empty(len(rows))
    windows: dict[tuple[int, int], list[int]] = {}
    for i, window in enumerate(zip(start.tolist(), stop.tolist(), strict=True)):
        windows.setdefault(window, []).append(i)
    for (first, last), members in windows.items():
        pairs = np.array(members, dtype=np.int64)
        device = np.arange(first, last, dtype=np.int64)
        step = max(1, _ENTRIES // (len(device) * max(1, held.rank)))
        for lo in range(0, len(pairs), step):
            chosen = pairs[lo:lo + step]
            a, b = rows[chosen], cols[chosen]
            if per_node:
                a_lo, a_hi = node_box_bounds(device, held.stride[a], held.factor[a],
                                             held.length[a], held.working[a], per_node)
            else:
                a_lo = _coordinates(device, held.stride[a], held.factor[a]) \
                    * held.length[a][:, None, :]
                a_hi = a_lo + held.length[a][:, None, :]
            b_lo = _coordinates(device, needed.stride[b], needed.factor[b]) \
                * needed.length[b][:, None, :]
            b_hi = b_lo + needed.length[b][:, None, :]
            overlap = np.maximum(np.minimum(a_hi, b_hi) - np.maximum(a_lo, b_lo), 0)
            overlap = np.where(dims[chosen][:, None, :], overlap, 1)
            result[chosen] = overlap.prod(axis=2).min(axis=1)
    return result


def redistribution_words(held: DimLayouts, needed: DimLayouts,
                         compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`cost.redistribution_words` of the same layouts: (forward, backward) (A, B)."""
    least = least_overlap(held, needed, compiled=compiled and _jit_available())
    held_q, needed_q = held.working, needed.working
    forward = needed.volume[None, :] - np.where(needed_q[None, :] <= held_q[:, None],
                                                least, 0.0)
    backward = held.volume[:, None] - np.where(held_q[:, None] <= needed_q[None, :],
                                               least, 0.0)
    return forward, backward


_EXACT: dict[tuple[int, int, bytes], bool] = {}
"""`exact_boxes` by layout (per node, devices, the layout's numbers): a narrowed search's
rounds price new rows of a table and then its kept rows against new columns, whose
senders are the same layouts in other sets (at most `_EXACT_KEPT` kept)."""
_EXACT_KEPT = 1 << 21


def exact_boxes(layouts: DimLayouts, per_node: int, compiled: bool = False) -> np.ndarray:
    """(A,) bool: in layout a, every node's blocks fill their bounding box exactly
    (`placed_redistribution.node_boxes`' second result): the node's distinct coordinate
    tuples are as many as the box's cells, or the blocks are empty. Memoised by layout.
    With `compiled` (where llvmlite compiles), by `jit.boxes` over the nodes of one
    period."""
    numbers = np.ascontiguousarray(np.concatenate(
        [layouts.working[:, None], layouts.stride, layouts.factor, layouts.length], axis=1),
        dtype=np.int64)
    keys = [(per_node, layouts.devices, row.tobytes()) for row in numbers]
    missing = np.array([key not in _EXACT for key in keys], dtype=bool)
    if missing.any():
        if len(_EXACT) >= _EXACT_KEPT:
            _EXACT.clear()
            missing[:] = True
        rows = np.flatnonzero(missing)
        part = DimLayouts(layouts.working[rows], layouts.stride[rows], layouts.factor[rows],
                          layouts.length[rows], layouts.devices)
        if compiled and _jit_available():
            from pase.passes.strategy.jit.boxes import exact_boxes_jit

            period = np.lcm(np.lcm.reduce(part.stride * part.factor, axis=1), per_node)
            found = exact_boxes_jit(part.stride, part.factor, part.length, part.working,
                                    period, per_node)
        else:
            found = _exact_boxes(part, per_node)
        _EXACT.update(zip([keys[row] for row in rows.tolist()], found.tolist(), strict=True))
    return np.array([_EXACT[key] for key in keys], dtype=bool)


def _exact_boxes(layouts: DimLayouts, per_node: int) -> np.ndarray:
    """`exact_boxes`, counted."""
    nodes = -(-layouts.devices // per_node)
    device = np.arange(nodes * per_node, dtype=np.int64)
    rank = layouts.rank
    result = np.empty(len(layouts), dtype=bool)
    step = max(1, _ENTRIES // (len(device) * max(1, rank)))
    for lo in range(0, len(layouts), step):
        rows = np.arange(lo, min(len(layouts), lo + step))
        coords = _coordinates(device, layouts.stride[rows], layouts.factor[rows])
        alive = device[None, :] < layouts.working[rows][:, None]
        weights = np.ones((len(rows), rank), dtype=np.int64)
        for k in range(rank - 2, -1, -1):
            weights[:, k] = weights[:, k + 1] * layouts.factor[rows, k + 1]
        key = np.where(alive, (coords * weights[:, None, :]).sum(axis=2), -1)
        key = np.sort(key.reshape(len(rows), nodes, per_node), axis=2)
        fresh = key >= 0
        fresh[..., 1:] &= key[..., 1:] != key[..., :-1]
        by_node = coords.reshape(len(rows), nodes, per_node, rank)
        alive_node = alive.reshape(len(rows), nodes, per_node)[..., None]
        span = (np.where(alive_node, by_node, -1).max(axis=2)
                - np.where(alive_node, by_node, np.iinfo(np.int64).max).min(axis=2) + 1)
        held = alive_node[..., 0].any(axis=2)
        filled = ~held | (fresh.sum(axis=2) == span.prod(axis=2))
        result[rows] = (layouts.length[rows] == 0).any(axis=1) | filled.all(axis=1)
    return result


_CACHE: dict[bytes, np.ndarray] = {}
"""`link_seconds`' results by their inputs' digest (at most `_CACHE_KEPT`, of at most
`_CACHE_LIMIT` bytes in all: the memory budget does not count them)."""
_CACHE_KEPT = 256
_CACHE_LIMIT = 1 << 26
_CACHE_BYTES: dict[str, int] = {}


def link_seconds(senders: DimLayouts, receivers: DimLayouts, flat: np.ndarray,
                 moving: np.ndarray, element_bytes: int, intra_bandwidth: float,
                 inter_bandwidth: float, per_node: int, compiled: bool = False) -> np.ndarray:
    """`placed_redistribution.link_seconds` of the same layouts (the same floats): the
    InfiniBand words from the node boxes' least overlap (`least_overlap` with
    `per_node`), the same bounds to settle pairs, and the others walked by
    `received_by_link` on blocks built for them only."""
    from pase.passes.strategy.placed_redistribution import _digest

    key = _digest(senders.key, receivers.key, moving,
                  (element_bytes, intra_bandwidth, inter_bandwidth, per_node))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    least = least_overlap(senders, receivers, per_node, compiled and _jit_available())
    box_q = np.minimum(-(-senders.working // per_node) * per_node, senders.devices)
    receiver_q = receivers.working
    exact = exact_boxes(senders, per_node, compiled)
    open_rows, open_cols = [], []
    for lo, hi in _row_chunks(len(senders), len(receivers)):
        rows_flat, rows_moving = flat[lo:hi], moving[lo:hi]
        inter = receivers.volume[None, :] - np.where(
            receiver_q[None, :] <= box_q[lo:hi, None], least[lo:hi], 0.0)
        over_nvlink = rows_flat * element_bytes / intra_bandwidth
        over_infiniband = inter * element_bytes / inter_bandwidth
        least[lo:hi] = np.where(inter == 0, over_nvlink, over_infiniband)
        settled = (exact[lo:hi, None] & ((inter == 0) | (over_nvlink <= over_infiniband))) \
            | ((inter == rows_flat) & (over_nvlink <= over_infiniband))
        rows, cols = np.nonzero(rows_moving & ~settled)
        open_rows.append(rows + lo)
        open_cols.append(cols)
        least[lo:hi][~rows_moving] = 0.0
    seconds = least                    # (overwritten, row by row, with the seconds)
    rows, cols = np.concatenate(open_rows), np.concatenate(open_cols)
    intra_words, inter_words = received_by_link(senders, receivers, per_node, rows, cols,
                                                compiled)
    seconds[rows, cols] = np.maximum(intra_words * element_bytes / intra_bandwidth,
                                     inter_words * element_bytes / inter_bandwidth)
    seconds.flags.writeable = False
    if _CACHE_BYTES.pop("held", 0) + seconds.nbytes > _CACHE_LIMIT or \
            len(_CACHE) >= _CACHE_KEPT:
        _CACHE.clear()
    if seconds.nbytes <= _CACHE_LIMIT:
        _CACHE[key] = seconds
        _CACHE_BYTES["held"] = sum(value.nbytes for value in _CACHE.values())
    return seconds


def received_by_link(senders: DimLayouts, receivers: DimLayouts, per_node: int,
                     rows: np.ndarray, cols: np.ndarray,
                     compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`placed_redistribution.received_by_link` for the pairs (rows[i], cols[i]), on the
    blocks of those pairs' layouts only: the layouts involved, a tile of at most
    `_TILE_BYTES` of blocks on each side at a time (the pairs left open are few and
    involve few layouts: on GPT-3's q -> scores edge at 3,072 devices, 22,889 pairs of
    467 x 521 layouts)."""
    from pase.passes.strategy import placed_redistribution
    from pase.passes.strategy.jit.compiler import jit_available

    if compiled and len(rows) and jit_available():
        from pase.passes.strategy import dim_links

        return dim_links.received_by_link(senders, receivers, per_node, rows, cols)
    intra, inter = np.empty(len(rows)), np.empty(len(rows))
    group = max(1, _TILE_BYTES // (16 * senders.devices * (senders.rank + 1)))
    held_ids, needed_ids = np.unique(rows), np.unique(cols)
    for row_lo in range(0, len(held_ids), group):
        held_rows = held_ids[row_lo:row_lo + group]
        in_rows = np.isin(rows, held_rows)
        if not in_rows.any():
            continue
        held_blocks = senders.blocks(held_rows)
        first = placed_redistribution.first_holders(held_blocks, per_node)
        for col_lo in range(0, len(needed_ids), group):
            needed_rows = needed_ids[col_lo:col_lo + group]
            chosen = np.flatnonzero(in_rows & np.isin(cols, needed_rows))
            if not len(chosen):
                continue
            intra[chosen], inter[chosen] = placed_redistribution.received_by_link(
                held_blocks, receivers.blocks(needed_rows), per_node,
                np.searchsorted(held_rows, rows[chosen]),
                np.searchsorted(needed_rows, cols[chosen]), compiled, first)
    return intra, inter


def placed_seconds(held: DimLayouts, needed: DimLayouts, forward: np.ndarray,
                   backward: np.ndarray | None, element_bytes: int, intra_bandwidth: float,
                   inter_bandwidth: float, per_node: int,
                   compiled: bool = False) -> np.ndarray:
    """`placed_redistribution.placed_seconds` of the same layouts (the same floats)."""
    spans = np.maximum(held.working[:, None], needed.working[None, :]) > per_node
    # (Computed in place: the same floats as where(spans, 0, words * bytes / bandwidth).)
    seconds = forward.copy() if backward is None else forward + backward
    seconds *= element_bytes
    seconds /= intra_bandwidth
    seconds[spans] = 0.0
    from pase.passes.strategy.placed_redistribution import add_link_seconds

    return add_link_seconds(
        seconds, held, needed, forward, backward, spans,
        lambda senders, receivers, flat, moving: link_seconds(
            senders, receivers, flat, moving, element_bytes, intra_bandwidth,
            inter_bandwidth, per_node, compiled))


def working_bytes(edge: Edge, producer_configs: int, consumer_configs: int,
                  devices: int) -> int:
    """The most memory `cost.edge_costs` holds at once on this path for these numbers of
    configurations, its result included: each side's per-dim layouts, six (A, B) float64
    matrices (the forward and backward words, the seconds, a link's least overlaps then
    seconds, the result by configuration) and three of bools (spans, moving, flat > 0),
    and the bounded steps (rows of the per-dim statistics, tiles of the links walk), with
    a margin: under tracemalloc, on the Transformer's q -> scores edge at 512 devices of
    a100-80gb-dgx (975 x 961 layouts), the peak was 6.7 times the 8 bytes of one matrix
    with the steps shrunk to 16k entries and 1 MiB tiles, and 99 MiB with the defaults
    (this says 51 and 239 MiB)."""
    layouts = sum(count * (3 * len(use.sizes) + 1) * 8 * 4
                  for count, use in ((producer_configs, edge.held),
                                     (consumer_configs, edge.needed)))
    return (layouts + (6 * 8 + 4) * producer_configs * consumer_configs + 3 * _TILE_BYTES
            + 12 * 8 * _CHUNK_ENTRIES)
