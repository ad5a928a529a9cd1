"""softmax, layernorm, batchnorm, rmsnorm and softmax_cross_entropy over named dims.

Each kernel normalizes over dims that may be split across devices, so its statistics
are all-reduced through the `reduce(array, op)` callback (see `pase.runtime.kernels`),
exactly as docs/cost-model.md, rule 3, charges. W below is the number of statistics a
device holds: its block of x with the normalized dims removed (the rows).

| kernel | callback calls |
|---|---|
| softmax_forward | 2: `reduce(max, "max")`, `reduce(Σ exp, "sum")`; W each |
| softmax_backward | 1: `reduce(Σ dy·y, "sum")`; W |
| norm_forward (layernorm, batchnorm) | 1: `reduce([Σ x, Σ x²], "sum")`; 2W |
| norm_backward | 1: `reduce([Σ g, Σ g·x̂], "sum")`, g = dy·scale; 2W |
| rms_norm_forward | 1: `reduce(Σ x², "sum")`; W |
| rms_norm_backward | 1: `reduce(Σ g·x̂, "sum")`, g = dy·scale; W |
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pase.runtime.kernels.context import (
    KernelContext,
    Kernels,
    Reduce,
    axes_of,
    count_or_local,
    local_indices,
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


def _sums(a: np.ndarray, b: np.ndarray, axes: tuple[int, ...], reduce: Reduce) -> np.ndarray:
    """`reduce([Σ a, Σ a·b], "sum")` over `axes`, accumulated and exchanged in f64."""
    wide = a.astype(np.float64)
    return reduce(np.stack([wide.sum(axis=axes, keepdims=True),
                            (wide * b).sum(axis=axes, keepdims=True)]), "sum")


def _own_dims(param_dims: Sequence[str] | None, dims: Sequence[str],
              over: Sequence[str]) -> Sequence[str]:
    """A scale's or bias's dims: as given, or by default `over` in x's order."""
    return param_dims if param_dims is not None else [d for d in dims if d in over]


def norm_forward(x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                 scale: np.ndarray | None = None, bias: np.ndarray | None = None, *,
                 scale_dims: Sequence[str] | None = None,
                 bias_dims: Sequence[str] | None = None, count: int | None = None,
                 eps: float = 1e-5, reduce: Reduce = local_reduce
                 ) -> tuple[np.ndarray, NormStatistics]:
    """`(x − mean) / √(var + eps) · scale + bias`, statistics over `over`: a layernorm
    normalizes the features (`[d]`), a training-mode batchnorm the batch (`[b, h, w]`).
    Scale and bias list their own dims (`scale_dims`, `bias_dims`; default `over` in x's
    order)."""
    axes = axes_of(dims, over)
    count = count_or_local(count, x.shape, axes)
    sums = _sums(x, x, axes, reduce)
    mean64 = sums[0] / count
    variance = np.maximum(sums[1] / count - mean64 * mean64, 0)
    rstd = (1.0 / np.sqrt(variance + eps)).astype(x.dtype)
    mean = mean64.astype(x.dtype)
    y = (x - mean) * rstd
    if scale is not None:
        y = y * align(scale, _own_dims(scale_dims, dims, over), dims)
    if bias is not None:
        y = y + align(bias, _own_dims(bias_dims, dims, over), dims)
    return y, NormStatistics(mean, rstd)


