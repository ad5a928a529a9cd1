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

import numpy as np

from pase.runtime.kernels.context import Kernels, local_indices


def embedding_forward(ids: np.ndarray, table: np.ndarray, vocab_offset: int = 0) -> np.ndarray:
    """The rows of the local table block for the ids it holds, zeros for the others."""
    index, inside = local_indices(ids.ravel(), vocab_offset, table.shape[0])
    flat = table.reshape(table.shape[0], -1)
    gathered = np.where(inside[:, None], flat[index], 0)
    return gathered.reshape(*ids.shape, *table.shape[1:])


def embedding_backward(grad_output: np.ndarray, ids: np.ndarray, table_shape: Sequence[int],
                       vocab_offset: int = 0) -> np.ndarray:
    """The gradient of the local table block: each local id's output gradient added into
    its row, in the ids' row-major order (np.add.at is sequential, so deterministic)."""
    rows = table_shape[0]
    index, inside = local_indices(ids.ravel(), vocab_offset, rows)
    grad = np.zeros((rows, int(np.prod(table_shape[1:]))), dtype=grad_output.dtype)
    np.add.at(grad, index[inside], grad_output.reshape(index.size, -1)[inside])
    return grad.reshape(tuple(table_shape))


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


# The table's rows may be split: the device's block starts at its offset along them.
KERNELS: Kernels = {"dnn.embedding": (
    lambda ctx, inputs: (embedding_forward(inputs[0], inputs[1], ctx.offset(1, 0)), None),
    lambda ctx, inputs, output, grad_output, saved, needs: [
        None, embedding_backward(grad_output, inputs[0], inputs[1].shape, ctx.offset(1, 0))])}
