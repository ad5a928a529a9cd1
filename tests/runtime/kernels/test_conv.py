"""conv2d and pool2d: a naive reference, finite differences, sharded equals unsharded."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.conv import (
    conv2d_backward,
    conv2d_forward,
    pool2d_backward,
    pool2d_forward,
)

# (filter height, filter width, stride, padding)
CONVS = [(3, 3, 1, (1, 1)), (3, 2, 2, (1, 0)), (1, 1, 2, (0, 0)), (1, 3, 1, (0, 1))]
# (kind, window, stride, padding)
POOLS = [("max", (3, 3), 2, (1, 1)), ("avg", (3, 3), 2, (1, 1)), ("max", (2, 2), 2, (0, 0)),
         ("avg", (2, 3), 1, (1, 1))]


def naive_conv(x: np.ndarray, w: np.ndarray, stride: int, padding: tuple[int, int]
               ) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    kh, kw = w.shape[2:]
    ho = (padded.shape[2] - kh) // stride + 1
    wo = (padded.shape[3] - kw) // stride + 1
    y = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for p in range(ho):
        for q in range(wo):
            patch = padded[:, :, p * stride:p * stride + kh, q * stride:q * stride + kw]
            y[:, :, p, q] = np.einsum("bcrs,ocrs->bo", patch, w)
    return y


def naive_pool(kind: str, x: np.ndarray, window: tuple[int, int], stride: int,
               padding: tuple[int, int]) -> np.ndarray:
    fill = -np.inf if kind == "max" else 0.0
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2),
                    constant_values=fill)
    ho = (padded.shape[2] - window[0]) // stride + 1
    wo = (padded.shape[3] - window[1]) // stride + 1
    y = np.zeros((x.shape[0], x.shape[1], ho, wo))
    for p in range(ho):
        for q in range(wo):
            patch = padded[:, :, p * stride:p * stride + window[0],
                           q * stride:q * stride + window[1]]
            # Average over the whole window, padded zeros included.
            y[:, :, p, q] = patch.max(axis=(2, 3)) if kind == "max" else patch.mean(axis=(2, 3))
    return y


@pytest.mark.parametrize(("kh", "kw", "stride", "padding"), CONVS)
def test_conv2d_matches_naive_loop(kh: int, kw: int, stride: int, padding: tuple[int, int],
                                   rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((2, 3, 5, 6))
    w = rng.standard_normal((4, 3, kh, kw))
    kit.assert_exact(conv2d_forward(x, w, stride, padding), naive_conv(x, w, stride, padding))


@pytest.mark.parametrize(("kh", "kw", "stride", "padding"), CONVS)
def test_conv2d_backward_matches_finite_differences(kh: int, kw: int, stride: int,
                                                    padding: tuple[int, int],
                                                    rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((2, 2, 5, 6))
    w = rng.standard_normal((3, 2, kh, kw))
    weights = rng.standard_normal(conv2d_forward(x, w, stride, padding).shape)
    dx, dw = conv2d_backward(weights, x, w, stride, padding)
    assert dx is not None
    assert dw is not None
    kit.assert_gradient(dx, kit.numeric_gradient(
        lambda v: float(np.sum(weights * conv2d_forward(v, w, stride, padding))), x.copy()))
    kit.assert_gradient(dw, kit.numeric_gradient(
        lambda v: float(np.sum(weights * conv2d_forward(x, v, stride, padding))), w.copy()))


# The axis of x, w and y a split dim runs along (None: the tensor does not range over it).
CONV_SPLITS = {"batch": (0, None, 0), "out_channels": (None, 0, 1), "in_channels": (1, 1, None)}


@pytest.mark.parametrize("split", CONV_SPLITS)
@pytest.mark.parametrize("parts", [2, 4])
def test_conv2d_sharded_equals_unsharded(split: str, parts: int, rng: np.random.Generator,
                                         kit) -> None:
    x_axis, w_axis, y_axis = CONV_SPLITS[split]
    x = rng.standard_normal((4, 4, 5, 6))
    w = rng.standard_normal((4, 4, 3, 2))
    stride, padding = 2, (1, 0)
    y = conv2d_forward(x, w, stride, padding)
    grad_output = rng.standard_normal(y.shape)
    dx, dw = conv2d_backward(grad_output, x, w, stride, padding)

    def blocks(array: np.ndarray, axis: int | None) -> list[np.ndarray]:
        return [array] * parts if axis is None else kit.split(array, axis, parts)

    results = [(conv2d_forward(xb, wb, stride, padding),
                conv2d_backward(gb, xb, wb, stride, padding))
               for xb, wb, gb in zip(blocks(x, x_axis), blocks(w, w_axis),
                                     blocks(grad_output, y_axis), strict=True)]
    kit.assert_exact(kit.assemble([r[0] for r in results], y_axis), y)
    kit.assert_exact(kit.assemble([r[1][0] for r in results], x_axis), dx)
    kit.assert_exact(kit.assemble([r[1][1] for r in results], w_axis), dw)


def test_conv2d_float32(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = conv2d_forward(x, w, 1, 1)
    dx, dw = conv2d_backward(np.ones_like(y), x, w, 1, 1)
    assert y.dtype == dx.dtype == dw.dtype == np.float32
    np.testing.assert_allclose(y, naive_conv(x.astype(np.float64), w.astype(np.float64), 1,
                                             (1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("kind", "window", "stride", "padding"), POOLS)
def test_pool2d_matches_naive_loop(kind: str, window: tuple[int, int], stride: int,
                                   padding: tuple[int, int], rng: np.random.Generator,
                                   kit) -> None:
    x = rng.standard_normal((2, 3, 6, 7))
    kit.assert_exact(pool2d_forward(kind, x, window, stride, padding),
                     naive_pool(kind, x, window, stride, padding))


def test_avg_pool_counts_padding() -> None:
    x = np.ones((1, 1, 2, 2))
    # The corner window [3, 3] at padding 1 holds four ones and five padded zeros.
    assert pool2d_forward("avg", x, (3, 3), 1, 1)[0, 0, 0, 0] == pytest.approx(4 / 9)


def test_max_pool_ties_go_to_the_first_maximum() -> None:
    x = np.ones((1, 1, 2, 2))
    dx = pool2d_backward("max", np.ones((1, 1, 1, 1)), x, (2, 2), 2, 0)
    np.testing.assert_array_equal(dx[0, 0], [[1.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize(("kind", "window", "stride", "padding"), POOLS)
def test_pool2d_backward_matches_finite_differences(kind: str, window: tuple[int, int],
                                                    stride: int, padding: tuple[int, int],
                                                    rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((2, 2, 6, 7))
    weights = rng.standard_normal(pool2d_forward(kind, x, window, stride, padding).shape)
    dx = pool2d_backward(kind, weights, x, window, stride, padding)
    kit.assert_gradient(dx, kit.numeric_gradient(
        lambda v: float(np.sum(weights * pool2d_forward(kind, v, window, stride, padding))),
        x.copy()))


@pytest.mark.parametrize(("kind", "window", "stride", "padding"), POOLS)
@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (1, 2), (1, 4)])
def test_pool2d_sharded_equals_unsharded(kind: str, window: tuple[int, int], stride: int,
                                         padding: tuple[int, int], axis: int, parts: int,
                                         rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((4, 4, 6, 7))
    y = pool2d_forward(kind, x, window, stride, padding)
    grad_output = rng.standard_normal(y.shape)
    dx = pool2d_backward(kind, grad_output, x, window, stride, padding)
    x_blocks, g_blocks = kit.split(x, axis, parts), kit.split(grad_output, axis, parts)
    kit.assert_exact(kit.assemble([pool2d_forward(kind, xb, window, stride, padding)
                                   for xb in x_blocks], axis), y)
    kit.assert_exact(kit.assemble([pool2d_backward(kind, gb, xb, window, stride, padding)
                                   for xb, gb in zip(x_blocks, g_blocks, strict=True)], axis),
                     dx)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_float32(kind: str, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    y = pool2d_forward(kind, x, (3, 3), 2, 1)
    dx = pool2d_backward(kind, np.ones_like(y), x, (3, 3), 2, 1)
    assert y.dtype == dx.dtype == np.float32
    np.testing.assert_allclose(y, naive_pool(kind, x.astype(np.float64), (3, 3), 2, (1, 1)),
                               rtol=1e-5, atol=1e-6)
