"""The ONNX frontend's mapping tables and Python API (its IR and errors are lit tests:
tests/lit/frontend/onnx/)."""

from __future__ import annotations

import sys
from io import BytesIO

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from xdsl.context import Context  # noqa: E402
from xdsl.utils.arg_spec import parse_spec  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.frontend import onnx as frontend  # noqa: E402
from pase.frontend.onnx import OPERATORS, OnnxFrontend, import_model  # noqa: E402
from pase.frontend.onnx.dims import DimTable  # noqa: E402
from pase.frontend.onnx.patterns import fuse_erf_gelu  # noqa: E402

ISSUE_OPERATORS = (
    "MatMul Gemm Conv MaxPool AveragePool GlobalAveragePool Relu Gelu Tanh Sigmoid Exp Add Sub "
    "Mul Div Softmax LayerNormalization BatchNormalization ReduceMean ReduceSum Reshape "
    "Flatten Transpose Concat Gather Identity Dropout").split()


def model(nodes, inputs, output, initializers=None, opset=17, output_rank=2) -> bytes:
    values = [helper.make_tensor_value_info(name, element, shape)
              for name, (shape, element) in inputs.items()]
    out = helper.make_tensor_value_info(output, TensorProto.FLOAT,
                                        [f"o{i}" for i in range(output_rank)])
    graph = helper.make_graph(
        nodes, "g", values, [out],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                             ).SerializeToString()


def ops_of(imported: frontend.Imported) -> list[str]:
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    return [op.name for op in graph.body.block.ops
            if not isinstance(op, dnn.InputOp | dnn.ParamOp | dnn.ReturnOp)]


F = TensorProto.FLOAT


def test_every_operator_of_the_issue_has_an_importer():
    assert set(ISSUE_OPERATORS) <= set(OPERATORS)
    for operator in OPERATORS.values():
        assert callable(operator.function)


def test_an_op_type_registered_twice_is_refused():
    from pase.frontend.onnx.registry import importer

    with pytest.raises(ValueError, match="two importers of ONNX Relu"):
        importer("Relu")(lambda graph, node: [])


@pytest.mark.parametrize(("op_type", "expected"), [
    ("Relu", "dnn.relu"), ("Tanh", "dnn.tanh"), ("Sigmoid", "dnn.sigmoid"),
    ("Exp", "dnn.exp"), ("Gelu", "dnn.gelu"),
])
def test_unary_operators_map_to_their_dnn_op(op_type: str, expected: str):
    opset = 20 if op_type == "Gelu" else 17
    data = model([helper.make_node(op_type, ["x"], ["y"])], {"x": ([2, 3], F)}, "y",
                 opset=opset)
    assert ops_of(import_model(data, "m.onnx", loss="mean")) == [expected, "dnn.reduce"]


@pytest.mark.parametrize(("op_type", "expected"), [
    ("Add", "dnn.add"), ("Sub", "dnn.sub"), ("Mul", "dnn.mul"), ("Div", "dnn.mul"),
])
def test_binary_operators_broadcast_a_constant_row(op_type: str, expected: str):
    data = model([helper.make_node(op_type, ["x", "row"], ["y"])], {"x": ([2, 3], F)}, "y",
                 {"row": np.full((1, 3), 2.0, np.float32)})
    imported = import_model(data, "m.onnx")
    assert ops_of(imported) == [expected, "dnn.softmax_cross_entropy"]
    # The constant's axis of size 1 is dropped; Div multiplies by the reciprocal.
    (value,) = imported.initial_values.values()
    assert value.shape == (3,)
    assert np.all(value == (0.5 if op_type == "Div" else 2.0))


def test_initializers_are_the_initial_values_of_their_params():
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    data = model([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)],
                 {"x": ([2, 3], F)}, "y", {"w": weight})
    imported = import_model(data, "m.onnx")
    assert list(imported.initial_values) == ["w"]
    np.testing.assert_array_equal(imported.initial_values["w"], weight)
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    param = next(op for op in graph.body.block.ops if isinstance(op, dnn.ParamOp))
    # The param keeps ONNX's layout [out, in]; transB only names its axes.
    assert param.output.type.shape.sizes == (4, 3)


def test_an_unused_initializer_is_no_param():
    data = model([helper.make_node("Relu", ["x"], ["y"])], {"x": ([2, 3], F)}, "y",
                 {"unused": np.ones(3, np.float32)})
    assert import_model(data, "m.onnx").initial_values == {}


def test_the_frontend_reads_its_options_from_the_spec():
    frontend_ = OnnxFrontend.from_spec(parse_spec('onnx{batch=8 loss="mean"}'))
    assert (frontend_.batch, frontend_.loss) == (8, "mean")
    data = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (["n", 3], F)}, "y")
    module = frontend_.parse(Context(), BytesIO(data), "m.onnx")
    (graph,) = module.ops
    assert isinstance(graph, dnn.GraphOp)
    assert graph.dims == {"b": 8, "d": 3}


