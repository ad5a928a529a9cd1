"""frontend/onnx/optimizer.py: onnxscript's optimizer with SlicesSplit tried only where it
can match and no node evaluated whose result it would discard gives the same model,
byte for byte, as upstream's on models where both finish."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxscript_optimizer = pytest.importorskip("onnxscript.optimizer")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnxscript import ir, rewriter  # noqa: E402

from pase.frontend.onnx import optimizer  # noqa: E402


def make(nodes, shape, output_shape, initializers=()):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ints(name, values):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(values, np.int64)))


def halves():
    """x[..., :4] + x[..., 4:] as two Slices (SlicesSplit is tried at both)."""
    return make([ints("axes", [-1]), ints("zero", [0]), ints("mid", [4]), ints("end", [8]),
                 helper.make_node("Slice", ["x", "zero", "mid", "axes"], ["a"]),
                 helper.make_node("Slice", ["x", "mid", "end", "axes"], ["b"]),
                 helper.make_node("Add", ["a", "b"], ["y"])], [2, 8], [2, 4])


def lone_slice():
    return make([ints("axes", [-1]), ints("zero", [0]), ints("mid", [4]),
                 helper.make_node("Slice", ["x", "zero", "mid", "axes"], ["y"])],
                [2, 8], [2, 4])


def chain(count=60):
    """Relu, Tanh, Relu, ... and a Relu of a Relu (fused by upstream's rules)."""
    nodes = [helper.make_node("Relu" if i % 3 else "Tanh", [f"h{i}"], [f"h{i + 1}"])
             for i in range(count)]
    nodes.insert(0, helper.make_node("Identity", ["x"], ["h0"]))
    nodes.append(helper.make_node("Identity", [f"h{count}"], ["y"]))
    return make(nodes, [2, 8], [2, 8])


def small_tile():
    """A Tile of constants small enough to keep: folded by both."""
    reps = numpy_helper.from_array(np.array([2, 4], np.int64))
    ones = numpy_helper.from_array(np.ones((1, 2), np.float32))
    return make([helper.make_node("Constant", [], ["r"], value=reps),
                 helper.make_node("Constant", [], ["k"], value=ones),
                 helper.make_node("Tile", ["k", "r"], ["t"]),
                 helper.make_node("Add", ["x", "t"], ["y"])], [2, 8], [2, 8])


@pytest.mark.parametrize("build", [halves, lone_slice, chain, small_tile])
def test_same_model_as_upstream(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = optimizer.optimize(build()).SerializeToString()
        upstream = onnxscript_optimizer.optimize(build()).SerializeToString()
    assert ours == upstream


def nodes_of(model):
    return {node.outputs[0].name: node for node in ir.serde.deserialize_model(model).graph}


def test_may_split_slices():
    halved, lone, chained = nodes_of(halves()), nodes_of(lone_slice()), nodes_of(chain(3))
    assert optimizer.may_split_slices(halved["a"])
    assert optimizer.may_split_slices(halved["b"])
    assert not optimizer.may_split_slices(lone["y"])  # the only Slice of x, 8 wide
    assert not optimizer.may_split_slices(chained["h2"])  # not a Slice


def test_too_large_to_keep():
    model = small_tile()
    tile = model.graph.node[2]
    tile.input[1] = "big"
    model.graph.node[0].output[0] = "big"
    model.graph.node[0].attribute[0].t.CopyFrom(
        numpy_helper.from_array(np.array([2**30, 2**30], np.int64)))
    graph = ir.serde.deserialize_model(model).graph
    node = next(n for n in graph if n.op_type == "Tile")
    for value in node.inputs:
        value.const_value = next(n for n in graph if n.outputs[0] is value
                                 ).attributes["value"].value
    node.outputs[0].shape = ir.Shape([2**30, 2**31])
    assert optimizer.too_large_to_keep(node)
    node.outputs[0].shape = ir.Shape([2, 8])
    assert not optimizer.too_large_to_keep(node)
    node.outputs[0].shape = ir.Shape(["n", 8])  # not static: left to upstream
    assert not optimizer.too_large_to_keep(node)


def test_rule_guarded_and_restored():
    """The rule exists in the pinned onnxscript (else nothing is guarded), is replaced
    within, and the defaults are back after."""
    before = rewriter._DEFAULT_REWRITE_RULES
    assert [rule.name for rule in before].count(optimizer.SLICES_SPLIT) == 1
    with optimizer.linear_rewrite_rules():
        inside = rewriter._DEFAULT_REWRITE_RULES
        assert len(inside) == len(before)
        changed = [new for old, new in zip(before, inside, strict=True) if old is not new]
        assert [rule.name for rule in changed] == [optimizer.SLICES_SPLIT]
    assert rewriter._DEFAULT_REWRITE_RULES is before
