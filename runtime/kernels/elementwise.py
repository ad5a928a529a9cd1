"""Elementwise ops: relu, gelu, tanh, sigmoid, exp, sqrt, neg; clip, pow; add, sub, mul, div
broadcasting by name; the causal mask, which finds its block's positions from the block's
offsets, and the padding mask, whose keep operand is broadcast by name.

Unary kernels are purely local. A binary op's result has the larger operand's dims
(lhs's when both have the same set, as `pase.core.shapes.binary_shape`); the smaller
operand is broadcast along the dims it lacks. Its gradient sums over those dims, so when
one of them is split the gradient is a partial sum the caller all-reduces
(docs/cost-model.md, rule 2).

Example:
    >>> h, bias = np.zeros((2, 3)), np.ones(3)
    >>> binary_forward("add", h, ["b", "h"], bias, ["h"])[1]
    array([1., 1., 1.])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pase.runtime.kernels.context import Backward, Forward, KernelContext, Kernels

GELU_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def sigmoid(x: np.ndarray) -> np.ndarray:
    # The tanh form never overflows, unlike 1 / (1 + exp(-x)).
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(GELU_SCALE * (x + GELU_CUBIC * x**3))


def _gelu_backward(grad_output: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    t, slope = _gelu_tanh(x), GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x**2)
    return grad_output * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * slope)


UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "relu": (lambda x: np.maximum(x, 0), lambda dy, x, y: np.where(x > 0, dy, 0)),
    "gelu": (lambda x: 0.5 * x * (1.0 + _gelu_tanh(x)), _gelu_backward),
    "tanh": (np.tanh, lambda dy, x, y: dy * (1.0 - y * y)),
    "sigmoid": (sigmoid, lambda dy, x, y: dy * y * (1.0 - y)),
    "exp": (np.exp, lambda dy, x, y: dy * y),
    "sqrt": (np.sqrt, lambda dy, x, y: dy * 0.5 / y),
    "neg": (np.negative, lambda dy, x, y: -dy),
}
"""kind -> (x ↦ y, (dy, x, y) ↦ dx)."""

BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (np.add, lambda dy, a, b: (dy, dy)),
    "sub": (np.subtract, lambda dy, a, b: (dy, -dy)),
    "mul": (np.multiply, lambda dy, a, b: (dy * b, dy * a)),
    "div": (np.divide, lambda dy, a, b: (dy / b, -dy * a / (b * b))),
}
"""kind -> ((a, b) ↦ y, (dy, a, b) ↦ (da, db)) over operands aligned to the result."""


def _lookup(table: dict[str, Any], kind: str, arity: str) -> Any:
    if kind not in table:
        raise ValueError(f"unknown {arity} op '{kind}'; expected one of {', '.join(table)}")
    return table[kind]


def unary_forward(kind: str, x: np.ndarray) -> np.ndarray:
    """`kind` of x; gelu is the tanh approximation
    `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`."""
    return _lookup(UNARY, kind, "unary")[0](x)


def unary_backward(kind: str, grad_output: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The input gradient, from the input x and the forward output y."""
    return _lookup(UNARY, kind, "unary")[1](grad_output, x, y)


def binary_dims(lhs_dims: Sequence[str], rhs_dims: Sequence[str]) -> tuple[str, ...]:
    """The result dims: the larger operand's, lhs's when the sets are equal."""
    if set(rhs_dims) <= set(lhs_dims):
        return tuple(lhs_dims)
    if set(lhs_dims) <= set(rhs_dims):
        return tuple(rhs_dims)
    raise ValueError(f"cannot broadcast [{', '.join(lhs_dims)}] and [{', '.join(rhs_dims)}] "
                     "by name: the dims of one operand must all be dims of the other")


def align(array: np.ndarray, dims: Sequence[str], result_dims: Sequence[str]) -> np.ndarray:
    """`array` transposed into result order with size-1 axes for the dims it lacks."""
    order = [d for d in result_dims if d in dims]
    moved = np.transpose(array, [list(dims).index(d) for d in order])
    expanded = [moved.shape[order.index(d)] if d in dims else 1 for d in result_dims]
    return moved.reshape(expanded)


def unbroadcast(grad: np.ndarray, dims: Sequence[str],
                 result_dims: Sequence[str]) -> np.ndarray:
    """Sum a result-shaped gradient over the dims an operand lacks, in the operand's order."""
    missing = tuple(k for k, d in enumerate(result_dims) if d not in dims)
    summed = grad.sum(axis=missing) if missing else grad
    kept = [d for d in result_dims if d in dims]
    # A fresh array even when nothing is summed: gradients never alias grad_output.
    return np.array(np.transpose(summed, [kept.index(d) for d in dims]), order="C")


def binary_forward(kind: str, lhs: np.ndarray, lhs_dims: Sequence[str], rhs: np.ndarray,
                   rhs_dims: Sequence[str]) -> np.ndarray:
    """`lhs kind rhs` over `binary_dims(lhs_dims, rhs_dims)`."""
    result_dims = binary_dims(lhs_dims, rhs_dims)
    result = _lookup(BINARY, kind, "binary")[0](align(lhs, lhs_dims, result_dims),
                                                align(rhs, rhs_dims, result_dims))
    # Broadcasting a size-1 block gives the result the other operand's extent; both
    # operands together always cover every result dim, so the shape is the local block.
    # np.asarray, not np.ascontiguousarray: that turns a 0-d result (a loss) into [1].
    return np.asarray(result, order="C")


