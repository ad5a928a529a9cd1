"""reduce sum and mean over named dims.

The result drops the reduced dims. A split reduced dim leaves a partial sum the caller
all-reduces (docs/cost-model.md, rule 1); a mean divides by `count`, the GLOBAL number
of reduced elements (the product of the reduced dims' full sizes), so the partial means
of the blocks add up to the mean. The default count, the local one, is right only when
no reduced dim is split. No callbacks.

Example:
    >>> reduce_forward("mean", np.arange(6.0).reshape(2, 3), ["b", "s"], ["s"])
    array([1., 4.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pase.runtime.kernels.context import KernelContext, Kernels, axes_of, count_or_local

REDUCE_KINDS = ("sum", "mean")


def _count(kind: str, shape: Sequence[int], axes: Sequence[int], count: int | None) -> int:
    if kind not in REDUCE_KINDS:
        raise ValueError(f"unknown reduction '{kind}'; expected sum or mean")
    return count_or_local(count, shape, axes)


def reduce_forward(kind: str, x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                   count: int | None = None) -> np.ndarray:
    """The local sum (or sum / count) of x over the dims `over`."""
    axes = axes_of(dims, over)
    count = _count(kind, x.shape, axes, count)
    total = np.asarray(x.sum(axis=axes), dtype=x.dtype)
    return total / count if kind == "mean" else total


def reduce_backward(kind: str, grad_output: np.ndarray, dims: Sequence[str],
                    over: Sequence[str], input_shape: Sequence[int],
                    count: int | None = None) -> np.ndarray:
    """The input gradient: grad_output broadcast along the reduced dims (÷ count for a
    mean), `input_shape` the local shape of x."""
    axes = axes_of(dims, over)
    count = _count(kind, input_shape, axes, count)
    expanded = [1 if k in axes else size for k, size in enumerate(input_shape)]
    grad = np.broadcast_to(grad_output.reshape(expanded), tuple(input_shape))
    return grad / count if kind == "mean" else grad.copy()


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    over = ctx.props["over"]
    return reduce_forward(ctx.props["kind"], inputs[0], ctx.dims[0], over,
                          count=ctx.count(0, over)), None


def _backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
              saved: Any, needs: list[bool]) -> list[Any]:
    over = ctx.props["over"]
    return [reduce_backward(ctx.props["kind"], grad_output, ctx.dims[0], over, inputs[0].shape,
                            count=ctx.count(0, over))]


KERNELS: Kernels = {"dnn.reduce": (_forward, _backward)}
