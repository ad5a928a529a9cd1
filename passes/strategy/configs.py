"""PaSE's configuration space of a layer.

A configuration gives each splittable iteration dim a split factor. PaSE's rule: a
factor divides its dim, the shard it leaves is at least `min_shard` (factor 1 is
always allowed), and the factors multiply to at most `devices` (a layer may leave
devices idle).

Example:
    >>> from pase.core.space import IterationSpace, IterDim
    >>> space = IterationSpace((IterDim("b", 8), IterDim("h", 8, reduction=True)),
    ...                        (("b", "h"),), ("b",), 2.0, 4.0)
    >>> enumerate_configs(space, devices=4, min_shard=4)
    [{}, {'h': 2}, {'b': 2}, {'b': 2, 'h': 2}]
"""

from __future__ import annotations

from itertools import product

from pase.core.placement import check_devices
from pase.core.space import IterationSpace


def split_factors(size: int, devices: int, min_shard: int) -> list[int]:
    """Factors PaSE allows for one dim: divisors of `size`, at most `devices`, leaving
    shards of at least `min_shard` elements (factor 1 always)."""
    return [f for f in range(1, min(size, devices) + 1)
            if size % f == 0 and (f == 1 or size // f >= min_shard)]


def enumerate_configs(space: IterationSpace, devices: int, min_shard: int = 4
                      ) -> list[dict[str, int]]:
    """Every valid configuration, `{dim: factor}` with factors of 1 omitted.

    The order is deterministic: the lexicographic order of the factor tuples over the
    splittable dims, the last dim varying fastest. The unsplit layer comes first.
    """
    check_devices(devices)
    if min_shard < 1:
        raise ValueError(f"min-shard must be at least 1, got {min_shard}")
    dims = space.splittable
    choices = [split_factors(d.size, devices, min_shard) for d in dims]
    configs: list[dict[str, int]] = []
    for factors in product(*choices):
        used = 1
        for factor in factors:
            used *= factor
        if used <= devices:
            configs.append({d.name: f for d, f in zip(dims, factors, strict=True) if f != 1})
    return configs
