"""A float16 or bfloat16 model (`model.half()`, `model.to(torch.bfloat16)` before
`torch.onnx.export`) read as its float32 master copy, as mixed-precision training keeps
it (docs/pytorch.md, "Half-precision exports"):

    kind = to_float32(onnx, model)    # "float16", "bfloat16", or None (already float32)

Every half-precision tensor of the graph becomes float32: the initializers (each value
exactly: float32 holds every float16 and bfloat16 value), the inputs', outputs' and
inferred values' types, the constants (`Constant`, `ConstantOfShape`'s value), and the
casts to a half type (`Cast(to=FLOAT16)`, the exporters' casts around a norm or softmax
computed in float32). pase then trains the model in float32; `pase-search{precision=fp16}`
(or `bf16`) prices the step as the model was exported to run: low-precision compute and
activations, float32 master weights. A model mixing float32 and float64 tensors with the
half ones keeps those as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def half_types(onnx: Any) -> dict[int, str]:
    return {onnx.TensorProto.FLOAT16: "float16", onnx.TensorProto.BFLOAT16: "bfloat16"}


def to_float32(onnx: Any, model: Any) -> str | None:
    """Make `model`'s half-precision tensors float32, in place; the half type found first
    ("float16" or "bfloat16"), or None where the model has none."""
    half = half_types(onnx)
    found = [half[init.data_type] for init in model.graph.initializer
             if init.data_type in half]
    found += [half[value.type.tensor_type.elem_type] for value in model.graph.input
              if value.type.tensor_type.elem_type in half]
    for graph in graphs_of(model):
        found += graph_to_float32(onnx, graph, half)
    for function in model.functions:
        found += nodes_to_float32(onnx, function.node, half)
    return found[0] if found else None


def graphs_of(model: Any) -> list[Any]:
    """The main graph and every subgraph of its nodes' attributes (If, Loop, Scan)."""
    graphs, pending = [], [model.graph]
    while pending:
        graph = pending.pop()
        graphs.append(graph)
        for node in graph.node:
            pending += [a.g for a in node.attribute if a.HasField("g")]
            pending += [g for a in node.attribute for g in a.graphs]
    return graphs


def graph_to_float32(onnx: Any, graph: Any, half: dict[int, str]) -> list[str]:
    """One graph's half tensors made float32; the half types it had, in order."""
    found = []
    for index, init in enumerate(graph.initializer):
        if init.data_type in half:
            found.append(half[init.data_type])
            graph.initializer[index].CopyFrom(widened(onnx, init))
    for value in [*graph.input, *graph.output, *graph.value_info]:
        tensor = value.type.tensor_type
        if tensor.elem_type in half:
            found.append(half[tensor.elem_type])
            tensor.elem_type = onnx.TensorProto.FLOAT
    return found + nodes_to_float32(onnx, graph.node, half)


def nodes_to_float32(onnx: Any, nodes: Any, half: dict[int, str]) -> list[str]:
    """The nodes' half-precision attributes made float32: a tensor value (Constant,
    ConstantOfShape), a target type (`to` of Cast, `dtype` of the random and EyeLike
    ops); the half types found, in order."""
    found = []
    for node in nodes:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type in half:
                found.append(half[attribute.t.data_type])
                attribute.t.CopyFrom(widened(onnx, attribute.t))
            elif attribute.type == onnx.AttributeProto.INT and attribute.name in (
                    "to", "dtype") and attribute.i in half:
                found.append(half[attribute.i])
                attribute.i = onnx.TensorProto.FLOAT
    return found


def widened(onnx: Any, tensor: Any) -> Any:
    """A float32 copy of a half-precision tensor, with its name (exact: every float16 and
    bfloat16 value is a float32 value)."""
    values = np.asarray(onnx.numpy_helper.to_array(tensor)).astype(np.float32)
    result = onnx.numpy_helper.from_array(values, tensor.name)
    return result
