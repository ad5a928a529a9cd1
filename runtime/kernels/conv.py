"""conv2d and pool2d over NCHW tensors, forward and backward.

Layouts are positional: x `[b, c, h, w]`, filter `[co, ci, r, s]`, output
`[b, co, ho, wo]` with `ho = (h + 2·ph − r) // stride + 1`. Only batch and channels are
ever split (height and width are not splittable), so a local block is whole along
height and width and needs no halo.

conv2d computes local contractions only: with input channels split the output is a
partial sum, with output channels split the input gradient is, with the batch split the
filter gradient is; the caller all-reduces them (docs/cost-model.md, rules 1 and 2).
pool2d is purely local.

Grouped conv2d (`groups` G, filter [co, cig, r, s]) gathers, for each local output
channel, the cig input channels of its group (`group_channels`), and contracts each
output channel with its own gathered channels. Which channels those are depends on where
the device's blocks start, so the kernel takes the global offsets of its x channel block
and of its filter's output-channel block (0 when unsplit).

Padding: conv2d and avg pooling pad with zeros, max pooling with −inf. Avg pooling
counts padded zeros (count_include_pad=True): every window divides by `kh·kw`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pase.runtime.kernels.context import KernelContext, Kernels

Pair = tuple[int, int]


def _pair(padding: int | Sequence[int]) -> Pair:
    if isinstance(padding, int):
        return padding, padding
    height, width = padding
    return int(height), int(width)


def _pad(x: np.ndarray, padding: Pair, value: float = 0.0) -> np.ndarray:
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _windows(padded: np.ndarray, window: Pair, stride: int) -> np.ndarray:
    """A read-only view `[b, c, ho, wo, kh, kw]` of the windows of a padded input."""
    return sliding_window_view(padded, window, axis=(2, 3))[:, :, ::stride, ::stride]


def _scatter(tap_gradient: Callable[[int, int], np.ndarray], x_shape: Sequence[int],
             padding: Pair, window: Pair, out: Pair, stride: int, dtype: Any) -> np.ndarray:
    """The input gradient: `tap_gradient(i, j)`, `[b, c, ho, wo]`, is what window tap (i, j)
    of every output passes back; each is added at the padded positions the tap reads."""
    (ph, pw), (ho, wo) = padding, out
    height, width = x_shape[2] + 2 * ph, x_shape[3] + 2 * pw
    dpadded = np.zeros((x_shape[0], x_shape[1], height, width), dtype=dtype)
    for i in range(window[0]):
        for j in range(window[1]):
            dpadded[:, :, i:i + stride * (ho - 1) + 1:stride,
                    j:j + stride * (wo - 1) + 1:stride] += tap_gradient(i, j)
    return np.ascontiguousarray(dpadded[:, :, ph:height - ph, pw:width - pw])


def _check_pool(kind: str) -> None:
    if kind not in ("max", "avg"):
        raise ValueError(f"pool2d kind must be 'max' or 'avg', got '{kind}'")


def conv2d_forward(x: np.ndarray, w: np.ndarray, stride: int = 1,
                   padding: int | Sequence[int] = 0, groups: Groups | None = None
                   ) -> np.ndarray:
    """`y[b, o, p, q] = Σ_{c, i, j} xpad[b, c, stride·p + i, stride·q + j] · w[o, c, i, j]`,
    c over the input channels of o's group when `groups` is given."""
    pad = _pair(padding)
    if groups is not None:
        channels = groups.channels(w.shape[0], w.shape[1])
        windows = _grouped_windows(_pad(x, pad)[:, channels.ravel()], w, stride)
        return np.einsum("bochwrs,ocrs->bohw", windows, w, optimize=True)
    windows = _windows(_pad(x, pad), (w.shape[2], w.shape[3]), stride)
    return np.einsum("bchwrs,ocrs->bohw", windows, w, optimize=True)


