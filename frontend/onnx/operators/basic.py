"""Identity, constants and the elementwise ops."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import Operation

from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value

UNARY_OPS: dict[str, type[Operation]] = {
    "Relu": dnn.ReluOp, "Gelu": dnn.GeluOp, "Tanh": dnn.TanhOp, "Sigmoid": dnn.SigmoidOp,
    "Exp": dnn.ExpOp,
}
BINARY_OPS: dict[str, type[Operation]] = {"Add": dnn.AddOp, "Sub": dnn.SubOp,
                                          "Mul": dnn.MulOp}


@importer("Identity", "Dropout", attributes=("seed",))
def identity(graph: GraphState, node: Any) -> list[Value]:
    """The input itself (Dropout: pase trains dropout-free). An Identity of a constant is
    a constant of its own: the TorchScript exporter shares equal initializers (the zero
    biases of different layers) behind Identity nodes, which are not tied in the model."""
    value = graph.values.get(node.input[0])
    if value is not None and value.ssa is None:
        return [Value((), constant=value.constant)]
    return [value if value is not None else graph.tensor(node.input[0])]


def constant_node(graph: GraphState, node: Any) -> np.ndarray:
    """The value of a Constant node."""
    attribute = node.attribute[0]
    value = graph.onnx.helper.get_attribute_value(attribute)
    if attribute.name == "value":
        return graph.onnx.numpy_helper.to_array(value)
    dtype = np.float32 if attribute.name.startswith("value_float") else np.int64
    return np.asarray(value, dtype=dtype)


@importer("Constant", attributes=("value", "value_float", "value_floats", "value_int",
                                  "value_ints"))
def constant(graph: GraphState, node: Any) -> list[Value]:
    if len(node.attribute) != 1:
        raise graph.error("a Constant needs exactly one value attribute")
    return [Value((), constant=constant_node(graph, node))]


@importer(*UNARY_OPS, attributes=("approximate",))
def unary(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    approximate = graph.attribute(node, "approximate", b"none")
    if approximate not in (b"none", b"tanh", "none", "tanh"):
        raise graph.error(f"approximate={approximate!r} is not supported")
    return [Value(x.axes, graph.build(UNARY_OPS[node.op_type], [x.value], node.output[0]))]


@importer(*BINARY_OPS)
def binary(graph: GraphState, node: Any) -> list[Value]:
    from pase.frontend.onnx.operators.more import additive_mask

    masked = additive_mask(graph, node) if node.op_type == "Add" else None
    if masked is not None:
        return masked
    for name in node.input:
        one_row_constant(graph, name)
    a, b = graph.tensor(node.input[0]), graph.tensor(node.input[1])
    a, b = broadcast_units(graph, a, b, node.output[0])
    return [graph.elementwise(BINARY_OPS[node.op_type], a, b, node.output[0])]


def broadcast_units(graph: GraphState, a: Value, b: Value, name: str) -> tuple[Value, Value]:
    """`a` and `b` without the axes of size 1 that are dims of their own (a broadcast's
    or a reshape's, as GPT-J's repeat_interleave of its rotary table `[1, s, 1, r]`) where
    the other operand's axis is longer: ONNX broadcasts them, so they become axes pase
    broadcasts (a `dnn.reshape` dropping each)."""
    from pase.frontend.onnx.operators.more import drop_axis

    rank = max(len(a.axes), len(b.axes))
    padded = [(None,) * (rank - len(v.axes)) + tuple(v.axes) for v in (a, b)]
    values = [a, b]
    for which in (0, 1):
        other = padded[1 - which]
        shift = rank - len(values[which].axes)
        units = [p for p, (axis, longer) in enumerate(zip(padded[which], other, strict=True))
                 if axis is not None and graph.dims.size(axis) == 1 and longer is not None
                 and graph.dims.size(longer) > 1]
        for count, p in enumerate(sorted(units, reverse=True)):
            x = values[which]
            values[which] = drop_axis(graph, x, p - shift, f"{name}_unit{which}{count}")
            values[which] = Value(tuple(None if q == p - shift else axis for q, axis in
                                        enumerate(x.axes)), values[which].ssa)
    return values[0], values[1]


def one_row_constant(graph: GraphState, name: str) -> None:
    """A float constant of rank 3 or more whose entries are equal along every axis but
    the last, as its one row `[1, ..., 1, d]`: the dynamo exporter folds BERT's token-type
    embedding (row 0 of a table, by constant zero ids) into a `[b, s, d]` constant, which
    is one trainable row, not b·s of them. Not a `[c, 1, 1]` constant (a group norm's
    scale, ConvNeXt's layer scale: one entry per channel, not one row)."""
    value = graph.values.get(name)
    array = None if value is None else value.constant
    if array is None or array.ndim < 3 or array.shape[-1] < 2 or \
            not np.issubdtype(array.dtype, np.floating):
        return
    rows = array.reshape(-1, array.shape[-1])
    if value is not None and rows.shape[0] > 1 and bool((rows == rows[:1]).all()):
        value.constant = rows[:1].reshape((1,) * (array.ndim - 1) + array.shape[-1:])


@importer("Div")
def div(graph: GraphState, node: Any) -> list[Value]:
    """Division by a constant: a product with its reciprocal (a scalar param); by a
    computed tensor: `dnn.div`."""
    if graph.constant_of(node.input[1]) is None:
        a, b = graph.tensor(node.input[0]), graph.tensor(node.input[1])
        return [graph.elementwise(dnn.DivOp, a, b, node.output[0])]
    divisor = graph.constant(node.input[1], "the divisor")
    if not np.issubdtype(divisor.dtype, np.floating) or np.any(divisor == 0):
        raise graph.error("the divisor must be a nonzero float constant")
    reciprocal = f"{node.input[1]}_reciprocal"
    if reciprocal not in graph.values:
        graph.values[reciprocal] = Value((), constant=(1 / divisor).astype(divisor.dtype))
    a, b = graph.tensor(node.input[0]), graph.tensor(reciprocal)
    return [graph.elementwise(dnn.MulOp, a, b, node.output[0])]
