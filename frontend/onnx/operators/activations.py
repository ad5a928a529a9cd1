"""The piecewise-linear activations of MobileNetV3 and of CNNs users write, in pase's
layers (`dnn.relu`, `dnn.clip`, elementwise products and sums):

- HardSigmoid(x) = clip(α·x + β, 0, 1) (PyTorch's nn.Hardsigmoid: α = 1/6, β = 1/2);
- HardSwish(x) = x · HardSigmoid(x) with α = 1/6, β = 1/2 (nn.Hardswish);
- LeakyRelu(x) = relu(x) - α · relu(-x) (nn.LeakyReLU, α = 0.01 by default).

Their constants α and β are scalar params starting at the node's values, as every other
constant factor of an imported model (`GraphState.tensor`): the first step computes
what the node computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, f64

from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


def factor(graph: GraphState, x: Value, value: float, name: str) -> Value:
    """A scalar param of `x`'s element type starting at `value` (one per use)."""
    element = dnn.shape_of(x.value).element
    graph.values[name] = Value((), constant=np.asarray(
        value, np.float64 if element == "f64" else np.float32))
    return graph.tensor(name)


def hard_sigmoid(graph: GraphState, x: Value, alpha: float, beta: float,
                 name: str) -> Value:
    scaled = graph.elementwise(dnn.MulOp, x, factor(graph, x, alpha, f"{name}_alpha"),
                               f"{name}_scaled")
    shifted = graph.elementwise(dnn.AddOp, scaled, factor(graph, x, beta, f"{name}_beta"),
                                f"{name}_shifted")
    y = graph.build(dnn.ClipOp, [shifted.value], name, None,
                    {"min": FloatAttr(0.0, f64), "max": FloatAttr(1.0, f64)})
    return Value(shifted.axes, y)


@importer("HardSigmoid", attributes=("alpha", "beta"))
def hard_sigmoid_node(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    alpha = float(graph.attribute(node, "alpha", 0.2))
    beta = float(graph.attribute(node, "beta", 0.5))
    return [hard_sigmoid(graph, x, alpha, beta, node.output[0])]


@importer("HardSwish")
def hard_swish(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    gate = hard_sigmoid(graph, x, 1 / 6, 0.5, f"{node.output[0]}_gate")
    return [graph.elementwise(dnn.MulOp, x, gate, node.output[0])]


@importer("LeakyRelu", attributes=("alpha",))
def leaky_relu(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    name = node.output[0]
    alpha = float(graph.attribute(node, "alpha", 0.01))
    positive = Value(x.axes, graph.build(dnn.ReluOp, [x.value], f"{name}_positive"))
    negated = Value(x.axes, graph.build(dnn.NegOp, [x.value], f"{name}_negated"))
    negative = Value(x.axes, graph.build(dnn.ReluOp, [negated.value], f"{name}_negative"))
    leak = graph.elementwise(dnn.MulOp, negative, factor(graph, x, alpha, f"{name}_alpha"),
                             f"{name}_leak")
    return [graph.elementwise(dnn.SubOp, positive, leak, name)]
