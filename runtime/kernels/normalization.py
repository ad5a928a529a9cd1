"""softmax, layernorm, batchnorm and softmax_cross_entropy over named dims.

Each kernel normalizes over dims that may be split across devices, so its statistics
are all-reduced through the `reduce(array, op)` callback (see `pase.runtime.kernels`),
exactly as docs/cost-model.md, rule 3, charges. W below is the number of statistics a
device holds: its block of x with the normalized dims removed (the rows).

| kernel | callback calls |
|---|---|
| softmax_forward | 2: `reduce(max, "max")`, `reduce(Σ exp, "sum")`; W each |
| softmax_backward | 1: `reduce(Σ dy·y, "sum")`; W |
| layernorm_forward, batchnorm_forward | 1: `reduce([Σ x, Σ x²], "sum")`; 2W |
| layernorm_backward, batchnorm_backward | 1: `reduce([Σ g, Σ g·x̂], "sum")`, g = dy·scale; 2W |
| softmax_cross_entropy_forward | 2: `reduce(row max, "max")`; W, then |
| | `reduce([Σ exp(z − max), target logit], "sum")`; 2W |
| softmax_cross_entropy_backward | none (it uses the forward's statistics) |

Buffers keep x's rank with the normalized axes of size 1 (stacked buffers gain a leading
axis of 2); the callback must return an array of the same shape. Kernels call it even
when nothing is split (the default is the identity).

Means and variances divide by `count`, the GLOBAL number of normalized elements per row
(the product of the normalized dims' full sizes); its default, the local count, is right
only when no normalized dim is split. The variance is E[x²] − E[x]², so that one buffer of
sums suffices; it is clamped at zero. The norms' sums are accumulated, and exchanged, in
f64 whatever the input type: in f32 the cancellation in E[x²] − E[x]² would make sharded
and unsharded results differ by far more than f32 rounding.

Parameter gradients (scale, bias) sum over the dims the parameter does not range over;
when one of those is split they are partial sums the caller all-reduces (rule 2). Scale
and bias each come with their own dims (`scale_dims`, `bias_dims`), in their own order:
`%g = param [h, w]` and `%beta = param [w, h]` may normalize the same tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from pase.runtime.kernels.context import (
    Backward,
    Forward,
    KernelContext,
    Kernels,
    Reduce,
    axes_of,
    local_reduce,
)
from pase.runtime.kernels.elementwise import align, unbroadcast

# --- softmax -----------------------------------------------------------------------


def softmax_forward(x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                    reduce: Reduce = local_reduce) -> np.ndarray:
    """`exp(x − max) / Σ exp(x − max)` over the dims `over`."""
    axes = axes_of(dims, over)
    row_max = reduce(x.max(axis=axes, keepdims=True), "max")
    exps = np.exp(x - row_max)
    return exps / reduce(exps.sum(axis=axes, keepdims=True), "sum")


def softmax_backward(grad_output: np.ndarray, y: np.ndarray, dims: Sequence[str],
                     over: Sequence[str], reduce: Reduce = local_reduce) -> np.ndarray:
    """`y · (dy − Σ dy·y)` from the forward output y."""
    axes = axes_of(dims, over)
    dot = reduce((grad_output * y).sum(axis=axes, keepdims=True), "sum")
    return y * (grad_output - dot)


# --- layernorm and batchnorm -------------------------------------------------------


@dataclass(frozen=True)
class NormStatistics:
    """The all-reduced statistics of a norm's forward, for its backward: mean and
    1/√(var + eps) per row, x's rank with the normalized axes of size 1."""

    mean: np.ndarray
    rstd: np.ndarray


def _param_dims(kind: str, dims: Sequence[str], over: Sequence[str],
                param_dims: Sequence[str] | None) -> Sequence[str]:
    """A scale's or bias's dims: as given, or by default the dims it ranges over in x's
    order."""
    if param_dims is not None:
        return param_dims
    if kind == "layernorm":
        return [d for d in dims if d in over]
    return [d for d in dims if d not in over]


