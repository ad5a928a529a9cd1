"""layernorm and batchnorm through the kernel table, with scale and bias listing their
dims in every order, against an independent numpy reference (forward) and central
finite differences of that reference (backward).

A scale `[h, w]` with a bias `[w, h]` once had the bias applied transposed when h = w,
and crashed with a numpy broadcast error otherwise.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from pase.runtime.kernels import KERNELS, KernelContext, Tensor

EPS = 1e-5
X_DIMS = ("b", "h", "w")
# The normalized dims, and the dims scale and bias range over.
NORMS = {"layernorm": (("h", "w"), ("h", "w")), "batchnorm": (("b",), ("h", "w"))}


def reference(kind: str, x: np.ndarray, scale: np.ndarray, scale_dims: tuple[str, ...],
              bias: np.ndarray, bias_dims: tuple[str, ...]) -> np.ndarray:
    """The norm written out directly: statistics over the normalized axes, then scale and
    bias transposed into x's dim order and broadcast."""
    over, _ = NORMS[kind]
    axes = tuple(X_DIMS.index(d) for d in over)
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    normalized = (x - mean) / np.sqrt(variance + EPS)

    def in_x_order(param: np.ndarray, dims: tuple[str, ...]) -> np.ndarray:
        ordered = [d for d in X_DIMS if d in dims]
        aligned = np.transpose(param, [dims.index(d) for d in ordered])
        return aligned.reshape([x.shape[k] if d in dims else 1 for k, d in enumerate(X_DIMS)])

    return normalized * in_x_order(scale, scale_dims) + in_x_order(bias, bias_dims)


def numeric_gradient(f, array: np.ndarray, step: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        saved = array[index]
        array[index] = saved + step
        up = f(array)
        array[index] = saved - step
        down = f(array)
        array[index] = saved
        grad[index] = (up - down) / (2 * step)
    return grad


@pytest.mark.parametrize("kind", sorted(NORMS))
@pytest.mark.parametrize("sizes", [{"b": 3, "h": 4, "w": 4}, {"b": 3, "h": 2, "w": 5}],
                         ids=["equal", "unequal"])
@pytest.mark.parametrize("scale_dims", list(permutations(("h", "w"))), ids="-".join)
@pytest.mark.parametrize("bias_dims", list(permutations(("h", "w"))), ids="-".join)
def test_norm_params_in_any_dim_order(kind: str, sizes: dict[str, int],
                                      scale_dims: tuple[str, ...], bias_dims: tuple[str, ...],
                                      rng: np.random.Generator) -> None:
    over, param_dims = NORMS[kind]
    if kind == "batchnorm":
        # batchnorm's parameters range over the dims it does not normalize, the same pair.
        assert set(param_dims) == set(scale_dims)
    x = rng.standard_normal([sizes[d] for d in X_DIMS]) * 2 + 0.5
    scale = rng.standard_normal([sizes[d] for d in scale_dims]) + 1
    bias = rng.standard_normal([sizes[d] for d in bias_dims])
    weights = rng.standard_normal(x.shape)

    def tensor(dims: tuple[str, ...]) -> Tensor:
        return Tensor(dims, tuple(sizes[d] for d in dims))

    ctx = KernelContext({"over": list(over)}, (tensor(X_DIMS), tensor(scale_dims),
                                               tensor(bias_dims)), tensor(X_DIMS))
    forward, backward = KERNELS[f"dnn.{kind}"]
    assert backward is not None
    y, saved = forward(ctx, [x, scale, bias])
    np.testing.assert_allclose(y, reference(kind, x, scale, scale_dims, bias, bias_dims),
                               rtol=1e-10, atol=1e-10)

    dx, dscale, dbias = backward(ctx, [x, scale, bias], y, weights, saved, [True] * 3)

    def loss(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> float:
        return float(np.sum(weights * reference(kind, x, scale, scale_dims, bias, bias_dims)))

    expected = (numeric_gradient(lambda v: loss(v, scale, bias), x.copy()),
                numeric_gradient(lambda v: loss(x, v, bias), scale.copy()),
                numeric_gradient(lambda v: loss(x, scale, v), bias.copy()))
    for actual, wanted in zip((dx, dscale, dbias), expected, strict=True):
        assert actual.shape == wanted.shape
        np.testing.assert_allclose(actual, wanted, rtol=1e-5, atol=1e-6)
