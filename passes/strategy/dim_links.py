"""The links walk of `dim_pricing.received_by_link` on per-dim layouts, compiled: the words
each receiving device of a pair takes over NVLink and over InfiniBand
(`placed_redistribution.received_by_link`, the same floats), from each layout's per-dim
numbers, not from per-device blocks, and over the devices that can change the result only.

For a pair of a sender layout a (q_a working devices) and a receiver layout b (q_b), on
nodes of `per_node` devices, device d's words depend on d through its own block, its
node-mates' blocks and which of them first hold their block. Each dim's grid coordinate
(d // s) % f repeats with period s·f, so all of these repeat with period T = lcm(the s·f
of both layouts' dims, per_node) on the devices d < min(q_b, full_a) (full_a = q_a rounded
down to a whole node: their nodes work whole in a). So the walk visits

- d < min(T, q_b, full_a): the rest of that range repeats them;
- full_a <= d < min(q_b, the end of a's last node): the node a works on in part;
- none of d >= the end of a's last node (where d < q_b): there a's node holds nothing,
  own = local = 0, so intra = 0 and inter = |N_b|, which is added without a walk;

and none of d >= q_b, which receive nothing. The maximum over the devices of each is
then the same integer, the same float.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from pase.passes.strategy.dim_pricing import DimLayouts

# At most this many (layout, device) entries per step of `first_holders`.
_ENTRIES = 1 << 18


_PAIRS: dict[tuple[int, int], dict[bytes, tuple[float, float]]] = {}
"""`received_by_link`'s words by (per_node, devices) and the pair's layouts' numbers: the
rounds of a narrowed search and the edges of one kind walk the same pairs again (on GPT-3
175B at 3,072 devices, half of the pairs walked had been walked before). At most
`_PAIRS_KEPT` pairs (about 300 bytes each) are kept, then the memo starts again."""
_PAIRS_KEPT = 1 << 18


def received_by_link(senders: DimLayouts, receivers: DimLayouts, per_node: int,
                     rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(intra, inter) float64 over the pairs (rows[i], cols[i]) of layouts, by the compiled
    walk of `jit.dim_links` over the windows of the module docstring; pairs walked before
    are read from `_PAIRS`."""
    def numbers(layouts: DimLayouts, ids: np.ndarray) -> np.ndarray:
        return np.concatenate([layouts.working[ids, None], layouts.stride[ids],
                               layouts.factor[ids], layouts.length[ids]], axis=1)

    pairs = np.ascontiguousarray(np.concatenate([numbers(senders, rows),
                                                 numbers(receivers, cols)], axis=1))
    keys = cast(list[bytes], pairs.view(np.dtype((np.void, pairs.shape[1] * 8))).ravel()
                .tolist() if len(pairs) else [])
    known = _PAIRS.setdefault((per_node, senders.devices), {})
    intra, inter = np.empty(len(rows)), np.empty(len(rows))
    missing = []
    for i, key in enumerate(keys):
        words = known.get(key)
        if words is None:
            missing.append(i)
        else:
            intra[i], inter[i] = words
    if missing:
        chosen = np.array(missing, dtype=np.int64)
        new_intra, new_inter = _walk(senders, receivers, per_node, rows[chosen], cols[chosen])
        intra[chosen], inter[chosen] = new_intra, new_inter
        if len(known) + len(missing) > _PAIRS_KEPT:
            known.clear()
        known.update(zip([keys[i] for i in missing],
                         zip(new_intra.tolist(), new_inter.tolist(), strict=True), strict=True))
    return intra, inter


