"""The layer-op interface: what the search and the runtime need to know of a layer.

Every `dnn` layer op answers `iteration_space()` with an `IterationSpace`: its named
iteration dims (sizes, whether PaSE may split them, whether they are summed over),
how each operand and the result index into those dims, and its FLOPs per point of
the space, forward and backward. It is plain data, so the pure search engine in
`pase.passes.strategy` never touches IR.

Example, `%h = einsum %x, %w1 -> [b, h]` with x [b, d] and w1 [d, h]:
    IterationSpace(dims=(IterDim("b", 64), IterDim("h", 1024),
                         IterDim("d", 256, reduction=True)),
                   operands=(("b", "d"), ("d", "h")), result=("b", "h"),
                   flops_forward=2.0, flops_backward=4.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True)
class IterDim:
    """One dimension of a layer's iteration space."""

    name: str
    size: int
    splittable: bool = True
    reduction: bool = False
    """Summed over: absent from the result, so a split needs a partial-sum reduction."""


@dataclass(frozen=True)
class IterationSpace:
    """A layer's iteration space and how its tensors index into it.

    `operands[i][k]` names the iteration dim that tensor dim k of operand i follows
    (splitting that iteration dim splits this tensor dim the same way), or is None
    when the tensor dim follows no single iteration dim (a convolution's input height
    follows output height and filter height together) and is never split.
    """

    dims: tuple[IterDim, ...]
    operands: tuple[tuple[str | None, ...], ...]
    result: tuple[str | None, ...]
    flops_forward: float
    """FLOPs per point of the iteration space in the forward pass."""
    flops_backward: float
    """FLOPs per point in the backward pass (input and weight gradients together)."""

    def dim(self, name: str) -> IterDim:
        for dim in self.dims:
            if dim.name == name:
                return dim
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    @property
    def points(self) -> int:
        return prod(d.size for d in self.dims)

    @property
    def splittable(self) -> tuple[IterDim, ...]:
        return tuple(d for d in self.dims if d.splittable)
