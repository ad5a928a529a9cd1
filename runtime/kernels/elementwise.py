"""Elementwise ops: relu, gelu, tanh, sigmoid, exp; add, sub, mul broadcasting by name.

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
from collections.abc import Sequence
from typing import Any

import numpy as np

from pase.runtime.kernels.context import Backward, Forward, KernelContext, Kernels

UNARY_KINDS = ("relu", "gelu", "tanh", "sigmoid", "exp")
BINARY_KINDS = ("add", "sub", "mul")

GELU_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # The tanh form never overflows, unlike 1 / (1 + exp(-x)).
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def unary_forward(kind: str, x: np.ndarray) -> np.ndarray:
    """`kind` of x; gelu is the tanh approximation
    `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`."""
    match kind:
        case "relu":
            return np.maximum(x, 0)
        case "gelu":
            return 0.5 * x * (1.0 + np.tanh(GELU_SCALE * (x + GELU_CUBIC * x**3)))
        case "tanh":
            return np.tanh(x)
        case "sigmoid":
            return _sigmoid(x)
        case "exp":
            return np.exp(x)
    raise ValueError(f"unknown unary op '{kind}'; expected one of {', '.join(UNARY_KINDS)}")


def unary_backward(kind: str, grad_output: np.ndarray, x: np.ndarray,
                   y: np.ndarray) -> np.ndarray:
    """The input gradient, from the input x and the forward output y."""
    match kind:
        case "relu":
            return np.where(x > 0, grad_output, 0)
        case "gelu":
            t = np.tanh(GELU_SCALE * (x + GELU_CUBIC * x**3))
            slope = GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x**2)
            return grad_output * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * slope)
        case "tanh":
            return grad_output * (1.0 - y * y)
        case "sigmoid":
            return grad_output * y * (1.0 - y)
        case "exp":
            return grad_output * y
    raise ValueError(f"unknown unary op '{kind}'; expected one of {', '.join(UNARY_KINDS)}")


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
    a = align(lhs, lhs_dims, result_dims)
    b = align(rhs, rhs_dims, result_dims)
    match kind:
        case "add":
            result = a + b
        case "sub":
            result = a - b
        case "mul":
            result = a * b
        case _:
            raise ValueError(f"unknown binary op '{kind}'; "
                             f"expected one of {', '.join(BINARY_KINDS)}")
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
    match kind:
        case "add":
            grads = (grad_output, grad_output)
        case "sub":
            grads = (grad_output, -grad_output)
        case "mul":
            grads = (grad_output * align(rhs, rhs_dims, result_dims),
                     grad_output * align(lhs, lhs_dims, result_dims))
        case _:
            raise ValueError(f"unknown binary op '{kind}'; "
                             f"expected one of {', '.join(BINARY_KINDS)}")
    dlhs = unbroadcast(grads[0], lhs_dims, result_dims) if needs_grad[0] else None
    drhs = unbroadcast(grads[1], rhs_dims, result_dims) if needs_grad[1] else None
    return dlhs, drhs


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
    **{f"dnn.{kind}": _unary(kind) for kind in ("relu", "gelu", "tanh", "sigmoid", "exp")},
    **{f"dnn.{kind}": _binary(kind) for kind in ("add", "sub", "mul")},
}
