"""Redistribution priced from per-dim layouts (`dim_pricing.py`) against the per-device
originals (`cost.redistribution_words`, `placed_redistribution.placed_seconds`): the same
layouts, the same floats, on random configurations of random layers at small P (sizes that
the factors do not divide, blocks of length 0, grids that cut nodes, devices that do not
fill the last node). (Factors above a dim's size, which no configuration list
holds, would give empty blocks, which `cost._least_overlap` counts as whole.)."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from pase.frontend import parse_text
from pase.passes.strategy import SearchOptions, build_problem, cost, dim_pricing
from pase.passes.strategy.cost import _unique_blocks, redistribution_words
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.placed_redistribution import placed_seconds

GRAPH = """
graph @g(a = {a}, b = {b}, c = {c}) {{
  %x = param [a, b, c]
  %y = relu %x
  %z = einsum %y -> [c, a, b]
  return %z
}}
"""


def random_configs(rng: np.random.Generator, sizes: dict[str, int], devices: int,
                   count: int) -> list[dict[str, int]]:
    """Factors up to each dim's size (as `split_factors` gives: no empty blocks), in any
    order of the dims."""
    configs = []
    for _ in range(count):
        config: dict[str, int] = {}
        for name in rng.permutation(sorted(sizes)):
            factor = int(rng.integers(1, min(6, sizes[name]) + 1))
            if factor > 1 and prod(config.values()) * factor <= devices:
                config[str(name)] = factor
        configs.append(config)
    return configs


@pytest.mark.parametrize("seed", range(6))
def test_per_dim_pricing_matches_per_device_pricing(seed: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    if seed % 2:
        monkeypatch.setattr(dim_pricing, "_CHUNK_ENTRIES", 1)   # a row at a time
    devices = int(rng.choice([4, 6, 8, 12, 16, 24]))
    per_node = int(rng.choice([1, 2, 3, 4, 8]))
    sizes = {name: int(rng.choice([1, 2, 3, 5, 6, 8, 12, 16])) for name in "abc"}
    producer, consumer = read_graph(parse_text(GRAPH.format(**sizes))).layers
    ends = []
    for layer, use in ((producer, producer.result), (consumer, consumer.operands[0])):
        configs = random_configs(rng, sizes, devices, 40)
        per_dim, index = dim_pricing.DimLayouts.of(layer, configs, use, devices)
        per_device, expected_index = _unique_blocks(layer, configs, use, devices)
        assert index.tolist() == expected_index.tolist()
        assert np.array_equal(per_dim.blocks(np.arange(len(per_dim))), per_device)
        ends.append((per_dim, per_device))
    (held, held_blocks), (needed, needed_blocks) = ends
    forward, backward = dim_pricing.redistribution_words(held, needed)
    expected_forward, expected_backward = redistribution_words(held_blocks, needed_blocks)
    assert forward.tolist() == expected_forward.tolist()
    assert backward.tolist() == expected_backward.tolist()
    # Links ten times apart, and two apart (more pairs where NVLink may be the slower);
    # the second time with the links walk's blocks built one layout at a time.
    for inter_bandwidth, tile in ((1e8, dim_pricing._TILE_BYTES), (5e8, 1)):
        monkeypatch.setattr(dim_pricing, "_TILE_BYTES", tile)
        seconds = dim_pricing.placed_seconds(held, needed, forward, backward, 2, 1e9,
                                             inter_bandwidth, per_node)
        expected = placed_seconds(held_blocks, needed_blocks, forward, backward, 2, 1e9,
                                  inter_bandwidth, per_node)
        assert seconds.tolist() == expected.tolist()


def test_edge_costs_take_the_per_dim_path_from_512_devices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A problem on 512 devices of a DGX cluster prices its edges per dim; forced
    through the per-device path, every table is the same."""
    graph = parse_text(GRAPH.format(a=12, b=8, c=6))
    tables = []
    for threshold in (cost.DIM_PRICING_DEVICES, 1 << 20):
        monkeypatch.setattr(cost, "DIM_PRICING_DEVICES", threshold)
        problem = build_problem(graph, 512, "a100-80gb-dgx",
                                options=SearchOptions(min_shard=1))
        tables.append([problem.edge_table(i).tolist() for i in range(len(problem.edges))])
    assert tables[0] == tables[1]