def test_without_the_onnx_package_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    with pytest.raises(Diagnostic, match=r"pip install 'pase\[onnx\]'"):
        import_model(b"", "m.onnx")


def _gelu_nodes(half_first: bool, scale: str = "half") -> list:
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["p"])]
    if half_first:
        return nodes + [helper.make_node("Mul", ["x", scale], ["h"]),
                        helper.make_node("Mul", ["h", "p"], ["y"])]
    return nodes + [helper.make_node("Mul", ["p", "x"], ["m"]),
                    helper.make_node("Mul", [scale, "m"], ["y"])]


CONSTANTS = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5),
             "third": np.float32(1 / 3)}


@pytest.mark.parametrize("half_first", [True, False])
def test_the_erf_gelu_pattern_becomes_one_gelu(half_first: bool):
    nodes = fuse_erf_gelu(onnx, _gelu_nodes(half_first), CONSTANTS.get)
    assert [(n.op_type, list(n.input), list(n.output)) for n in nodes] == [
        ("Gelu", ["x"], ["y"])]


def test_a_near_miss_of_the_gelu_pattern_is_left_alone():
    nodes = _gelu_nodes(True, scale="third")
    assert fuse_erf_gelu(onnx, nodes, CONSTANTS.get) == nodes


def test_dims_of_one_tensor_are_never_merged():
    table = DimTable()
    s, t = table.new(16, "s"), table.new(16, "s")
    table.record([s, t])
    assert not table.unify(s, t)
    other = table.new(16, "s")
    assert table.unify(s, other)
    assert table.names() == {s: "s", t: "s1"}


def test_lstm_weights_computed_from_a_parameter_are_folded_as_a_small_export_has_them():
    """The dynamo exporter reorders a large nn.LSTM's gates (PyTorch's i, f, g, o into
    ONNX's i, o, f, c) with Slice, Concat and Unsqueeze of `weight_ih_l0` instead of
    folding them: pase imports the same layer, with the same initial weights, as from
    the folded W it writes for a small one."""
    rng = np.random.default_rng(0)
    torch_order = rng.standard_normal((16, 4)).astype(np.float32)
    onnx_order = np.concatenate([torch_order[i * 4:(i + 1) * 4] for i in (0, 3, 1, 2)])
    common = {"r": rng.standard_normal((1, 16, 4)).astype(np.float32),
              "zeros": np.zeros((1, 2, 4), np.float32), "one": np.array([1])}
    lstm = helper.make_node("LSTM", ["x", "w", "r", "", "", "zeros", "zeros"], ["y"],
                            name="lstm", hidden_size=4)
    squeeze = helper.make_node("Squeeze", ["y", "one"], ["out"])
    inputs = {"x": ([3, 2, 4], F)}
    folded = model([lstm, squeeze], inputs, "out", {"w": onnx_order[None], **common}, 17, 3)
    bounds = {f"at{k}": np.array([4 * k]) for k in range(5)}
    gates = [helper.make_node("Slice", ["w_ih", f"at{k}", f"at{k + 1}", "zero"], [f"g{k}"])
             for k in range(4)]
    computed = model([*gates, helper.make_node("Concat", ["g0", "g3", "g1", "g2"], ["cat"],
                                               axis=0),
                      helper.make_node("Unsqueeze", ["cat", "zero"], ["w"]), lstm, squeeze],
                     inputs, "out", {"w_ih": torch_order, "zero": np.array([0]), **bounds,
                                     **common}, 17, 3)
    expected, got = import_model(folded, "folded.onnx"), import_model(computed, "m.onnx")
    assert ops_of(got) == ops_of(expected)
    assert "dnn.lstm" in ops_of(got)
    assert "dnn.slice" not in ops_of(got)
    assert got.initial_values.keys() == expected.initial_values.keys()
    for name, value in expected.initial_values.items():
        np.testing.assert_array_equal(got.initial_values[name], value)


def test_folding_that_would_grow_the_constants_past_their_budget_is_one_error(monkeypatch):
    """A few bytes of ConstantOfShape nodes can ask for gigabytes once folded (twenty
    64 MiB outputs took 9 GiB): the constants' total is bounded, the node named."""
    import onnx

    from pase.frontend.onnx import folding

    monkeypatch.setattr(folding, "MAX_CONSTANT_BYTES", 100)
    fill = helper.make_tensor("v", F, [1], [1.0])
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["s"], ["a"], name="small", value=fill),
         helper.make_node("ConstantOfShape", ["s"], ["b"], name="over", value=fill),
         helper.make_node("Add", ["a", "b"], ["y"])],
        "g", [], [helper.make_tensor_value_info("y", F, [4, 4])],
        [numpy_helper.from_array(np.array([4, 4]), "s")])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(Diagnostic, match=r"m.onnx: error: node 'over' \(ConstantOfShape\): "
                       r"folding it to a constant would bring the model's constants to 144 "
                       r"bytes, over the 100 pase folds"):
        folding.fold_constant_nodes(onnx, onnx_model, "m.onnx")
