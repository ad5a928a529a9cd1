"""Unary and binary elementwise kernels: finite differences, sharding, f32."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pase.runtime.kernels.elementwise import (
    UNARY_KINDS,
    binary_backward,
    binary_dims,
    binary_forward,
    unary_backward,
    unary_forward,
)

SIZES = {"b": 4, "s": 2, "h": 4}
# (kind, lhs dims, rhs dims)
BINARIES = [("add", ["b", "h"], ["h"]), ("sub", ["h"], ["b", "h"]), ("mul", ["b", "s", "h"],
            ["h", "b"]), ("add", ["b", "h"], ["h", "b"]), ("mul", ["s"], ["b", "s", "h"]),
            ("sub", ["b", "s", "h"], ["s", "b", "h"])]


def random(dims: list[str], rng: np.random.Generator, dtype: type = np.float64) -> np.ndarray:
    return rng.standard_normal([SIZES[d] for d in dims]).astype(dtype)


def test_gelu_is_the_tanh_approximation() -> None:
    x = 0.7
    expected = 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert unary_forward("gelu", np.array([x]))[0] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("kind", UNARY_KINDS)
def test_unary_backward_matches_finite_differences(kind: str, rng: np.random.Generator,
                                                   kit) -> None:
    x = random(["b", "s", "h"], rng)
    x[np.abs(x) < 1e-3] = 0.5  # away from relu's kink
    weights = random(["b", "s", "h"], rng)
    y = unary_forward(kind, x)
    kit.assert_gradient(unary_backward(kind, weights, x, y), kit.numeric_gradient(
        lambda v: float(np.sum(weights * unary_forward(kind, v))), x.copy()))


@pytest.mark.parametrize("kind", UNARY_KINDS)
@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (0, 4), (2, 4)])
def test_unary_sharded_equals_unsharded(kind: str, axis: int, parts: int,
                                        rng: np.random.Generator, kit) -> None:
    x = random(["b", "s", "h"], rng)
    grad_output = random(["b", "s", "h"], rng)
    y = unary_forward(kind, x)
    x_blocks = kit.split(x, axis, parts)
    g_blocks = kit.split(grad_output, axis, parts)
    y_blocks = [unary_forward(kind, block) for block in x_blocks]
    kit.assert_exact(kit.assemble(y_blocks, axis), y)
    kit.assert_exact(kit.assemble([unary_backward(kind, g, xb, yb) for g, xb, yb in zip(
        g_blocks, x_blocks, y_blocks, strict=True)], axis), unary_backward(kind, grad_output,
                                                                           x, y))


@pytest.mark.parametrize("kind", UNARY_KINDS)
def test_unary_float32(kind: str, rng: np.random.Generator) -> None:
    x = random(["b", "h"], rng, np.float32)
    y = unary_forward(kind, x)
    assert y.dtype == unary_backward(kind, np.ones_like(y), x, y).dtype == np.float32
    np.testing.assert_allclose(y, unary_forward(kind, x.astype(np.float64)), rtol=1e-6,
                               atol=1e-6)


def test_binary_broadcasts_by_name() -> None:
    h = np.zeros((2, 3))
    bias = np.arange(3.0)
    np.testing.assert_array_equal(binary_forward("add", h, ["b", "h"], bias, ["h"]),
                                  [[0, 1, 2], [0, 1, 2]])
    assert binary_dims(["h"], ["b", "h"]) == ("b", "h")
    with pytest.raises(ValueError, match="by name"):
        binary_dims(["b", "c"], ["b", "cx"])


@pytest.mark.parametrize(("kind", "lhs_dims", "rhs_dims"), BINARIES)
def test_binary_backward_matches_finite_differences(kind: str, lhs_dims: list[str],
                                                    rhs_dims: list[str],
                                                    rng: np.random.Generator, kit) -> None:
    lhs, rhs = random(lhs_dims, rng), random(rhs_dims, rng)
    weights = random(list(binary_dims(lhs_dims, rhs_dims)), rng)
    dlhs, drhs = binary_backward(kind, weights, lhs, lhs_dims, rhs, rhs_dims)
    assert dlhs is not None
    assert drhs is not None
    kit.assert_gradient(dlhs, kit.numeric_gradient(
        lambda v: float(np.sum(weights * binary_forward(kind, v, lhs_dims, rhs, rhs_dims))),
        lhs.copy()))
    kit.assert_gradient(drhs, kit.numeric_gradient(
        lambda v: float(np.sum(weights * binary_forward(kind, lhs, lhs_dims, v, rhs_dims))),
        rhs.copy()))


BINARY_SPLITS = [(*binary, dim, parts) for binary in BINARIES
                 for dim, parts in [("b", 2), ("b", 4), ("s", 2), ("h", 4)]
                 if dim in binary_dims(binary[1], binary[2])]


@pytest.mark.parametrize(("kind", "lhs_dims", "rhs_dims", "dim", "parts"), BINARY_SPLITS)
def test_binary_sharded_equals_unsharded(kind: str, lhs_dims: list[str], rhs_dims: list[str],
                                         dim: str, parts: int, rng: np.random.Generator,
                                         kit) -> None:
    """An operand broadcast along the split dim is replicated; its gradient is a partial
    sum the caller adds up."""
    result_dims = list(binary_dims(lhs_dims, rhs_dims))
    lhs, rhs = random(lhs_dims, rng), random(rhs_dims, rng)
    grad_output = random(result_dims, rng)

    def blocks(array: np.ndarray, dims: list[str]) -> list[np.ndarray]:
        return kit.split(array, dims.index(dim), parts) if dim in dims else [array] * parts

    def axis(dims: list[str]) -> int | None:
        return dims.index(dim) if dim in dims else None

    outputs, lhs_grads, rhs_grads = [], [], []
    for lb, rb, gb in zip(blocks(lhs, lhs_dims), blocks(rhs, rhs_dims),
                          blocks(grad_output, result_dims), strict=True):
        outputs.append(binary_forward(kind, lb, lhs_dims, rb, rhs_dims))
        dl, dr = binary_backward(kind, gb, lb, lhs_dims, rb, rhs_dims)
        lhs_grads.append(dl)
        rhs_grads.append(dr)
    dlhs, drhs = binary_backward(kind, grad_output, lhs, lhs_dims, rhs, rhs_dims)
    kit.assert_exact(kit.assemble(outputs, axis(result_dims)),
                     binary_forward(kind, lhs, lhs_dims, rhs, rhs_dims))
    kit.assert_exact(kit.assemble(lhs_grads, axis(lhs_dims)), dlhs)
    kit.assert_exact(kit.assemble(rhs_grads, axis(rhs_dims)), drhs)


@pytest.mark.parametrize(("kind", "lhs_dims", "rhs_dims"), BINARIES)
def test_binary_float32(kind: str, lhs_dims: list[str], rhs_dims: list[str],
                        rng: np.random.Generator) -> None:
    lhs, rhs = random(lhs_dims, rng, np.float32), random(rhs_dims, rng, np.float32)
    y = binary_forward(kind, lhs, lhs_dims, rhs, rhs_dims)
    dlhs, drhs = binary_backward(kind, np.ones_like(y), lhs, lhs_dims, rhs, rhs_dims)
    assert y.dtype == np.float32
    assert dlhs is not None
    assert dlhs.dtype == np.float32
    assert drhs is not None
    assert drhs.dtype == np.float32


@pytest.mark.parametrize("kind", ["add", "sub", "mul"])
def test_binary_of_scalars_is_a_scalar(kind: str) -> None:
    # A loss may be `mul %s, %s` of two scalars: its value and gradients stay 0-d.
    lhs, rhs = np.array(3.0), np.array(2.0)
    y = binary_forward(kind, lhs, [], rhs, [])
    assert (y.shape, float(y)) == ((), {"add": 5.0, "sub": 1.0, "mul": 6.0}[kind])
    dlhs, drhs = binary_backward(kind, np.ones_like(y), lhs, [], rhs, [])
    assert dlhs is not None
    assert drhs is not None
    assert (dlhs.shape, drhs.shape) == ((), ())
