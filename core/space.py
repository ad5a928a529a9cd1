"""The layer-op interface: what the search and the runtime need to know of a layer.

Every `dnn` layer op answers `iteration_space()` with an `IterationSpace`: its named
iteration dims (sizes, whether PaSE may split them, whether they are summed over),
how each operand and the result index into those dims, and its FLOPs per point of
the space, forward and backward, and its distribution facts: which dims leave the
result a partial sum, which collectives the kernel runs itself (statistics, per-step
gathers) and which operand gradients it completes itself. It is plain data, so the
pure search engine in `pase.passes.strategy` never touches IR, and the cost model,
`pase-lower-spmd` and the runtime's words check all read the same record.

Example, `%h = einsum %x, %w1 -> [b, h]` with x [b, d] and w1 [d, h]:
    IterationSpace(dims=(IterDim("b", 64), IterDim("h", 1024),
                         IterDim("d", 256, reduction=True)),
                   operands=(("b", "d"), ("d", "h")), result=("b", "h"),
                   flops_forward=2.0, flops_backward=4.0, partial=("d",))

and `%p = softmax %s over [t]` with s [b, t] carries
    statistics=Statistics(over=("t",), rows=("b",), collectives=(
        Collective("all_reduce", words_per_row=1, count=2),
        Collective("all_reduce", words_per_row=1, backward=True)))
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Literal


@dataclass(frozen=True)
class IterDim:
    """One dimension of a layer's iteration space."""

    name: str
    size: int
    splittable: bool = True
    reduction: bool = False
    """Summed over: absent from the result, so a split needs a partial-sum reduction."""


@dataclass(frozen=True)
class Collective:
    """Collectives a kernel runs itself, among the devices that split its statistics dims.

    Each of the `count` calls moves `words_per_row` words for every row a device holds
    (see `Statistics.rows`): an all-reduce of that many words, or an all-gather whose
    result (the whole group's) has that many. A `backward` collective runs only in the
    layer's backward pass, and only when some operand needs a gradient.

    Example, layernorm's forward `reduce([Σ x, Σ x²], "sum")`:
    `Collective("all_reduce", words_per_row=2)`.

    `among`, when given, runs the collective among the devices that split those dims
    instead, and `per_row=False` makes `words_per_row` the words of the whole call: the
    count of a cross-entropy's labels that are not ignored, summed over the devices that
    split its rows, is `Collective("all_reduce", 1, among=("b",), per_row=False)`.
    """

    kind: Literal["all_reduce", "all_gather"]
    words_per_row: int
    count: int = 1
    backward: bool = False
    among: tuple[str, ...] | None = None
    per_row: bool = True


@dataclass(frozen=True)
class Statistics:
    """The collectives inside a layer's kernel (docs/cost-model.md, rules 3 and 4).

    `over` names the iteration dims whose split devices exchange statistics: the
    kernel's callbacks run among the devices that differ only along them. `rows` names
    the dims of the first operand that index its rows: a device holds
    (its block of operand 0) / (the sizes of the operand's other dims) rows.

    Example, `%y = layernorm %x, %g, %beta over [d]` with x [b, s, d]:
    `Statistics(over=("d",), rows=("b", "s"), collectives=(Collective("all_reduce", 2),
    Collective("all_reduce", 2, backward=True)))`.
    """

    over: tuple[str, ...]
    rows: tuple[str, ...]
    collectives: tuple[Collective, ...]


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
    partial: tuple[str, ...] = ()
    """The iteration dims whose split leaves the result a partial sum the caller
    all-reduces (an einsum's contracted dims; a cross-entropy's row dims)."""
    statistics: Statistics | None = None
    """The collectives the kernel runs itself, or None."""
    kernel_reduced_grads: tuple[int, ...] = ()
    """Operands whose gradient the kernel all-reduces itself (the LSTM's input, every
    step), so the caller must not all-reduce it again over the dims it does not
    range over."""

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
    def stats_dims(self) -> tuple[str, ...]:
        """The dims the kernel's own collectives run over (none without statistics)."""
        return self.statistics.over if self.statistics is not None else ()

    @property
    def splittable(self) -> tuple[IterDim, ...]:
        return tuple(d for d in self.dims if d.splittable)
