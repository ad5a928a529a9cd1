"""embedding: table lookup, ids of any shape `[...]` and table `[v, features...]` →
`[..., features...]`.

The vocabulary may be split: a device holds rows `[vocab_offset, vocab_offset + rows)`
of the table, and ids outside that range contribute zeros, so the output is a partial
sum the caller all-reduces over the vocabulary split (docs/cost-model.md, rule 1).
The table gradient scatter-adds into the local rows only; it is a partial sum over
split id dims (the batch), which the caller all-reduces (rule 2). Feature dims split
locally. No callbacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pase.runtime.kernels.context import KernelContext, Kernels


def _local_rows(ids: np.ndarray, vocab_offset: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids as local row indices (clipped into range) and whether they are local."""
    local = ids.astype(np.int64).ravel() - vocab_offset
    inside = (local >= 0) & (local < rows)
    return np.clip(local, 0, rows - 1), inside


def embedding_forward(ids: np.ndarray, table: np.ndarray, vocab_offset: int = 0) -> np.ndarray:
    """The rows of the local table block for the ids it holds, zeros for the others."""
    index, inside = _local_rows(ids, vocab_offset, table.shape[0])
    flat = table.reshape(table.shape[0], -1)
    gathered = np.where(inside[:, None], flat[index], 0)
    return gathered.reshape(*ids.shape, *table.shape[1:])


def embedding_backward(grad_output: np.ndarray, ids: np.ndarray, table_shape: Sequence[int],
                       vocab_offset: int = 0) -> np.ndarray:
    """The gradient of the local table block: each local id's output gradient added into
    its row, in the ids' row-major order (np.add.at is sequential, so deterministic)."""
    rows = table_shape[0]
    index, inside = _local_rows(ids, vocab_offset, rows)
    grad = np.zeros((rows, int(np.prod(table_shape[1:]))), dtype=grad_output.dtype)
    np.add.at(grad, index[inside], grad_output.reshape(index.size, -1)[inside])
    return grad.reshape(tuple(table_shape))


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


def _forward(ctx: KernelContext, inputs: list[Any]) -> tuple[np.ndarray, None]:
    ids, table = inputs
    return embedding_forward(ids, table, ctx.offset(1, 0)), None


def _backward(ctx: KernelContext, inputs: list[Any], output: Any, grad_output: Any,
              saved: Any, needs: list[bool]) -> list[Any]:
    ids, table = inputs
    return [None, embedding_backward(grad_output, ids, table.shape, ctx.offset(1, 0))]


KERNELS: Kernels = {"dnn.embedding": (_forward, _backward)}
