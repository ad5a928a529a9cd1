"""concat and reshape: finite differences, splits of the dims that may split, f32."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.shape import (
    concat_axis,
    concat_backward,
    concat_forward,
    reshape_backward,
    reshape_forward,
)

CONCAT_DIMS = [["b", "c1", "h"], ["b", "c2", "h"], ["b", "c3", "h"]]
CONCAT_RESULT = ["b", "c", "h"]
CONCAT_SIZES = [2, 3, 1]


def concat_inputs(rng: np.random.Generator, dtype: type = np.float64) -> list[np.ndarray]:
    return [rng.standard_normal((4, size, 4)).astype(dtype) for size in CONCAT_SIZES]


def test_concat_axis_is_the_renamed_dim() -> None:
    assert concat_axis(CONCAT_DIMS, CONCAT_RESULT) == 1
    with pytest.raises(ValueError, match="exactly one dim"):
        concat_axis([["b", "c1"], ["b2", "c2"]], ["b", "c"])


def test_concat_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    inputs = concat_inputs(rng)
    weights = rng.standard_normal((4, sum(CONCAT_SIZES), 4))
    grads = concat_backward(weights, CONCAT_DIMS, CONCAT_RESULT, CONCAT_SIZES)
    for index, operand in enumerate(inputs):
        def loss(value: np.ndarray, index: int = index) -> float:
            operands = [*inputs[:index], value, *inputs[index + 1:]]
            return float(np.sum(weights * concat_forward(operands, CONCAT_DIMS, CONCAT_RESULT)))

        kit.assert_gradient(grads[index], kit.numeric_gradient(loss, operand.copy()))


@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (0, 4), (2, 4)])
def test_concat_sharded_equals_unsharded(axis: int, parts: int, rng: np.random.Generator,
                                         kit) -> None:
    inputs = concat_inputs(rng)
    grad_output = rng.standard_normal((4, sum(CONCAT_SIZES), 4))
    blocks = [kit.split(x, axis, parts) for x in inputs]
    g_blocks = kit.split(grad_output, axis, parts)
    outputs = [concat_forward([b[device] for b in blocks], CONCAT_DIMS, CONCAT_RESULT)
               for device in range(parts)]
    grads = [concat_backward(g, CONCAT_DIMS, CONCAT_RESULT, CONCAT_SIZES) for g in g_blocks]
    kit.assert_exact(kit.assemble(outputs, axis),
                     concat_forward(inputs, CONCAT_DIMS, CONCAT_RESULT))
    expected = concat_backward(grad_output, CONCAT_DIMS, CONCAT_RESULT, CONCAT_SIZES)
    for index in range(len(inputs)):
        kit.assert_exact(kit.assemble([g[index] for g in grads], axis), expected[index])


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
    kit.assert_gradient(reshape_backward(weights, shape), kit.numeric_gradient(
        lambda v: float(np.sum(weights * reshape_forward(v, result))), x.copy()))


@pytest.mark.parametrize(("shape", "result", "axis", "result_axis"), RESHAPES)
def test_reshape_sharded_equals_unsharded(shape: tuple[int, ...], result: tuple[int, ...],
                                          axis: int, result_axis: int,
                                          rng: np.random.Generator, kit) -> None:
    """A passed-through dim splits: each block reshapes into the local result shape."""
    x = rng.standard_normal(shape)
    grad_output = rng.standard_normal(result)
    parts = 2
    local_result = list(result)
    local_result[result_axis] //= parts
    x_blocks = kit.split(x, axis, parts)
    g_blocks = kit.split(grad_output, result_axis, parts)
    kit.assert_exact(kit.assemble([reshape_forward(b, local_result) for b in x_blocks],
                                  result_axis), reshape_forward(x, result))
    kit.assert_exact(kit.assemble([reshape_backward(g, b.shape) for g, b in zip(
        g_blocks, x_blocks, strict=True)], axis), reshape_backward(grad_output, shape))


def test_results_never_alias_inputs(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 6))
    assert not np.shares_memory(reshape_forward(x, (4, 2, 3)), x)
    grads = concat_backward(x, [["b", "c1"], ["b", "c2"]], ["b", "c"], [2, 4])
    assert not any(np.shares_memory(g, x) for g in grads)


def test_float32(rng: np.random.Generator) -> None:
    inputs = concat_inputs(rng, np.float32)
    y = concat_forward(inputs, CONCAT_DIMS, CONCAT_RESULT)
    grads = concat_backward(y, CONCAT_DIMS, CONCAT_RESULT, CONCAT_SIZES)
    assert y.dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads)
    assert reshape_forward(y, (4, 24)).dtype == reshape_backward(y, (4, 6, 4)).dtype
