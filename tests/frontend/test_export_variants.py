"""What other export calls than docs/pytorch.md's write, in graphs built with onnx.helper
as PyTorch writes them (models/export_variants.py exports the real ones; docs/pytorch.md
has their matrix): a batch of 1, squeeze-and-excitation's 1x1 convolutions of a pooled
tensor, the dynamo exporter's as_strided copy, `ceil_mode=True` pooling (with one more
window since branch onnx14: test_widths_and_windows.py); each computes
what `onnx.reference` computes. And the export options pase cannot train from, each one
error naming the option: `export_params=False`, a symbolic sequence axis (float16 and
bfloat16 import: test_half_precision.py)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def model(nodes, inputs, initializers, output_shape, elem=F) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, (s, t) in inputs.items()],
        [helper.make_tensor_value_info("y", elem, output_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def node(op_type: str, inputs: list[str], output: str, **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [output], name=output, **attributes)


def classifier_head(x: str, features: int) -> tuple[list, dict]:
    """Flatten `x` (`[b, features, 1, 1]` or `[b, features]`), then a linear layer to 3
    classes: y."""
    return ([node("Flatten", [x], "flattened"),
             node("Gemm", ["flattened", "head_w", "head_b"], "y", transB=1)],
            {"head_w": weights(3, features), "head_b": weights(3)})


def batch_of_one_cnn() -> onnx.ModelProto:
    """resnet's end at batch 1: the pool's [1, c, 1, 1] reshaped to [1, c]."""
    nodes = [node("Conv", ["x", "w"], "c", pads=[1, 1, 1, 1]),
             node("GlobalAveragePool", ["c"], "p"),
             node("Reshape", ["p", "to"], "r"), node("Gemm", ["r", "head_w"], "y", transB=1)]
    return model(nodes, {"x": ([1, 2, 4, 4], F)},
                 {"w": weights(4, 2, 3, 3), "to": np.array([1, 4]), "head_w": weights(3, 4)},
                 [1, 3])


def batch_of_one_sequence() -> onnx.ModelProto:
    """GPT-2's Conv1D at batch 1: [1, s, d] viewed as [s, d], multiplied, viewed back."""
    nodes = [node("Reshape", ["x", "flat_shape"], "f"), node("MatMul", ["f", "w"], "m"),
             node("Reshape", ["m", "back"], "h"), node("Relu", ["h"], "a"),
             node("MatMul", ["a", "head_w"], "y")]
    return model(nodes, {"x": ([1, 5, 4], F)},
                 {"flat_shape": np.array([-1, 4]), "w": weights(4, 6),
                  "back": np.array([1, 5, 6]), "head_w": weights(6, 3)}, [1, 5, 3])


def squeeze_and_excitation() -> onnx.ModelProto:
    """EfficientNet's block: 1x1 convolutions of the pooled [b, c, 1, 1] scale the map."""
    nodes = [node("GlobalAveragePool", ["x"], "p"), node("Conv", ["p", "w1", "b1"], "s1"),
             node("Relu", ["s1"], "a1"), node("Conv", ["a1", "w2", "b2"], "s2"),
             node("Sigmoid", ["s2"], "g"), node("Mul", ["x", "g"], "scaled"),
             node("GlobalAveragePool", ["scaled"], "q")]
    head, head_weights = classifier_head("q", 4)
    return model(nodes + head, {"x": ([2, 4, 5, 5], F)},
                 {"w1": weights(2, 4, 1, 1), "b1": weights(2), "w2": weights(4, 2, 1, 1),
                  "b2": weights(4)} | head_weights, [2, 3])


def as_strided_copy() -> onnx.ModelProto:
    """The dynamo exporter's as_strided: the flattened tensor gathered by every index in
    order, as an array of the target's shape (ConvNeXt's classifier)."""
    nodes = [node("GlobalAveragePool", ["x"], "p"), node("Reshape", ["p", "flat"], "f"),
             node("Gather", ["f", "order"], "g")]
    head, head_weights = classifier_head("g", 4)
    return model(nodes + head, {"x": ([2, 4, 3, 3], F)},
                 {"flat": np.array([-1]), "order": np.arange(8).reshape(2, 4, 1, 1)}
                 | head_weights, [2, 3])


def ceil_mode_pool(size: int) -> onnx.ModelProto:
    """SqueezeNet's MaxPool2d(3, 2, ceil_mode=True)."""
    nodes = [node("MaxPool", ["x"], "m", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             node("GlobalAveragePool", ["m"], "p")]
    head, head_weights = classifier_head("p", 2)
    return model(nodes + head, {"x": ([2, 2, size, size], F)}, head_weights, [2, 3])


def first_loss_and_reference(onnx_model: onnx.ModelProto) -> tuple[float, float]:
    """pase's first loss on one device, and softmax cross-entropy over onnx.reference's
    evaluation of the model on the same data."""
    imported = import_model(onnx_model.SerializeToString(), "m.onnx")
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
    (logits,) = ReferenceEvaluator(onnx_model).run(None, {"x": data["x"]})
    z = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    expected = -np.take_along_axis(log_p, data["labels"][..., None], -1).mean()
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    return float(report.reference_losses[0]), float(expected)


@pytest.mark.parametrize("build", [batch_of_one_cnn, batch_of_one_sequence,
                                   squeeze_and_excitation, as_strided_copy,
                                   lambda: ceil_mode_pool(7), lambda: ceil_mode_pool(6)])
def test_the_variant_computes_what_onnx_computes(build):
    loss, expected = first_loss_and_reference(build())
    assert loss == pytest.approx(expected, rel=1e-5)


def refused(onnx_model: onnx.ModelProto, batch: int = 0) -> str:
    with pytest.raises(Diagnostic) as caught:
        import_model(onnx_model.SerializeToString(), "m.onnx", batch)
    return str(caught.value)


def test_a_model_exported_without_its_weights_is_one_error():
    """export_params=False: no initializers; the weights are graph inputs."""
    nodes = [node("Gemm", ["x", "fc.weight", "fc.bias"], "y", transB=1)]
    bare = model(nodes, {"x": ([2, 4], F), "fc.weight": ([3, 4], F), "fc.bias": ([3], F)},
                 {}, [2, 3])
    assert "input 'fc.weight' is a weight of node 'y' (Gemm) and the file has no weights: " \
           "it was exported without them (export_params=False)" in refused(bare)


def test_a_symbolic_sequence_is_named_before_the_folding_it_stops():
    """dynamic_axes={'ids': {0: 'batch', 1: 'sequence'}}: the sequence axis is named,
    even with the batch given, rather than a node its shape computations leave."""
    nodes = [node("Shape", ["ids"], "shape"), node("Cast", ["shape"], "y", to=F)]
    dynamic = model(nodes, {"ids": (["batch", "sequence"], TensorProto.INT64)}, {}, [2])
    assert "axis 1 of input 'ids' is symbolic ('sequence'); pase needs static sizes" in \
           refused(dynamic, batch=8)
