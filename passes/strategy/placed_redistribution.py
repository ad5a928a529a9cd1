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
from collections.abc import Callable
from typing import TypeVar

import numpy as np

L = TypeVar("L")
"""A tensor's layouts: per-device blocks here, `dim_pricing.DimLayouts` there."""

_CACHE: dict[bytes, np.ndarray] = {}
"""`link_seconds`' results by the digest of their layouts: an edge end's layouts recur in
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
                     sender_index: np.ndarray, receiver_index: np.ndarray,
                     compiled: bool = False,
                     first: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (senders[sender_index[k]], receivers[receiver_index[k]]) of block
    layouts: the most words a receiving device takes over NVLink (from its node) and the
    most it takes over InfiniBand (from other nodes), float64 vectors over the pairs;
    with `compiled`, by the compiled loop of `jit.links` (the same floats). `first` is
    `first_holders(senders, devices_per_node)` where the caller has it."""
    if first is None:
        first = first_holders(senders, devices_per_node)
    if compiled and len(sender_index):
        from pase.passes.strategy.jit.compiler import jit_available
        from pase.passes.strategy.jit.links import received_by_link_jit

        if jit_available():
            return received_by_link_jit(senders, first, receivers, sender_index,
                                        receiver_index, devices_per_node)
    devices = receivers.shape[1]
    device = np.arange(devices)
    base = device - device % devices_per_node
    mates = [(np.minimum(base + slot, devices - 1), base + slot < devices)
             for slot in range(min(devices_per_node, devices))]
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


