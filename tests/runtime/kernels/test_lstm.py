"""lstm: a per-gate reference, finite differences, unit and batch splits with simulated
all-gathers and all-reduces (and their exact calls); f32 in test_table."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.lstm import lstm_backward, lstm_forward

LAYERS, STEPS = 2, 3


def make(rng: np.random.Generator, batch: int, hidden: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = rng.standard_normal((batch, STEPS, hidden))
    return (x, rng.standard_normal((LAYERS, 2 * hidden, 4 * hidden)) * 0.5,
            rng.standard_normal((LAYERS, 4 * hidden)) * 0.5)


def reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The textbook LSTM, one weight matrix per gate: gate k of unit u is column 4·u + k."""
    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    sequence = x
    for layer in range(w.shape[0]):
        h = np.zeros((x.shape[0], x.shape[2]))
        c = np.zeros_like(h)
        outputs = []
        for step in range(x.shape[1]):
            z = np.concatenate([sequence[:, step], h], axis=1)
            i, f, g, o = (z @ w[layer][:, gate::4] + bias[layer][gate::4]
                          for gate in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            outputs.append(h)
        sequence = np.stack(outputs, axis=1)
    return sequence


def test_forward_matches_reference(rng: np.random.Generator, kit) -> None:
    x, w, bias = make(rng, 3, 4)
    kit.assert_exact(lstm_forward(x, w, bias=bias)[0], reference(x, w, bias))
    kit.assert_exact(lstm_forward(x, w)[0], reference(x, w, np.zeros_like(bias)))


def test_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    x, w, bias = make(rng, 2, 2)
    weights = rng.standard_normal(x.shape)
    _, cache = lstm_forward(x, w, bias=bias)
    kit.assert_gradients(lambda x, w, bias: lstm_forward(x, w, bias=bias)[0], [x, w, bias],
                         weights, lstm_backward(weights, w, cache))


@pytest.mark.parametrize(("batch_parts", "unit_parts"), [(1, 2), (1, 4), (2, 1), (4, 1),
                                                         (2, 2)])
def test_sharded_equals_unsharded(batch_parts: int, unit_parts: int,
                                  rng: np.random.Generator, kit) -> None:
    """Device (i, j) holds batch block i and units block j: w[:, :, 4·u0 : 4·u1]. Per layer
    and step it gathers [rows, U] into [rows, e] and backward all-reduces [rows, 2e]."""
    batch, hidden = 4, 4
    x, w, bias = make(rng, batch, hidden)
    grad_output = rng.standard_normal(x.shape)
    units = hidden // unit_parts
    rows = batch // batch_parts
    x_blocks = kit.split(x, 0, batch_parts)
    g_blocks = kit.split(grad_output, 0, batch_parts)
    w_blocks = kit.split(w, 2, unit_parts)
    bias_blocks = kit.split(bias, 1, unit_parts)

    def run(device: int, reduce, all_gather) -> tuple[np.ndarray, ...]:
        batch_block, unit_block = divmod(device, unit_parts)
        y, cache = lstm_forward(x_blocks[batch_block], w_blocks[unit_block], all_gather,
                                bias_blocks[unit_block])
        dx, dw, dbias = lstm_backward(g_blocks[batch_block], w_blocks[unit_block], cache,
                                      unit_block * units, reduce)
        return y, dx, dw, dbias

    results, calls = kit.run_devices(batch_parts * unit_parts, run,
                                     group=lambda device: device // unit_parts)
    y, cache = lstm_forward(x, w, bias=bias)
    dx, dw, dbias = lstm_backward(grad_output, w, cache)
    for batch_block in range(batch_parts):
        group = results[batch_block * unit_parts:(batch_block + 1) * unit_parts]
        for local in group:  # every device of a unit group holds the full y and dx
            kit.assert_exact(local[0], y[batch_block * rows:(batch_block + 1) * rows])
            kit.assert_exact(local[1], dx[batch_block * rows:(batch_block + 1) * rows])
    weight_grads = [kit.assemble([results[i * unit_parts + j][2] for j in range(unit_parts)],
                                 2) for i in range(batch_parts)]
    kit.assert_exact(kit.assemble(weight_grads, None), dw)
    bias_grads = [kit.assemble([results[i * unit_parts + j][3] for j in range(unit_parts)],
                               1) for i in range(batch_parts)]
    kit.assert_exact(kit.assemble(bias_grads, None), dbias)
    assert calls == ([("all_gather", "", (rows, units))] * LAYERS * STEPS
                     + [("reduce", "sum", (rows, 2 * hidden))] * LAYERS * STEPS)
