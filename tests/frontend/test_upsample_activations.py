"""The operators models/onnx's LeNet, MobileNetV3 and U-Net need, on graphs built as the
exporters write them (no torch): LeakyRelu, HardSigmoid and HardSwish
(frontend/onnx/operators/activations.py), ConvTranspose with its stride equal to its
window and nearest Resize by whole factors (operators/upsample.py), each computing what
onnx.reference computes; one error naming the attribute for what they do not read; and
GPT-J's repeat_interleave reshape, `[1, s, 1, r/2, 2]` to `[1, s, 1, r]`, which sent the
import into endless recursion (an internal error), now one error at the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def model(nodes: list, x_shape: list[int], initializers: dict[str, np.ndarray],
          y_shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)],
        [helper.make_tensor_value_info("y", F, y_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def node(op_type: str, inputs: list[str], output: str, **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [output], name=output, **attributes)


def activations() -> onnx.ModelProto:
    """A linear layer, LeakyRelu (alpha 0.1), HardSwish, HardSigmoid (alpha 0.25, beta
    0.4) scaling it, a head."""
    nodes = [node("MatMul", ["x", "w"], "h"), node("LeakyRelu", ["h"], "l", alpha=0.1),
             node("HardSwish", ["l"], "s"),
             node("HardSigmoid", ["h"], "g", alpha=0.25, beta=0.4),
             node("Mul", ["s", "g"], "m"), node("MatMul", ["m", "head"], "y")]
    return model(nodes, [4, 6], {"w": weights(6, 8) * 3, "head": weights(8, 3)}, [4, 3])


def upsampling(resize_inputs: list[str]) -> onnx.ModelProto:
    """A U-Net's up path: ConvTranspose 2x2 stride 2 with a bias, and Resize (nearest,
    asymmetric, floor) of the same input, added, then per-pixel scores `[b, h, w, 3]`."""
    nodes = [node("ConvTranspose", ["x", "up_w", "up_b"], "u", kernel_shape=[2, 2],
                  strides=[2, 2]),
             node("Resize", ["x", *resize_inputs], "r", mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             node("Conv", ["r", "mix_w"], "c"), node("Add", ["u", "c"], "a"),
             node("Relu", ["a"], "z"), node("Conv", ["z", "out_w"], "o"),
             node("Transpose", ["o"], "y", perm=[0, 2, 3, 1])]
    return model(nodes, [2, 4, 3, 5], {
        "up_w": weights(4, 6, 2, 2), "up_b": weights(6), "mix_w": weights(6, 4, 1, 1),
        "out_w": weights(3, 6, 1, 1), "roi": np.zeros(0, np.float32),
        "scales": np.array([1, 1, 2, 2], np.float32),
        "sizes": np.array([2, 4, 6, 10], np.int64)}, [2, 6, 10, 3])


def first_loss_and_reference(onnx_model: onnx.ModelProto) -> tuple[float, float]:
    imported = import_model(onnx_model.SerializeToString(), "m.onnx")
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
    (scores,) = ReferenceEvaluator(onnx_model).run(None, {"x": data["x"]})
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    return float(report.reference_losses[0]), cross_entropy(scores.astype(np.float64),
                                                            data["labels"])


@pytest.mark.parametrize("build", [activations, lambda: upsampling(["roi", "scales"]),
                                   lambda: upsampling(["", "", "sizes"])],
                         ids=["activations", "upsampling by scales", "upsampling by sizes"])
def test_the_layers_compute_what_onnx_computes(build):
    loss, expected = first_loss_and_reference(build())
    assert loss == pytest.approx(expected, rel=1e-5)


def refused(onnx_model: onnx.ModelProto) -> str:
    with pytest.raises(Diagnostic) as caught:
        import_model(onnx_model.SerializeToString(), "m.onnx")
    return str(caught.value)


def test_an_overlapping_transposed_convolution_is_one_error():
    nodes = [node("ConvTranspose", ["x", "w"], "y", kernel_shape=[3, 3], strides=[2, 2])]
    message = refused(model(nodes, [2, 4, 3, 3], {"w": weights(4, 2, 3, 3)}, [2, 2, 7, 7]))
    assert "node 'y' (ConvTranspose): strides=[2, 2] with a 3x3 window is not supported " \
           "(only strides equal to the window" in message


def test_a_bilinear_resize_is_one_error():
    nodes = [node("Resize", ["x", "", "scales"], "y", mode="linear")]
    message = refused(model(nodes, [2, 4, 3, 3], {"scales": np.array([1, 1, 2, 2],
                                                                      np.float32)},
                            [2, 4, 6, 6]))
    assert "node 'y' (Resize): mode=linear, coordinate_transformation_mode=half_pixel, " \
           "nearest_mode=round_prefer_floor is not supported (only nearest, asymmetric, " \
           "floor" in message


def test_gpt_js_repeat_interleave_reshape_is_one_error_not_a_recursion():
    """sin [1, s, 1, r/2] repeated twice along a new last axis and merged to [1, s, 1, r]
    (GPT-J's rotary embedding, the dynamo exporter), multiplying the queries: the reshape
    no longer recurses forever (Python's RecursionError, an internal error); the product
    then is one error at the node (the broadcast's size-1 axes are dims of their own in
    pase, which do not broadcast against the batch)."""
    nodes = [node("MatMul", ["x", "w"], "q"), node("Reshape", ["q", "heads"], "q4"),
             node("Unsqueeze", ["sin", "last"], "s1"), node("Expand", ["s1", "twice"], "s2"),
             node("Reshape", ["s2", "merged"], "s3"), node("Mul", ["q4", "s3"], "m"),
             node("Reshape", ["m", "flat"], "y")]
    message = refused(model(nodes, [2, 5, 8], {
        "w": weights(8, 8), "sin": weights(1, 5, 1, 4), "last": np.array([4]),
        "twice": np.array([1, 5, 1, 4, 2]), "merged": np.array([1, 5, 1, 8]),
        "heads": np.array([2, 5, 1, 8]), "flat": np.array([2, 5, 8])}, [2, 5, 8]))
    assert "node 'm' (Mul): axes of sizes 2 and 1 must be equal" in message
