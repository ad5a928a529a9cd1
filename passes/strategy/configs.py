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

from collections.abc import Iterator

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
    splittable dims, the last dim varying fastest. The unsplit layer comes first. Only
    the configurations that fit are visited (a prefix that uses up the devices stops its
    branch), so the work is proportional to `count_configs`, not to the product of the
    dims' choices.
    """
    dims = space.splittable
    choices = _choices(space, devices, min_shard)
    return [{d.name: f for d, f in zip(dims, factors, strict=True) if f != 1}
            for factors in _fitting(choices, devices)]


def count_configs(space: IterationSpace, devices: int, min_shard: int = 4) -> int:
    """How many configurations `enumerate_configs` returns, counted without listing them
    (a table over the devices used so far), so that a budget can refuse first.

        >>> from pase.core.space import IterationSpace, IterDim
        >>> dims = tuple(IterDim(f"d{i}", 8192) for i in range(8))
        >>> space = IterationSpace(dims, (tuple(d.name for d in dims),), (), 1.0, 1.0)
        >>> count_configs(space, devices=8192)
        203418
    """
    counts = {1: 1}
    for factors in _choices(space, devices, min_shard):
        grown: dict[int, int] = {}
        for used, count in counts.items():
            for factor in factors:
                if used * factor <= devices:
                    grown[used * factor] = grown.get(used * factor, 0) + count
        counts = grown
    return sum(counts.values())


def _choices(space: IterationSpace, devices: int, min_shard: int) -> list[list[int]]:
    check_devices(devices)
    if min_shard < 1:
        raise ValueError(f"min-shard must be at least 1, got {min_shard}")
    return [split_factors(d.size, devices, min_shard) for d in space.splittable]


def _fitting(choices: list[list[int]], devices: int) -> Iterator[tuple[int, ...]]:
    """The factor tuples, one factor from each of `choices` (ascending lists), whose
    product is at most `devices`, in lexicographic order."""
    if not choices:
        yield ()
        return
    for factor in choices[0]:
        if factor > devices:
            break
        for rest in _fitting(choices[1:], devices // factor):
            yield (factor, *rest)