def _norm_forward(kind: str, x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                  scale: np.ndarray | None, bias: np.ndarray | None,
                  scale_dims: Sequence[str] | None, bias_dims: Sequence[str] | None,
                  count: int | None, eps: float,
                  reduce: Reduce) -> tuple[np.ndarray, NormStatistics]:
    axes = axes_of(dims, over)
    count = int(count) if count is not None else prod(x.shape[a] for a in axes)
    # Statistics accumulate in double precision: E[x²] − E[x]² loses f32 digits to
    # cancellation, and the sharded and unsharded sums must agree to f32 accuracy.
    wide = x.astype(np.float64)
    sums = np.stack([wide.sum(axis=axes, keepdims=True),
                     (wide * wide).sum(axis=axes, keepdims=True)])
    sums = reduce(sums, "sum")
    mean64 = sums[0] / count
    variance = np.maximum(sums[1] / count - mean64 * mean64, 0)
    rstd = (1.0 / np.sqrt(variance + eps)).astype(x.dtype)
    mean = mean64.astype(x.dtype)
    y = (x - mean) * rstd
    if scale is not None:
        y = y * align(scale, _param_dims(kind, dims, over, scale_dims), dims)
    if bias is not None:
        y = y + align(bias, _param_dims(kind, dims, over, bias_dims), dims)
    return y, NormStatistics(mean, rstd)