def conv2d_backward(grad_output: np.ndarray, x: np.ndarray, w: np.ndarray, stride: int = 1,
                    padding: int | Sequence[int] = 0, needs_grad: Sequence[bool] = (True, True),
                    groups: Groups | None = None
                    ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Gradients (dx, dw) of the requested operands, local partial sums."""
    if groups is not None:
        return _grouped_backward(grad_output, x, w, stride, _pair(padding), needs_grad, groups)
    pad, window = _pair(padding), (w.shape[2], w.shape[3])
    out = (grad_output.shape[2], grad_output.shape[3])
    dx = dw = None
    if needs_grad[0]:
        dx = _scatter(lambda i, j: np.einsum("bohw,oc->bchw", grad_output, w[:, :, i, j],
                                             optimize=True),
                      x.shape, pad, window, out, stride, grad_output.dtype)
    if needs_grad[1]:
        windows = _windows(_pad(x, pad), window, stride)
        dw = np.einsum("bohw,bchwrs->ocrs", grad_output, windows, optimize=True)
    return dx, dw


@dataclass(frozen=True)
class Groups:
    """A grouped convolution's channel groups, as one device sees them: `count` groups
    over `out_channels` (global) output channels; the device's output-channel block
    starts at global channel `out_offset`, its x channel block at `in_offset`.

    >>> Groups(4, 4).channels(2, 1).tolist()  # depthwise, the first two channels
    [[0], [1]]
    """

    count: int
    out_channels: int
    out_offset: int = 0
    in_offset: int = 0

    def channels(self, local_out: int, per_group: int) -> np.ndarray:
        """[o, cig]: the local x channels each local output channel reads."""
        group = (self.out_offset + np.arange(local_out)) // (self.out_channels // self.count)
        return group[:, None] * per_group + np.arange(per_group)[None, :] - self.in_offset


def _grouped_windows(gathered: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """[b, o, cig, ho, wo, r, s]: the windows of the padded channels `gathered`
    ([b, o·cig, h, w]) each output channel reads."""
    windows = _windows(gathered, (w.shape[2], w.shape[3]), stride)
    return windows.reshape(windows.shape[0], w.shape[0], w.shape[1], *windows.shape[2:])


def _grouped_backward(grad_output: np.ndarray, x: np.ndarray, w: np.ndarray, stride: int,
                      pad: Pair, needs_grad: Sequence[bool], groups: Groups
                      ) -> tuple[np.ndarray | None, np.ndarray | None]:
    channels = groups.channels(w.shape[0], w.shape[1])
    outputs, per_group = w.shape[0], w.shape[1]
    dx = dw = None
    if needs_grad[0]:
        batch = grad_output.shape[0]
        gathered_shape = (batch, outputs * per_group, x.shape[2], x.shape[3])
        dgathered = _scatter(
            lambda i, j: np.einsum("bohw,oc->bochw", grad_output, w[:, :, i, j]).reshape(
                batch, outputs * per_group, *grad_output.shape[2:]),
            gathered_shape, pad, (w.shape[2], w.shape[3]),
            (grad_output.shape[2], grad_output.shape[3]), stride, grad_output.dtype)
        # Summed per input channel, over the output channels that read it.
        moved = np.zeros((x.shape[1], batch, x.shape[2], x.shape[3]), dtype=grad_output.dtype)
        np.add.at(moved, channels.ravel(), np.moveaxis(dgathered, 1, 0))
        dx = np.ascontiguousarray(np.moveaxis(moved, 0, 1))
    if needs_grad[1]:
        windows = _grouped_windows(_pad(x, pad)[:, channels.ravel()], w, stride)
        dw = np.einsum("bohw,bochwrs->ocrs", grad_output, windows, optimize=True)
    return dx, dw


def pool2d_forward(kind: str, x: np.ndarray, window: Sequence[int], stride: int = 1,
                   padding: int | Sequence[int] = 0) -> np.ndarray:
    """Max or average (count_include_pad=True) pooling of each `window` of x."""
    _check_pool(kind)
    pad, size = _pair(padding), _pair(window)
    if kind == "max":
        return _windows(_pad(x, pad, -np.inf), size, stride).max(axis=(4, 5))
    total = _windows(_pad(x, pad), size, stride).sum(axis=(4, 5))
    return total / (size[0] * size[1])


def pool2d_backward(kind: str, grad_output: np.ndarray, x: np.ndarray, window: Sequence[int],
                    stride: int = 1, padding: int | Sequence[int] = 0) -> np.ndarray:
    """The input gradient. Max pooling routes each window's gradient to its first
    maximum in row-major window order (deterministic on ties)."""
    _check_pool(kind)
    pad, (kh, kw) = _pair(padding), _pair(window)
    out = (grad_output.shape[2], grad_output.shape[3])
    if kind == "max":
        windows = _windows(_pad(x, pad, -np.inf), (kh, kw), stride)
        winner = windows.reshape(*windows.shape[:4], kh * kw).argmax(axis=4)
        return _scatter(lambda i, j: np.where(winner == i * kw + j, grad_output, 0), x.shape,
                        pad, (kh, kw), out, stride, grad_output.dtype)
    share = grad_output / (kh * kw)
    return _scatter(lambda i, j: share, x.shape, pad, (kh, kw), out, stride, grad_output.dtype)


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _groups(ctx: KernelContext) -> Groups | None:
    """The device's channel groups of a grouped conv2d; None when ungrouped."""
    count = ctx.props.get("groups", 1)
    if count == 1:
        return None
    return Groups(count, ctx.operands[1].sizes[0], ctx.offset(1, 0), ctx.offset(0, 1))


def _conv2d(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    x, w = inputs
    return conv2d_forward(x, w, ctx.props["stride"], ctx.props["padding"], _groups(ctx)), None


def _conv2d_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                     saved: Any, needs: list[bool]) -> list[Any]:
    x, w = inputs
    return list(conv2d_backward(grad_output, x, w, ctx.props["stride"], ctx.props["padding"],
                                needs, _groups(ctx)))


def _pool2d(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    props = ctx.props
    return pool2d_forward(props["kind"], inputs[0], props["window"], props["stride"],
                          props["padding"]), None


def _pool2d_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                     saved: Any, needs: list[bool]) -> list[Any]:
    props = ctx.props
    return [pool2d_backward(props["kind"], grad_output, inputs[0], props["window"],
                            props["stride"], props["padding"])]


KERNELS: Kernels = {
    "dnn.conv2d": (_conv2d, _conv2d_backward),
    "dnn.pool2d": (_pool2d, _pool2d_backward),
}
