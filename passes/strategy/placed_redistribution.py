"""Redistribution priced by where its words move: NVLink within a node, InfiniBand across
nodes (the machines whose collectives are `hierarchical`, the DGX presets).

docs/cost-model.md, "Redistribution on clusters", states the model. In short: device d of
the layout that needs a tensor receives the words of its block N(d) that it does not hold,
each from a device that holds it, one on d's own node where there is one. So, with U(d)
the union of the blocks held on d's node (d's own block H(d) among them),

    intra(d) = |N(d) ∩ U(d)| − |N(d) ∩ H(d)|     over NVLink,
    inter(d) = |N(d)| − |N(d) ∩ U(d)|            over d's InfiniBand adapter,

and the links run at once, so the move takes

    max( max_d intra(d) · bytes / B_nvlink,  max_d inter(d) · bytes / B_ib ).

Under canonical placement a layout's blocks are equal slices along each dim, so two
blocks are the same or disjoint: |N ∩ U| is the sum of |N ∩ B| over the distinct blocks
B on the node, each counted on the first device of the node that holds it
(`first_holders`). The words are those of the flat rule (`cost.redistribution_words`,
intra + inter = |N(d)| − |N(d) ∩ H(d)|); only where they travel differs.

    >>> from pase.passes.strategy.cost import _blocks
    >>> held = _blocks((4,), (0,), (8,), 4)[None]       # rows 2i..2i+1 on device i
    >>> needed = _blocks((2,), (0,), (8,), 4)[None]     # rows 4i..4i+3 on device i < 2
    >>> intra, inter = received_by_link(held, needed, 2, np.array([0]), np.array([0]))
    >>> # rows 4..7, held on node 1 only
    >>> intra.tolist(), inter.tolist()   # device 0: rows 2..3 from device 1; device 1:
    ([2.0], [4.0])
"""

from __future__ import annotations

import hashlib

import numpy as np

_CACHE: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
"""`links_of`'s results by the digest of their layouts: an edge end's layouts recur in
every stage sub-problem and every edge of the same kind (at most `_CACHE_KEPT` kept)."""
_CACHE_KEPT = 256

# At most this many (pair, device) entries per step of `received_by_link`.
_ENTRIES = 1 << 16