def _norm_backward(kind: str, grad_output: np.ndarray, x: np.ndarray, dims: Sequence[str],
                   over: Sequence[str], stats: NormStatistics, scale: np.ndarray | None,
                   scale_dims: Sequence[str] | None, bias_dims: Sequence[str] | None,
                   count: int | None, reduce: Reduce
                   ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    axes = axes_of(dims, over)
    count = int(count) if count is not None else prod(x.shape[a] for a in axes)
    names = _param_dims(kind, dims, over, scale_dims)
    normalized = (x - stats.mean) * stats.rstd
    scaled = grad_output * align(scale, names, dims) if scale is not None else grad_output
    wide, wide_normalized = scaled.astype(np.float64), normalized.astype(np.float64)
    sums = np.stack([wide.sum(axis=axes, keepdims=True),
                     (wide * wide_normalized).sum(axis=axes, keepdims=True)])
    sums = reduce(sums, "sum").astype(x.dtype)
    dx = stats.rstd * (scaled - sums[0] / count - normalized * (sums[1] / count))
    if scale is None:
        return dx, None, None
    return (dx, unbroadcast(grad_output * normalized, names, dims),
            unbroadcast(grad_output, _param_dims(kind, dims, over, bias_dims), dims))


def layernorm_forward(x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                      scale: np.ndarray | None = None, bias: np.ndarray | None = None, *,
                      scale_dims: Sequence[str] | None = None,
                      bias_dims: Sequence[str] | None = None, count: int | None = None,
                      eps: float = 1e-5, reduce: Reduce = local_reduce
                      ) -> tuple[np.ndarray, NormStatistics]:
    """`(x − mean) / √(var + eps) · scale + bias`, statistics over `over`; scale and bias
    range over the normalized dims (`scale_dims`, `bias_dims`, default: `over` in x's
    order)."""
    return _norm_forward("layernorm", x, dims, over, scale, bias, scale_dims, bias_dims,
                         count, eps, reduce)


def layernorm_backward(grad_output: np.ndarray, x: np.ndarray, dims: Sequence[str],
                       over: Sequence[str], stats: NormStatistics,
                       scale: np.ndarray | None = None, *,
                       scale_dims: Sequence[str] | None = None,
                       bias_dims: Sequence[str] | None = None, count: int | None = None,
                       reduce: Reduce = local_reduce
                       ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(dx, dscale, dbias); dscale and dbias are None without a scale, and local partial
    sums over the split non-normalized dims otherwise."""
    return _norm_backward("layernorm", grad_output, x, dims, over, stats, scale, scale_dims,
                          bias_dims, count, reduce)


def batchnorm_forward(x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                      scale: np.ndarray | None = None, bias: np.ndarray | None = None, *,
                      scale_dims: Sequence[str] | None = None,
                      bias_dims: Sequence[str] | None = None, count: int | None = None,
                      eps: float = 1e-5, reduce: Reduce = local_reduce
                      ) -> tuple[np.ndarray, NormStatistics]:
    """Training-mode batch norm with batch statistics over `over` (e.g. [b, h, w]); scale
    and bias range over the other dims (`scale_dims`, `bias_dims`, default: those in x's
    order)."""
    return _norm_forward("batchnorm", x, dims, over, scale, bias, scale_dims, bias_dims,
                         count, eps, reduce)


def batchnorm_backward(grad_output: np.ndarray, x: np.ndarray, dims: Sequence[str],
                       over: Sequence[str], stats: NormStatistics,
                       scale: np.ndarray | None = None, *,
                       scale_dims: Sequence[str] | None = None,
                       bias_dims: Sequence[str] | None = None, count: int | None = None,
                       reduce: Reduce = local_reduce
                       ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(dx, dscale, dbias); dscale and dbias are local partial sums over the split
    normalized dims (the batch), None without a scale."""
    return _norm_backward("batchnorm", grad_output, x, dims, over, stats, scale, scale_dims,
                          bias_dims, count, reduce)


# --- softmax_cross_entropy ---------------------------------------------------------


@dataclass(frozen=True)
class CrossEntropyStatistics:
    """The all-reduced row maximum and Σ exp(z − max) per row, shaped like the labels."""

    row_max: np.ndarray
    sum_exp: np.ndarray


def _class_last(logits: np.ndarray, dims: Sequence[str], over: str,
                labels: np.ndarray) -> np.ndarray:
    logits_rows = np.moveaxis(logits, axes_of(dims, [over])[0], -1)
    if logits_rows.shape[:-1] != labels.shape:
        raise ValueError(f"labels of shape {labels.shape} do not match the logits' rows "
                         f"{logits_rows.shape[:-1]} (the logits without '{over}')")
    return logits_rows


def _local_labels(labels: np.ndarray, class_offset: int,
                  classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels as indices into the local class block (clipped) and whether they fall in it."""
    local = labels.astype(np.int64) - class_offset
    inside = (local >= 0) & (local < classes)
    return np.clip(local, 0, classes - 1)[..., None], inside


def softmax_cross_entropy_forward(logits: np.ndarray, dims: Sequence[str],
                                  labels: np.ndarray, over: str, class_offset: int = 0,
                                  reduce: Reduce = local_reduce
                                  ) -> tuple[np.ndarray, CrossEntropyStatistics]:
    """The SUM over the local rows of `log Σ_c exp(z_c) − z_label`, and the statistics.

    `labels` has the logits' dims without the class dim `over`, in order, and holds
    global class indices; the local block of classes starts at `class_offset`. The
    caller turns the returned sum into the loss: it all-reduces the sum over the devices
    that split the other (row) dims, not the class dim (every device of a class group
    holds the same sum), and divides by the global number of rows; that is the
    cost model's `AR(1, g over the other dims)`. The result is a 0-d array of the logits'
    element type.
    """
    z = _class_last(logits, dims, over, labels)
    row_max = reduce(z.max(axis=-1), "max")
    index, inside = _local_labels(labels, class_offset, z.shape[-1])
    target = np.where(inside, np.take_along_axis(z, index, axis=-1)[..., 0], 0)
    sums = reduce(np.stack([np.exp(z - row_max[..., None]).sum(axis=-1), target]), "sum")
    sum_exp, target = sums[0], sums[1]
    losses = np.log(sum_exp) + row_max - target
    return np.asarray(losses.sum(), dtype=logits.dtype), CrossEntropyStatistics(row_max,
                                                                                sum_exp)


def softmax_cross_entropy_backward(grad_loss: float | np.ndarray, logits: np.ndarray,
                                   dims: Sequence[str], labels: np.ndarray, over: str,
                                   stats: CrossEntropyStatistics, count: int,
                                   class_offset: int = 0) -> np.ndarray:
    """`(softmax(z) − onehot(label)) / count · grad_loss` on the local block, count the
    GLOBAL number of rows (the loss is their mean). No communication."""
    z = _class_last(logits, dims, over, labels)
    probabilities = np.exp(z - stats.row_max[..., None]) / stats.sum_exp[..., None]
    index, inside = _local_labels(labels, class_offset, z.shape[-1])
    at_label = np.take_along_axis(probabilities, index, axis=-1)
    np.put_along_axis(probabilities, index, at_label - inside[..., None], axis=-1)
    grad = probabilities * (float(grad_loss) / count)
    return np.ascontiguousarray(np.moveaxis(grad, -1, axes_of(dims, [over])[0]))


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _softmax(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    return softmax_forward(inputs[0], ctx.dims[0], ctx.props["over"], ctx.reduce), None


def _softmax_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                      saved: Any, needs: list[bool]) -> list[Any]:
    return [softmax_backward(grad_output, output, ctx.dims[0], ctx.props["over"], ctx.reduce)]


def _affine_dims(ctx: KernelContext) -> dict[str, Any]:
    """Each of scale and bias with its own dims (their orders may differ)."""
    if len(ctx.operands) != 3:
        return {}
    return {"scale_dims": ctx.dims[1], "bias_dims": ctx.dims[2]}


def _norm(kind: str) -> tuple[Forward, Backward]:
    forward_kernel = {"layernorm": layernorm_forward, "batchnorm": batchnorm_forward}[kind]
    backward_kernel = {"layernorm": layernorm_backward, "batchnorm": batchnorm_backward}[kind]

    def forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, NormStatistics]:
        over = ctx.props["over"]
        scale, bias = (inputs[1], inputs[2]) if len(inputs) == 3 else (None, None)
        return forward_kernel(inputs[0], ctx.dims[0], over, scale, bias, **_affine_dims(ctx),
                              count=ctx.count(0, over), reduce=ctx.reduce)

    def backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                 saved: Any, needs: list[bool]) -> list[Any]:
        over = ctx.props["over"]
        scale = inputs[1] if len(inputs) == 3 else None
        return list(backward_kernel(grad_output, inputs[0], ctx.dims[0], over, saved, scale,
                                    **_affine_dims(ctx), count=ctx.count(0, over),
                                    reduce=ctx.reduce))

    return forward, backward


def _cross_entropy(ctx: KernelContext, inputs: list[Any]
                   ) -> tuple[np.ndarray, CrossEntropyStatistics]:
    logits, labels = inputs
    (over,) = ctx.props["over"]
    class_offset = ctx.offset(0, ctx.dims[0].index(over))
    loss, stats = softmax_cross_entropy_forward(logits, ctx.dims[0], labels, over,
                                                class_offset, ctx.reduce)
    # The mean over the GLOBAL rows (the caller all-reduces the partial sums).
    rows = ctx.count(0, [over], inside=False)
    return np.asarray(loss / rows, dtype=logits.dtype), stats


def _cross_entropy_backward(ctx: KernelContext, inputs: list[Any], output: Any,
                            grad_output: Any, saved: Any, needs: list[bool]) -> list[Any]:
    logits, labels = inputs
    (over,) = ctx.props["over"]
    class_offset = ctx.offset(0, ctx.dims[0].index(over))
    rows = ctx.count(0, [over], inside=False)
    return [softmax_cross_entropy_backward(grad_output, logits, ctx.dims[0], labels, over,
                                           saved, rows, class_offset), None]


KERNELS: Kernels = {
    "dnn.softmax": (_softmax, _softmax_backward),
    "dnn.layernorm": _norm("layernorm"),
    "dnn.batchnorm": _norm("batchnorm"),
    "dnn.softmax_cross_entropy": (_cross_entropy, _cross_entropy_backward),
}
