"""Unary and binary elementwise kernels: finite differences, sharding (f32: test_table)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import pytest

from pase.runtime.kernels.elementwise import (
    UNARY,
    binary_backward,
    binary_dims,
    binary_forward,
    causal_keep,
    clip_backward,
    clip_forward,
    mask_backward,
    mask_forward,
    pow_backward,
    pow_forward,
    unary_backward,
    unary_forward,
)

SIZES = {"b": 4, "s": 2, "h": 4}
# (kind, lhs dims, rhs dims)
BINARIES = [("add", ["b", "h"], ["h"]), ("sub", ["h"], ["b", "h"]), ("mul", ["b", "s", "h"],
            ["h", "b"]), ("add", ["b", "h"], ["h", "b"]), ("mul", ["s"], ["b", "s", "h"]),
            ("sub", ["b", "s", "h"], ["s", "b", "h"])]


def random(dims: list[str], rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal([SIZES[d] for d in dims])


def test_gelu_is_the_tanh_approximation() -> None:
    x = 0.7
    expected = 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert unary_forward("gelu", np.array([x]))[0] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("kind", UNARY)
def test_unary_backward_matches_finite_differences(kind: str, rng: np.random.Generator,
                                                   kit) -> None:
    x = random(["b", "s", "h"], rng)
    x[np.abs(x) < 1e-3] = 0.5  # away from relu's kink
    if kind == "sqrt":
        x = np.abs(x) + 0.5
    weights = random(["b", "s", "h"], rng)
    kit.assert_gradients(partial(unary_forward, kind), [x], weights,
                         [unary_backward(kind, weights, x, unary_forward(kind, x))])


@pytest.mark.parametrize("kind", UNARY)
@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (0, 4), (2, 4)])
def test_unary_sharded_equals_unsharded(kind: str, axis: int, parts: int,
                                        rng: np.random.Generator, kit) -> None:
    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        y = unary_forward(kind, x)
        return [y, unary_backward(kind, grad_output, x, y)]

    kit.assert_sharded(step, [random(["b", "s", "h"], rng),
                              np.abs(random(["b", "s", "h"], rng)) + 0.5], [axis, axis], parts)


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
    kit.assert_gradients(lambda a, b: binary_forward(kind, a, lhs_dims, b, rhs_dims),
                         [lhs, rhs], weights, binary_backward(kind, weights, lhs, lhs_dims, rhs,
                                                              rhs_dims))


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

    def step(grad_output: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> list[Any]:
        return [binary_forward(kind, lhs, lhs_dims, rhs, rhs_dims),
                *binary_backward(kind, grad_output, lhs, lhs_dims, rhs, rhs_dims)]

    kit.assert_sharded(step, [random(dims, rng) for dims in (result_dims, lhs_dims, rhs_dims)],
                       [kit.axis_of(dims, dim) for dims in (result_dims, lhs_dims, rhs_dims)],
                       parts)


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


def test_clip_clamps_and_passes_the_gradient_strictly_inside() -> None:
    x = np.array([-1.0, 0.0, 0.5, 6.0, 7.0])
    np.testing.assert_array_equal(clip_forward(x, 0.0, 6.0), [0.0, 0.0, 0.5, 6.0, 6.0])
    np.testing.assert_array_equal(clip_backward(np.ones(5), x, 0.0, 6.0), [0, 0, 1, 0, 0])


def test_clip_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    x = random(["b", "s", "h"], rng)
    x[np.abs(np.abs(x) - 0.5) < 1e-3] = 0.1  # away from the kinks
    weights = random(["b", "s", "h"], rng)
    kit.assert_gradients(lambda v: clip_forward(v, -0.5, 0.5), [x], weights,
                         [clip_backward(weights, x, -0.5, 0.5)])


@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (2, 4)])
def test_clip_sharded_equals_unsharded(axis: int, parts: int, rng: np.random.Generator,
                                       kit) -> None:
    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        return [clip_forward(x, -0.5, 0.5), clip_backward(grad_output, x, -0.5, 0.5)]

    kit.assert_sharded(step, [random(["b", "s", "h"], rng), random(["b", "s", "h"], rng)],
                       [axis, axis], parts)


def test_causal_mask_fills_the_keys_after_each_query() -> None:
    x = np.arange(9.0).reshape(3, 3)
    keep = causal_keep(x.shape, (0, 1))
    np.testing.assert_array_equal(mask_forward(x, keep, -1.0),
                                  [[0, -1, -1], [3, 4, -1], [6, 7, 8]])
    np.testing.assert_array_equal(mask_backward(np.ones((3, 3)), keep),
                                  [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_causal_mask_backward_matches_finite_differences(rng: np.random.Generator,
                                                         kit) -> None:
    x = random(["b", "s", "h"], rng)[:, :2, :2]
    keep = causal_keep(x.shape, (2, 1))  # queries along axis 2, keys along axis 1
    weights = rng.standard_normal(x.shape)
    kit.assert_gradients(lambda v: mask_forward(v, keep, -3.0), [x], weights,
                         [mask_backward(weights, keep)])


@pytest.mark.parametrize(("q_parts", "k_parts"), [(2, 1), (1, 4), (2, 2)])
def test_causal_mask_of_blocks_equals_unsharded(q_parts: int, k_parts: int,
                                                rng: np.random.Generator) -> None:
    # Each block, placed by its offsets, is the block of the whole mask.
    x = rng.standard_normal((2, 4, 4))
    whole = mask_forward(x, causal_keep(x.shape, (1, 2)), -5.0)
    for i in range(q_parts):
        for j in range(k_parts):
            rows, cols = slice(i * 4 // q_parts, (i + 1) * 4 // q_parts), slice(
                j * 4 // k_parts, (j + 1) * 4 // k_parts)
            block = x[:, rows, cols]
            keep = causal_keep(block.shape, (1, 2), (rows.start, cols.start))
            np.testing.assert_array_equal(mask_forward(block, keep, -5.0), whole[:, rows, cols])


@pytest.mark.parametrize(("lhs_dims", "rhs_dims"), [(["b", "h"], ["h"]), (["s"], ["b", "s", "h"])])
def test_div_backward_matches_finite_differences(lhs_dims: list[str], rhs_dims: list[str],
                                                 rng: np.random.Generator, kit) -> None:
    lhs, rhs = random(lhs_dims, rng), np.abs(random(rhs_dims, rng)) + 0.5
    weights = random(list(binary_dims(lhs_dims, rhs_dims)), rng)
    kit.assert_gradients(lambda a, b: binary_forward("div", a, lhs_dims, b, rhs_dims),
                         [lhs, rhs], weights,
                         binary_backward("div", weights, lhs, lhs_dims, rhs, rhs_dims))


@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, -1.5])
def test_pow_backward_matches_finite_differences(exponent: float, rng: np.random.Generator,
                                                 kit) -> None:
    x = np.abs(random(["b", "s", "h"], rng)) + 0.5
    weights = random(["b", "s", "h"], rng)
    kit.assert_gradients(lambda v: pow_forward(v, exponent), [x], weights,
                         [pow_backward(weights, x, exponent)])


def test_pow_of_negative_bases_with_whole_exponents() -> None:
    x = np.array([-2.0, 3.0])
    np.testing.assert_array_equal(pow_forward(x, 2.0), [4.0, 9.0])
    np.testing.assert_array_equal(pow_backward(np.ones(2), x, 3.0), [12.0, 27.0])
