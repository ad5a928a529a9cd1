"""PaSE's configuration space: `split_factors` and `enumerate_configs`."""

from __future__ import annotations

from itertools import product
from math import prod

import pytest

from pase.core.space import IterationSpace, IterDim
from pase.passes.strategy import enumerate_configs, split_factors


def space(*dims: IterDim) -> IterationSpace:
    return IterationSpace(dims, (), tuple(d.name for d in dims), 1.0, 1.0)


@pytest.mark.parametrize(("size", "devices", "min_shard", "factors"), [
    (8, 1, 4, [1]),
    (8, 4, 4, [1, 2]),          # 8 / 4 = 2 is below the minimum shard
    (8, 4, 1, [1, 2, 4]),
    (8, 8, 1, [1, 2, 4, 8]),
    (8, 8, 2, [1, 2, 4]),
    (12, 8, 1, [1, 2, 3, 4, 6]),  # divisors up to the device count
    (100, 8, 4, [1, 2, 4, 5]),
    (7, 8, 1, [1, 7]),
    (3, 8, 4, [1]),             # a dim smaller than the shard never splits
    (1, 8, 1, [1]),
    (64, 64, 4, [1, 2, 4, 8, 16]),
])
def test_split_factors(size: int, devices: int, min_shard: int, factors: list[int]):
    assert split_factors(size, devices, min_shard) == factors


def test_docstring_example():
    example = space(IterDim("b", 8), IterDim("h", 8, reduction=True))
    assert enumerate_configs(example, devices=4, min_shard=4) == [
        {}, {"h": 2}, {"b": 2}, {"b": 2, "h": 2}]


def test_order_is_lexicographic_last_dim_fastest():
    configs = enumerate_configs(space(IterDim("a", 4), IterDim("b", 4)), 4, min_shard=1)
    assert configs == [{}, {"b": 2}, {"b": 4}, {"a": 2}, {"a": 2, "b": 2}, {"a": 4}]


def test_products_stay_within_the_devices():
    dims = (IterDim("b", 16), IterDim("h", 12), IterDim("d", 10))
    for devices in (1, 2, 3, 4, 6, 8, 16):
        configs = enumerate_configs(space(*dims), devices, min_shard=1)
        assert configs[0] == {}
        for config in configs:
            assert prod(config.values()) <= devices
            assert 1 not in config.values()
        # Exactly the factor tuples of the rule, none missing, none twice.
        expected = [
            factors for factors in product(*(split_factors(d.size, devices, 1) for d in dims))
            if prod(factors) <= devices]
        assert len(configs) == len(expected)
        assert len({tuple(sorted(c.items())) for c in configs}) == len(configs)


def test_min_shard_prunes_small_shards():
    dims = (IterDim("b", 8), IterDim("h", 32))
    assert len(enumerate_configs(space(*dims), 8, min_shard=1)) == 10
    assert len(enumerate_configs(space(*dims), 8, min_shard=4)) == 7
    assert len(enumerate_configs(space(*dims), 8, min_shard=8)) == 3  # b unsplit; h 1, 2, 4
    assert len(enumerate_configs(space(*dims), 8, min_shard=64)) == 1


def test_unsplittable_dims_never_split():
    conv_like = space(IterDim("b", 8), IterDim("ho", 64, splittable=False),
                      IterDim("r", 3, splittable=False, reduction=True))
    configs = enumerate_configs(conv_like, 8, min_shard=1)
    assert configs == [{}, {"b": 2}, {"b": 4}, {"b": 8}]
    assert enumerate_configs(space(IterDim("t", 16, splittable=False)), 8) == [{}]
    assert enumerate_configs(space(), 8) == [{}]


@pytest.mark.parametrize(("devices", "min_shard", "message"), [
    (0, 4, "devices must be between 1 and 8,192, got 0"),
    (8193, 4, "devices must be between 1 and 8,192, got 8,193"),
    (4, 0, "min-shard must be at least 1, got 0"),
])
def test_bad_arguments(devices: int, min_shard: int, message: str):
    with pytest.raises(ValueError, match=message):
        enumerate_configs(space(IterDim("b", 8)), devices, min_shard)
