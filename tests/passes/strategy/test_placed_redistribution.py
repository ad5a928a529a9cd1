"""Redistribution on a cluster priced by where its words move (`placed_redistribution.py`,
docs/cost-model.md "Redistribution on clusters"): by hand on two nodes of two devices,
and against a device-by-device loop over random canonical layouts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pase.frontend import parse_text
from pase.passes.strategy import Machine, build_problem
from pase.passes.strategy.cost import _blocks, redistribution_words
from pase.passes.strategy.placed_redistribution import link_seconds, received_by_link
from tests.passes.strategy.test_cost import canonical_layouts

NVLINK, INFINIBAND = 1e9, 1e8
# Two nodes of two devices, hierarchical like the DGX presets: links in a node ten times
# faster than each device's adapter to the other node.
TWO_NODES = Machine("two-nodes", 1e12, NVLINK, INFINIBAND, 2, hierarchical=True)
FLAT_TWO_NODES = Machine("two-nodes-flat", 1e12, NVLINK, INFINIBAND, 2)

CHAIN = """
graph @chain(b = 8, h = 16) {
  %x = param [b, h]
  %y = relu %x
  %z = relu %y
  return %z
}
"""


@pytest.mark.parametrize(("held", "needed", "placed", "flat"), [
    # y {b: 2, h: 2}: device i holds rows 4(i // 2).. +4, columns 8(i % 2).. +8;
    # z {b: 4}: device i needs rows 2i.. +2, all 16 columns. Device 0 holds 2·8 of its
    # 32 and takes the other 2·8 from device 1, on its node; likewise every device.
    # Backward, device 0 of y needs its 4·8: 2·8 from z's device 0 (itself), 2·8 from
    # z's device 1 (node 0). 16 words each way, all over NVLink: 2 · 16 · 4 B / 1e9.
    # The flat rule sends all 32 words over InfiniBand (4 devices, more than a node).
    ({"b": 2, "h": 2}, {"b": 4}, 2 * 16 * 4 / NVLINK, 32 * 4 / INFINIBAND),
    # y {b: 4}: device i holds rows 2i.. +2; z {h: 4}: device i needs columns 4i.. +4 of
    # all 8 rows, 32 words. Device 0 holds rows 0-1 (8 words), takes rows 2-3 from
    # device 1 over NVLink (8 words) and rows 4-7 from node 1 over InfiniBand (16 words);
    # the backward move is its mirror image. The links run at once, so each way takes
    # max(8 · 4 / 1e9, 16 · 4 / 1e8) = 16 · 4 / 1e8 s. The flat rule: 24 words each way
    # over InfiniBand.
    ({"b": 4}, {"h": 4}, 2 * 16 * 4 / INFINIBAND, 2 * 24 * 4 / INFINIBAND),
    # Within node 0 (y {b: 2}, z {h: 2}: devices 0 and 1): 32 words each way over
    # NVLink under both rules, as before.
    ({"b": 2}, {"h": 2}, 2 * 32 * 4 / NVLINK, 2 * 32 * 4 / NVLINK),
])
def test_moves_are_priced_by_the_links_they_take(held, needed, placed, flat) -> None:
    graph = parse_text(CHAIN)
    assignment = {"y": held, "z": needed}
    for machine, expected in ((TWO_NODES, placed), (FLAT_TWO_NODES, flat)):
        breakdown = build_problem(graph, 4, machine=machine).breakdown(assignment)
        assert breakdown.redistribution == pytest.approx(expected, rel=1e-12)


BROADCAST = """
graph @broadcast(b = 8, h = 16, k = 4) {
  %x = param [b, h]
  %y = relu %x
  %w = param [k]
  %z = einsum %y, %w -> [b, h, k]
  return %z
}
"""


def test_a_node_without_the_tensor_takes_it_over_infiniband() -> None:
    """y {} on device 0; z {k: 4} needs all 8 · 16 = 128 words of y on every device:
    device 1 takes them from device 0 over NVLink, devices 2 and 3 (node 1, which holds
    nothing) over InfiniBand: max(128 · 4 / 1e9, 128 · 4 / 1e8) s. No gradient moves
    back: device 0, the only one y's layout needs, holds all of it in z's."""
    problem = build_problem(parse_text(BROADCAST), 4, machine=TWO_NODES)
    breakdown = problem.breakdown({"y": {}, "z": {"k": 4}})
    assert breakdown.redistribution == pytest.approx(128 * 4 / INFINIBAND, rel=1e-12)


def naive_links(senders: np.ndarray, receivers: np.ndarray,
                devices_per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """The model read literally: each element a device needs and does not hold comes
    from its node if some device there holds it, else over InfiniBand."""
    devices = receivers.shape[1]
    intra = np.zeros((len(senders), len(receivers)))
    inter = np.zeros_like(intra)
    for a, b, device in itertools.product(range(len(senders)), range(len(receivers)),
                                          range(devices)):
        node = range(device - device % devices_per_node,
                     min(devices, device - device % devices_per_node + devices_per_node))

        def cells(block: np.ndarray) -> set[tuple[int, ...]]:
            return set(itertools.product(*(range(lo, hi) for lo, hi in block)))

        need = cells(receivers[b, device])
        near = set().union(*(cells(senders[a, mate]) for mate in node))
        own = cells(senders[a, device])
        intra[a, b] = max(intra[a, b], len((need & near) - own))
        inter[a, b] = max(inter[a, b], len(need - near))
    return intra, inter


@pytest.mark.parametrize("seed", range(8))
def test_links_match_a_device_by_device_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices, devices_per_node = int(rng.integers(2, 13)), int(rng.integers(1, 5))
    sizes = tuple(int(rng.choice([2, 4, 6])) for _ in range(int(rng.integers(1, 3))))
    # Among the senders, the whole tensor on device 0 alone (the nodes beyond hold nothing).
    senders = np.concatenate([canonical_layouts(rng, 3, sizes, devices),
                              _blocks((), (-1,) * len(sizes), sizes, devices)[None]])
    receivers = canonical_layouts(rng, 4, sizes, devices)
    rows, cols = (index.ravel() for index in np.indices((4, 4)))
    expected_intra, expected_inter = naive_links(senders, receivers, devices_per_node)
    for compiled in (False, True):
        intra, inter = received_by_link(senders, receivers, devices_per_node, rows, cols,
                                        compiled)
        assert intra.reshape(4, 4).tolist() == expected_intra.tolist()
        assert inter.reshape(4, 4).tolist() == expected_inter.tolist()
    # The shortcuts of `link_seconds` (node boxes, the slower link settled by bounds)
    # give the same floats as the device-by-device maximum, on a link four times slower.
    flat, _ = redistribution_words(senders, receivers)
    expected = np.maximum(expected_intra * 4 / NVLINK, expected_inter * 4 / (NVLINK / 4))
    for compiled in (False, True):
        seconds = link_seconds(senders, receivers, flat, flat > 0, 4, NVLINK, NVLINK / 4,
                               devices_per_node, compiled)
        assert seconds.tolist() == np.where(flat > 0, expected, 0.0).tolist()
