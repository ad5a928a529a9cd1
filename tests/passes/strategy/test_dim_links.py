"""The per-dim pricing's fast paths against straightforward references, the same numbers:
`dim_stats.pair_stats` (all pairs of per-dim descriptions at once, node boxes in closed
form) against a walk over every device, and `dim_links.received_by_link` (the compiled walk
over the windows that repeat) and the whole `dim_pricing.placed_seconds` against
`placed_redistribution`'s per-device originals, on random configurations of edges of
three kinds (a tensor read transposed, read by a contraction whose layer has a dim the
tensor lacks, and reduced over a dim), shapes and device counts, nodes of 8 devices as on
the DGX presets among them."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from pase.frontend import parse_text
from pase.passes.strategy import dim_links, dim_pricing, dim_stats, placed_redistribution
from pase.passes.strategy.cost import redistribution_words
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.jit.compiler import jit_available

GRAPH = """
graph @g(a = {a}, b = {b}, c = {c}, e = {e}) {{
  %x = param [a, b, c]
  %y = relu %x
  %z = einsum %y -> [c, a, b]
  %w = param [c, e]
  %v = einsum %z, %w -> [a, b, e]
  %u = einsum %v -> [b, e]
  return %u
}}
"""


def naive_stats(held: tuple[int, int, int], needed: tuple[int, int, int], per_node: int,
                devices: int) -> list[int]:
    """`pair_stats` of one pair, device by device over every device."""
    (s_a, f_a, l_a), (s_b, f_b, l_b) = held, needed
    overlaps = []
    for device in range(devices):
        if per_node:
            mates = range(device // per_node * per_node, device // per_node * per_node + per_node)
            coords = [(mate // s_a) % f_a for mate in mates]
            a_lo, a_hi = min(coords) * l_a, (max(coords) + 1) * l_a
        else:
            a_lo = (device // s_a) % f_a * l_a
            a_hi = a_lo + l_a
        b_lo = (device // s_b) % f_b * l_b
        overlaps.append(max(min(a_hi, b_lo + l_b) - max(a_lo, b_lo), 0))
    zero = [d for d, value in enumerate(overlaps) if value == 0]
    change = [d for d, value in enumerate(overlaps) if value != overlaps[0]]
    least = min(overlaps)
    return [overlaps[0], zero[0] if zero else dim_stats.NEVER,
            change[0] if change else dim_stats.NEVER, least, overlaps.index(least)]


@pytest.mark.parametrize("seed", range(4))
def test_pair_stats_match_a_walk_over_every_device(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices = int(rng.choice([12, 24, 64, 96]))
    per_node = int(rng.choice([0, 3, 8]))

    def states(count: int) -> np.ndarray:
        return np.array([(int(rng.choice([1, 2, 3, 4, 8, 12])), int(rng.choice([1, 2, 3, 4, 8])),
                          int(rng.integers(0, 7))) for _ in range(count)], dtype=np.int64)

    held, needed = states(5), states(6)
    stats = dim_stats.pair_stats(held, needed, per_node, devices)
    expected = [[naive_stats(tuple(a), tuple(b), per_node, devices) for b in needed.tolist()]
                for a in held.tolist()]
    assert stats.tolist() == expected


def random_configs(rng: np.random.Generator, sizes: dict[str, int], devices: int,
                   count: int) -> list[dict[str, int]]:
    configs = []
    for _ in range(count):
        config: dict[str, int] = {}
        for name in rng.permutation(sorted(sizes)):
            factor = int(rng.choice([1, 2, 3, 4, 8]))
            if 1 < factor <= sizes[name] and prod(config.values()) * factor <= devices:
                config[str(name)] = factor
        configs.append(config)
    return configs


def edge_layouts(rng: np.random.Generator, devices: int, edge: int
                 ) -> tuple[dim_pricing.DimLayouts, dim_pricing.DimLayouts]:
    """Both ends' per-dim layouts of one of GRAPH's edges under random configurations."""
    sizes = {name: int(rng.choice([3, 4, 6, 8, 12, 16])) for name in "abce"}
    graph = read_graph(parse_text(GRAPH.format(**sizes)))
    chosen = graph.edges[edge]
    ends = []
    for layer, use in ((graph.layers[chosen.producer], chosen.held),
                       (graph.layers[chosen.consumer], chosen.needed)):
        names = {name: sizes[name] for name in layer.space.names}
        layouts, _ = dim_pricing.DimLayouts.of(layer, random_configs(rng, names, devices, 40),
                                               use, devices)
        ends.append(layouts)
    return ends[0], ends[1]


@pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")
@pytest.mark.parametrize("seed", range(6))
def test_links_walk_matches_the_per_device_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices = int(rng.choice([16, 24, 40, 64, 96, 192]))
    per_node = int(rng.choice([3, 8, 8]))
    held, needed = edge_layouts(rng, devices, seed % 3)
    for senders, receivers in ((held, needed), (needed, held)):
        rows, cols = (index.ravel() for index in np.indices((len(senders), len(receivers))))
        intra, inter = dim_links.received_by_link(senders, receivers, per_node, rows, cols)
        blocks = senders.blocks(np.arange(len(senders)))
        expected = placed_redistribution.received_by_link(
            blocks, receivers.blocks(np.arange(len(receivers))), per_node, rows, cols)
        assert intra.tolist() == expected[0].tolist()
        assert inter.tolist() == expected[1].tolist()
        first = dim_links.first_holders(senders, *_coordinates(senders), per_node)
        assert first.tolist() == placed_redistribution.first_holders(blocks, per_node).tolist()


def _coordinates(layouts: dim_pricing.DimLayouts) -> tuple[np.ndarray, np.ndarray]:
    """Every device's grid coordinate under each (s, f) of `layouts`, and each layout's
    per-dim index among them."""
    states, state = np.unique(np.stack([layouts.stride.ravel(), layouts.factor.ravel()],
                                       axis=1), axis=0, return_inverse=True)
    device = np.arange(layouts.devices)
    return ((device[None, :] // states[:, :1]) % states[:, 1:],
            state.reshape(len(layouts), layouts.rank))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("compiled", [False, True])
def test_placed_seconds_match_the_per_device_pricing(seed: int, compiled: bool) -> None:
    """On nodes of 8 devices (`a100-80gb-dgx`'s) and of 3, links 12 and 3 times apart."""
    rng = np.random.default_rng(100 + seed)
    devices = int(rng.choice([16, 24, 48, 64, 96, 128]))
    per_node = 8 if seed % 3 else 3
    held, needed = edge_layouts(rng, devices, seed % 3)
    forward, backward = dim_pricing.redistribution_words(held, needed)
    held_blocks = held.blocks(np.arange(len(held)))
    needed_blocks = needed.blocks(np.arange(len(needed)))
    expected_words = redistribution_words(held_blocks, needed_blocks)
    assert forward.tolist() == expected_words[0].tolist()
    assert backward.tolist() == expected_words[1].tolist()
    for inter_bandwidth in (2.5e10, 1e11):
        dim_pricing._CACHE.clear()
        seconds = dim_pricing.placed_seconds(held, needed, forward, backward, 2, 3e11,
                                             inter_bandwidth, per_node, compiled)
        expected = placed_redistribution.placed_seconds(
            held_blocks, needed_blocks, forward, backward, 2, 3e11, inter_bandwidth, per_node)
        assert seconds.tolist() == expected.tolist()

