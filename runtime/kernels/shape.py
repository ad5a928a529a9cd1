"""concat, reshape, slice and broadcast: data movement only, purely local, no callbacks.

concat joins along the one dim whose name differs between the operands and the result;
that dim is never split, so the local blocks concatenate into the local result.

reshape merges consecutive dims, splits a dim, or renames one. Only dims that pass
through one-to-one (kept or renamed) may be split, and a row-major reshape of a block
that is whole along every merged or split group is the block of the reshaped tensor,
so the kernel reshapes the local block into the LOCAL result shape the caller gives
(the result's sizes with each passed-through dim at its local extent).

slice takes `start .. start + n - 1` along one dim, which is never split, so the local
block of x is whole along it; the backward scatters the gradient into zeros.

broadcast repeats x along the result's dims x lacks (the LOCAL result shape: a split new
dim gives each device its rows); the backward sums the gradient over them, a partial sum
when a new dim is split, which the caller all-reduces.

Example:
    >>> a, b = np.zeros((2, 3)), np.ones((2, 1))
    >>> concat_forward([a, b], [["n", "c1"], ["n", "c2"]], ["n", "c"]).shape
    (2, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pase.runtime.kernels.context import KernelContext, Kernels


def concat_axis(input_dims: Sequence[Sequence[str]], output_dims: Sequence[str]) -> int:
    """The one position where the operands' dim names differ from the result's."""
    axes = {k for dims in input_dims for k, d in enumerate(dims) if d != output_dims[k]}
    if len(axes) != 1:
        raise ValueError(f"concat operands must differ from [{', '.join(output_dims)}] in "
                         "exactly one dim")
    return axes.pop()


def concat_forward(inputs: Sequence[np.ndarray], input_dims: Sequence[Sequence[str]],
                   output_dims: Sequence[str]) -> np.ndarray:
    return np.concatenate(list(inputs), axis=concat_axis(input_dims, output_dims))


def concat_backward(grad_output: np.ndarray, input_dims: Sequence[Sequence[str]],
                    output_dims: Sequence[str], input_sizes: Sequence[int]) -> list[np.ndarray]:
    """The operands' gradients: slices of grad_output along the concat dim, the i-th
    `input_sizes[i]` long."""
    axis = concat_axis(input_dims, output_dims)
    bounds = np.cumsum(input_sizes)[:-1].tolist()
    return [part.copy() for part in np.split(grad_output, bounds, axis=axis)]


def reshape(array: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A copy of `array` (never a view) in `shape`: the forward reshapes x into the local
    result shape, the backward the output gradient into x's local shape."""
    return array.reshape(tuple(shape)).copy()


def slice_forward(x: np.ndarray, axis: int, start: int, size: int) -> np.ndarray:
    """A copy of x's entries `start .. start + size - 1` along `axis`."""
    return np.take(x, np.arange(start, start + size), axis=axis)


def slice_backward(grad_output: np.ndarray, shape: Sequence[int], axis: int,
                   start: int) -> np.ndarray:
    """The input gradient: grad_output in its place within zeros of x's `shape`."""
    grad = np.zeros(tuple(shape), dtype=grad_output.dtype)
    index = [slice(None)] * len(shape)
    index[axis] = slice(start, start + grad_output.shape[axis])
    grad[tuple(index)] = grad_output
    return grad


def _slice(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    axis = ctx.operands[0].dims.index(ctx.props["dim"])
    return slice_forward(inputs[0], axis, ctx.props["start"], ctx.result.local[axis]), None


def _slice_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                    saved: Any, needs: list[bool]) -> list[Any]:
    axis = ctx.operands[0].dims.index(ctx.props["dim"])
    return [slice_backward(grad_output, inputs[0].shape, axis, ctx.props["start"])]


