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
from pase.passes.strategy.cost import least_overlap, redistribution_words
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


def _forget() -> None:
    """Empty the pricing's memos (keyed by their inputs, not by the path that filled
    them), so that the path under test computes what it returns."""
    dim_stats._STATS.clear()
    dim_stats._TABLES.clear()
    dim_pricing._EXACT.clear()
    dim_pricing._CACHE.clear()
    dim_links._PAIRS.clear()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("compiled", [False, True])
def test_pair_stats_match_a_walk_over_every_device(seed: int, compiled: bool) -> None:
    _forget()
    rng = np.random.default_rng(seed)
    devices = int(rng.choice([12, 24, 64, 96]))
    per_node = int(rng.choice([0, 3, 8]))

    def states(count: int) -> np.ndarray:
        return np.array([(int(rng.choice([1, 2, 3, 4, 8, 12])), int(rng.choice([1, 2, 3, 4, 8])),
                          int(rng.integers(0, 7))) for _ in range(count)], dtype=np.int64)

    held, needed = states(5), states(6)
    stats = dim_stats.pair_stats(held, needed, per_node, devices, compiled)
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
    _forget()
    for senders, receivers in ((held, needed), (needed, held)):
        rows, cols = (index.ravel() for index in np.indices((len(senders), len(receivers))))
        blocks = senders.blocks(np.arange(len(senders)))
        expected = placed_redistribution.received_by_link(
            blocks, receivers.blocks(np.arange(len(receivers))), per_node, rows, cols)
        # Walked, then half of them again from the memo of pairs, with the others walked.
        half = rng.permutation(len(rows))[:len(rows) // 2]
        dim_links.received_by_link(senders, receivers, per_node, rows[half], cols[half])
        intra, inter = dim_links.received_by_link(senders, receivers, per_node, rows, cols)
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
    _forget()
    forward, backward = dim_pricing.redistribution_words(held, needed, compiled)
    held_blocks = held.blocks(np.arange(len(held)))
    needed_blocks = needed.blocks(np.arange(len(needed)))
    expected_words = redistribution_words(held_blocks, needed_blocks)
    assert forward.tolist() == expected_words[0].tolist()
    assert backward.tolist() == expected_words[1].tolist()
    for inter_bandwidth in (2.5e10, 1e11):
        _forget()
        seconds = dim_pricing.placed_seconds(held, needed, forward, backward, 2, 3e11,
                                             inter_bandwidth, per_node, compiled)
        expected = placed_redistribution.placed_seconds(
            held_blocks, needed_blocks, forward, backward, 2, 3e11, inter_bandwidth, per_node)
        assert seconds.tolist() == expected.tolist()



@pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")
@pytest.mark.parametrize("seed", range(8))
def test_compiled_least_overlap_matches_numpy_and_the_per_device_one(seed: int) -> None:
    """`least_overlap` by `jit.least` (the shortcut per entry, the open pairs walked over
    one period) and by numpy, with node boxes and without, against `cost.least_overlap`
    of the per-device blocks (node boxes from `placed_redistribution.node_boxes`); the
    walks are reached (pairs with two dims changing)."""
    rng = np.random.default_rng(200 + seed)
    devices = int(rng.choice([24, 48, 64, 96, 192]))
    per_node = [0, 8, 3, 8][seed % 4]
    held, needed = edge_layouts(rng, devices, seed % 3)
    held_blocks = held.blocks(np.arange(len(held)))
    needed_blocks = needed.blocks(np.arange(len(needed)))
    held_q, needed_q = held.working, needed.working
    if per_node:
        held_blocks = placed_redistribution.node_boxes(held_blocks, per_node)[0]
        held_q = np.minimum(-(-held_q // per_node) * per_node, devices)
    expected = least_overlap(held_blocks, needed_blocks, held_q, needed_q)
    results = []
    for compiled in (False, True):
        _forget()
        results.append(dim_pricing.least_overlap(held, needed, per_node, compiled).tolist())
    assert results[0] == expected.tolist()
    assert results[1] == expected.tolist()


@pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")
@pytest.mark.parametrize("seed", range(6))
def test_compiled_walk_over_one_period_matches_the_walk_over_every_device(seed: int) -> None:
    """`jit.least.walk_least_jit` over windows cut to the pair's period against numpy's
    `_walk_least` over the whole window, on pairs whose nodes all work."""
    from pase.passes.strategy.jit.least import walk_least_jit

    rng = np.random.default_rng(300 + seed)
    devices = int(rng.choice([48, 96, 192]))
    per_node = [0, 8, 3][seed % 3]
    held, needed = edge_layouts(rng, devices, seed % 3)
    rows, cols = (index.ravel() for index in np.indices((len(held), len(needed))))
    step = max(1, per_node)
    stop = np.minimum(held.working[rows] // step * step, needed.working[cols])
    rows, cols, stop = rows[stop > 0], cols[stop > 0], stop[stop > 0]
    dims = rng.random((len(rows), held.rank)) < 0.7
    expected = dim_pricing._walk_least(held, needed, rows, cols, np.zeros_like(stop), stop,
                                       dims, per_node)
    period = np.lcm(np.lcm(dim_pricing._periods(held)[rows],
                           dim_pricing._periods(needed)[cols]), step)
    walked = walk_least_jit((held.stride, held.factor, held.length, held.working),
                            (needed.stride, needed.factor, needed.length), rows, cols,
                            np.minimum(stop, period), dims, per_node)
    assert walked.tolist() == expected.tolist()


@pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")
@pytest.mark.parametrize("seed", range(6))
def test_compiled_exact_boxes_match_the_per_device_boxes(seed: int) -> None:
    """`exact_boxes` by `jit.boxes` (the nodes of one period and the last, part-working
    node) and by numpy against `placed_redistribution.node_boxes`' exactness."""
    rng = np.random.default_rng(400 + seed)
    devices = int(rng.choice([24, 40, 96, 192]))
    per_node = [8, 3, 8][seed % 3]
    # Besides an edge's layouts, grids of any strides and working devices (nodes that
    # work in part and whose boxes are not filled among them).
    count, rank = 30, 3
    grids = dim_pricing.DimLayouts(
        rng.integers(1, devices + 1, size=count), rng.choice([1, 2, 3, 4, 8], (count, rank)),
        rng.choice([1, 2, 3, 4], (count, rank)), rng.integers(0, 4, (count, rank)), devices)
    for layouts in (*edge_layouts(rng, devices, seed % 3), grids):
        blocks = layouts.blocks(np.arange(len(layouts)))
        expected = placed_redistribution.node_boxes(blocks, per_node)[1].tolist()
        for compiled in (False, True):
            _forget()
            assert dim_pricing.exact_boxes(layouts, per_node, compiled).tolist() == expected
