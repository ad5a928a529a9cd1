"""gru: PyTorch's nn.GRU equations gate by gate, finite differences, unit and batch
splits with simulated all-gathers and all-reduces (and their exact calls); f32 in
test_table."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.gru import gru_backward, gru_forward

LAYERS, STEPS = 2, 3


def make(rng: np.random.Generator, batch: int, hidden: int) -> tuple[np.ndarray, ...]:
    x = rng.standard_normal((batch, STEPS, hidden))
    return (x, rng.standard_normal((LAYERS, 2 * hidden, 3 * hidden)) * 0.5,
            rng.standard_normal((LAYERS, 3 * hidden)) * 0.5,
            rng.standard_normal((LAYERS, 3 * hidden)) * 0.5)


def reference(x: np.ndarray, w: np.ndarray, b_in: np.ndarray, b_hid: np.ndarray
              ) -> np.ndarray:
    """torch.nn.GRU's documented equations, gate k of unit u in column 3·u + k (r, z, n):
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h."""
    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    e = x.shape[2]
    sequence = x
    for layer in range(w.shape[0]):
        h = np.zeros((x.shape[0], e))
        outputs = []
        for step in range(x.shape[1]):
            xt = sequence[:, step]
            i_r, i_z, i_n = (xt @ w[layer][:e, k::3] + b_in[layer][k::3] for k in range(3))
            h_r, h_z, h_n = (h @ w[layer][e:, k::3] + b_hid[layer][k::3] for k in range(3))
            r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
            n = np.tanh(i_n + r * h_n)
            h = (1 - z) * n + z * h
            outputs.append(h)
        sequence = np.stack(outputs, axis=1)
    return sequence


def test_forward_matches_reference(rng: np.random.Generator, kit) -> None:
    x, w, b_in, b_hid = make(rng, 3, 4)
    kit.assert_exact(gru_forward(x, w, bias_input=b_in, bias_hidden=b_hid)[0],
                     reference(x, w, b_in, b_hid))
    zeros = np.zeros_like(b_in)
    kit.assert_exact(gru_forward(x, w)[0], reference(x, w, zeros, zeros))


def test_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    x, w, b_in, b_hid = make(rng, 2, 2)
    weights = rng.standard_normal(x.shape)
    _, cache = gru_forward(x, w, bias_input=b_in, bias_hidden=b_hid)
    kit.assert_gradients(
        lambda x, w, b_in, b_hid: gru_forward(x, w, bias_input=b_in, bias_hidden=b_hid)[0],
        [x, w, b_in, b_hid], weights, gru_backward(weights, w, cache))


@pytest.mark.parametrize(("batch_parts", "unit_parts"), [(1, 2), (1, 4), (2, 2)])
def test_sharded_equals_unsharded(batch_parts: int, unit_parts: int,
                                  rng: np.random.Generator, kit) -> None:
    """Device (i, j) holds batch block i and units block j: w[:, :, 3·u0 : 3·u1]. Per layer
    and step it gathers [rows, U] into [rows, e] and backward all-reduces [rows, 2e]."""
    batch, hidden = 4, 4
    x, w, b_in, b_hid = make(rng, batch, hidden)
    grad_output = rng.standard_normal(x.shape)
    units = hidden // unit_parts
    rows = batch // batch_parts
    x_blocks = kit.split(x, 0, batch_parts)
    g_blocks = kit.split(grad_output, 0, batch_parts)
    w_blocks = kit.split(w, 2, unit_parts)
    bias_blocks = [kit.split(b, 1, unit_parts) for b in (b_in, b_hid)]

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, ...]:
        batch_block, unit_block = divmod(device, unit_parts)
        y, cache = gru_forward(x_blocks[batch_block], w_blocks[unit_block], all_gather,
                               *(blocks[unit_block] for blocks in bias_blocks),
                               unit_offset=unit_block * units)
        return (y, *gru_backward(g_blocks[batch_block], w_blocks[unit_block], cache,
                                 unit_block * units, reduce))

    results, calls = kit.run_devices(batch_parts * unit_parts, run,
                                     group=lambda device: device // unit_parts)
    y, cache = gru_forward(x, w, bias_input=b_in, bias_hidden=b_hid)
    whole = gru_backward(grad_output, w, cache)
    for batch_block in range(batch_parts):
        rows_of = slice(batch_block * rows, (batch_block + 1) * rows)
        for local in results[batch_block * unit_parts:(batch_block + 1) * unit_parts]:
            kit.assert_exact(local[0], y[rows_of])  # full y and dx on every device
            kit.assert_exact(local[1], whole[0][rows_of])
    for index, axis in ((2, 2), (3, 1), (4, 1)):  # dw, db_in, db_hid: unit blocks
        grads = [kit.assemble([results[i * unit_parts + j][index] for j in range(unit_parts)],
                              axis) for i in range(batch_parts)]
        kit.assert_exact(kit.assemble(grads, None), whole[index - 1])
    assert calls == ([("all_gather", "", (rows, units))] * LAYERS * STEPS
                     + [("reduce", "sum", (rows, 2 * hidden))] * LAYERS * STEPS)
