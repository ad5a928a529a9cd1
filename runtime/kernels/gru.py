"""gru: a multi-layer GRU as one layer, as PyTorch's `nn.GRU` computes it: x `[b, s, e]`,
w `[l, 2e, 3e]` and optionally the input and recurrent biases `[l, 3e]` → `[b, s, e]`.

Layer ℓ reads its input x_t (x for layer 0, layer ℓ−1's hidden states otherwise) and
h_{t−1}; w[ℓ]'s first e rows multiply the input, its last e the hidden state, its columns
unit-major (column `3·u + gate`, gates ordered r, z, n):

    a = x_t · w[ℓ][:e] + b_in[ℓ];  c = h_{t−1} · w[ℓ][e:] + b_hid[ℓ]
    r = σ(a_r + c_r);  z = σ(a_z + c_z);  n = tanh(a_n + r·c_n)
    h_t = (1 − z)·n + z·h_{t−1}

with zero initial h: the reset gate multiplies the recurrent product after its bias
(ONNX's GRU with `linear_before_reset=1`, which is what PyTorch computes and exports).
The output is the last layer's hidden states.

Sharding, as the LSTM's (docs/cost-model.md, rule 4): units may be split, a device
holding `w[:, :, 3·u0 : 3·u1]`, all three gates of units [u0, u1), computed from the FULL
input and hidden state; the batch may be split too. Callbacks, with rows = the local
batch, e = the full hidden size, U = u1 − u0:

- forward: `all_gather(h_local)` once per layer per step, l·s calls, each sending a
  `[rows, U]` block and returning the full `[rows, e]` hidden state (units in order);
- backward: `reduce(dz, "sum")` once per layer per step, l·s calls, each on a
  `[rows, 2e]` buffer: the gradient of [x_t, h_{t−1}], a partial sum over the unit split
  (each device adds its own units' direct term `z·dh` to the h part before it).

The weight and bias gradients are local to the unit block and partial sums over the
batch split, which the caller all-reduces (rule 2). The input gradient is complete on
every device.
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
class GruCache:
    """What the backward needs from the forward, per layer and step: the inputs and
    previous hidden states stacked `[l, s, b, 2e]`, the gates r, z, n `[l, s, b, U, 3]`
    and the recurrent products of n with their bias `[l, s, b, U]`."""

    inputs: np.ndarray
    gates: np.ndarray
    recurrent: np.ndarray


def gru_forward(x: np.ndarray, w: np.ndarray, all_gather: AllGather = local_gather,
                bias_input: np.ndarray | None = None, bias_hidden: np.ndarray | None = None,
                unit_offset: int = 0) -> tuple[np.ndarray, GruCache]:
    """The last layer's hidden states `[b, s, e]` (full e on every device), and the cache;
    the device holds units [unit_offset, unit_offset + U), and the biases are the local
    blocks of `[l, 3e]`, like w's columns."""
    batch, steps, hidden = x.shape
    layers, units = w.shape[0], w.shape[2] // 3
    local = slice(unit_offset, unit_offset + units)
    inputs = np.empty((layers, steps, batch, 2 * hidden), dtype=x.dtype)
    gates = np.empty((layers, steps, batch, units, 3), dtype=x.dtype)
    recurrent = np.empty((layers, steps, batch, units), dtype=x.dtype)
    zeros = np.zeros((layers, w.shape[2]), dtype=x.dtype)
    b_in = zeros if bias_input is None else bias_input
    b_hid = zeros if bias_hidden is None else bias_hidden
    sequence = x
    for layer in range(layers):
        h = np.zeros((batch, hidden), dtype=x.dtype)
        outputs = np.empty((batch, steps, hidden), dtype=x.dtype)
        for step in range(steps):
            a = (sequence[:, step] @ w[layer][:hidden] + b_in[layer]).reshape(batch, units, 3)
            c = (h @ w[layer][hidden:] + b_hid[layer]).reshape(batch, units, 3)
            r, z = sigmoid(a[..., 0] + c[..., 0]), sigmoid(a[..., 1] + c[..., 1])
            n = np.tanh(a[..., 2] + r * c[..., 2])
            inputs[layer, step] = np.concatenate([sequence[:, step], h], axis=1)
            h = all_gather((1.0 - z) * n + z * h[:, local])
            gates[layer, step] = np.stack([r, z, n], axis=-1)
            recurrent[layer, step] = c[..., 2]
            outputs[:, step] = h
        sequence = outputs
    return sequence, GruCache(inputs, gates, recurrent)


def gru_backward(grad_output: np.ndarray, w: np.ndarray, cache: GruCache,
                 unit_offset: int = 0, reduce: Reduce = local_reduce
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(dx `[b, s, e]`, dw like the local w, and the input and recurrent biases'
    gradients `[l, 3U]`); `unit_offset` is u0, the first local unit."""
    layers, steps, batch, units = cache.recurrent.shape
    hidden = cache.inputs.shape[3] // 2
    local = slice(hidden + unit_offset, hidden + unit_offset + units)
    dw = np.zeros_like(w)
    db_in = np.zeros((layers, w.shape[2]), dtype=w.dtype)
    db_hid = np.zeros_like(db_in)
    grad_sequence = grad_output
    for layer in reversed(range(layers)):
        grad_inputs = np.empty((batch, steps, hidden), dtype=grad_output.dtype)
        dh_next = np.zeros((batch, hidden), dtype=grad_output.dtype)
        for step in reversed(range(steps)):
            r, z, n = np.moveaxis(cache.gates[layer, step], -1, 0)
            stacked = cache.inputs[layer, step]
            h_prev = stacked[:, local]
            dh = (grad_sequence[:, step] + dh_next)[:, local.start - hidden:local.stop - hidden]
            dn = dh * (1.0 - z) * (1.0 - n * n)
            dr = dn * cache.recurrent[layer, step] * r * (1.0 - r)
            dz = dh * (h_prev - n) * z * (1.0 - z)
            da = np.stack([dr, dz, dn], axis=-1).reshape(batch, 3 * units)
            dc = np.stack([dr, dz, dn * r], axis=-1).reshape(batch, 3 * units)
            dw[layer][:hidden] += stacked[:, :hidden].T @ da
            dw[layer][hidden:] += stacked[:, hidden:].T @ dc
            db_in[layer] += da.sum(axis=0)
            db_hid[layer] += dc.sum(axis=0)
            partial = np.concatenate([da @ w[layer][:hidden].T, dc @ w[layer][hidden:].T],
                                     axis=1)
            partial[:, local] += dh * z
            full = reduce(partial, "sum")
            grad_inputs[:, step] = full[:, :hidden]
            dh_next = full[:, hidden:]
        grad_sequence = grad_inputs
    return grad_sequence, dw, db_in, db_hid


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, GruCache]:
    # The weight's columns are unit-major (3 gates per unit): the device's first unit.
    bias_input, bias_hidden = inputs[2:4] if len(inputs) == 4 else (None, None)
    return gru_forward(inputs[0], inputs[1], ctx.gather, bias_input, bias_hidden,
                       unit_offset=ctx.offset(1, 2) // 3)


def _backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
              saved: Any, needs: list[bool]) -> list[Any]:
    grads = gru_backward(grad_output, inputs[1], saved, ctx.offset(1, 2) // 3, ctx.reduce)
    return list(grads)[:len(inputs)]


KERNELS: Kernels = {"dnn.gru": (_forward, _backward)}
