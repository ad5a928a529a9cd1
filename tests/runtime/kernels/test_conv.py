"""conv2d and pool2d: a naive reference, finite differences, sharded equals unsharded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pase.runtime.kernels.conv import (
    Groups,
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


# --- grouped convolution -------------------------------------------------------------

# (groups, input channels, output channels): depthwise, one output per group, two per
# group, a depthwise multiplier of two.
GROUPINGS = [(4, 4, 4), (2, 4, 2), (2, 4, 4), (3, 3, 6)]


def naive_grouped(x: np.ndarray, w: np.ndarray, groups: int, stride: int,
                  padding: tuple[int, int]) -> np.ndarray:
    """Each group's outputs as an ungrouped conv of its own input channels."""
    inputs, outputs = x.shape[1] // groups, w.shape[0] // groups
    return np.concatenate([naive_conv(x[:, g * inputs:(g + 1) * inputs],
                                      w[g * outputs:(g + 1) * outputs], stride, padding)
                           for g in range(groups)], axis=1)


@pytest.mark.parametrize(("groups", "ci", "co"), GROUPINGS)
def test_grouped_conv2d_matches_naive_groups(groups: int, ci: int, co: int,
                                             rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((2, ci, 5, 6))
    w = rng.standard_normal((co, ci // groups, 3, 2))
    kit.assert_exact(conv2d_forward(x, w, 2, (1, 0), Groups(groups, co)),
                     naive_grouped(x, w, groups, 2, (1, 0)))


@pytest.mark.parametrize(("groups", "ci", "co"), GROUPINGS)
def test_grouped_conv2d_backward_matches_finite_differences(groups: int, ci: int, co: int,
                                                            rng: np.random.Generator,
                                                            kit) -> None:
    x = rng.standard_normal((2, ci, 5, 5))
    w = rng.standard_normal((co, ci // groups, 3, 3))
    split = Groups(groups, co)
    weights = rng.standard_normal(conv2d_forward(x, w, 1, (1, 1), split).shape)
    kit.assert_gradients(lambda x, w: conv2d_forward(x, w, 1, (1, 1), split), [x, w], weights,
                         conv2d_backward(weights, x, w, 1, (1, 1), groups=split))


def test_a_one_by_one_conv2d_is_a_contraction(rng: np.random.Generator, kit) -> None:
    x = rng.standard_normal((2, 3, 4, 5))
    w = rng.standard_normal((6, 3, 1, 1))
    kit.assert_exact(conv2d_forward(x, w), np.einsum("bchw,oc->bohw", x, w[:, :, 0, 0]))


@pytest.mark.parametrize(("groups", "ci", "co"), GROUPINGS)
@pytest.mark.parametrize("parts", [1, 2])
def test_grouped_conv2d_split_output_channels_equals_unsharded(groups: int, ci: int, co: int,
                                                               parts: int,
                                                               rng: np.random.Generator,
                                                               kit) -> None:
    # Each device holds a block of the output channels; x's channels split with them
    # when each group has one output channel (co = groups), else every device holds x
    # whole and its input gradient is a partial sum.
    x = rng.standard_normal((2, ci, 5, 5))
    w = rng.standard_normal((co, ci // groups, 3, 3))
    dy = rng.standard_normal((2, co, 5, 5))
    aligned = co == groups
    y, (dx, dw) = (conv2d_forward(x, w, 1, 1, Groups(groups, co)),
                   conv2d_backward(dy, x, w, 1, 1, groups=Groups(groups, co)))
    outs, dxs, dws = [], [], []
    block, in_block = co // parts, ci // parts
    for device in range(parts):
        local_x = x[:, device * in_block:(device + 1) * in_block] if aligned else x
        split = Groups(groups, co, device * block, device * in_block if aligned else 0)
        local_w, local_dy = w[device * block:(device + 1) * block], dy[:, device * block:
                                                                          (device + 1) * block]
        outs.append(conv2d_forward(local_x, local_w, 1, 1, split))
        grads = conv2d_backward(local_dy, local_x, local_w, 1, 1, groups=split)
        dxs.append(grads[0])
        dws.append(grads[1])
    kit.assert_exact(np.concatenate(outs, axis=1), y)
    kit.assert_exact(np.concatenate(dws, axis=0), dw)
    kit.assert_exact(kit.assemble(dxs, 1 if aligned else None), dx)
