"""Export options pase cannot train from, each refused with one diagnostic that names
the option to change, before the import reads the graph.

    refuse_missing_weights(model, "m.onnx")         # torch.onnx.export(export_params=False)
    refuse_symbolic_sizes(model, 0, "m.onnx")       # dynamic_axes, dynamic_shapes

Without them, a model exported without its weights imports them as data inputs: it would
be searched and trained with no parameters at all; and a symbolic axis other than the
batch (`dynamic_axes={"ids": {0: "batch", 1: "sequence"}}`) stops the folding of the
shape computations that depend on it, so that the import reported one of those nodes
instead of the symbolic axis. (A float16 or bfloat16 model is read as its float32 master
copy: `half_precision`.)
"""

from __future__ import annotations

import math
from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import MAX_ELEMENTS
from pase.frontend.onnx.values import node_label

WEIGHT_OPERANDS = {"Conv": (1, 2), "Gemm": (1, 2), "MatMul": (1,), "Gather": (0,),
                   "LayerNormalization": (1, 2), "BatchNormalization": (1, 2, 3, 4),
                   "LSTM": (1, 2, 3), "GRU": (1, 2, 3)}
"""The operands (by position) of the ops that hold a layer's weights."""


def refuse_missing_weights(model: Any, filename: str) -> None:
    """An error if the file has no initializers and a graph input is a layer's weight
    (torch.onnx.export(..., export_params=False) lists the weights as inputs)."""
    if model.graph.initializer:
        return
    inputs = {value.name for value in model.graph.input}
    for node in model.graph.node:
        for position in WEIGHT_OPERANDS.get(node.op_type, ()):
            if position < len(node.input) and node.input[position] in inputs and (
                    node.op_type != "Gather" or len(model.graph.input) > 1):
                raise Diagnostic(
                    f"input '{node.input[position]}' is a weight of node "
                    f"'{node_label(node)}' ({node.op_type}) and the file has no weights: "
                    "it was exported without them (export_params=False); export it with "
                    "its weights (export_params=True, the default)", filename)


def refuse_symbolic_sizes(model: Any, batch: int, filename: str) -> None:
    """An error naming the first symbolic axis of a graph input that pase cannot size:
    any but the batch (axis 0), and the batch unless `batch` gives it (`-f
    'onnx{batch=N}'`, `pase-run --batch N`)."""
    initializers = {init.name for init in model.graph.initializer}
    symbolic = [(value.name, position, f"'{dim.dim_param}'" if dim.dim_param
                 else "of unknown size")
                for value in model.graph.input if value.name not in initializers
                for position, dim in enumerate(value.type.tensor_type.shape.dim)
                if not (dim.HasField("dim_value") and dim.dim_value >= 1)]
    for name, position, symbol in symbolic:
        if position != 0:
            raise Diagnostic(f"axis {position} of input '{name}' is symbolic ({symbol}); "
                             "pase needs static sizes: export the model with a fixed size "
                             "for it", filename)
    if symbolic and not batch:
        name, _, symbol = symbolic[0]
        raise Diagnostic(f"the batch axis of input '{name}' is symbolic ({symbol}); give "
                         "its size: -f 'onnx{batch=N}' (pase-run: --batch N)", filename)


def size_the_batch(model: Any, batch: int, filename: str) -> None:
    """The symbolic batch axis (axis 0) of every graph input given its size `batch` (`-f
    'onnx{batch=N}'`, `pase-run --batch N`) in the model itself, before the shape
    computations are folded: those that read it (`Shape` of an input, as
    nn.MultiheadAttention's and a causal mask's sizes under `dynamic_axes` or
    `dynamic_shapes`) are then constants like the others. An input that would have more
    than 2^53 elements so is an error naming it."""
    if not batch:
        return
    initializers = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if value.name not in initializers and dims and not (
                dims[0].HasField("dim_value") and dims[0].dim_value >= 1):
            sizes = [batch, *(d.dim_value for d in dims[1:])]
            elements = math.prod(sizes)
            if elements > MAX_ELEMENTS:
                raise Diagnostic(f"input '{value.name}' of shape {sizes} has {elements:,} "
                                 f"elements with batch={batch:,} (-f 'onnx{{batch=N}}', "
                                 "pase-run --batch N); pase handles at most 2^53 per "
                                 "tensor", filename)
            dims[0].dim_value = batch
