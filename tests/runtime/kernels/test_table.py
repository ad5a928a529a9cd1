"""The kernel table: one (forward, backward) per layer op, merged from the modules."""

from __future__ import annotations

import numpy as np

from pase.dialect.dnn.layers import LAYER_OPS
from pase.runtime.kernels import (
    KERNELS,
    KernelContext,
    Tensor,
    conv,
    einsum,
    elementwise,
    embedding,
    lstm,
    normalization,
    optimizer,
    reduce,
    shape,
)

MODULES = (conv, einsum, elementwise, embedding, lstm, normalization, optimizer, reduce, shape)


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


def test_a_kernel_runs_from_its_context():
    x, w = np.arange(6.0).reshape(2, 3), np.ones((3, 4))
    ctx = KernelContext({}, (Tensor(("b", "d"), (2, 3)), Tensor(("d", "h"), (3, 4))),
                        Tensor(("b", "h"), (2, 4)))
    forward, backward = KERNELS["dnn.einsum"]
    y, saved = forward(ctx, [x, w])
    np.testing.assert_array_equal(y, x @ w)
    assert saved is None
    assert backward is not None
    dx, dw = backward(ctx, [x, w], y, np.ones_like(y), saved, [True, False])
    np.testing.assert_array_equal(dx, np.full((2, 3), 4.0))
    assert dw is None


def test_sgd_updates_in_the_parameter_type():
    ctx = KernelContext({"lr": 0.5}, (Tensor(("d",), (2,)),) * 2, Tensor(("d",), (2,)))
    forward, _ = KERNELS["dnn.sgd"]
    updated, _ = forward(ctx, [np.ones(2, dtype=np.float32), np.ones(2, dtype=np.float32)])
    assert updated.dtype == np.float32
    np.testing.assert_array_equal(updated, [0.5, 0.5])
