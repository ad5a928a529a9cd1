"""The links walk over one node of each kind (`dim_groups`, `jit.node_groups`) against the
plain walk over every node of the windows that repeat and against the per-device
original, on random layouts of GRAPH's edges on meshes of up to 384 devices; and the per-dim
node ids against the overlap matrices they stand for, computed by numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pase.passes.strategy import dim_groups, dim_links, placed_redistribution
from pase.passes.strategy.jit.compiler import jit_available
from tests.passes.strategy.test_dim_links import _forget, edge_layouts

pytestmark = pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")


def _walk(senders, receivers, per_node, rows, cols, grouped):  # type: ignore[no-untyped-def]
    _forget()
    dim_groups._IDS.clear()
    dim_groups.GROUPED[0] = grouped
    try:
        return dim_links.received_by_link(senders, receivers, per_node, rows, cols)
    finally:
        dim_groups.GROUPED[0] = True


@pytest.mark.parametrize("seed", range(8))
def test_grouped_walk_matches_the_plain_walk(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    devices = int(rng.choice([48, 96, 192, 384]))
    per_node = int(rng.choice([3, 4, 8, 8]))
    held, needed = edge_layouts(rng, devices, seed % 3)
    for senders, receivers in ((held, needed), (needed, held)):
        rows, cols = (index.ravel() for index in np.indices((len(senders), len(receivers))))
        plain = _walk(senders, receivers, per_node, rows, cols, False)
        grouped = _walk(senders, receivers, per_node, rows, cols, True)
        assert grouped[0].tolist() == plain[0].tolist()
        assert grouped[1].tolist() == plain[1].tolist()
        if devices <= 96:
            expected = placed_redistribution.received_by_link(
                senders.blocks(np.arange(len(senders))),
                receivers.blocks(np.arange(len(receivers))), per_node, rows, cols)
            assert grouped[0].tolist() == expected[0].tolist()
            assert grouped[1].tolist() == expected[1].tolist()


def test_grouped_walk_visits_fewer_nodes() -> None:
    """On 384 devices in nodes of 8, the pieces walked hold at most the whole nodes of the
    first windows, and fewer over four edges' layouts (nodes of the same kind recur),
    and the maxima are the plain walk's."""
    pieces = []
    original = dim_groups.node_pieces

    def count(*args, **named):  # type: ignore[no-untyped-def]
        result = original(*args, **named)
        windows, per_node = args[6], args[7]
        pieces.append((int((windows[:, 1] // per_node).sum()),
                       len(result[0]) - len(windows)))
        return result

    for seed in range(4):
        rng = np.random.default_rng(600 + seed)
        held, needed = edge_layouts(rng, 384, seed % 3)
        rows, cols = (index.ravel() for index in np.indices((len(held), len(needed))))
        dim_groups.node_pieces = count
        try:
            grouped = _walk(held, needed, 8, rows, cols, True)
        finally:
            dim_groups.node_pieces = original
        plain = _walk(held, needed, 8, rows, cols, False)
        assert grouped[0].tolist() == plain[0].tolist()
        assert grouped[1].tolist() == plain[1].tolist()
    assert len(pieces) == 4
    assert all(0 < kept <= nodes for nodes, kept in pieces)
    assert sum(kept for _, kept in pieces) < sum(nodes for nodes, _ in pieces)


@pytest.mark.parametrize("seed", range(4))
def test_dim_node_ids_name_the_first_node_with_the_same_overlaps(seed: int) -> None:
    from pase.passes.strategy.jit.node_groups import dim_node_ids

    rng = np.random.default_rng(700 + seed)
    devices, per_node = int(rng.choice([48, 96, 192])), int(rng.choice([3, 4, 8]))
    states = np.array([(int(rng.choice([1, 2, 3, 4, 8, 12])), int(rng.choice([1, 2, 3, 4, 8])))
                       for _ in range(6)])
    device = np.arange(devices)
    coords = (device[None, :] // states[:, :1]) % states[:, 1:]
    combos = np.array([(rng.integers(6), rng.integers(0, 7), rng.integers(6),
                        rng.integers(0, 7)) for _ in range(20)], dtype=np.int64)
    limits = rng.integers(0, devices // per_node + 1, size=len(combos))
    ids = dim_node_ids(coords, combos, limits, per_node)
    for (a, a_length, b, b_length), limit, row in zip(combos, limits, ids, strict=True):
        nodes = np.arange(limit * per_node).reshape(limit, per_node)
        a_lo, b_lo = coords[a][nodes] * a_length, coords[b][nodes] * b_length
        matrices = np.maximum(np.minimum(a_lo[:, None, :] + a_length,
                                         b_lo[:, :, None] + b_length)
                              - np.maximum(a_lo[:, None, :], b_lo[:, :, None]), 0)
        flat = matrices.reshape(limit, per_node * per_node).tolist()
        assert row[:limit].tolist() == [flat.index(matrix) for matrix in flat]