def norm_backward(grad_output: np.ndarray, x: np.ndarray, dims: Sequence[str],
                  over: Sequence[str], stats: NormStatistics, scale: np.ndarray | None = None,
                  *, scale_dims: Sequence[str] | None = None,
                  bias_dims: Sequence[str] | None = None, count: int | None = None,
                  reduce: Reduce = local_reduce
                  ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(dx, dscale, dbias); dscale and dbias are None without a scale, and otherwise local
    partial sums over the split dims they do not range over."""
    axes = axes_of(dims, over)
    count = count_or_local(count, x.shape, axes)
    scale_dims = _own_dims(scale_dims, dims, over)
    normalized = (x - stats.mean) * stats.rstd
    scaled = grad_output if scale is None else grad_output * align(scale, scale_dims, dims)
    sums = _sums(scaled, normalized, axes, reduce).astype(x.dtype)
    dx = stats.rstd * (scaled - sums[0] / count - normalized * (sums[1] / count))
    if scale is None:
        return dx, None, None
    return (dx, unbroadcast(grad_output * normalized, scale_dims, dims),
            unbroadcast(grad_output, _own_dims(bias_dims, dims, over), dims))


def rms_norm_forward(x: np.ndarray, dims: Sequence[str], over: Sequence[str],
                     scale: np.ndarray | None = None, *,
                     scale_dims: Sequence[str] | None = None, count: int | None = None,
                     eps: float = 1e-5, reduce: Reduce = local_reduce
                     ) -> tuple[np.ndarray, np.ndarray]:
    """`x / √(mean(x²) + eps) · scale` over `over` (the scale over `scale_dims`, by default
    `over` in x's order), and the reciprocal root mean squares the backward reuses."""
    axes = axes_of(dims, over)
    count = count_or_local(count, x.shape, axes)
    wide = x.astype(np.float64)
    squares = reduce((wide * wide).sum(axis=axes, keepdims=True), "sum")
    rms = (1.0 / np.sqrt(squares / count + eps)).astype(x.dtype)
    y = x * rms
    if scale is not None:
        y = y * align(scale, _own_dims(scale_dims, dims, over), dims)
    return y, rms


def rms_norm_backward(grad_output: np.ndarray, x: np.ndarray, dims: Sequence[str],
                      over: Sequence[str], rms: np.ndarray, scale: np.ndarray | None = None,
                      *, scale_dims: Sequence[str] | None = None, count: int | None = None,
                      reduce: Reduce = local_reduce
                      ) -> tuple[np.ndarray, np.ndarray | None]:
    """(dx, dscale): `dx = rms · (g − x̂ · mean(g·x̂))` with g = dy·scale and x̂ = x·rms;
    dscale a local partial sum over the split dims it does not range over."""
    axes = axes_of(dims, over)
    count = count_or_local(count, x.shape, axes)
    own = _own_dims(scale_dims, dims, over)
    normalized = x * rms
    scaled = grad_output if scale is None else grad_output * align(scale, own, dims)
    sums = reduce((scaled.astype(np.float64) * normalized).sum(axis=axes, keepdims=True),
                  "sum").astype(x.dtype)
    dx = rms * (scaled - normalized * (sums / count))
    if scale is None:
        return dx, None
    return dx, unbroadcast(grad_output * normalized, own, dims)


# --- softmax_cross_entropy ---------------------------------------------------------


@dataclass(frozen=True)
class CrossEntropyStatistics:
    """The all-reduced row maximum and Σ exp(z − max) per row, shaped like the labels,
    and with an `ignore_index` the global count of labels that are not ignored."""

    row_max: np.ndarray
    sum_exp: np.ndarray
    count: int | None = None


def _class_last(logits: np.ndarray, dims: Sequence[str], over: str,
                labels: np.ndarray) -> np.ndarray:
    logits_rows = np.moveaxis(logits, axes_of(dims, [over])[0], -1)
    if logits_rows.shape[:-1] != labels.shape:
        raise ValueError(f"labels of shape {labels.shape} do not match the logits' rows "
                         f"{logits_rows.shape[:-1]} (the logits without '{over}')")
    return logits_rows


def softmax_cross_entropy_forward(logits: np.ndarray, dims: Sequence[str],
                                  labels: np.ndarray, over: str, class_offset: int = 0,
                                  reduce: Reduce = local_reduce,
                                  ignore_index: int | None = None
                                  ) -> tuple[np.ndarray, CrossEntropyStatistics]:
    """The SUM over the local rows of `log Σ_c exp(z_c) − z_label`, and the statistics;
    rows whose label is `ignore_index` add 0.

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
    index, inside = local_indices(labels, class_offset, z.shape[-1])
    target = np.where(inside, np.take_along_axis(z, index[..., None], axis=-1)[..., 0], 0)
    sums = reduce(np.stack([np.exp(z - row_max[..., None]).sum(axis=-1), target]), "sum")
    sum_exp, target = sums[0], sums[1]
    losses = np.log(sum_exp) + row_max - target
    if ignore_index is not None:
        losses = np.where(labels == ignore_index, 0, losses)
    return np.asarray(losses.sum(), dtype=logits.dtype), CrossEntropyStatistics(row_max,
                                                                                sum_exp)


def softmax_cross_entropy_backward(grad_loss: float | np.ndarray, logits: np.ndarray,
                                   dims: Sequence[str], labels: np.ndarray, over: str,
                                   stats: CrossEntropyStatistics, count: int,
                                   class_offset: int = 0,
                                   ignore_index: int | None = None) -> np.ndarray:
    """`(softmax(z) − onehot(label)) / count · grad_loss` on the local block, count the
    GLOBAL number of rows (the loss is their mean) or of labels that are not ignored;
    0 on a row whose label is `ignore_index`. No communication."""
    z = _class_last(logits, dims, over, labels)
    probabilities = np.exp(z - stats.row_max[..., None]) / stats.sum_exp[..., None]
    index, inside = local_indices(labels, class_offset, z.shape[-1])
    at_label = np.take_along_axis(probabilities, index[..., None], axis=-1)
    np.put_along_axis(probabilities, index[..., None], at_label - inside[..., None], axis=-1)
    grad = probabilities * (float(grad_loss) / count)
    if ignore_index is not None:
        grad *= (labels != ignore_index)[..., None]
    return np.ascontiguousarray(np.moveaxis(grad, -1, axes_of(dims, [over])[0]))


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _norm_options(ctx: KernelContext) -> dict[str, Any]:
    """The global count, the reduce callback, and each of scale and bias with its own dims
    (their orders may differ)."""
    options = {"count": ctx.count(0, ctx.props["over"]), "reduce": ctx.reduce}
    if len(ctx.operands) == 3:
        options.update(scale_dims=ctx.dims[1], bias_dims=ctx.dims[2])
    return options


def _epsilon(ctx: KernelContext) -> float:
    """The layer's `epsilon` (`pase.dialect.dnn.epsilon`: absent where it is the default
    1e-5; the runtime does not import the dnn dialect)."""
    return float(ctx.props.get("epsilon", 1e-5))


def _norm(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, NormStatistics]:
    return norm_forward(inputs[0], ctx.dims[0], ctx.props["over"], *inputs[1:],
                        eps=_epsilon(ctx), **_norm_options(ctx))


def _norm_backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
                   saved: Any, needs: list[bool]) -> list[Any]:
    return list(norm_backward(grad_output, inputs[0], ctx.dims[0], ctx.props["over"], saved,
                              *inputs[1:2], **_norm_options(ctx)))


def _rms_options(ctx: KernelContext) -> dict[str, Any]:
    """rmsnorm's global count, reduce callback and the scale's own dims."""
    options = {"count": ctx.count(0, ctx.props["over"]), "reduce": ctx.reduce}
    if len(ctx.operands) == 2:
        options["scale_dims"] = ctx.dims[1]
    return options


def _cross_entropy_args(ctx: KernelContext) -> tuple[str, int, int]:
    """The class dim, the offset of the device's class block and the GLOBAL row count."""
    (over,) = ctx.props["over"]
    return (over, ctx.offset(0, ctx.dims[0].index(over)),
            ctx.count(0, [over], inside=False))


def counted_labels(labels: Sequence[np.ndarray], ignore_index: int, reduce: Reduce,
                   dtype: Any) -> int:
    """The number of `labels` (one array, or one per micro-batch of the step) that are
    not `ignore_index`, summed by `reduce` over the devices that split the rows (one
    word), and at least 1: a batch whose labels are all ignored has loss 0 and gradient 0
    where PyTorch's mean is 0/0, NaN.

        >>> counted_labels([np.array([3, -100]), np.array([-100, -100])], -100,
        ...                lambda array, op: array, np.float32)
        1
    """
    kept = np.array([sum(np.count_nonzero(block != ignore_index) for block in labels)],
                    dtype=dtype)
    return max(int(reduce(kept, "sum")[0]), 1)


def counts_labels(props: Mapping[str, Any], partial: Sequence[int]) -> bool:
    """Whether a layer's forward all-reduces the count of its labels: a cross-entropy with
    an `ignore_index` whose rows are split (`partial`: the result's partial axes). Such
    a layer keeps its statistics rather than recompute its forward (the count would
    move again)."""
    return props.get("ignore_index") is not None and bool(partial)


def _cross_entropy(ctx: KernelContext, inputs: list[Any]
                   ) -> tuple[np.ndarray, CrossEntropyStatistics]:
    # A micro-batch of a pipeline reads, after its own labels, those of every micro-batch
    # of the step: the mean divides by the whole batch's count of labels kept.
    logits, labels, *step_labels = inputs
    over, class_offset, rows = _cross_entropy_args(ctx)
    ignore = ctx.props.get("ignore_index")
    loss, stats = softmax_cross_entropy_forward(logits, ctx.dims[0], labels, over,
                                                class_offset, ctx.reduce, ignore)
    if ignore is not None:
        rows = counted_labels(step_labels or [labels], ignore, ctx.reduce_partial,
                              logits.dtype)
        stats = replace(stats, count=rows)
    # The mean over the GLOBAL rows (the caller all-reduces the partial sums).
    return np.asarray(loss / rows, dtype=logits.dtype), stats


def _cross_entropy_backward(ctx: KernelContext, inputs: list[Any], output: Any,
                            grad_output: Any, saved: Any, needs: list[bool]) -> list[Any]:
    logits, labels = inputs
    over, class_offset, rows = _cross_entropy_args(ctx)
    rows = saved.count if saved.count is not None else rows
    return [softmax_cross_entropy_backward(grad_output, logits, ctx.dims[0], labels, over,
                                           saved, rows, class_offset,
                                           ctx.props.get("ignore_index")), None]


KERNELS: Kernels = {
    "dnn.softmax": (
        lambda ctx, inputs: (softmax_forward(inputs[0], ctx.dims[0], ctx.props["over"],
                                             ctx.reduce), None),
        lambda ctx, inputs, output, grad_output, saved, needs: [softmax_backward(
            grad_output, output, ctx.dims[0], ctx.props["over"], ctx.reduce)]),
    "dnn.layernorm": (_norm, _norm_backward),
    "dnn.batchnorm": (_norm, _norm_backward),
    "dnn.softmax_cross_entropy": (_cross_entropy, _cross_entropy_backward),
    "dnn.rmsnorm": (
        lambda ctx, inputs: rms_norm_forward(inputs[0], ctx.dims[0], ctx.props["over"],
                                             *inputs[1:], eps=_epsilon(ctx),
                                             **_rms_options(ctx)),
        lambda ctx, inputs, output, grad_output, saved, needs: list(rms_norm_backward(
            grad_output, inputs[0], ctx.dims[0], ctx.props["over"], saved, *inputs[1:],
            **_rms_options(ctx)))[:len(inputs)]),
}