def pad_sources(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """For each entry of a padded axis, the entry of x it copies (-1: a zero).

    >>> pad_sources(3, 2, 1, "reflect").tolist(), pad_sources(3, 2, 1, "edge").tolist()
    ([2, 1, 0, 1, 2, 1], [0, 0, 0, 1, 2, 2])
    >>> pad_sources(3, 1, 1, "zeros").tolist()
    [-1, 0, 1, 2, -1]
    """
    positions = np.arange(-before, size + after)
    if mode == "edge":
        return np.clip(positions, 0, size - 1)
    if mode == "reflect":
        return np.where(positions < 0, -positions,
                        np.where(positions >= size, 2 * (size - 1) - positions, positions))
    return np.where((positions < 0) | (positions >= size), -1, positions)


def pad_forward(x: np.ndarray, axis: int, before: int, after: int, mode: str) -> np.ndarray:
    """x padded along `axis` (zeros, its edge repeated, or reflected)."""
    sources = pad_sources(x.shape[axis], before, after, mode)
    y = np.take(x, np.maximum(sources, 0), axis=axis)
    if mode == "zeros":
        shape = [1] * x.ndim
        shape[axis] = len(sources)
        y = np.where((sources >= 0).reshape(shape), y, np.zeros((), dtype=x.dtype))
    return y


def pad_backward(grad_output: np.ndarray, shape: Sequence[int], axis: int, before: int,
                 after: int, mode: str) -> np.ndarray:
    """The input gradient: each padded entry's gradient added to the entry it copies."""
    sources = pad_sources(shape[axis], before, after, mode)
    kept = sources >= 0
    grad = np.zeros(tuple(shape), dtype=grad_output.dtype)
    moved = np.moveaxis(grad, axis, 0)  # a view: adding into it adds into grad
    np.add.at(moved, sources[kept], np.moveaxis(grad_output, axis, 0)[kept])
    return grad


def _pad_args(ctx: KernelContext) -> tuple[int, int, int, str]:
    axis = ctx.operands[0].dims.index(ctx.props["dim"])
    return axis, ctx.props["before"], ctx.props["after"], ctx.props["kind"]


def broadcast_forward(x: np.ndarray, new_axes: Sequence[int],
                      shape: Sequence[int]) -> np.ndarray:
    """x (its dims in the result's order) repeated along `new_axes` of `shape`.

    >>> broadcast_forward(np.arange(2.0), [0, 1], [3, 1, 2]).tolist()
    [[[0.0, 1.0]], [[0.0, 1.0]], [[0.0, 1.0]]]
    """
    return np.broadcast_to(np.expand_dims(x, tuple(new_axes)), tuple(shape)).copy()


def _new_axes(ctx: KernelContext) -> list[int]:
    return [k for k, d in enumerate(ctx.result.dims) if d not in ctx.operands[0].dims]


def _broadcast_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                        saved: Any, needs: list[bool]) -> list[Any]:
    return [np.sum(grad_output, axis=tuple(_new_axes(ctx))).reshape(inputs[0].shape)]


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _concat_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                     saved: Any, needs: list[bool]) -> list[Any]:
    axis = concat_axis(ctx.dims, ctx.result.dims)
    sizes = [t.local[axis] for t in ctx.operands]
    return list(concat_backward(grad_output, ctx.dims, ctx.result.dims, sizes))


KERNELS: Kernels = {
    "dnn.concat": (lambda ctx, inputs: (concat_forward(inputs, ctx.dims, ctx.result.dims), None),
                   _concat_backward),
    "dnn.reshape": (lambda ctx, inputs: (reshape(inputs[0], ctx.result.local), None),
                    lambda ctx, inputs, output, grad_output, saved, needs: [
                        reshape(grad_output, inputs[0].shape)]),
    "dnn.slice": (_slice, _slice_backward),
    "dnn.pad": (lambda ctx, inputs: (pad_forward(inputs[0], *_pad_args(ctx)), None),
                lambda ctx, inputs, output, grad_output, saved, needs: [
                    pad_backward(grad_output, inputs[0].shape, *_pad_args(ctx))]),
    "dnn.broadcast": (lambda ctx, inputs: (broadcast_forward(inputs[0], _new_axes(ctx),
                                                             ctx.result.local), None),
                      _broadcast_backward),
}
