"""concat, reshape and slice: finite differences, splits of the dims that may split (f32:
test_table)."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.shape import (
    concat_axis,
    concat_backward,
    concat_forward,
    reshape,
    slice_backward,
    slice_forward,
)

CONCAT_DIMS = [["b", "c1", "h"], ["b", "c2", "h"], ["b", "c3", "h"]]
CONCAT_RESULT = ["b", "c", "h"]
CONCAT_SIZES = [2, 3, 1]


def concat_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal((4, size, 4)) for size in CONCAT_SIZES]


def test_concat_axis_is_the_renamed_dim() -> None:
    assert concat_axis(CONCAT_DIMS, CONCAT_RESULT) == 1
    with pytest.raises(ValueError, match="exactly one dim"):
        concat_axis([["b", "c1"], ["b2", "c2"]], ["b", "c"])


def test_concat_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    inputs = concat_inputs(rng)
    weights = rng.standard_normal((4, sum(CONCAT_SIZES), 4))
    kit.assert_gradients(lambda *operands: concat_forward(operands, CONCAT_DIMS, CONCAT_RESULT),
                         inputs, weights, concat_backward(weights, CONCAT_DIMS, CONCAT_RESULT,
                                                          CONCAT_SIZES))


@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (0, 4), (2, 4)])
def test_concat_sharded_equals_unsharded(axis: int, parts: int, rng: np.random.Generator,
                                         kit) -> None:
    inputs = concat_inputs(rng)
    grad_output = rng.standard_normal((4, sum(CONCAT_SIZES), 4))

    def step(grad_output: np.ndarray, *inputs: np.ndarray) -> list[np.ndarray]:
        return [concat_forward(inputs, CONCAT_DIMS, CONCAT_RESULT),
                *concat_backward(grad_output, CONCAT_DIMS, CONCAT_RESULT, CONCAT_SIZES)]

    kit.assert_sharded(step, [grad_output, *inputs], [axis] * 4, parts)


# (input shape, result shape, axis of a passed-through dim in the input and the result)
RESHAPES = [((4, 2, 6), (4, 2, 2, 3), 1, 1),    # split the last dim, s passes through
            ((4, 2, 6), (8, 6), 2, 1),          # merge b and s, the last dim passes through
            ((4, 2, 6), (4, 2, 6), 0, 0)]       # rename


@pytest.mark.parametrize(("shape", "result", "axis", "result_axis"), RESHAPES)
def test_reshape_backward_matches_finite_differences(shape: tuple[int, ...],
                                                     result: tuple[int, ...], axis: int,
                                                     result_axis: int,
                                                     rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal(shape)
    weights = rng.standard_normal(result)
    kit.assert_gradients(lambda v: reshape(v, result), [x], weights,
                         [reshape(weights, shape)])


@pytest.mark.parametrize(("shape", "result", "axis", "result_axis"), RESHAPES)
def test_reshape_sharded_equals_unsharded(shape: tuple[int, ...], result: tuple[int, ...],
                                          axis: int, result_axis: int,
                                          rng: np.random.Generator, kit) -> None:
    """A passed-through dim splits: each block reshapes into the local result shape."""
    x = rng.standard_normal(shape)
    grad_output = rng.standard_normal(result)

    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        local = list(result)
        local[result_axis] = result[result_axis] * x.shape[axis] // shape[axis]
        return [reshape(x, local), reshape(grad_output, x.shape)]

    kit.assert_sharded(step, [grad_output, x], [result_axis, axis], 2)


def test_results_never_alias_inputs(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 6))
    assert not np.shares_memory(reshape(x, (4, 2, 3)), x)
    grads = concat_backward(x, [["b", "c1"], ["b", "c2"]], ["b", "c"], [2, 4])
    assert not any(np.shares_memory(g, x) for g in grads)


def test_slice_takes_a_range_and_scatters_the_gradient_back() -> None:
    x = np.arange(12.0).reshape(2, 6)
    y = slice_forward(x, 1, 2, 3)
    np.testing.assert_array_equal(y, [[2, 3, 4], [8, 9, 10]])
    dx = slice_backward(np.ones((2, 3)), x.shape, 1, 2)
    np.testing.assert_array_equal(dx, [[0, 0, 1, 1, 1, 0], [0, 0, 1, 1, 1, 0]])


def test_slice_backward_matches_finite_differences(kit) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 2))
    weights = rng.standard_normal((3, 2, 2))
    kit.assert_gradients(lambda v: slice_forward(v, 1, 3, 2), [x], weights,
                         [slice_backward(weights, x.shape, 1, 3)])


@pytest.mark.parametrize(("axis", "parts"), [(0, 3), (2, 2)])
def test_slice_sharded_along_other_dims_equals_unsharded(axis: int, parts: int, kit) -> None:
    rng = np.random.default_rng(4)
    x, grad_output = rng.standard_normal((3, 5, 2)), rng.standard_normal((3, 2, 2))

    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        return [slice_forward(x, 1, 1, 2), slice_backward(grad_output, x.shape, 1, 1)]

    kit.assert_sharded(step, [grad_output, x], [axis, axis], parts)


def test_concat_of_a_size_one_token_and_its_gradient(kit) -> None:
    # ViT's class token: [b, one, e] joined before [b, p, e].
    rng = np.random.default_rng(5)
    token, patches = rng.standard_normal((2, 1, 3)), rng.standard_normal((2, 4, 3))
    dims = [["b", "one", "e"], ["b", "p", "e"]]
    y = concat_forward([token, patches], dims, ["b", "s", "e"])
    np.testing.assert_array_equal(y[:, 0], token[:, 0])
    np.testing.assert_array_equal(y[:, 1:], patches)
    weights = rng.standard_normal(y.shape)
    kit.assert_gradients(lambda a, b: concat_forward([a, b], dims, ["b", "s", "e"]),
                         [token, patches], weights,
                         concat_backward(weights, dims, ["b", "s", "e"], [1, 4]))
