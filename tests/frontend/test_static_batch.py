"""`-f 'onnx{batch=N}'` on a model exported with a static batch (was: silently ignored,
the model kept its own batch): resized where the graph allows it, else one error that
says how to export the model, exit 1."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from cli import run_tool  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402

ADVICE = ("the model's batch is static (4) and its graph fixes it, so -f 'onnx{batch=8}' "
          "(pase-run --batch 8) cannot change it; export it with a symbolic batch")


def model(shape: list[int] | None = None, output_rows: int = 4) -> bytes:
    """x [4, 2, 3] -> Reshape to `shape` (default [0, 6]: the batch as it is) -> Gemm
    with a [6, 5] weight; the output [output_rows, 5] (an exporter writes the rows it saw
    at export time)."""
    shape = shape or [0, 6]
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "w"], ["y"])]
    initializers = [numpy_helper.from_array(np.array(shape, np.int64), "shape"),
                    numpy_helper.from_array(rng.normal(size=(6, 5)).astype(np.float32), "w")]
    graph = helper.make_graph(
        nodes, "static", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [output_rows, 5])],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def input_sizes(data: bytes, batch: int) -> list[tuple[int, ...]]:
    (graph,) = import_model(data, "static.onnx", batch).module.ops
    return [dnn.shape_of(op.output).sizes for op in graph.body.block.ops
            if isinstance(op, dnn.InputOp)]


def test_a_static_batch_the_graph_does_not_fix_is_resized():
    """The inputs (x, and the labels pase adds) at batch 8; at 4 or without a batch, as
    exported."""
    assert input_sizes(model(), 8) == [(8, 2, 3), (8,)]
    assert input_sizes(model(), 4) == [(4, 2, 3), (4,)]
    assert input_sizes(model(), 0) == [(4, 2, 3), (4,)]


def test_a_batch_fixed_in_a_shape_constant_is_one_error():
    """Reshape to [4, 6]: 48 elements at batch 8 do not fit (shape inference fails)."""
    with pytest.raises(Diagnostic, match=re.escape(ADVICE)):
        import_model(model([4, 6]), "static.onnx", 8)


def test_a_batch_fixed_so_that_the_shapes_still_infer_is_one_error():
    """Reshape to [4, -1], then a sum over axis 1: at batch 8 the shapes infer ([4, 12],
    then [4, 1]) but the output keeps 4 rows, the sums mixing two samples each."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["rows"]),
             helper.make_node("ReduceSum", ["rows", "axis"], ["y"], keepdims=1)]
    initializers = [numpy_helper.from_array(np.array([4, -1], np.int64), "shape"),
                    numpy_helper.from_array(np.array([1], np.int64), "axis")]
    graph = helper.make_graph(
        nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1])], initializers)
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()
    with pytest.raises(Diagnostic, match=r"\(output 'y' has shape \[4, 1\] at batch 8\)"):
        import_model(data, "mixed.onnx", 8)


def test_pase_opt_says_it_once_and_exits_1(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "static.onnx"
    path.write_bytes(model([4, 6]))
    status, out, err = run_tool(pase_opt, [str(path), "-f", "onnx{batch=8}"], capsys)
    assert (status, out) == (1, "")
    assert err.count("error") == 1
    assert ADVICE in err