def binary_backward(kind: str, grad_output: np.ndarray, lhs: np.ndarray,
                    lhs_dims: Sequence[str], rhs: np.ndarray, rhs_dims: Sequence[str],
                    needs_grad: Sequence[bool] = (True, True)
                    ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Gradients (dlhs, drhs) of the requested operands; an operand broadcast along a dim
    gets the local sum over it (a partial sum if that dim is split)."""
    result_dims = binary_dims(lhs_dims, rhs_dims)
    grads = _lookup(BINARY, kind, "binary")[1](grad_output, align(lhs, lhs_dims, result_dims),
                                               align(rhs, rhs_dims, result_dims))
    dlhs = unbroadcast(grads[0], lhs_dims, result_dims) if needs_grad[0] else None
    drhs = unbroadcast(grads[1], rhs_dims, result_dims) if needs_grad[1] else None
    return dlhs, drhs


def clip_forward(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """x clamped into [low, high]."""
    return np.clip(x, low, high)


def clip_backward(grad_output: np.ndarray, x: np.ndarray, low: float,
                  high: float) -> np.ndarray:
    """The gradient passes where low < x < high, and is 0 where x is clamped (or on a
    bound)."""
    return np.where((x > low) & (x < high), grad_output, 0).astype(grad_output.dtype)


def pow_forward(x: np.ndarray, exponent: float) -> np.ndarray:
    return np.power(x, exponent)


def pow_backward(grad_output: np.ndarray, x: np.ndarray, exponent: float) -> np.ndarray:
    """`dy · e · x^(e − 1)`."""
    return grad_output * exponent * np.power(x, exponent - 1)


def causal_keep(shape: Sequence[int], axes: tuple[int, int],
                offsets: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Where a block of `shape` keeps its entries: key position <= query position, the
    query and key dims at `axes`, the block starting at global `offsets` along them."""
    (q_axis, k_axis), expand = axes, [1] * len(shape)
    q = np.arange(shape[q_axis]) + offsets[0]
    k = np.arange(shape[k_axis]) + offsets[1]
    q_shape, k_shape = list(expand), list(expand)
    q_shape[q_axis], k_shape[k_axis] = len(q), len(k)
    return np.asarray(k.reshape(k_shape) <= q.reshape(q_shape))


def mask_forward(x: np.ndarray, keep: np.ndarray, fill: float) -> np.ndarray:
    return np.where(keep, x, fill).astype(x.dtype)


def mask_backward(grad_output: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.where(keep, grad_output, 0).astype(grad_output.dtype)


def _keep(ctx: KernelContext, inputs: list[Any]) -> np.ndarray:
    """Where this block of the mask's x keeps its entries: causal, from the block's
    offsets; padding, where its block of `keep` is not 0 (broadcast by name)."""
    x = inputs[0]
    if ctx.props["kind"] == "padding":
        x_dims, keep_dims = ctx.dims
        return align(np.asarray(inputs[1]) != 0, keep_dims, x_dims)
    axes = (ctx.operands[0].dims.index(ctx.props["over"][0]),
            ctx.operands[0].dims.index(ctx.props["over"][1]))
    return causal_keep(x.shape, axes, (ctx.offset(0, axes[0]), ctx.offset(0, axes[1])))


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _unary(kind: str) -> tuple[Forward, Backward]:
    def forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
        return unary_forward(kind, inputs[0]), None

    def backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                 saved: Any, needs: list[bool]) -> list[Any]:
        return [unary_backward(kind, grad_output, inputs[0], output)]

    return forward, backward


def _binary(kind: str) -> tuple[Forward, Backward]:
    def forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
        lhs_dims, rhs_dims = ctx.dims
        return binary_forward(kind, inputs[0], lhs_dims, inputs[1], rhs_dims), None

    def backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                 saved: Any, needs: list[bool]) -> list[Any]:
        lhs_dims, rhs_dims = ctx.dims
        return list(binary_backward(kind, grad_output, inputs[0], lhs_dims, inputs[1],
                                    rhs_dims, needs))

    return forward, backward


KERNELS: Kernels = {
    **{f"dnn.{kind}": _unary(kind) for kind in UNARY},
    **{f"dnn.{kind}": _binary(kind) for kind in BINARY},
    "dnn.clip": (lambda ctx, inputs: (clip_forward(inputs[0], ctx.props["min"],
                                                   ctx.props["max"]), None),
                 lambda ctx, inputs, output, grad_output, saved, needs: [
                     clip_backward(grad_output, inputs[0], ctx.props["min"], ctx.props["max"])]),
    "dnn.mask": (lambda ctx, inputs: (mask_forward(inputs[0], _keep(ctx, inputs),
                                                   ctx.props["fill"]), None),
                 lambda ctx, inputs, output, grad_output, saved, needs: [
                     mask_backward(grad_output, _keep(ctx, inputs)),
                     *[None] * (len(inputs) - 1)]),
    "dnn.pow": (lambda ctx, inputs: (pow_forward(inputs[0], ctx.props["exponent"]), None),
                lambda ctx, inputs, output, grad_output, saved, needs: [
                    pow_backward(grad_output, inputs[0], ctx.props["exponent"])]),
}