def first_holders(layouts: np.ndarray, devices_per_node: int) -> np.ndarray:
    """(A, devices) bool: device e works in layout a and no device before it on its node
    holds the same block (`layouts` as `cost.blocks` gives them, (A, devices, rank, 2)).

        >>> from pase.passes.strategy.cost import _blocks
        >>> replicated = _blocks((2, 2), (0,), (4,), 4)[None]  # devices 0, 1 alike
        >>> first_holders(replicated, 2).tolist(), first_holders(replicated, 4).tolist()
        ([[True, False, True, False]], [[True, False, True, False]])
    """
    count, devices = layouts.shape[:2]
    working = layouts[:, :, -1, 1] > layouts[:, :, -1, 0]
    nodes = -(-devices // devices_per_node)
    slots = min(devices_per_node, devices)
    padded = np.full((count, nodes * devices_per_node, layouts[0, 0].size), -1, dtype=np.int64)
    padded[:, :devices] = layouts.reshape(count, devices, -1)
    by_node = padded.reshape(count, nodes, devices_per_node, -1)
    alive = np.zeros((count, nodes * devices_per_node), dtype=bool)
    alive[:, :devices] = working
    alive_by_node = alive.reshape(count, nodes, devices_per_node)
    first = alive_by_node.copy()
    for slot in range(1, slots):
        for earlier in range(slot):
            same = (by_node[:, :, earlier] == by_node[:, :, slot]).all(axis=-1)
            first[:, :, slot] &= ~(same & alive_by_node[:, :, earlier])
    return first.reshape(count, -1)[:, :devices]


def _overlap(needed: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Elements of each block of `needed` inside the block of `held` beside it: int64
    over the leading axes of two (..., rank, 2) arrays."""
    extent = np.minimum(needed[..., 1], held[..., 1])
    extent -= np.maximum(needed[..., 0], held[..., 0])
    np.maximum(extent, 0, out=extent)
    return extent.prod(axis=-1)


def received_by_link(senders: np.ndarray, receivers: np.ndarray, devices_per_node: int,
                     sender_index: np.ndarray,
                     receiver_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (senders[sender_index[k]], receivers[receiver_index[k]]) of block
    layouts: the most words a receiving device takes over NVLink (from its node) and the
    most it takes over InfiniBand (from other nodes), float64 vectors over the pairs."""
    devices = receivers.shape[1]
    device = np.arange(devices)
    base = device - device % devices_per_node
    mates = [(np.minimum(base + slot, devices - 1), base + slot < devices)
             for slot in range(min(devices_per_node, devices))]
    first = first_holders(senders, devices_per_node)
    pairs = len(sender_index)
    intra, inter = np.zeros(pairs), np.zeros(pairs)
    step = max(1, _ENTRIES // devices)
    for lo in range(0, pairs, step):
        hi = min(pairs, lo + step)
        held, holders = senders[sender_index[lo:hi]], first[sender_index[lo:hi]]
        needed = receivers[receiver_index[lo:hi]]
        whole = (needed[..., 1] - needed[..., 0]).prod(axis=-1)
        own = _overlap(needed, held)
        local = np.zeros_like(own)
        for mate, exists in mates:
            counted = holders[:, mate] & exists
            local += _overlap(needed, held[:, mate]) * counted
        intra[lo:hi] = (local - own).max(axis=1)
        inter[lo:hi] = (whole - local).max(axis=1)
    return intra, inter


def links_of(senders: np.ndarray, receivers: np.ndarray, devices_per_node: int,
             moving: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) matrices of the words `received_by_link` finds for every pair of layouts
    `senders` (A) and `receivers` (B) where `moving` (bool, (A, B)) is set, 0 elsewhere;
    memoised by the layouts' digest."""
    digest = hashlib.blake2b(digest_size=20)
    for part in (senders, receivers, moving):
        digest.update(repr(part.shape).encode())
        digest.update(np.ascontiguousarray(part).tobytes())
    digest.update(str(devices_per_node).encode())
    key = digest.digest()
    cached = _CACHE.get(key)
    if cached is None:
        rows, cols = np.nonzero(moving)
        intra, inter = np.zeros(moving.shape), np.zeros(moving.shape)
        intra[rows, cols], inter[rows, cols] = received_by_link(
            senders, receivers, devices_per_node, rows, cols)
        intra.flags.writeable = inter.flags.writeable = False
        if len(_CACHE) >= _CACHE_KEPT:
            _CACHE.clear()
        cached = _CACHE[key] = (intra, inter)
    return cached


def placed_seconds(held: np.ndarray, needed: np.ndarray, forward: np.ndarray,
                   backward: np.ndarray | None, element_bytes: int, intra_bandwidth: float,
                   inter_bandwidth: float, devices_per_node: int) -> np.ndarray:
    """Seconds of an edge's redistribution over every pair of its held (A) and needed
    (B) block layouts, (A, B): the forward move into the needed layouts and, unless
    `backward` is None, the gradient's move back into the held ones, each priced by
    link (the module docstring). `forward` and `backward` are the flat rule's words
    (`cost.redistribution_words`) for the same pairs.

    Pairs whose layouts both work within node 0 move everything over NVLink, exactly as
    the flat rule says, and pairs that move nothing cost nothing; only the others are
    visited device by device.
    """
    held_q = np.count_nonzero(held[:, :, -1, 1] > held[:, :, -1, 0], axis=1)
    needed_q = np.count_nonzero(needed[:, :, -1, 1] > needed[:, :, -1, 0], axis=1)
    spans = np.maximum(held_q[:, None], needed_q[None, :]) > devices_per_node
    words = forward if backward is None else forward + backward
    seconds = np.where(spans, 0.0, words * element_bytes / intra_bandwidth)
    directions = [(held, needed, forward, False)]
    if backward is not None:
        directions.append((needed, held, backward.T, True))
    for senders, receivers, flat, transposed in directions:
        moving = (spans.T if transposed else spans) & (flat > 0)
        intra, inter = links_of(senders, receivers, devices_per_node, moving)
        link = np.maximum(intra * element_bytes / intra_bandwidth,
                          inter * element_bytes / inter_bandwidth)
        seconds += link.T if transposed else link
    return seconds
