"""The kernel table: one (forward, backward) per layer op, merged from the modules; every
kernel keeps float32."""

from __future__ import annotations

import numpy as np
import pytest

from pase.dialect.dnn.layers import LAYER_OPS
from pase.runtime.kernels import KERNELS, MODULES, KernelContext, Tensor, elementwise


def test_every_layer_op_has_a_forward_and_a_backward_kernel():
    for op in LAYER_OPS:
        forward, backward = KERNELS[op.name]
        assert callable(forward)
        assert callable(backward), op.name


def test_the_modules_tables_merge_without_overlap():
    names = [name for module in MODULES for name in module.KERNELS]
    assert len(names) == len(set(names))
    assert set(names) == set(KERNELS)
    assert KERNELS["dnn.sgd"][1] is None  # the update is never differentiated


SIZES = {"b": 2, "c": 3, "h": 4, "w": 4, "o": 2, "r": 3, "s": 3, "k": 5, "v": 6, "e": 4,
         "l": 2, "z": 8, "g": 16, "t": 3, "c1": 2, "c2": 3, "c3": 5, "h1": 2, "h2": 2, "u": 12}
POOL = {"stride": 2, "padding": [0, 0], "window": [2, 2]}
# (op, props, operand dims, result dims, {integer operand: the dim bounding its values})
CASES = [
    ("dnn.einsum", {}, [("b", "h"), ("h", "w")], ("b", "w"), {}),
    ("dnn.conv2d", {"stride": 1, "padding": [1, 1]}, [("b", "c", "h", "w"), ("o", "c", "r", "s")],
     ("b", "o", "h", "w"), {}),
    ("dnn.conv2d", {"stride": 1, "padding": [1, 1], "groups": 2},
     [("b", "z", "h", "w"), ("o", "e", "r", "s")], ("b", "o", "h", "w"), {}),
    ("dnn.pool2d", {**POOL, "kind": "max"}, [("b", "c", "h", "w")], ("b", "c", "h1", "h2"), {}),
    ("dnn.pool2d", {**POOL, "kind": "avg"}, [("b", "c", "h", "w")], ("b", "c", "h1", "h2"), {}),
    *[(f"dnn.{kind}", {}, [("b", "h")], ("b", "h"), {}) for kind in elementwise.UNARY],
    *[(f"dnn.{kind}", {}, [("b", "h"), ("h",)], ("b", "h"), {}) for kind in elementwise.BINARY],
    ("dnn.clip", {"min": -0.5, "max": 0.5}, [("b", "h")], ("b", "h"), {}),
    ("dnn.pow", {"exponent": 1.5}, [("b", "h")], ("b", "h"), {}),
    ("dnn.mask", {"kind": "causal", "over": ["h", "w"], "fill": -1e9}, [("b", "h", "w")],
     ("b", "h", "w"), {}),
    ("dnn.mask", {"kind": "padding", "over": ["b", "w"], "fill": -1e9},
     [("b", "h", "w"), ("b", "w")], ("b", "h", "w"), {1: "h"}),  # keep: ints, 0 = padding
    ("dnn.softmax", {"over": ["h"]}, [("b", "h")], ("b", "h"), {}),
    ("dnn.layernorm", {"over": ["h"]}, [("b", "h"), ("h",), ("h",)], ("b", "h"), {}),
    ("dnn.batchnorm", {"over": ["b"]}, [("b", "h"), ("h",), ("h",)], ("b", "h"), {}),
    ("dnn.rmsnorm", {"over": ["h"]}, [("b", "h"), ("h",)], ("b", "h"), {}),
    ("dnn.softmax_cross_entropy", {"over": ["k"]}, [("b", "k"), ("b",)], (), {1: "k"}),
    ("dnn.reduce", {"kind": "mean", "over": ["h"]}, [("b", "h")], ("b",), {}),
    ("dnn.embedding", {}, [("b",), ("v", "e")], ("b", "e"), {0: "v"}),
    ("dnn.lstm", {}, [("b", "t", "e"), ("l", "z", "g")], ("b", "t", "e"), {}),
    ("dnn.lstm", {}, [("b", "t", "e"), ("l", "z", "g"), ("l", "g")], ("b", "t", "e"), {}),
    ("dnn.gru", {}, [("b", "t", "e"), ("l", "z", "u"), ("l", "u"), ("l", "u")], ("b", "t", "e"),
     {}),
    ("dnn.concat", {}, [("b", "c1"), ("b", "c2")], ("b", "c3"), {}),
    ("dnn.reshape", {}, [("b", "h")], ("b", "h1", "h2"), {}),
    ("dnn.slice", {"dim": "k", "start": 2}, [("b", "k")], ("b", "t"), {}),
    ("dnn.pad", {"kind": "reflect", "dim": "h", "before": 1, "after": 0}, [("b", "h")],
     ("b", "k"), {}),
    ("dnn.broadcast", {}, [("h",)], ("b", "o", "h"), {}),
    ("dnn.sgd", {"lr": 0.5}, [("h",), ("h",)], ("h",), {}),
    ("dnn.update", {"optimizer": "momentum", "lr": 0.5, "beta1": 0.9}, [("h",)] * 3, ("h",),
     {}),
    ("dnn.update", {"optimizer": "adam", "lr": 0.5, "beta1": 0.9, "beta2": 0.999,
                    "eps": 1e-8}, [("h",)] * 4 + [()], ("h",), {}),
]


POSITIVE = {"dnn.sqrt", "dnn.pow", "dnn.div"}


def test_every_op_has_a_float32_case():
    assert {case[0] for case in CASES} == set(KERNELS)


@pytest.mark.parametrize(("op", "props", "operand_dims", "result_dims", "integer"), CASES)
def test_kernels_keep_float32(op: str, props: dict, operand_dims: list[tuple[str, ...]],
                              result_dims: tuple[str, ...], integer: dict[int, str]) -> None:
    """Forward and backward through the table in f32: f32 results within f32 rounding of
    the same step in f64."""
    rng = np.random.default_rng(7)
    tensors = [Tensor(dims, tuple(SIZES[d] for d in dims)) for dims in [*operand_dims, result_dims]]
    wide = [rng.integers(0, SIZES[integer[i]], t.sizes) if i in integer
            else rng.standard_normal(t.sizes) for i, t in enumerate(tensors[:-1])]
    if op in POSITIVE:  # their domain; div divides by a value away from 0
        wide[-1] = np.abs(wide[-1]) + 0.5
    if props.get("optimizer") == "adam":  # a second moment and a step count
        wide[3], wide[4] = np.abs(wide[3]), np.array(2.0)
    ctx = KernelContext(props, tuple(tensors[:-1]), tensors[-1])
    forward, backward = KERNELS[op]

    def step(dtype: type) -> list[np.ndarray]:
        inputs = [x if i in integer else x.astype(dtype) for i, x in enumerate(wide)]
        y, saved = forward(ctx, inputs)
        if backward is None:
            return list(y) if isinstance(y, tuple) else [y]
        needs = [i not in integer for i in range(len(inputs))]
        grads = backward(ctx, inputs, y, np.ones_like(y), saved, needs)
        return [y, *(grad for grad in grads if grad is not None)]

    for narrow, reference in zip(step(np.float32), step(np.float64), strict=True):
        assert narrow.dtype == np.float32
        np.testing.assert_allclose(narrow, reference, rtol=1e-4, atol=1e-5)
