"""reduce sum and mean: finite differences, partial sums over split reduced dims, f32."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from pase.runtime.kernels.reduce import reduce_backward, reduce_forward

DIMS = ["b", "s", "h"]
SIZES = {"b": 4, "s": 4, "h": 2}
REDUCTIONS = [(kind, over) for kind in ("sum", "mean")
              for over in (["s"], ["b", "h"], ["b", "s", "h"])]


def kept_dims(over: list[str]) -> list[str]:
    return [d for d in DIMS if d not in over]


@pytest.mark.parametrize(("kind", "over"), REDUCTIONS)
def test_reduce_backward_matches_finite_differences(kind: str, over: list[str],
                                                    rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal([SIZES[d] for d in DIMS])
    weights = rng.standard_normal([SIZES[d] for d in kept_dims(over)])
    np.testing.assert_allclose(reduce_forward(kind, x, DIMS, over), getattr(np, kind)(
        x, axis=tuple(DIMS.index(d) for d in over)))
    kit.assert_gradients(lambda v: reduce_forward(kind, v, DIMS, over), [x], weights,
                         [reduce_backward(kind, weights, DIMS, over, x.shape)])


@pytest.mark.parametrize(("kind", "over"), REDUCTIONS)
@pytest.mark.parametrize(("dim", "parts"), [("b", 2), ("b", 4), ("s", 4), ("h", 2)])
def test_reduce_sharded_equals_unsharded(kind: str, over: list[str], dim: str, parts: int,
                                         rng: np.random.Generator, kit) -> None:
    """A split reduced dim leaves partial sums (means divide by the global count)."""
    x = rng.standard_normal([SIZES[d] for d in DIMS])
    kept = kept_dims(over)
    grad_output = rng.standard_normal([SIZES[d] for d in kept])
    count = prod(SIZES[d] for d in over)

    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        return [reduce_forward(kind, x, DIMS, over, count),
                reduce_backward(kind, grad_output, DIMS, over, x.shape, count)]

    kit.assert_sharded(step, [grad_output, x], [kit.axis_of(kept, dim), DIMS.index(dim)], parts)


@pytest.mark.parametrize(("kind", "over"), REDUCTIONS)
def test_reduce_float32(kind: str, over: list[str], rng: np.random.Generator) -> None:
    x = rng.standard_normal([SIZES[d] for d in DIMS]).astype(np.float32)
    y = reduce_forward(kind, x, DIMS, over, np.int64(prod(SIZES[d] for d in over)))
    grad = reduce_backward(kind, np.ones_like(y), DIMS, over, x.shape, np.int64(4))
    assert y.dtype == grad.dtype == np.float32