def _walk(senders: DimLayouts, receivers: DimLayouts, per_node: int, rows: np.ndarray,
          cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`received_by_link` of pairs not met before, walked."""
    from pase.passes.strategy import dim_groups
    from pase.passes.strategy.jit.dim_links import received_by_link_dims

    held_ids, rows_at = np.unique(rows, return_inverse=True)
    needed_ids, cols_at = np.unique(cols, return_inverse=True)
    rows_at, cols_at = rows_at.ravel(), cols_at.ravel()
    strides = np.concatenate([senders.stride[held_ids].ravel(),
                              receivers.stride[needed_ids].ravel()])
    factors = np.concatenate([senders.factor[held_ids].ravel(),
                              receivers.factor[needed_ids].ravel()])
    states, state = np.unique(np.stack([strides, factors], axis=1), axis=0,
                              return_inverse=True)
    state = state.ravel()
    rank = senders.rank
    held_state = state[:len(held_ids) * rank].reshape(len(held_ids), rank)
    needed_state = state[len(held_ids) * rank:].reshape(len(needed_ids), rank)
    device = np.arange(senders.devices, dtype=np.int64)
    coords = (device[None, :] // states[:, :1]) % states[:, 1:]
    first = first_holders(_subset(senders, held_ids), coords, held_state, per_node)
    sender_q, receiver_q = senders.working[held_ids], receivers.working[needed_ids]
    windows, beyond = _windows(_subset(senders, held_ids), _subset(receivers, needed_ids),
                               rows_at, cols_at, per_node)
    held = (held_state, senders.length[held_ids], sender_q)
    needed = (needed_state, receivers.length[needed_ids], receiver_q)
    owner = None
    if dim_groups.GROUPED[0] and per_node <= dim_groups.SLOTS:
        owner, rows_at, cols_at, windows = dim_groups.node_pieces(
            (coords, states), held, needed, first, rows_at, cols_at, windows, per_node)
    intra, inter = received_by_link_dims(coords, held, first, needed, rows_at, cols_at,
                                         windows, per_node)
    if owner is not None:
        intra, inter = dim_groups.most(owner, intra, len(rows)), \
            dim_groups.most(owner, inter, len(rows))
    inter[beyond] = np.maximum(inter[beyond], receivers.volume[cols[beyond]])
    return intra, inter


def _subset(layouts: DimLayouts, ids: np.ndarray) -> DimLayouts:
    return DimLayouts(layouts.working[ids], layouts.stride[ids], layouts.factor[ids],
                      layouts.length[ids], layouts.devices)


def _windows(senders: DimLayouts, receivers: DimLayouts, rows: np.ndarray, cols: np.ndarray,
             per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's two windows of devices (pairs, 4) and whether its receiver works
    beyond the sender's last node (pairs,): the module docstring's."""
    period_a = np.lcm.reduce(senders.stride * senders.factor, axis=1)
    period_b = np.lcm.reduce(receivers.stride * receivers.factor, axis=1)
    period = np.lcm(np.lcm(period_a[rows], period_b[cols]), per_node)
    sender_q, receiver_q = senders.working[rows], receivers.working[cols]
    full = sender_q // per_node * per_node
    end = np.minimum(-(-sender_q // per_node) * per_node, senders.devices)
    tail = receiver_q > full
    windows = np.zeros((len(rows), 4), dtype=np.int64)
    windows[:, 1] = np.minimum(period, np.minimum(receiver_q, full))
    windows[:, 2] = np.where(tail, full, 0)
    windows[:, 3] = np.where(tail, np.minimum(end, receiver_q), 0)
    return windows, receiver_q > end


def first_holders(layouts: DimLayouts, coords: np.ndarray, state: np.ndarray,
                  per_node: int) -> np.ndarray:
    """(L, devices) bool: `placed_redistribution.first_holders` of `layouts`' blocks,
    from their grid coordinates (`coords[state[i, k]]` along dim k of layout i): two
    working devices hold the same block where their coordinates agree along every dim
    whose blocks are not empty."""
    count, devices = len(layouts), layouts.devices
    nodes = -(-devices // per_node)
    first = np.zeros((count, devices), dtype=bool)
    weights = np.ones((count, layouts.rank), dtype=np.int64)
    for k in range(layouts.rank - 2, -1, -1):
        weights[:, k] = weights[:, k + 1] * layouts.factor[:, k + 1]
    weights *= layouts.length > 0
    step = max(1, _ENTRIES // (nodes * per_node))
    for lo in range(0, count, step):
        hi = min(count, lo + step)
        key = np.full((hi - lo, nodes * per_node), -1, dtype=np.int64)
        key[:, :devices] = np.einsum("ikd,ik->id", coords[state[lo:hi]], weights[lo:hi])
        key[:, :devices][np.arange(devices)[None, :] >= layouts.working[lo:hi, None]] = -1
        by_node = key.reshape(hi - lo, nodes, per_node)
        holds = by_node >= 0
        for slot in range(1, per_node):
            for earlier in range(slot):
                holds[:, :, slot] &= by_node[:, :, earlier] != by_node[:, :, slot]
        first[lo:hi] = holds.reshape(hi - lo, -1)[:, :devices]
    return first
