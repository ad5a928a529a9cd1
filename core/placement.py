"""Canonical placement: where a layer's configuration puts its blocks, and how a transfer
between two layers is named.

A configuration (a split factor per iteration dim) runs on a device grid whose axes are
its split dims, in the layer's iteration-space order (or a gradient's `grid_order`), laid
row-major onto devices 0..q-1, q the product of the factors; devices q..P-1 idle for that
layer. The cost model computes its volumes for exactly this placement and
`pase-lower-spmd` lowers to it, so both read it from here. (The runtime keeps its own
device arithmetic on purpose: it cross-checks the two.)

    >>> where = Placement.of(("b", "h", "d"), {"h": 4, "b": 2})
    >>> where.axes, where.grid
    ((('b', 2), ('h', 4)), 'grid2x4')
    >>> edge_tag("h", "a", backward=True)
    'h<-a'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_DEVICES = 1 << 13
"""The most devices pase takes (a search, a `#pase.strategy`, a `dist.program`). The cost
tables hold each layout's block on every device, so their size grows with P; past this,
even a small graph needs gigabytes."""


def check_devices(devices: int) -> None:
    """Raise ValueError unless 1 <= devices <= MAX_DEVICES.

        >>> check_devices(8193)
        Traceback (most recent call last):
        ValueError: devices must be between 1 and 8,192, got 8,193
    """
    if not 1 <= devices <= MAX_DEVICES:
        raise ValueError(f"devices must be between 1 and {MAX_DEVICES:,}, got {devices:,}")


def grid_axes(dims: Iterable[str], config: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """The split dims of `config` in the order of `dims`, with their factors."""
    return tuple((dim, config[dim]) for dim in dims if config.get(dim, 1) > 1)


@dataclass(frozen=True)
class Placement:
    """Where a layer runs: its grid's split dims with factors, in grid-axis order."""

    axes: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, dims: Iterable[str], config: Mapping[str, int]) -> Placement:
        return cls(grid_axes(dims, config))

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid's shape; an unsplit layer runs on a grid of one device."""
        return tuple(f for _, f in self.axes) or (1,)

    @property
    def grid(self) -> str:
        """The grid's symbol name, `grid2x4`."""
        return "grid" + "x".join(str(f) for f in self.shape)

    def axis(self, dim: str | None) -> int | None:
        """The grid axis `dim` is split over, or None."""
        for index, (name, _) in enumerate(self.axes):
            if name == dim:
                return index
        return None

    def axes_of(self, dims: Sequence[str]) -> list[int]:
        """The grid axes of those of `dims` that are split, in the order of `dims`."""
        return [a for a in (self.axis(d) for d in dims) if a is not None]


def edge_tag(upstream: str, downstream: str, backward: bool, carried: str = "") -> str:
    """The name of the transfer along the forward edge `upstream -> downstream`:
    `"u->v"`, or `"u<-v"` for the gradient flowing back, with `" %x"` added when it carries
    an input or param `x` held in its first reader's layout. pase-lower-spmd tags its
    `dist.redistribute` ops so, and the words check joins measured and predicted on it."""
    arrow = "<-" if backward else "->"
    return f"{upstream}{arrow}{downstream}" + (f" %{carried}" if carried else "")
