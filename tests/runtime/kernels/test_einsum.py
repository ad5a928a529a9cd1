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


def make_inputs(case: str, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal([SIZES[d] for d in dims]) for dims in CASES[case][0]]


def test_subscripts_from_names() -> None:
    assert subscripts([["b", "d"], ["d", "h"]], ["b", "h"]) == "ab,bc->ac"


@pytest.mark.parametrize("case", CASES)
def test_backward_matches_finite_differences(case: str, rng: np.random.Generator, kit) -> None:
    input_dims, output_dims = CASES[case]
    inputs = make_inputs(case, rng)
    weights = rng.standard_normal([SIZES[d] for d in output_dims])
    kit.assert_gradients(lambda *operands: einsum_forward(operands, input_dims, output_dims),
                         inputs, weights, einsum_backward(weights, inputs, input_dims,
                                                          output_dims))


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

    def step(grad_output: np.ndarray, *inputs: np.ndarray) -> list[np.ndarray | None]:
        return [einsum_forward(inputs, input_dims, output_dims),
                *einsum_backward(grad_output, inputs, input_dims, output_dims)]

    kit.assert_sharded(step, [grad_output, *inputs],
                       [kit.axis_of(dims, dim) for dims in [output_dims, *input_dims]], parts)
