"""lstm: a multi-layer LSTM as one layer, x `[b, s, e]`, w `[l, 2e, 4e]` and an optional
bias `[l, 4e]` → `[b, s, e]`.

Layer ℓ reads the stacked `z_t = [input_t, h_{t−1}]` (`[b, 2e]`; the input is x for
layer 0 and layer ℓ−1's hidden states otherwise) and computes its gates
`a = z_t · w[ℓ] (+ bias[ℓ])`, columns unit-major (column `4·u + gate`, gates ordered
i, f, g, o):

    i, f, o = σ(a_i), σ(a_f), σ(a_o);  g = tanh(a_g)
    c_t = f·c_{t−1} + i·g;  h_t = o·tanh(c_t)

with zero initial h and c. The output is the last layer's hidden states.

Sharding (docs/cost-model.md, rule 4). Units may be split: a device holds
`w[:, :, 4·u0 : 4·u1]`, all four gates of units [u0, u1), and computes those units from
the FULL z_t (k is never split). The batch may be split too (purely local). Callbacks,
with rows = the local batch, e = the full hidden size, U = u1 − u0:

- forward: `all_gather(h_local)` once per layer per step, l·s calls, each sending a
  `[rows, U]` block and returning the full `[rows, e]` hidden state (units in order);
- backward: `reduce(dz, "sum")` once per layer per step, l·s calls, each on a
  `[rows, 2e]` buffer: the gradient of z_t, a partial sum over the unit split.

The weight and bias gradients are local to the unit block and partial sums over the
batch split,
which the caller all-reduces (rule 2). The input gradient is complete on every device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pase.runtime.kernels.context import (
    AllGather,
    KernelContext,
    Kernels,
    Reduce,
    local_gather,
    local_reduce,
)
from pase.runtime.kernels.elementwise import sigmoid


@dataclass(frozen=True)
class LstmCache:
    """What the backward needs from the forward, per layer and step: the stacked inputs
    z `[l, s, b, 2e]`, gate activations `[l, s, b, U, 4]` (i, f, g, o) and cells
    `[l, s, b, U]`."""

    inputs: np.ndarray
    gates: np.ndarray
    cells: np.ndarray


def lstm_forward(x: np.ndarray, w: np.ndarray, all_gather: AllGather = local_gather,
                 bias: np.ndarray | None = None) -> tuple[np.ndarray, LstmCache]:
    """The last layer's hidden states `[b, s, e]` (full e on every device), and the cache;
    `bias` is the local block of the `[l, 4e]` bias, like w's columns."""
    batch, steps, hidden = x.shape
    layers, units = w.shape[0], w.shape[2] // 4
    inputs = np.empty((layers, steps, batch, 2 * hidden), dtype=x.dtype)
    gates = np.empty((layers, steps, batch, units, 4), dtype=x.dtype)
    cells = np.empty((layers, steps, batch, units), dtype=x.dtype)
    sequence = x
    for layer in range(layers):
        h = np.zeros((batch, hidden), dtype=x.dtype)
        c = np.zeros((batch, units), dtype=x.dtype)
        outputs = np.empty((batch, steps, hidden), dtype=x.dtype)
        for step in range(steps):
            z = np.concatenate([sequence[:, step], h], axis=1)
            a = z @ w[layer]
            if bias is not None:
                a = a + bias[layer]
            a = a.reshape(batch, units, 4)
            i, f, o = sigmoid(a[..., 0]), sigmoid(a[..., 1]), sigmoid(a[..., 3])
            g = np.tanh(a[..., 2])
            c = f * c + i * g
            h = all_gather(o * np.tanh(c))
            inputs[layer, step] = z
            gates[layer, step] = np.stack([i, f, g, o], axis=-1)
            cells[layer, step] = c
            outputs[:, step] = h
        sequence = outputs
    return sequence, LstmCache(inputs, gates, cells)


def lstm_backward(grad_output: np.ndarray, w: np.ndarray, cache: LstmCache,
                  unit_offset: int = 0,
                  reduce: Reduce = local_reduce) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx `[b, s, e]`, dw like the local w, dbias `[l, 4U]` like the local bias);
    `unit_offset` is u0, the first local unit."""
    layers, steps, batch, units = cache.cells.shape
    hidden = cache.inputs.shape[3] // 2
    local = slice(unit_offset, unit_offset + units)
    dw = np.zeros_like(w)
    dbias = np.zeros((layers, w.shape[2]), dtype=w.dtype)
    grad_sequence = grad_output
    for layer in reversed(range(layers)):
        grad_inputs = np.empty((batch, steps, hidden), dtype=grad_output.dtype)
        dh_next = np.zeros((batch, hidden), dtype=grad_output.dtype)
        dc_next = np.zeros((batch, units), dtype=grad_output.dtype)
        for step in reversed(range(steps)):
            i, f, g, o = np.moveaxis(cache.gates[layer, step], -1, 0)
            c = cache.cells[layer, step]
            c_prev = cache.cells[layer, step - 1] if step else np.zeros_like(c)
            dh = (grad_sequence[:, step] + dh_next)[:, local]
            tanh_c = np.tanh(c)
            dc = dc_next + dh * o * (1.0 - tanh_c * tanh_c)
            da = np.stack([dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f),
                           dc * i * (1.0 - g * g), dh * tanh_c * o * (1.0 - o)],
                          axis=-1).reshape(batch, 4 * units)
            dc_next = dc * f
            dw[layer] += cache.inputs[layer, step].T @ da
            dbias[layer] += da.sum(axis=0)
            dz = reduce(da @ w[layer].T, "sum")
            grad_inputs[:, step] = dz[:, :hidden]
            dh_next = dz[:, hidden:]
        grad_sequence = grad_inputs
    return grad_sequence, dw, dbias


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
              saved: Any, needs: list[bool]) -> list[Any]:
    # The weight's columns are unit-major (4 gates per unit): the device's first unit.
    unit_offset = ctx.offset(1, 2) // 4
    dx, dw, dbias = lstm_backward(grad_output, inputs[1], saved, unit_offset, ctx.reduce)
    return [dx, dw, dbias][:len(inputs)]


KERNELS: Kernels = {"dnn.lstm": (
    lambda ctx, inputs: lstm_forward(inputs[0], inputs[1], ctx.gather,
                                     inputs[2] if len(inputs) > 2 else None), _backward)}
