"""einsum: gradients against finite differences; sharded equals unsharded."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.einsum import einsum_backward, einsum_forward, subscripts

SIZES = {"b": 4, "d": 8, "h": 4, "t": 2, "u": 4, "k": 4}
CASES = {
    "matmul": ([["b", "d"], ["d", "h"]], ["b", "h"]),
    "three": ([["b", "d"], ["d", "h"], ["h"]], ["b"]),
    "attention": ([["b", "t", "k"], ["b", "u", "k"]], ["b", "u", "t"]),
    "transpose": ([["b", "d"]], ["d", "b"]),
    "sum_only": ([["b", "d"], ["h"]], ["b"]),
}


def make_inputs(case: str, rng: np.random.Generator,
                dtype: type = np.float64) -> list[np.ndarray]:
    input_dims, _ = CASES[case]
    return [rng.standard_normal([SIZES[d] for d in dims]).astype(dtype) for dims in input_dims]


def test_subscripts_from_names() -> None:
    assert subscripts([["b", "d"], ["d", "h"]], ["b", "h"]) == "ab,bc->ac"


@pytest.mark.parametrize("case", CASES)
def test_backward_matches_finite_differences(case: str, rng: np.random.Generator, kit) -> None:
    input_dims, output_dims = CASES[case]
    inputs = make_inputs(case, rng)
    weights = rng.standard_normal([SIZES[d] for d in output_dims])
    grads = einsum_backward(weights, inputs, input_dims, output_dims)
    for index, operand in enumerate(inputs):
        def loss(value: np.ndarray, index: int = index) -> float:
            operands = [*inputs[:index], value, *inputs[index + 1:]]
            return float(np.sum(weights * einsum_forward(operands, input_dims, output_dims)))

        kit.assert_gradient(grads[index], kit.numeric_gradient(loss, operand.copy()))


def test_needs_grad_skips_operands(rng: np.random.Generator) -> None:
    input_dims, output_dims = CASES["matmul"]
    inputs = make_inputs("matmul", rng)
    grads = einsum_backward(np.ones((4, 4)), inputs, input_dims, output_dims, [False, True])
    assert grads[0] is None
    assert grads[1] is not None


SPLITS = [(case, dim, parts) for case, (input_dims, _) in CASES.items()
          for dim in sorted({d for dims in input_dims for d in dims})
          for parts in (2, 4) if SIZES[dim] % parts == 0]


@pytest.mark.parametrize(("case", "dim", "parts"), SPLITS)
def test_sharded_equals_unsharded(case: str, dim: str, parts: int, rng: np.random.Generator,
                                  kit) -> None:
    """Split every operand along `dim`; the caller concatenates the blocks of tensors that
    range over it and sums the partial sums of those that do not."""
    input_dims, output_dims = CASES[case]
    inputs = make_inputs(case, rng)
    grad_output = rng.standard_normal([SIZES[d] for d in output_dims])

    def blocks(array: np.ndarray, dims: list[str]) -> list[np.ndarray]:
        return kit.split(array, dims.index(dim), parts) if dim in dims else [array] * parts

    def axis(dims: list[str]) -> int | None:
        return dims.index(dim) if dim in dims else None

    local_inputs = [blocks(x, dims) for x, dims in zip(inputs, input_dims, strict=True)]
    local_grad_outputs = blocks(grad_output, output_dims)
    outputs, grads = [], []
    for device in range(parts):
        operands = [block[device] for block in local_inputs]
        outputs.append(einsum_forward(operands, input_dims, output_dims))
        grads.append(einsum_backward(local_grad_outputs[device], operands, input_dims,
                                     output_dims))
    kit.assert_exact(kit.assemble(outputs, axis(output_dims)),
                     einsum_forward(inputs, input_dims, output_dims))
    expected = einsum_backward(grad_output, inputs, input_dims, output_dims)
    for index, dims in enumerate(input_dims):
        kit.assert_exact(kit.assemble([g[index] for g in grads], axis(dims)), expected[index])


@pytest.mark.parametrize("case", CASES)
def test_float32(case: str, rng: np.random.Generator) -> None:
    input_dims, output_dims = CASES[case]
    inputs = make_inputs(case, rng, np.float32)
    output = einsum_forward(inputs, input_dims, output_dims)
    grads = einsum_backward(np.ones_like(output), inputs, input_dims, output_dims)
    assert output.dtype == np.float32
    assert all(g is not None and g.dtype == np.float32 for g in grads)
    reference = einsum_forward([x.astype(np.float64) for x in inputs], input_dims, output_dims)
    np.testing.assert_allclose(output, reference, rtol=1e-4, atol=1e-4)
