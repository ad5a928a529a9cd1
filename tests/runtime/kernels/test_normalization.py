"""softmax, layernorm, batchnorm, softmax_cross_entropy: finite differences, sharded
execution with simulated all-reduces (and the exact callback calls); f32 in test_table."""

from __future__ import annotations

from functools import partial
from itertools import permutations
from math import prod

import numpy as np
import pytest

from pase.runtime.kernels import KERNELS, KernelContext, Reduce, Tensor, local_reduce
from pase.runtime.kernels.normalization import (
    norm_backward,
    norm_forward,
    rms_norm_backward,
    rms_norm_forward,
    softmax_backward,
    softmax_cross_entropy_backward,
    softmax_cross_entropy_forward,
    softmax_forward,
)

SIZES = {"b": 4, "t": 2, "u": 4, "s": 2, "d": 8, "c": 4, "h": 2, "w": 4, "k": 8}


def random(dims: list[str], rng: np.random.Generator, dtype: type = np.float64) -> np.ndarray:
    return rng.standard_normal([SIZES[d] for d in dims]).astype(dtype)


def statistics_shape(dims: list[str], over: list[str], sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(1 if d in over else sizes[d] for d in dims)


# --- softmax -----------------------------------------------------------------------

SOFTMAX_DIMS = ["b", "t", "u"]
SOFTMAXES = [["u"], ["t", "u"], ["b", "u"]]


@pytest.mark.parametrize("over", SOFTMAXES)
def test_softmax_backward_matches_finite_differences(over: list[str],
                                                     rng: np.random.Generator, kit) -> None:
    x = random(SOFTMAX_DIMS, rng)
    weights = random(SOFTMAX_DIMS, rng)
    y = softmax_forward(x, SOFTMAX_DIMS, over)
    np.testing.assert_allclose(y.sum(axis=tuple(SOFTMAX_DIMS.index(d) for d in over)), 1.0)
    kit.assert_gradients(lambda v: softmax_forward(v, SOFTMAX_DIMS, over), [x], weights,
                         [softmax_backward(weights, y, SOFTMAX_DIMS, over)])


@pytest.mark.parametrize("over", SOFTMAXES)
@pytest.mark.parametrize(("dim", "parts"), [("u", 2), ("u", 4), ("b", 4), ("t", 2)])
def test_softmax_sharded_equals_unsharded(over: list[str], dim: str, parts: int,
                                          rng: np.random.Generator, kit) -> None:
    x = random(SOFTMAX_DIMS, rng) * 5
    grad_output = random(SOFTMAX_DIMS, rng)

    def step(grad_output: np.ndarray, x: np.ndarray,
             reduce: Reduce = local_reduce) -> list[np.ndarray]:
        y = softmax_forward(x, SOFTMAX_DIMS, over, reduce)
        return [y, softmax_backward(grad_output, y, SOFTMAX_DIMS, over, reduce)]

    axis = SOFTMAX_DIMS.index(dim)
    calls = kit.assert_sharded(step, [grad_output, x], [axis, axis], parts, dim in over)
    if dim in over:
        local = dict(SIZES, **{dim: SIZES[dim] // parts})
        shape = statistics_shape(SOFTMAX_DIMS, over, local)
        assert calls == [("reduce", "max", shape), ("reduce", "sum", shape),
                         ("reduce", "sum", shape)]


# --- layernorm and batchnorm -------------------------------------------------------

# (kind, x dims, normalized dims, parameter dims)
NORMS = [("layernorm", ["b", "s", "d"], ["d"], ["d"]),
         ("layernorm", ["b", "s", "d"], ["s", "d"], ["d", "s"]),
         ("batchnorm", ["b", "c", "h", "w"], ["b", "h", "w"], ["c"])]
# (kind, x dims, normalized dims, scale dims, bias dims; None: neither). Scale and bias over
# [h, w] (sizes 2, 4) and [c, w] (4, 4) in every order: a scale [h, w] with a bias [w, h]
# once had the bias applied transposed when h = w, and crashed otherwise.
REFERENCE_CASES = [
    *[(kind, dims, over, param_dims, param_dims) for kind, dims, over, param_dims in NORMS],
    *[(kind, dims, over, None, None) for kind, dims, over, _ in NORMS],
    *[(kind, ["b", *pair], over, list(scale), list(bias)) for pair in (("h", "w"), ("c", "w"))
      for kind, over in (("layernorm", list(pair)), ("batchnorm", ["b"]))
      for scale in permutations(pair) for bias in permutations(pair)]]


def reference(dims: list[str], over: list[str], param_dims: list[list[str]], x: np.ndarray,
              *params: np.ndarray) -> np.ndarray:
    """The norm written out: statistics over `over`, then scale and bias transposed into
    x's dim order and broadcast."""
    axes = tuple(dims.index(d) for d in over)
    mean = x.mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
    for param, own, combine in zip(params, param_dims, (np.multiply, np.add), strict=False):
        aligned = np.transpose(param, [own.index(d) for d in dims if d in own])
        y = combine(y, aligned.reshape([x.shape[k] if d in own else 1
                                        for k, d in enumerate(dims)]))
    return y


def both_dims(param_dims: list[str]) -> dict[str, list[str]]:
    """Scale and bias over the same dims (other orders: test_norm_matches_the_reference)."""
    return {"scale_dims": param_dims, "bias_dims": param_dims}


def norm_inputs(dims: list[str], param_dims: list[str],
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return random(dims, rng) * 2 + 0.5, random(param_dims, rng) + 1, random(param_dims, rng)


@pytest.mark.parametrize(("kind", "dims", "over", "scale_dims", "bias_dims"), REFERENCE_CASES)
def test_norm_matches_the_reference(kind: str, dims: list[str], over: list[str],
                                    scale_dims: list[str] | None, bias_dims: list[str] | None,
                                    rng: np.random.Generator, kit) -> None:
    """Through the kernel table: the forward against the norm written out, the backward
    against central differences of it."""
    param_dims = [] if scale_dims is None or bias_dims is None else [scale_dims, bias_dims]
    x = random(dims, rng) * 2 + 0.5
    inputs = [x, *(random(own, rng) + 1 for own in param_dims)]
    weights = random(dims, rng)
    tensors = [Tensor(tuple(own), tuple(SIZES[d] for d in own)) for own in [dims, *param_dims]]
    ctx = KernelContext({"over": over}, tuple(tensors), tensors[0])
    forward, backward = KERNELS[f"dnn.{kind}"]
    assert backward is not None
    y, saved = forward(ctx, inputs)
    np.testing.assert_allclose(y, reference(dims, over, param_dims, *inputs), rtol=1e-10,
                               atol=1e-10)
    grads = backward(ctx, inputs, y, weights, saved, [True] * 3)
    assert len(grads) == 3
    assert all(grad is None for grad in grads[len(inputs):])
    kit.assert_gradients(partial(reference, dims, over, param_dims), inputs, weights,
                         grads[:len(inputs)])


NORM_SPLITS = [(*norm, dim, parts) for norm in NORMS for dim in norm[1]
               for parts in (2, 4) if SIZES[dim] % parts == 0]


@pytest.mark.parametrize(("kind", "dims", "over", "param_dims", "dim", "parts"), NORM_SPLITS)
def test_norm_sharded_equals_unsharded(kind: str, dims: list[str], over: list[str],
                                       param_dims: list[str], dim: str, parts: int,
                                       rng: np.random.Generator, kit) -> None:
    """A split normalized dim all-reduces one 2W buffer forward and one backward and uses
    the global count; parameter gradients over other split dims are partial sums."""
    x, scale, bias = norm_inputs(dims, param_dims, rng)
    grad_output = random(dims, rng)
    count = prod(SIZES[d] for d in over)

    def step(grad_output: np.ndarray, x: np.ndarray, scale: np.ndarray, bias: np.ndarray,
             reduce: Reduce = local_reduce) -> list[np.ndarray | None]:
        options = {**both_dims(param_dims), "count": count, "reduce": reduce}
        y, stats = norm_forward(x, dims, over, scale, bias, **options)
        return [y, *norm_backward(grad_output, x, dims, over, stats, scale, **options)]

    axis, param_axis = kit.axis_of(dims, dim), kit.axis_of(param_dims, dim)
    calls = kit.assert_sharded(step, [grad_output, x, scale, bias],
                               [axis, axis, param_axis, param_axis], parts, dim in over)
    if dim in over:
        local = dict(SIZES, **{dim: SIZES[dim] // parts})
        shape = (2, *statistics_shape(dims, over, local))
        assert calls == [("reduce", "sum", shape), ("reduce", "sum", shape)]


# --- rmsnorm ---------------------------------------------------------------------

# (x dims, normalized dims, scale dims or None)
RMS_NORMS = [(["b", "s", "d"], ["d"], ["d"]), (["b", "h", "w"], ["h", "w"], ["w", "h"]),
             (["b", "s", "d"], ["s", "d"], None)]


@pytest.mark.parametrize(("dims", "over", "scale_dims"), RMS_NORMS)
def test_rms_norm_matches_the_reference_and_finite_differences(
        dims: list[str], over: list[str], scale_dims: list[str] | None,
        rng: np.random.Generator, kit) -> None:
    x = random(dims, rng)
    scales = [] if scale_dims is None else [random(scale_dims, rng) + 1]
    axes = tuple(dims.index(d) for d in over)
    expected = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + 1e-5)
    if scale_dims is not None:
        aligned = np.transpose(scales[0], [scale_dims.index(d) for d in dims if d in over])
        expected = expected * aligned.reshape([x.shape[k] if d in over else 1
                                               for k, d in enumerate(dims)])

    def forward(x: np.ndarray, *scale: np.ndarray) -> np.ndarray:
        return rms_norm_forward(x, dims, over, *scale, scale_dims=scale_dims)[0]

    kit.assert_exact(forward(x, *scales), expected)
    weights = random(dims, rng)
    y, rms = rms_norm_forward(x, dims, over, *scales, scale_dims=scale_dims)
    grads = rms_norm_backward(weights, x, dims, over, rms, *scales, scale_dims=scale_dims)
    kit.assert_gradients(forward, [x, *scales], weights, list(grads)[:1 + len(scales)])


@pytest.mark.parametrize("dim", ["b", "s", "d"])
@pytest.mark.parametrize("parts", [2])
def test_rms_norm_sharded_equals_unsharded(dim: str, parts: int, rng: np.random.Generator,
                                           kit) -> None:
    """A split normalized dim all-reduces one W buffer forward and one backward."""
    dims, over = ["b", "s", "d"], ["d"]
    x, scale, grad_output = random(dims, rng), random(["d"], rng) + 1, random(dims, rng)

    def step(grad_output: np.ndarray, x: np.ndarray, scale: np.ndarray,
             reduce: Reduce = local_reduce) -> list[np.ndarray | None]:
        options = {"count": SIZES["d"], "reduce": reduce}
        y, rms = rms_norm_forward(x, dims, over, scale, **options)
        return [y, *rms_norm_backward(grad_output, x, dims, over, rms, scale, **options)]

    axis = dims.index(dim)
    calls = kit.assert_sharded(step, [grad_output, x, scale],
                               [axis, axis, 0 if dim == "d" else None], parts, dim in over)
    if dim in over:
        shape = statistics_shape(dims, over, dict(SIZES, d=SIZES["d"] // parts))
        assert calls == [("reduce", "sum", shape), ("reduce", "sum", shape)]


# --- softmax_cross_entropy ---------------------------------------------------------

LOGIT_DIMS = ["b", "s", "k"]
ROWS = SIZES["b"] * SIZES["s"]


def cross_entropy_inputs(rng: np.random.Generator,
                         dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
    logits = random(LOGIT_DIMS, rng, dtype) * 3
    return logits, rng.integers(0, SIZES["k"], size=(SIZES["b"], SIZES["s"]), dtype=np.int32)


def test_cross_entropy_is_the_mean_loss(rng: np.random.Generator) -> None:
    logits, labels = cross_entropy_inputs(rng)
    total, _ = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    log_probabilities = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = -np.take_along_axis(log_probabilities, labels[..., None], axis=-1).mean()
    assert float(total) / ROWS == pytest.approx(expected, rel=1e-14)


def test_cross_entropy_backward_matches_finite_differences(rng: np.random.Generator,
                                                           kit) -> None:
    logits, labels = cross_entropy_inputs(rng)
    grad_loss = 1.7
    _, stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    grad = softmax_cross_entropy_backward(grad_loss, logits, LOGIT_DIMS, labels, "k", stats,
                                          ROWS)
    kit.assert_gradients(
        lambda v: softmax_cross_entropy_forward(v, LOGIT_DIMS, labels, "k")[0] / ROWS,
        [logits], np.asarray(grad_loss), [grad])


def test_cross_entropy_class_dim_anywhere(rng: np.random.Generator, kit) -> None:
    logits, labels = cross_entropy_inputs(rng)
    moved = np.ascontiguousarray(np.moveaxis(logits, 2, 0))
    dims = ["k", "b", "s"]
    total, stats = softmax_cross_entropy_forward(moved, dims, labels, "k")
    expected, expected_stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    kit.assert_exact(total, expected)
    grad = softmax_cross_entropy_backward(1.0, moved, dims, labels, "k", stats, ROWS)
    kit.assert_exact(np.moveaxis(grad, 0, 2), softmax_cross_entropy_backward(
        1.0, logits, LOGIT_DIMS, labels, "k", expected_stats, ROWS))


@pytest.mark.parametrize(("dim", "parts"), [("k", 2), ("k", 4), ("b", 4), ("s", 2)])
def test_cross_entropy_sharded_equals_unsharded(dim: str, parts: int,
                                                rng: np.random.Generator, kit) -> None:
    """Classes split: row max (W words) then one [Σ exp, target logit] buffer (2W); each
    device of the class group holds the same loss sum. Rows split: the sums add up."""
    logits, labels = cross_entropy_inputs(rng)
    axis = LOGIT_DIMS.index(dim)
    logit_blocks = kit.split(logits, axis, parts)
    label_blocks = [labels] * parts if dim == "k" else kit.split(labels, axis, parts)
    classes = SIZES["k"] // parts if dim == "k" else SIZES["k"]

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, np.ndarray]:
        options = {"class_offset": device * classes} if dim == "k" else {}
        total, stats = softmax_cross_entropy_forward(
            logit_blocks[device], LOGIT_DIMS, label_blocks[device], "k",
            **options, **({"reduce": reduce} if dim == "k" else {}))
        grad = softmax_cross_entropy_backward(0.5, logit_blocks[device], LOGIT_DIMS,
                                              label_blocks[device], "k", stats, ROWS,
                                              **options)
        return total, grad

    results, calls = kit.run_devices(parts, run)
    total, stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    totals = [r[0] for r in results]
    if dim == "k":
        for local_total in totals:
            kit.assert_exact(local_total, total)
        assert calls == [("reduce", "max", labels.shape),
                         ("reduce", "sum", (2, *labels.shape))]
    else:
        kit.assert_exact(kit.assemble(totals, None), total)
    kit.assert_exact(kit.assemble([r[1] for r in results], axis),
                     softmax_cross_entropy_backward(0.5, logits, LOGIT_DIMS, labels, "k",
                                                    stats, ROWS))


def test_cross_entropy_float32_with_a_float64_incoming_gradient(rng: np.random.Generator
                                                                ) -> None:
    logits, labels = cross_entropy_inputs(rng, np.float32)
    _, stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    assert softmax_cross_entropy_backward(np.float64(1.0), logits, LOGIT_DIMS, labels, "k",
                                          stats, ROWS).dtype == np.float32


@pytest.mark.parametrize(("ignore", "share"), [(-100, 0.25), (3, 0.0), (-100, 1.0)])
def test_cross_entropy_ignores_labels(ignore: int, share: float, rng: np.random.Generator,
                                      kit) -> None:
    """Labels equal to the ignore_index (PyTorch's -100, or a class: 3) add no loss and no
    gradient, and the mean is over the others (ONNX's SoftmaxCrossEntropyLoss); all
    ignored: loss 0 and gradient 0, where PyTorch's 0/0 is NaN."""
    logits, labels = cross_entropy_inputs(rng)
    labels[rng.random(labels.shape) < share] = ignore
    kept = labels != ignore
    ctx = KernelContext({"over": ("k",), "ignore_index": ignore},
                        (Tensor(tuple(LOGIT_DIMS), logits.shape), Tensor(("b", "s"), labels.shape)),
                        Tensor((), ()))
    forward, backward = KERNELS["dnn.softmax_cross_entropy"]
    loss, saved = forward(ctx, [logits, labels])
    (grad, _) = backward(ctx, [logits, labels], loss, 1.0, saved, [True, False])
    log_probabilities = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    picked = -np.take_along_axis(log_probabilities, np.where(kept, labels, 0)[..., None], -1)
    expected = picked[..., 0][kept].mean() if kept.any() else 0.0
    assert float(loss) == pytest.approx(expected, rel=1e-14)
    assert not grad[~kept].any()
    if kept.any():
        kit.assert_gradients(lambda v: forward(ctx, [v, labels])[0], [logits],
                             np.asarray(1.0), [grad])
