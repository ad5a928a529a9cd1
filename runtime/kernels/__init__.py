"""Numpy forward and backward kernels of the dnn ops, one module per op family.

| module | ops |
|---|---|
| `einsum` | einsum |
| `conv` | conv2d, pool2d (max, avg) |
| `elementwise` | relu, gelu, tanh, sigmoid, exp, sqrt, neg, clip, pow, mask; add, sub, mul, div |
| `normalization` | softmax, layernorm, batchnorm, rmsnorm, softmax_cross_entropy |
| `reduce` | reduce sum, mean |
| `embedding` | embedding |
| `lstm` | lstm |
| `gru` | gru |
| `shape` | concat, reshape, slice, pad, broadcast |
| `optimizer` | sgd |

Each module exports `KERNELS = {op name: (forward, backward)}` of functions with one
signature (`pase.runtime.kernels.context`); this package merges them into `KERNELS`,
and the executor runs a step with one lookup: `KERNELS["dnn.einsum"][0](ctx, inputs)`.
Adding an op means its op class and iteration space (`pase.dialect.dnn.layers`), its
kernels and their table entry here, and tests.

A tensor is a numpy array whose axes follow a list of dim names (the tensor's dims in
order); kernels that depend on names take them (`einsum_forward([x, w], [["b", "d"],
["d", "h"]], ["b", "h"])`), NCHW and [b, s, e] kernels are positional. Every kernel
works on one device's LOCAL block of a sharded tensor (docs/cost-model.md, "Placement"),
is deterministic, and keeps the element type of its floating-point inputs (f32 or f64).

Communication follows docs/cost-model.md, "Intra-layer collectives", exactly:

- Partial sums (rules 1 and 2) are the CALLER's job. A kernel returns its local
  contribution: an einsum or conv2d output over a split contracted dim, a reduce over a
  split reduced dim, an embedding over a split vocabulary, and every operand gradient
  over split dims the operand does not range over. The caller all-reduces them.
- Statistics over split normalized dims (rule 3) and the LSTM's and GRU's per-step hidden state
  (rule 4) happen inside a kernel, so those kernels take callbacks:
  `reduce(array, op) -> array`, op "sum" or "max", an elementwise all-reduce over the
  devices that share the split normalized dims (same shape out as in), and
  `all_gather(array) -> array`, a concatenation over the devices that split the LSTM's
  units, in unit order, along the last axis. Each kernel documents how many calls it
  makes and their sizes; it makes them whether or not anything is split, so a caller
  whose group has one device passes the identity (the default) and moves no words.
"""

from __future__ import annotations

from pase.runtime.kernels import (
    conv,
    einsum,
    elementwise,
    embedding,
    gru,
    lstm,
    normalization,
    optimizer,
    reduce,
    shape,
)
from pase.runtime.kernels.context import (
    AllGather,
    Backward,
    Forward,
    KernelContext,
    Kernels,
    Reduce,
    Tensor,
    axes_of,
    local_gather,
    local_reduce,
)

MODULES = (einsum, conv, elementwise, normalization, reduce, embedding, lstm, gru, shape,
           optimizer)
KERNELS: Kernels = {op: entry for module in MODULES for op, entry in module.KERNELS.items()}
"""Every op's (forward, backward), by op name ("dnn.einsum")."""

__all__ = ["KERNELS", "MODULES", "AllGather", "Backward", "Forward", "KernelContext", "Kernels",
           "Reduce", "Tensor", "axes_of", "local_gather", "local_reduce"]
