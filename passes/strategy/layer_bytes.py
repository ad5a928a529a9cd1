"""The bytes a layer's kernels read and write in device memory, per device, under every
configuration at once: what the roofline of `TrainingCost` (docs/cost-model.md, "The
roofline") divides by the machine's HBM bandwidth.

Each tensor block a device holds is read or written once, at its element size (its
`TensorUse.element_bytes`: 2 for activations under bf16/fp16, `at_precision`); a block
is the tensor's elements over the factors of the split dims it ranges over (the whole
tensor along the dims it lacks, as a replicated weight). By operator kind:

- forward: every operand's block read, the result's block written. A reshape is a view
  (no bytes); an embedding reads its ids and only the rows it gathers (the result's
  block, at most the table's);
- backward (a layer with a backward pass and some operand that needs a gradient): the
  result's gradient read, each operand gradient written (a parameter's too), and the
  operands the gradients need read. Additive kinds (add, sub, concat, reduce, broadcast,
  slice, pad) need no operand; multilinear ones (einsum, conv2d, mul, embedding) need,
  for the gradient of one operand, the others (an einsum's dx = dy w needs w); other
  kinds (gelu, softmax, norms, cross-entropy, ...) read all their operands (softmax
  reads its result, of the same size). A reshape's backward is a view too; an
  embedding's writes its table's whole gradient block (a dense gradient) and reads
  the ids and the result's gradient.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> layer = mlp.layers[0]   # x [b 64, d 256] . w [d, h 1024] -> [b, h]
    >>> forward, backward = moved_bytes(layer, np.array([[1, 1, 1], [4, 1, 1]]))
    >>> forward.tolist() == [4 * (64*256 + 256*1024 + 64*1024),
    ...                      4 * (16*256 + 256*1024 + 16*1024)]
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.vertices import Layer, TensorUse

if TYPE_CHECKING:
    from pase.passes.strategy.machines import Machine
    from pase.passes.strategy.options import TrainingOptions

VIEW_KINDS = frozenset({"reshape"})
"""Kinds whose forward and backward are views of their operand: no bytes moved."""

ADDITIVE_KINDS = frozenset({"add", "sub", "concat", "reduce", "broadcast", "slice", "pad"})
"""Kinds whose operand gradients are the result's gradient moved: they read no operand."""

MULTILINEAR_KINDS = frozenset({"einsum", "conv2d", "mul", "embedding"})
"""Kinds linear in each operand: an operand's gradient needs only the other operands."""


def block_bytes(use: TensorUse, names: Sequence[str], factors: np.ndarray) -> np.ndarray:
    """Bytes of the block of `use` one device holds under each row of `factors`
    (configurations x `names`, the layer's iteration dims).

        >>> block_bytes(TensorUse(("b", None), (8, 3), 2), ("b",), np.array([[1], [4]]))
        array([48., 12.])
    """
    factor = np.ones(len(factors), dtype=np.int64)
    for dim in use.dims:
        if dim is not None and dim in names:
            factor = factor * factors[:, names.index(dim)]
    return use.elements * use.element_bytes / factor.astype(np.float64)


def moved_bytes(layer: Layer, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) bytes one device reads and writes in its memory for `layer`
    under each row of `factors` (the module docstring); backward is zeros for a layer
    without a backward pass or without an operand that needs a gradient."""
    names = layer.space.names
    count = len(factors)
    forward, backward = np.zeros(count), np.zeros(count)
    if layer.kind in VIEW_KINDS:
        return forward, backward
    operands = [block_bytes(use, names, factors) for use in layer.operands]
    result = block_bytes(layer.result, names, factors)
    if layer.kind == "embedding":
        ids, table = operands
        forward = ids + np.minimum(result, table) + result
    else:
        forward = sum(operands, np.zeros(count)) + result
    needs = [i for i, grad in enumerate(layer.grads) if grad]
    if not layer.backward or not needs:
        return forward, backward
    backward = result + sum((operands[i] for i in needs), np.zeros(count))
    if layer.kind in ADDITIVE_KINDS:
        return forward, backward
    multilinear = layer.kind in MULTILINEAR_KINDS
    for j, block in enumerate(operands):
        if not multilinear or any(i != j for i in needs):
            backward = backward + block
    return forward, backward


def roofline(layer: Layer, factors: np.ndarray, forward_compute: np.ndarray,
             hbm_bandwidth: float, peak: float) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of `layer`'s kernels under each row of `factors`: each
    the larger of its FLOPs per device over `peak` and its `moved_bytes` over
    `hbm_bandwidth`. `forward_compute` is the forward's FLOP time (`LayerCosts`'s).

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> relu = read_graph(parse_file("models/mlp.dnn")).layers[1]   # [64, 1024]
        >>> forward, backward = roofline(relu, np.array([[1, 1]]), np.zeros(1), 1e9, 1e12)
        >>> forward.tolist(), backward.tolist()    # 2 and 3 blocks of 256 KiB
        ([0.000524288], [0.000786432])
    """
    space = layer.space
    forward_bytes, backward_bytes = moved_bytes(layer, factors)
    forward = np.maximum(forward_compute, forward_bytes / hbm_bandwidth)
    if not layer.backward:
        return forward, np.zeros(len(factors))
    used = factors.prod(axis=1).astype(np.float64)
    backward_flops = space.flops_backward * space.points / used / peak
    return forward, np.maximum(backward_flops, backward_bytes / hbm_bandwidth)


def least_seconds(layer: Layer, most: int, peak: float, hbm_bandwidth: float
                  ) -> tuple[float, float]:
    """Lower bounds on `layer`'s (forward, backward) seconds under any configuration
    that works on at most `most` devices: its FLOPs over `most` devices at `peak`, and,
    where `hbm_bandwidth` is given (the roofline charged), at least its whole tensors'
    `moved_bytes` over `most` devices at that bandwidth (a block is at least its tensor
    over the devices a configuration uses, and a configuration uses at most `most`).

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> relu = read_graph(parse_file("models/mlp.dnn")).layers[1]   # [64, 1024]
        >>> least_seconds(relu, 4, 1e12, 1e9)      # 2 and 3 blocks of 64 KiB
        (0.000131072, 0.000196608)
    """
    space = layer.space
    forward = space.points * space.flops_forward / most / peak
    backward = space.points * space.flops_backward / most / peak if layer.backward else 0.0
    if hbm_bandwidth:
        ones = np.ones((1, len(space.names)), dtype=np.int64)
        forward_bytes, backward_bytes = moved_bytes(layer, ones)
        forward = max(forward, float(forward_bytes[0]) / most / hbm_bandwidth)
        backward = max(backward, float(backward_bytes[0]) / most / hbm_bandwidth)
    return forward, backward


def roofline_bandwidth(machine: Machine, training: TrainingOptions) -> float:
    """The HBM bandwidth the roofline divides by where the step is charged by
    `TrainingCost` on a machine that has one; 0 where layers cost their FLOPs only
    (`PaseCost`, the default step)."""
    return 0.0 if training.is_default else machine.hbm_bandwidth
