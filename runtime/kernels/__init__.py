"""Numpy forward and backward kernels of the dnn ops, one module per op family.

| module | ops |
|---|---|
| `einsum` | einsum |
| `conv` | conv2d, pool2d (max, avg) |
| `elementwise` | relu, gelu, tanh, sigmoid, exp; add, sub, mul (broadcasting by name) |
| `normalization` | softmax, layernorm, batchnorm, softmax_cross_entropy |
| `reduce` | reduce sum, mean |
| `embedding` | embedding |
| `lstm` | lstm |
| `shape` | concat, reshape |

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
- Statistics over split normalized dims (rule 3) and the LSTM's per-step hidden state
  (rule 4) happen inside a kernel, so those kernels take callbacks:
  `reduce(array, op) -> array`, op "sum" or "max", an elementwise all-reduce over the
  devices that share the split normalized dims (same shape out as in), and
  `all_gather(array) -> array`, a concatenation over the devices that split the LSTM's
  units, in unit order, along the last axis. Each kernel documents how many calls it
  makes and their sizes; it makes them whether or not anything is split, so a caller
  whose group has one device passes the identity (the default) and moves no words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Reduce = Callable[[np.ndarray, str], np.ndarray]
"""`reduce(array, op)`: all-reduce `array` elementwise ("sum" or "max") over a device group."""

AllGather = Callable[[np.ndarray], np.ndarray]
"""`all_gather(block)`: concatenate the group's blocks along the last axis, in order."""


def local_reduce(array: np.ndarray, op: str) -> np.ndarray:
    """The reduction over a group of one device: the identity."""
    if op not in ("sum", "max"):
        raise ValueError(f"reduce op must be 'sum' or 'max', got '{op}'")
    return array


def local_gather(array: np.ndarray) -> np.ndarray:
    """The all-gather over a group of one device: the identity."""
    return array


def axes_of(dims: Sequence[str], names: Sequence[str]) -> tuple[int, ...]:
    """Positions of `names` in `dims`: `axes_of(["b", "s", "d"], ["d", "b"]) == (2, 0)`."""
    missing = [name for name in names if name not in dims]
    if missing:
        raise ValueError(f"dimension(s) {', '.join(missing)} not in [{', '.join(dims)}]")
    return tuple(list(dims).index(name) for name in names)
