"""What a kernel receives from the executor, and the one signature every kernel has.

Each kernel module exports `KERNELS = {op name: (forward, backward)}`:

    forward(ctx, inputs) -> (output, saved)
    backward(ctx, inputs, output, grad_output, saved, needs) -> grads

`inputs` are the device's local blocks of the forward operands, `output` the forward
result's block, `saved` what the forward returned for its backward (or None), `needs[i]`
whether operand i's gradient is wanted, and `grads` one entry per operand (None where
not needed or not defined). `ctx` holds the rest: the op's properties, each operand's
and the result's layout (its own dims, global sizes, local block shape), the offset of
the device's block, and the collectives' callbacks. For example the einsum entry is

    def forward(ctx, inputs):
        return einsum_forward(inputs, ctx.dims, ctx.result.dims), None
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

Reduce = Callable[[np.ndarray, str], np.ndarray]
"""`reduce(array, op)`: all-reduce `array` elementwise ("sum" or "max") over a device group."""

AllGather = Callable[[np.ndarray], np.ndarray]
"""`all_gather(block)`: concatenate the group's blocks along the last axis, in order."""


def local_reduce(array: np.ndarray, op: str) -> np.ndarray:
    """The reduction over a group of one device: the identity."""
    if op not in ("sum", "max"):
        raise ValueError(f"reduce op must be 'sum' or 'max', got '{op}'")
    return array


def local_gather(array: np.ndarray) -> np.ndarray:
    """The all-gather over a group of one device: the identity."""
    return array


def local_indices(indices: np.ndarray, offset: int,
                  size: int) -> tuple[np.ndarray, np.ndarray]:
    """Global indices (ids, labels) into a local block `[offset, offset + size)`: the local
    index, clipped into range, and whether the index falls in the block."""
    local = indices.astype(np.int64) - offset
    return np.clip(local, 0, size - 1), (local >= 0) & (local < size)


def count_or_local(count: int | None, shape: Sequence[int], axes: Sequence[int]) -> int:
    """`count`, or by default the local number of elements over `axes` (right only when none
    of them is split); a python int, which keeps f32 arrays f32 (NEP 50)."""
    return int(count) if count is not None else prod(shape[a] for a in axes)


def axes_of(dims: Sequence[str], names: Sequence[str]) -> tuple[int, ...]:
    """Positions of `names` in `dims`: `axes_of(["b", "s", "d"], ["d", "b"]) == (2, 0)`."""
    missing = [name for name in names if name not in dims]
    if missing:
        raise ValueError(f"dimension(s) {', '.join(missing)} not in [{', '.join(dims)}]")
    return tuple(list(dims).index(name) for name in names)


@dataclass(frozen=True)
class Tensor:
    """A tensor as a kernel sees it: its dim names, global sizes and local block shape.
    `Tensor(("b", "d"), (4, 8))` is an unsplit [b = 4, d = 8] tensor; a program's tensors
    are `pase.runtime.program.Sharded`, which adds where the blocks lie."""

    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    local: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.local:
            object.__setattr__(self, "local", self.sizes)


@dataclass(frozen=True)
class KernelContext:
    """One layer step on one device, as its kernel needs it.

    `operands` and `result` are the forward op's tensors; `offset(i, k)` is where this
    device's block of operand i starts along its dim k; `reduce` and `gather` run over
    the devices that share the layer's statistics (identities on one device);
    `reduce_partial` runs over the devices whose results the caller all-reduces, those
    that split the dims the result is a partial sum over (a cross-entropy's rows: the
    count of its labels that are not ignored).
    """

    props: Mapping[str, Any]
    operands: tuple[Tensor, ...]
    result: Tensor
    reduce: Reduce = local_reduce
    gather: AllGather = local_gather
    offset: Callable[[int, int], int] = lambda operand, dim: 0
    reduce_partial: Reduce = local_reduce

    @property
    def dims(self) -> list[tuple[str, ...]]:
        """Each operand's own dims, in order."""
        return [t.dims for t in self.operands]

    def count(self, operand: int, dims: Sequence[str], inside: bool = True) -> int:
        """The global number of elements of operand `operand` over `dims` (or, with
        `inside=False`, over its other dims): what a norm, mean or loss divides by."""
        tensor = self.operands[operand]
        return prod(s for d, s in zip(tensor.dims, tensor.sizes, strict=True)
                    if (d in dims) == inside)


Forward = Callable[[KernelContext, list[Any]], tuple[Any, Any]]
"""`forward(ctx, inputs) -> (output, saved)`."""

Backward = Callable[[KernelContext, list[Any], Any, Any, Any, list[bool]], list[Any]]
"""`backward(ctx, inputs, output, grad_output, saved, needs) -> grads`, one per operand."""

Kernels = dict[str, tuple[Forward, Backward | None]]
"""A kernel table: op name -> (forward, backward); backward None for an op that is never
differentiated (the SGD update)."""
