"""softmax, layernorm, batchnorm, softmax_cross_entropy: finite differences, sharded
execution with simulated all-reduces (and the exact callback calls), f32."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from pase.runtime.kernels.normalization import (
    batchnorm_backward,
    batchnorm_forward,
    layernorm_backward,
    layernorm_forward,
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
    kit.assert_gradient(softmax_backward(weights, y, SOFTMAX_DIMS, over), kit.numeric_gradient(
        lambda v: float(np.sum(weights * softmax_forward(v, SOFTMAX_DIMS, over))), x.copy()))


@pytest.mark.parametrize("over", SOFTMAXES)
@pytest.mark.parametrize(("dim", "parts"), [("u", 2), ("u", 4), ("b", 4), ("t", 2)])
def test_softmax_sharded_equals_unsharded(over: list[str], dim: str, parts: int,
                                          rng: np.random.Generator, kit) -> None:
    x = random(SOFTMAX_DIMS, rng) * 5
    grad_output = random(SOFTMAX_DIMS, rng)
    axis = SOFTMAX_DIMS.index(dim)
    x_blocks, g_blocks = kit.split(x, axis, parts), kit.split(grad_output, axis, parts)

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, np.ndarray]:
        callback = {"reduce": reduce} if dim in over else {}
        y = softmax_forward(x_blocks[device], SOFTMAX_DIMS, over, **callback)
        return y, softmax_backward(g_blocks[device], y, SOFTMAX_DIMS, over, **callback)

    results, calls = kit.run_devices(parts, run)
    y = softmax_forward(x, SOFTMAX_DIMS, over)
    kit.assert_exact(kit.assemble([r[0] for r in results], axis), y)
    kit.assert_exact(kit.assemble([r[1] for r in results], axis),
                     softmax_backward(grad_output, y, SOFTMAX_DIMS, over))
    if dim in over:
        local = dict(SIZES, **{dim: SIZES[dim] // parts})
        shape = statistics_shape(SOFTMAX_DIMS, over, local)
        assert calls == [("reduce", "max", shape), ("reduce", "sum", shape),
                         ("reduce", "sum", shape)]


def test_softmax_float32(rng: np.random.Generator) -> None:
    x = random(SOFTMAX_DIMS, rng, np.float32)
    y = softmax_forward(x, SOFTMAX_DIMS, ["u"])
    assert y.dtype == softmax_backward(y, y, SOFTMAX_DIMS, ["u"]).dtype == np.float32
    np.testing.assert_allclose(y, softmax_forward(x.astype(np.float64), SOFTMAX_DIMS, ["u"]),
                               rtol=1e-5)


# --- layernorm and batchnorm -------------------------------------------------------

# (kind, x dims, normalized dims, parameter dims)
NORMS = [("layernorm", ["b", "s", "d"], ["d"], ["d"]),
         ("layernorm", ["b", "s", "d"], ["s", "d"], ["d", "s"]),
         ("batchnorm", ["b", "c", "h", "w"], ["b", "h", "w"], ["c"])]
FORWARD = {"layernorm": layernorm_forward, "batchnorm": batchnorm_forward}
BACKWARD = {"layernorm": layernorm_backward, "batchnorm": batchnorm_backward}


def both_dims(param_dims: list[str]) -> dict[str, list[str]]:
    """Scale and bias over the same dims (tests of other orders: test_norm_param_orders)."""
    return {"scale_dims": param_dims, "bias_dims": param_dims}


def norm_inputs(dims: list[str], param_dims: list[str], rng: np.random.Generator,
                dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = (random(dims, rng) * 2 + 0.5).astype(dtype)
    return x, (random(param_dims, rng) + 1).astype(dtype), random(param_dims, rng, dtype)


@pytest.mark.parametrize(("kind", "dims", "over", "param_dims"), NORMS)
@pytest.mark.parametrize("affine", [True, False])
def test_norm_backward_matches_finite_differences(kind: str, dims: list[str], over: list[str],
                                                  param_dims: list[str], affine: bool,
                                                  rng: np.random.Generator, kit) -> None:
    x, scale, bias = norm_inputs(dims, param_dims, rng)
    weights = random(dims, rng)
    forward, backward = FORWARD[kind], BACKWARD[kind]

    def loss(x: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None) -> float:
        y, _ = forward(x, dims, over, scale, bias, **both_dims(param_dims))
        return float(np.sum(weights * y))

    if not affine:
        _, stats = forward(x, dims, over)
        dx, dscale, dbias = backward(weights, x, dims, over, stats)
        assert dscale is None
        assert dbias is None
        kit.assert_gradient(dx, kit.numeric_gradient(lambda v: loss(v, None, None), x.copy()))
        return
    y, stats = forward(x, dims, over, scale, bias, **both_dims(param_dims))
    dx, dscale, dbias = backward(weights, x, dims, over, stats, scale, **both_dims(param_dims))
    assert dscale is not None
    assert dbias is not None
    kit.assert_gradient(dx, kit.numeric_gradient(lambda v: loss(v, scale, bias), x.copy()))
    kit.assert_gradient(dscale, kit.numeric_gradient(lambda v: loss(x, v, bias), scale.copy()))
    kit.assert_gradient(dbias, kit.numeric_gradient(lambda v: loss(x, scale, v), bias.copy()))


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
    forward, backward = FORWARD[kind], BACKWARD[kind]
    count = prod(SIZES[d] for d in over)
    axis = dims.index(dim)
    param_axis = param_dims.index(dim) if dim in param_dims else None

    def blocks(array: np.ndarray, axis: int | None) -> list[np.ndarray]:
        return [array] * parts if axis is None else kit.split(array, axis, parts)

    x_blocks, g_blocks = blocks(x, axis), blocks(grad_output, axis)
    scale_blocks, bias_blocks = blocks(scale, param_axis), blocks(bias, param_axis)

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, ...]:
        options = {**both_dims(param_dims), "count": count}
        if dim in over:
            options["reduce"] = reduce
        y, stats = forward(x_blocks[device], dims, over, scale_blocks[device],
                           bias_blocks[device], **options)
        return y, *backward(g_blocks[device], x_blocks[device], dims, over, stats,
                            scale_blocks[device], **options)

    results, calls = kit.run_devices(parts, run)
    y, stats = forward(x, dims, over, scale, bias, **both_dims(param_dims))
    expected = backward(grad_output, x, dims, over, stats, scale, **both_dims(param_dims))
    kit.assert_exact(kit.assemble([r[0] for r in results], axis), y)
    kit.assert_exact(kit.assemble([r[1] for r in results], axis), expected[0])
    kit.assert_exact(kit.assemble([r[2] for r in results], param_axis), expected[1])
    kit.assert_exact(kit.assemble([r[3] for r in results], param_axis), expected[2])
    if dim in over:
        local = dict(SIZES, **{dim: SIZES[dim] // parts})
        shape = (2, *statistics_shape(dims, over, local))
        assert calls == [("reduce", "sum", shape), ("reduce", "sum", shape)]


@pytest.mark.parametrize(("kind", "dims", "over", "param_dims"), NORMS)
def test_norm_float32(kind: str, dims: list[str], over: list[str], param_dims: list[str],
                      rng: np.random.Generator) -> None:
    x, scale, bias = norm_inputs(dims, param_dims, rng, np.float32)
    y, stats = FORWARD[kind](x, dims, over, scale, bias, **both_dims(param_dims))
    grads = BACKWARD[kind](np.ones_like(y), x, dims, over, stats, scale, **both_dims(param_dims))
    assert y.dtype == np.float32
    assert all(g is not None and g.dtype == np.float32 for g in grads)
    reference, _ = FORWARD[kind](x.astype(np.float64), dims, over, scale.astype(np.float64),
                                 bias.astype(np.float64), **both_dims(param_dims))
    np.testing.assert_allclose(y, reference, rtol=1e-4, atol=1e-4)


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

    def loss(v: np.ndarray) -> float:
        return grad_loss * float(softmax_cross_entropy_forward(v, LOGIT_DIMS, labels, "k")[0])

    kit.assert_gradient(grad, kit.numeric_gradient(lambda v: loss(v) / ROWS, logits.copy()))


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


def test_cross_entropy_float32(rng: np.random.Generator) -> None:
    logits, labels = cross_entropy_inputs(rng, np.float32)
    total, stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    grad = softmax_cross_entropy_backward(np.float64(1.0), logits, LOGIT_DIMS, labels, "k",
                                          stats, ROWS)
    assert total.dtype == grad.dtype == np.float32
    reference, _ = softmax_cross_entropy_forward(logits.astype(np.float64), LOGIT_DIMS,
                                                 labels, "k")
    assert float(total) == pytest.approx(float(reference), rel=1e-5)


# --- two split dims: groups of devices -----------------------------------------------


def test_layernorm_on_a_device_grid(rng: np.random.Generator, kit) -> None:
    """b = 2, d = 2: device (i, j) all-reduces with the devices of row block i only."""
    dims, over = ["b", "s", "d"], ["d"]
    x, scale, bias = norm_inputs(dims, ["d"], rng)
    grad_output = random(dims, rng)
    x_blocks = [kit.split(rows, 2, 2) for rows in kit.split(x, 0, 2)]
    g_blocks = [kit.split(rows, 2, 2) for rows in kit.split(grad_output, 0, 2)]
    scale_blocks, bias_blocks = kit.split(scale, 0, 2), kit.split(bias, 0, 2)

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, ...]:
        i, j = divmod(device, 2)
        y, stats = layernorm_forward(x_blocks[i][j], dims, over, scale_blocks[j],
                                     bias_blocks[j], count=SIZES["d"], reduce=reduce)
        return y, *layernorm_backward(g_blocks[i][j], x_blocks[i][j], dims, over, stats,
                                      scale_blocks[j], count=SIZES["d"], reduce=reduce)

    results, calls = kit.run_devices(4, run, group=lambda device: device // 2)
    y, stats = layernorm_forward(x, dims, over, scale, bias)
    expected = layernorm_backward(grad_output, x, dims, over, stats, scale)
    for k in range(2):
        kit.assert_exact(np.concatenate([np.concatenate([results[2 * i + j][k]
                                                         for j in range(2)], axis=2)
                                         for i in range(2)], axis=0), (y, expected[0])[k])
    for k in (2, 3):  # parameter gradients: concatenated over d, summed over b
        kit.assert_exact(kit.assemble([np.concatenate([results[2 * i + j][k]
                                                       for j in range(2)])
                                       for i in range(2)], None), expected[k - 1])
    assert calls == [("reduce", "sum", (2, 2, 2, 1))] * 2


def test_cross_entropy_on_a_device_grid(rng: np.random.Generator, kit) -> None:
    """b = 2, k = 2: the loss sums of the row blocks add up; the class group agrees."""
    logits, labels = cross_entropy_inputs(rng)
    logit_blocks = [kit.split(rows, 2, 2) for rows in kit.split(logits, 0, 2)]
    label_blocks = kit.split(labels, 0, 2)
    classes = SIZES["k"] // 2

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, np.ndarray]:
        i, j = divmod(device, 2)
        total, stats = softmax_cross_entropy_forward(logit_blocks[i][j], LOGIT_DIMS,
                                                     label_blocks[i], "k", j * classes,
                                                     reduce)
        return total, softmax_cross_entropy_backward(2.0, logit_blocks[i][j], LOGIT_DIMS,
                                                     label_blocks[i], "k", stats, ROWS,
                                                     j * classes)

    results, _ = kit.run_devices(4, run, group=lambda device: device // 2)
    total, stats = softmax_cross_entropy_forward(logits, LOGIT_DIMS, labels, "k")
    kit.assert_exact(results[0][0] + results[2][0], total)
    kit.assert_exact(results[1][0] + results[3][0], total)
    grad = np.concatenate([np.concatenate([results[2 * i + j][1] for j in range(2)], axis=2)
                           for i in range(2)], axis=0)
    kit.assert_exact(grad, softmax_cross_entropy_backward(2.0, logits, LOGIT_DIMS, labels,
                                                          "k", stats, ROWS))
