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
from math import prod

from pase.core.placement import check_devices
from pase.core.space import IterationSpace
from pase.passes.strategy.vertices import Layer


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


def data_parallel(layer: Layer, batch: str | None, devices: int) -> dict[str, int]:
    """The layer's configuration under data parallelism: the batch dim split as far as it
    divides, up to all devices."""
    if batch is None or batch not in layer.space.names:
        return {}
    dim = layer.space.dim(batch)
    if not dim.splittable:
        return {}
    factor = max(split_factors(dim.size, devices, 1))
    return {batch: factor} if factor > 1 else {}


def searched_configs(layer: Layer, devices: int, min_shard: int,
                     batch: str | None) -> list[dict[str, int]]:
    """pase's configuration space of a layer: PaSE's (`enumerate_configs`) plus the
    data-parallel configuration, which is always a candidate, even where min-shard would
    rule it out, so the optimum is never slower than data parallelism."""
    configs = enumerate_configs(layer.space, devices, min_shard)
    extra = data_parallel(layer, batch, devices)
    if extra not in configs:
        configs.append(extra)
    return configs


class PinError(ValueError):
    """A pinned configuration that does not fit its layer: `layer` names the layer and `dim`
    the dimension at fault (None when the whole configuration is)."""

    def __init__(self, message: str, layer: str, dim: str | None = None):
        super().__init__(message)
        self.layer = layer
        self.dim = dim


def check_pinned(layer: Layer, config: dict[str, int], devices: int) -> None:
    """Raise `PinError` where a pinned `config` does not fit `layer` on `devices` devices."""
    for dim, factor in config.items():
        if dim not in layer.space.names:
            raise PinError(f"layer '{layer.name}' has no iteration dimension '{dim}' "
                           f"(its dimensions: {', '.join(layer.space.names)})", layer.name, dim)
        iter_dim = layer.space.dim(dim)
        if not iter_dim.splittable:
            raise PinError(f"dimension '{dim}' of layer '{layer.name}' cannot be split",
                           layer.name, dim)
        if factor < 1 or iter_dim.size % factor:
            raise PinError(f"split factor {factor} of '{dim}' in layer '{layer.name}' "
                           f"does not divide its size {iter_dim.size}", layer.name, dim)
    if prod(config.values()) > devices:
        raise PinError(f"layer '{layer.name}' is pinned to {prod(config.values())} devices "
                       f"but only {devices} are available", layer.name)
