"""ONNX graphs built as the exporters write them, for the frontend's tests (no torch): a
model of nodes over an input `x` and initializers, and its first loss in pase against
onnx.reference's evaluation (softmax cross-entropy against pase's labels)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from reference_loss import cross_entropy

from pase.frontend.onnx import import_model
from pase.tools.run.check import make_data
from pase.tools.run.load import strategy_and_scale, with_initial
from pase.tools.run.runtime import train

F = TensorProto.FLOAT


def model(nodes: list, x_shape: list[int], initializers: dict[str, np.ndarray],
          y_shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)],
        [helper.make_tensor_value_info("y", F, y_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def node(op_type: str, inputs: list[str], output: str, **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [output], name=output, **attributes)


def first_loss_and_reference(onnx_model: onnx.ModelProto) -> tuple[float, float]:
    imported = import_model(onnx_model.SerializeToString(), "m.onnx")
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
    (scores,) = ReferenceEvaluator(onnx_model).run(None, {"x": data["x"]})
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    return float(report.reference_losses[0]), cross_entropy(scores.astype(np.float64),
                                                            data["labels"])
