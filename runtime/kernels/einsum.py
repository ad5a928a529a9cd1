"""einsum: a contraction over named dims, and its operand gradients.

Dims shared by the inputs and absent from the result are summed. On a sharded tensor
the kernel contracts the local blocks only; a split contracted dim leaves a partial sum
of the output, and a split dim an operand does not range over leaves a partial sum of
that operand's gradient. The caller all-reduces both (docs/cost-model.md, rules 1, 2).

Example:
    >>> x, w = np.ones((2, 3)), np.ones((3, 4))
    >>> einsum_forward([x, w], [["b", "d"], ["d", "h"]], ["b", "h"]).shape
    (2, 4)
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from pase.runtime.kernels.context import Kernels

LETTERS = string.ascii_letters


def subscripts(operand_dims: Sequence[Sequence[str]], result_dims: Sequence[str]) -> str:
    """The np.einsum subscripts of a named contraction: `"ab,bc->ac"`."""
    letters: dict[str, str] = {}
    for dim in [d for dims in operand_dims for d in dims] + list(result_dims):
        if dim not in letters:
            if len(letters) == len(LETTERS):
                raise ValueError(f"einsum supports at most {len(LETTERS)} distinct dims")
            letters[dim] = LETTERS[len(letters)]

    def term(dims: Sequence[str]) -> str:
        return "".join(letters[d] for d in dims)

    return ",".join(term(dims) for dims in operand_dims) + "->" + term(result_dims)


def einsum_forward(inputs: Sequence[np.ndarray], input_dims: Sequence[Sequence[str]],
                   output_dims: Sequence[str]) -> np.ndarray:
    """The contraction of the local blocks (a partial sum if a contracted dim is split)."""
    # optimize=True contracts pairwise through BLAS; the path depends on shapes only,
    # so the result is deterministic.
    result = np.einsum(subscripts(input_dims, output_dims), *inputs, optimize=True)
    # A one-operand einsum may return a view (a transpose); results never alias inputs.
    if any(np.may_share_memory(result, operand) for operand in inputs):
        result = result.copy()
    return result


def einsum_backward(grad_output: np.ndarray, inputs: Sequence[np.ndarray],
                    input_dims: Sequence[Sequence[str]], output_dims: Sequence[str],
                    needs_grad: Sequence[bool] | None = None) -> list[np.ndarray | None]:
    """Gradients of the requested operands (None for the others), local partial sums.

    The gradient of operand i contracts the output gradient with the other operands.
    A dim only operand i has (summed in the forward, e.g. `d` of `[b, d] -> [b]`)
    receives the gradient broadcast along it.
    """
    flags = list(needs_grad) if needs_grad is not None else [True] * len(inputs)
    grads: list[np.ndarray | None] = []
    for index, (operand, dims) in enumerate(zip(inputs, input_dims, strict=True)):
        if not flags[index]:
            grads.append(None)
            continue
        others = [i for i in range(len(inputs)) if i != index]
        factors = [grad_output, *(inputs[i] for i in others)]
        factor_dims = [output_dims, *(input_dims[i] for i in others)]
        available = {d for f in factor_dims for d in f}
        direct = [d for d in dims if d in available]
        grad = einsum_forward(factors, factor_dims, direct)
        if len(direct) < len(dims):
            expanded = [operand.shape[k] if d in available else 1 for k, d in enumerate(dims)]
            grad = np.broadcast_to(grad.reshape(expanded), operand.shape).copy()
        grads.append(grad)
    return grads


# --- the kernel table (pase.runtime.kernels.context) ---------------------------------


KERNELS: Kernels = {"dnn.einsum": (
    lambda ctx, inputs: (einsum_forward(inputs, ctx.dims, ctx.result.dims), None),
    lambda ctx, inputs, output, grad_output, saved, needs: einsum_backward(
        grad_output, inputs, ctx.dims, ctx.result.dims, needs))}
