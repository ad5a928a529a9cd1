"""The DP's factors: cost tables over the configurations of a few vertices.

A factor is `(axes, table)`: the sorted vertex ids it ranges over and a float64 table with one
axis per vertex. Both eliminations, numpy's (`dp.eliminate`) and the compiled kernel's
(`jit.eliminate.eliminate`), take factors and return one, with an argmin table as wide as
`argmin_dtype` says; this module is what they share, so neither imports the other.

>>> vertex_cost: Factor = ((0,), np.array([1.0, 0.0]))
>>> vertex_cost[1].shape
(2,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Axes = tuple[int, ...]
"""Sorted vertex ids, one per table axis."""
Factor = tuple[Axes, np.ndarray]
Eliminate = Callable[[Sequence[Factor], int], tuple[Axes, np.ndarray, np.ndarray]]
"""`eliminate(factors, vertex) -> (dependent set, minimum table, argmin table)`."""


def argmin_dtype(size: int) -> np.dtype:
    """The smallest unsigned integer type that holds every index below `size`.

    >>> argmin_dtype(256), argmin_dtype(257)
    (dtype('uint8'), dtype('uint16'))
    """
    return np.min_scalar_type(max(size - 1, 0))


def axis_sizes(factors: Sequence[Factor], vertex: int) -> tuple[dict[int, int], Axes]:
    """Each vertex's number of configurations in `factors`, and the sorted dependent set:
    the vertices other than `vertex` they mention."""
    sizes: dict[int, int] = {}
    for axes, table in factors:
        sizes.update(zip(axes, table.shape, strict=True))
    return sizes, tuple(sorted(set(sizes) - {vertex}))