def node_boxes(layouts: np.ndarray, devices_per_node: int,
               first: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each device's node's bounding box of the blocks its node holds, (A, devices, rank,
    2) like `layouts` (the presence dim [0, 1) where the node holds something, all
    [0, 0) where it holds nothing), and whether, in layout a, every node's blocks fill
    their bounding box exactly (A,): then the box is the union U of the module docstring.

        >>> from pase.passes.strategy.cost import _blocks
        >>> rows = _blocks((4,), (0,), (8,), 4)[None]          # rows 2i..2i+1 on device i
        >>> boxes, exact = node_boxes(rows, 2)
        >>> boxes[0, :, 0].tolist(), exact.tolist()          # node 1 holds rows 4..7
        ([[0, 4], [0, 4], [4, 8], [4, 8]], [True])
        >>> grid = _blocks((2, 2), (0, 1), (2, 2), 4)[None]     # a 2 x 2 grid of cells
        >>> node_boxes(grid, 3)[1].tolist()                  # node 0: three cells of four
        [False]

    `first` is `first_holders(layouts, devices_per_node)` where the caller has it.
    """
    count, devices = layouts.shape[:2]
    nodes = -(-devices // devices_per_node)
    padded = np.zeros((count, nodes * devices_per_node) + layouts.shape[2:], dtype=np.int64)
    padded[:, :devices] = layouts
    by_node = padded.reshape((count, nodes, devices_per_node) + layouts.shape[2:])
    working: np.ndarray = by_node[..., -1, 1] > by_node[..., -1, 0]   # (A, nodes, slots)
    big = np.iinfo(np.int64).max
    lo = np.where(working[..., None], by_node[..., 0], big).min(axis=2)
    hi = np.where(working[..., None], by_node[..., 1], 0).max(axis=2)
    held = np.any(working, axis=2)[..., None]
    lo, hi = np.where(held, lo, 0), np.where(held, hi, 0)
    box_volume = (hi - lo).prod(axis=-1)
    if first is None:
        first = first_holders(layouts, devices_per_node)
    padded_first = np.zeros((count, nodes * devices_per_node), dtype=bool)
    padded_first[:, :devices] = first
    volumes = (by_node[..., 1] - by_node[..., 0]).prod(axis=-1)
    cells = (volumes * padded_first.reshape(count, nodes, devices_per_node)).sum(axis=2)
    exact = (cells == box_volume).all(axis=1)
    boxes = np.stack([lo, hi], axis=-1)                          # (A, nodes, rank, 2)
    node_of = np.arange(devices) // devices_per_node
    return np.ascontiguousarray(boxes[:, node_of]), exact


def link_seconds(senders: np.ndarray, receivers: np.ndarray, flat: np.ndarray,
                 moving: np.ndarray, element_bytes: int, intra_bandwidth: float,
                 inter_bandwidth: float, devices_per_node: int,
                 compiled: bool = False) -> np.ndarray:
    """(A, B): seconds of moving a tensor from each layout of `senders` (A) into each of
    `receivers` (B) where `moving` is set, 0 elsewhere: max(intra · bytes / B_nvlink,
    inter · bytes / B_ib) of the words `received_by_link` finds, `flat` (A, B) the flat
    rule's words. Memoised by the layouts' digest.

    Visiting every device's node-mates for every pair is avoided where it cannot change
    the result. Where every node of a sender layout holds a box (`node_boxes`), inter(d)
    = |N(d)| − |N(d) ∩ box| is the flat rule's count with the box as what d holds, so
    its maximum is found as `cost.redistribution_words`' is (the least overlap over the
    devices whose nodes hold something, the compiled loop where `compiled`; a receiver
    on a node that holds nothing takes its whole block over InfiniBand). Then, as
    intra(d) ≤ flat(d): where inter = 0 the node holds all that d needs and intra =
    flat; where flat · bytes / B_nvlink ≤ inter · bytes / B_ib the InfiniBand link is
    the slower one whatever intra is. Without exact boxes the boxes' inter is a lower
    bound, exact where it reaches flat. Only the other pairs are visited device by
    device (`received_by_link`). The results are the same floats.
    """
    key = _digest(senders, receivers, moving,
                  (element_bytes, intra_bandwidth, inter_bandwidth, devices_per_node))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    from pase.passes.strategy.cost import least_overlap

    first = first_holders(senders, devices_per_node)
    boxes, exact = node_boxes(senders, devices_per_node, first)
    devices = senders.shape[1]
    # The boxes are non-empty on the nodes of the sender's working devices, devices
    # 0..box_q-1; a receiver beyond them takes its whole block from other nodes.
    sender_q = np.count_nonzero(senders[:, :, -1, 1] > senders[:, :, -1, 0], axis=1)
    box_q = np.minimum(-(-sender_q // devices_per_node) * devices_per_node, devices)
    receiver_q = np.count_nonzero(receivers[:, :, -1, 1] > receivers[:, :, -1, 0], axis=1)
    whole = np.prod(receivers[:, 0, :, 1] - receivers[:, 0, :, 0], axis=-1).astype(np.float64)
    least = least_overlap(boxes, receivers, box_q, receiver_q, compiled)
    inter = whole[None, :] - np.where(receiver_q[None, :] <= box_q[:, None], least, 0.0)
    over_nvlink = flat * element_bytes / intra_bandwidth
    over_infiniband = inter * element_bytes / inter_bandwidth
    seconds = np.where(inter == 0, over_nvlink, over_infiniband)
    # Without exact boxes, inter from the boxes is a lower bound of the true inter, which
    # is at most `flat`: where the bound reaches `flat` it is exact.
    settled = (exact[:, None] & ((inter == 0) | (over_nvlink <= over_infiniband))) \
        | ((inter == flat) & (over_nvlink <= over_infiniband))
    rows, cols = np.nonzero(moving & ~settled)
    intra_words, inter_words = received_by_link(senders, receivers, devices_per_node,
                                                rows, cols, compiled, first)
    seconds[rows, cols] = np.maximum(intra_words * element_bytes / intra_bandwidth,
                                     inter_words * element_bytes / inter_bandwidth)
    seconds[~moving] = 0.0
    seconds.flags.writeable = False
    if len(_CACHE) >= _CACHE_KEPT:
        _CACHE.clear()
    _CACHE[key] = seconds
    return seconds


def _digest(*parts: object) -> bytes:
    digest = hashlib.blake2b(digest_size=20)
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(repr((part.shape, part.dtype.str)).encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(repr(part).encode())
    return digest.digest()


def placed_seconds(held: np.ndarray, needed: np.ndarray, forward: np.ndarray,
                   backward: np.ndarray | None, element_bytes: int, intra_bandwidth: float,
                   inter_bandwidth: float, devices_per_node: int,
                   compiled: bool = False) -> np.ndarray:
    """Seconds of an edge's redistribution over every pair of its held (A) and needed
    (B) block layouts, (A, B): the forward move into the needed layouts and, unless
    `backward` is None, the gradient's move back into the held ones, each priced by
    link (`link_seconds`). `forward` and `backward` are the flat rule's words
    (`cost.redistribution_words`) for the same pairs.

    Pairs whose layouts both work within node 0 move everything over NVLink, exactly as
    the flat rule says (the same floats), and pairs that move nothing cost nothing.
    """
    held_q = np.count_nonzero(held[:, :, -1, 1] > held[:, :, -1, 0], axis=1)
    needed_q = np.count_nonzero(needed[:, :, -1, 1] > needed[:, :, -1, 0], axis=1)
    spans = np.maximum(held_q[:, None], needed_q[None, :]) > devices_per_node
    words = forward if backward is None else forward + backward
    seconds = np.where(spans, 0.0, words * element_bytes / intra_bandwidth)
    return add_link_seconds(
        seconds, held, needed, forward, backward, spans,
        lambda senders, receivers, flat, moving: link_seconds(
            senders, receivers, flat, moving, element_bytes, intra_bandwidth,
            inter_bandwidth, devices_per_node, compiled))


def add_link_seconds(seconds: np.ndarray, held: L, needed: L, forward: np.ndarray,
                     backward: np.ndarray | None, spans: np.ndarray,
                     link: Callable[[L, L, np.ndarray, np.ndarray], np.ndarray]
                     ) -> np.ndarray:
    """`seconds` (A, B) plus, for the pairs whose layouts span nodes (`spans`) and move
    words, the forward move's link seconds from `held` to `needed` and, unless `backward`
    is None, the gradient's from `needed` back to `held`: `link(senders, receivers,
    words, moving)` prices one direction (senders' layouts as rows)."""
    directions = [(held, needed, forward, False)]
    if backward is not None:
        directions.append((needed, held, backward.T, True))
    for senders, receivers, flat, transposed in directions:
        moving = (spans.T if transposed else spans) & (flat > 0)
        if moving.any():
            priced = link(senders, receivers, flat, moving)
            seconds += priced.T if transposed else priced
    return seconds
