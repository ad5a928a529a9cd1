"""Reductions, softmax and the norms."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import Attribute

from pase.dialect import dnn
from pase.dialect.dnn.epsilon import DEFAULT_EPSILON, epsilon_property
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


@importer("ReduceMean", "ReduceSum", attributes=("axes", "keepdims", "noop_with_empty_axes"))
def reduce(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    axes = graph.attribute(node, "axes")
    if len(node.input) > 1 and node.input[1]:
        axes = graph.constant(node.input[1], "the axes")
    keepdims = bool(graph.attribute(node, "keepdims", 1))
    if axes is None or len(axes) == 0:
        if graph.attribute(node, "noop_with_empty_axes", 0):
            return [x]
        axes = range(len(x.axes))
    positions = sorted({graph.axis(int(a), len(x.axes)) for a in axes})
    kind = "mean" if node.op_type == "ReduceMean" else "sum"
    return [graph.reduce_over(x, positions, kind, keepdims, node.output[0])]


@importer("Softmax", attributes=("axis",))
def softmax(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    position = graph.axis(graph.attribute(node, "axis", -1), len(x.axes))
    y = graph.build(dnn.SoftmaxOp, [x.value], node.output[0], None,
                    {"over": graph.dim_array([graph.real_axis(x, position)])})
    return [Value(x.axes, y)]


def norm_epsilon(graph: GraphState, node: Any) -> dict[str, Attribute]:
    """The `epsilon` property of a norm node's layer (none where it is 1e-5, the default
    of ONNX's norms and PyTorch's). ONNX keeps the attribute as a float32; the layer gets
    its shortest decimal (DeiT's 1e-12, not 9.99999996e-13)."""
    value = float(str(np.float32(graph.attribute(node, "epsilon", DEFAULT_EPSILON))))
    if not (math.isfinite(value) and value > 0):
        raise graph.error(f"epsilon={value} is not supported (a norm's epsilon is a positive "
                          "finite float)")
    return epsilon_property(value)


@importer("LayerNormalization", attributes=("axis", "epsilon", "stash_type"))
def layer_norm(graph: GraphState, node: Any) -> list[Value]:
    """A norm without a bias (B), as `nn.LayerNorm(bias=False)` and OLMo's norms export,
    gets a bias param that starts at zeros: the model's output is the same, and pase
    trains the bias as it trains the constant zeros the TorchScript exporter writes."""
    x = graph.tensor(node.input[0])
    position = graph.axis(graph.attribute(node, "axis", -1), len(x.axes))
    over = [graph.real_axis(x, p) for p in range(position, len(x.axes))]
    scale = graph.tensor(node.input[1])
    if len(node.input) < 3 or not node.input[2]:
        name = f"{node.output[0]}_bias"
        f64 = dnn.shape_of(x.value).element == "f64"
        zeros = np.zeros([graph.dims.size(a) for a in over], np.float64 if f64 else np.float32)
        graph.values[name] = Value((), constant=zeros)
        bias = graph.tensor(name)
    else:
        bias = graph.tensor(node.input[2])
    for affine in (scale, bias):
        graph.broadcast(x.axes[position:], affine.axes)
    y = graph.build(dnn.LayerNormOp, [x.value, scale.value, bias.value], node.output[0], None,
                    {"over": graph.dim_array(over)} | norm_epsilon(graph, node))
    return [Value(x.axes, y)]


@importer("BatchNormalization", attributes=("epsilon", "momentum", "training_mode"))
def batch_norm(graph: GraphState, node: Any) -> list[Value]:
    """Normalized with the batch statistics (training mode); the running ones are unread."""
    x = graph.tensor(node.input[0])
    if len(x.axes) < 2:
        raise graph.error("BatchNormalization needs a [batch, channels, ...] input")
    channels = graph.real_axis(x, 1)
    scale, bias = graph.tensor(node.input[1]), graph.tensor(node.input[2])
    for affine in (scale, bias):
        if len(affine.axes) != 1 or not graph.same(channels, graph.real_axis(affine, 0)):
            raise graph.error("its scale and bias must range over the channels")
    over = [a for p, a in enumerate(x.axes) if p != 1 and a is not None]
    y = graph.build(dnn.BatchNormOp, [x.value, scale.value, bias.value], node.output[0], None,
                    {"over": graph.dim_array(over)} | norm_epsilon(graph, node))
    return [Value(x.axes, y)]



@importer("InstanceNormalization", attributes=("epsilon",))
def instance_norm(graph: GraphState, node: Any) -> list[Value]:
    """`nn.InstanceNorm2d`, and `nn.GroupNorm` (both exporters write a group norm as an
    instance norm of `[N, G, C/G·H·W]`): a `dnn.layernorm` over the axes after the
    channels without params of its own, then the channels' scale and bias (a product and
    a sum). The scale and bias are params as every constant (`GraphState.tensor`), also
    where they are the ones and zeros an exporter writes for none (`affine=False`, a
    group norm's groups): they cannot be told from an affine norm's initial values, and
    the first step computes what the node computes either way."""
    x = graph.tensor(node.input[0])
    if len(x.axes) < 3 or x.axes[1] is None:
        raise graph.error("InstanceNormalization needs a [batch, channels, ...] input "
                          "with more than one channel")
    channels = graph.real_axis(x, 1)
    over = [a for a in x.axes[2:] if a is not None]
    if not over:
        raise graph.error("it normalizes over axes of size 1 only")
    name = node.output[0]
    y = Value(x.axes, graph.build(dnn.LayerNormOp, [x.value], f"{name}_normalized", None,
                                  {"over": graph.dim_array(over)} | norm_epsilon(graph, node)))
    for source, op, at in ((node.input[1], dnn.MulOp, f"{name}_scaled"),
                           (node.input[2], dnn.AddOp, name)):
        param = graph.tensor(source, hints=("c",))
        if len(param.axes) != 1 or not graph.same(channels, graph.real_axis(param, 0)):
            raise graph.error("its scale and bias must range over the channels")
        y = graph.elementwise(op, y, Value((param.axes[0], *(None,) * (len(x.axes) - 2)),
                                           param.ssa), at)
    return [y]
