"""conv2d and pool2d: a naive reference, finite differences, sharded equals unsharded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def naive(reduce_window: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
          window: tuple[int, ...], stride: int, padding: tuple[int, int],
          fill: float = 0.0) -> np.ndarray:
    """`reduce_window` (`[b, c, kh, kw]` -> `[b, o]`) of the padded window at every output
    position, one position at a time."""
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2),
                    constant_values=fill)
    ho = (padded.shape[2] - window[0]) // stride + 1
    wo = (padded.shape[3] - window[1]) // stride + 1
    return np.stack([np.stack([reduce_window(padded[:, :, p * stride:p * stride + window[0],
                                                    q * stride:q * stride + window[1]])
                               for q in range(wo)], axis=-1) for p in range(ho)], axis=-2)


def naive_conv(x: np.ndarray, w: np.ndarray, stride: int, padding: tuple[int, int]
               ) -> np.ndarray:
    return naive(lambda patch: np.einsum("bcrs,ocrs->bo", patch, w), x, w.shape[2:], stride,
                 padding)


def naive_pool(kind: str, x: np.ndarray, window: tuple[int, int], stride: int,
               padding: tuple[int, int]) -> np.ndarray:
    if kind == "max":
        return naive(lambda patch: patch.max(axis=(2, 3)), x, window, stride, padding, -np.inf)
    # Average over the whole window, padded zeros included.
    return naive(lambda patch: patch.mean(axis=(2, 3)), x, window, stride, padding)


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
    kit.assert_gradients(lambda x, w: conv2d_forward(x, w, stride, padding), [x, w], weights,
                         conv2d_backward(weights, x, w, stride, padding))


# The axis of y, x and w a split dim runs along (None: the tensor does not range over it).
CONV_SPLITS = {"batch": (0, 0, None), "out_channels": (1, None, 0), "in_channels": (None, 1, 1)}


@pytest.mark.parametrize("split", CONV_SPLITS)
@pytest.mark.parametrize("parts", [2, 4])
def test_conv2d_sharded_equals_unsharded(split: str, parts: int, rng: np.random.Generator,
                                         kit) -> None:
    x = rng.standard_normal((4, 4, 5, 6))
    w = rng.standard_normal((4, 4, 3, 2))
    grad_output = rng.standard_normal(conv2d_forward(x, w, 2, (1, 0)).shape)

    def step(grad_output: np.ndarray, x: np.ndarray, w: np.ndarray) -> list[Any]:
        return [conv2d_forward(x, w, 2, (1, 0)), *conv2d_backward(grad_output, x, w, 2, (1, 0))]

    kit.assert_sharded(step, [grad_output, x, w], CONV_SPLITS[split], parts)


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
    kit.assert_gradients(lambda v: pool2d_forward(kind, v, window, stride, padding), [x],
                         weights, [pool2d_backward(kind, weights, x, window, stride, padding)])


@pytest.mark.parametrize(("kind", "window", "stride", "padding"), POOLS)
@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (1, 2), (1, 4)])
def test_pool2d_sharded_equals_unsharded(kind: str, window: tuple[int, int], stride: int,
                                         padding: tuple[int, int], axis: int, parts: int,
                                         rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((4, 4, 6, 7))
    grad_output = rng.standard_normal(pool2d_forward(kind, x, window, stride, padding).shape)

    def step(grad_output: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        return [pool2d_forward(kind, x, window, stride, padding),
                pool2d_backward(kind, grad_output, x, window, stride, padding)]

    kit.assert_sharded(step, [grad_output, x], [axis, axis], parts)
