"""The links walk of `dim_links` over one node of each kind: a pair's whole nodes whose
per-dim overlap matrices and first holders are the same give the same words
(`jit.node_groups` says why), so of the nodes of a pair's first window (the one that
repeats, `dim_links`' module docstring) only the first node of each kind is walked, and
the rest of its windows (a node the receiver ends within, the node the sender works on in
part) as before. The maxima over the pieces of a pair are the walk's, the same integers:
`tests/passes/strategy/test_dim_links.py` checks the grouped walk against the plain one.

On GPT-3 175B's search at 3,072 devices (the block's first rounds, 111 walks of 251,377
pairs) 2.6 % of the nodes of the first windows are the first of their kind.

The per-dim ids (`jit.node_groups.dim_node_ids`) depend on the two per-dim layouts only,
not on the pair, and the same per-dim pairs recur across edges and rounds: they are kept
in `_IDS` by (devices, per_node and the six numbers).
"""

from __future__ import annotations

import numpy as np

GROUPED = [True]
"""Whether `dim_links` walks one node of each kind; tests set it False to compare with
the plain walk."""
SLOTS = 16
"""The most devices per node the grouped walk takes (first holders packed in an int64)."""

_IDS: dict[bytes, np.ndarray] = {}
"""`dim_node_ids` rows by their per-dim numbers (at most `_IDS_KEPT`, each at most
devices / per_node int64s)."""
_IDS_KEPT = 1 << 12

Sides = tuple[np.ndarray, np.ndarray, np.ndarray]


def node_pieces(coordinates: tuple[np.ndarray, np.ndarray], held: Sides, needed: Sides,
                first: np.ndarray, rows: np.ndarray, cols: np.ndarray, windows: np.ndarray,
                per_node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (rows[i], cols[i]) of `dim_links._walk`'s layouts (`held` and `needed`
    each (per-dim state rows of `coordinates`' table, lengths, working devices), `first`
    the senders' first holders) as pieces with the same maxima: one whole node of each
    kind of each pair's first window, then one piece with the rest of its first window
    and its second. Returns each piece's pair, sender, receiver and windows (pieces, 4)."""
    from pase.passes.strategy.jit.node_groups import node_groups

    counts = windows[:, 1] // per_node          # (the first windows start at device 0)
    nodes = int(counts.max()) if len(counts) else 0
    rank = held[0].shape[1]
    combos, combo_of = _combos(held, needed, rows, cols)
    limits = np.zeros(len(combos), dtype=np.int64)
    np.maximum.at(limits, combo_of, np.repeat(counts, rank))
    ids = _dim_ids(coordinates, combos, limits, per_node)
    slots = first[:, :nodes * per_node].reshape(len(first), nodes, per_node)
    first_key = (slots.astype(np.int64) << np.arange(per_node, dtype=np.int64)).sum(axis=2)
    found = node_groups(ids, combo_of.reshape(len(rows), rank), first_key, rows, counts)
    pair, node = np.divmod(found, max(1, nodes))
    whole = np.zeros((len(pair), 4), dtype=np.int64)
    whole[:, 0] = node * per_node
    whole[:, 1] = whole[:, 0] + per_node
    rest = windows.copy()
    rest[:, 0] = counts * per_node
    owner = np.concatenate([pair, np.arange(len(rows))])
    return owner, rows[owner], cols[owner], np.concatenate([whole, rest])


def _combos(held: Sides, needed: Sides, rows: np.ndarray,
            cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (sender's state, length, receiver's state, length) of the pairs' dims
    (C, 4), and each (pair, dim)'s among them (pairs · rank,)."""
    numbers = [held[0][rows].ravel(), held[1][rows].ravel(), needed[0][cols].ravel(),
               needed[1][cols].ravel()]
    lengths, length_at = np.unique(np.concatenate([numbers[1], numbers[3]]),
                                   return_inverse=True)
    states = int(max(held[0].max(initial=0), needed[0].max(initial=0))) + 1
    if states * states * len(lengths) * len(lengths) >= 1 << 62:
        combos, combo_of = np.unique(np.stack(numbers, axis=1), axis=0, return_inverse=True)
        return combos, combo_of.ravel()
    held_length, needed_length = np.split(length_at.ravel(), 2)
    key = ((numbers[0] * states + numbers[2]) * len(lengths) + held_length) * len(lengths) \
        + needed_length
    unique, first, combo_of = np.unique(key, return_index=True, return_inverse=True)
    return np.stack([number[first] for number in numbers], axis=1), combo_of.ravel()


def _dim_ids(coordinates: tuple[np.ndarray, np.ndarray], combos: np.ndarray,
             limits: np.ndarray, per_node: int) -> np.ndarray:
    """`dim_node_ids` of the combos, those kept in `_IDS` (to at least their limit) read."""
    from pase.passes.strategy.jit.node_groups import dim_node_ids

    coords, states = coordinates
    nodes = int(limits.max()) if len(limits) else 0
    numbers = np.concatenate([states[combos[:, 0]], combos[:, 1:2], states[combos[:, 2]],
                              combos[:, 3:4]], axis=1)
    numbers = np.concatenate([np.full((len(combos), 1), coords.shape[1] * 64 + per_node),
                              numbers], axis=1).astype(np.int64)
    keys = [row.tobytes() for row in numbers]
    ids = np.zeros((len(combos), nodes), dtype=np.int64)
    missing = []
    for c, key in enumerate(keys):
        kept = _IDS.get(key)
        if kept is not None and len(kept) >= limits[c]:
            ids[c, :limits[c]] = kept[:limits[c]]
        else:
            missing.append(c)
    if missing:
        chosen = np.array(missing, dtype=np.int64)
        new = dim_node_ids(coords, combos[chosen], limits[chosen], per_node)
        ids[chosen, :new.shape[1]] = new
        if len(_IDS) + len(missing) > _IDS_KEPT:
            _IDS.clear()
        for c, row in zip(missing, new, strict=True):
            _IDS[keys[c]] = row[:limits[c]].copy()
    return ids


def most(owner: np.ndarray, values: np.ndarray, pairs: int) -> np.ndarray:
    """The largest of `values` per pair (`owner` each value's pair), 0 for none."""
    result = np.zeros(pairs)
    np.maximum.at(result, owner, values)
    return result
