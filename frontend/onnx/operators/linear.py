"""MatMul and Gemm: einsums (and a bias add)."""

from __future__ import annotations

from typing import Any

from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


def contract(graph: GraphState, a: Value, b: Value, name: str) -> Value:
    """ONNX MatMul semantics over axis views `a` and `b` (ranks 1 and up)."""
    if len(a.axes) < 1 or len(b.axes) < 1:
        raise graph.error("MatMul of a scalar is not supported")
    k_a = graph.real_axis(a, len(a.axes) - 1)
    k_position = len(b.axes) - 2 if len(b.axes) >= 2 else 0
    k_b = graph.real_axis(b, k_position)
    if not graph.same(k_a, k_b):
        b = graph.rename(b, k_position, graph.dims.find(k_a), f"{name}_rhs")
    m = a.axes[-2] if len(a.axes) >= 2 else None
    n = b.axes[-1] if len(b.axes) >= 2 else None
    if m is not None and n is not None and graph.dims.find(m) == graph.dims.find(n):
        # Q·Kᵀ: both sides range over the sequence; the keys' becomes its own dim.
        b = graph.rename(b, len(b.axes) - 1, graph.fresh_like(n), f"{name}_keys")
        n = b.axes[-1]
    batch = graph.broadcast(a.axes[:-2], b.axes[:-2])
    axes = (*batch, *([m] if len(a.axes) >= 2 else []), *([n] if len(b.axes) >= 2 else []))
    result = [a for a in axes if a is not None]
    return Value(axes, graph.build(dnn.EinsumOp, [a.value, b.value], name,
                                   [graph.dims.find(d) for d in result]))


@importer("MatMul")
def matmul(graph: GraphState, node: Any) -> list[Value]:
    a = graph.tensor(node.input[0])
    b = graph.tensor(node.input[1], hints=("d",) * 8)
    return [contract(graph, a, b, node.output[0])]


@importer("Gemm", attributes=("alpha", "beta", "transA", "transB"))
def gemm(graph: GraphState, node: Any) -> list[Value]:
    alpha, beta = graph.attribute(node, "alpha", 1.0), graph.attribute(node, "beta", 1.0)
    if alpha != 1.0:
        raise graph.error(f"alpha={alpha:g} is not supported (only 1)")
    has_bias = len(node.input) > 2 and node.input[2]
    if has_bias and beta != 1.0:
        raise graph.error(f"beta={beta:g} is not supported (only 1)")
    a, b = graph.tensor(node.input[0]), graph.tensor(node.input[1], hints=("d", "d"))
    if len(a.axes) != 2 or len(b.axes) != 2:
        raise graph.error("Gemm takes matrices")
    if graph.attribute(node, "transA", 0):
        a = Value(a.axes[::-1], a.ssa)
    if graph.attribute(node, "transB", 0):
        b = Value(b.axes[::-1], b.ssa)
    name = node.output[0]
    if not has_bias:
        return [contract(graph, a, b, name)]
    product = contract(graph, a, b, f"{name}_matmul")
    bias = graph.tensor(node.input[2])
    return [graph.elementwise(dnn.AddOp, product, bias, name)]
