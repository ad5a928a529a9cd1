"""The operators models/onnx's LeNet, MobileNetV3 and U-Net need, on graphs built as the
exporters write them (no torch): LeakyRelu, HardSigmoid and HardSwish
(frontend/onnx/operators/activations.py), ConvTranspose with its stride equal to its
window, nearest Resize by whole factors (operators/upsample.py) and bilinear Resize
(operators/interpolate.py), each computing what onnx.reference computes; one error naming
the attribute for what they do not read; and GPT-J's rotary embedding (its
repeat_interleave reshape, `[1, s, 1, r/2, 2]` to `[1, s, 1, r]`, once an endless
recursion, then one error; and its torch.stack), computing what onnx.reference computes."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx_graphs import first_loss_and_reference, model, node  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402

RNG = np.random.default_rng(0)


def weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


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


def test_a_bicubic_resize_is_one_error():
    """(align_corners=True reads since branch onnx14: test_widths_and_windows.py.)"""
    nodes = [node("Resize", ["x", "", "scales"], "y", mode="cubic",
                  coordinate_transformation_mode="align_corners")]
    message = refused(model(nodes, [2, 4, 3, 3], {"scales": np.array([1, 1, 2, 2],
                                                                      np.float32)},
                            [2, 4, 6, 6]))
    assert "node 'y' (Resize): mode=cubic, coordinate_transformation_mode=align_corners, " \
           "nearest_mode=round_prefer_floor is not supported (only nearest, asymmetric, " \
           "floor" in message


def bilinear(factors: list[int]) -> onnx.ModelProto:
    """Resize in linear mode with half_pixel coordinates (F.interpolate(mode="bilinear")),
    then per-pixel scores `[b, h, w, 3]`."""
    nodes = [node("Resize", ["x", "", "scales"], "r", mode="linear"),
             node("Conv", ["r", "out_w"], "o"), node("Transpose", ["o"], "y", perm=[0, 2, 3, 1])]
    return model(nodes, [2, 4, 3, 5], {
        "out_w": weights(3, 4, 1, 1), "scales": np.array([1, 1, *factors], np.float32)},
        [2, 3 * factors[0], 5 * factors[1], 3])


@pytest.mark.parametrize("factors", [[2, 2], [3, 1], [1, 4]])
def test_a_bilinear_resize_computes_what_onnx_computes(factors):
    """Each phase of each axis (weights 1/4 and 3/4 by 2, 1/3 and 2/3 and 1 by 3, ...),
    the edges clamped."""
    loss, expected = first_loss_and_reference(bilinear(factors))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_gpt_js_rotary_embedding_computes_what_onnx_computes():
    """sin [1, s, 1, r/2] repeated twice along a new last axis and merged to [1, s, 1, r]
    (GPT-J's rotary embedding, the dynamo exporter), multiplying the queries: the
    broadcast's size-1 axes, dims of their own in pase, are dropped where the product
    broadcasts them (once an endless recursion, then one error); and rotate_every_two's
    `torch.stack` (Unsqueeze both, Concat along the new axis) joins along a dim of size
    1 of their own."""
    nodes = [node("MatMul", ["x", "w"], "q"), node("Reshape", ["q", "heads"], "q4"),
             node("Unsqueeze", ["sin", "last"], "s1"), node("Expand", ["s1", "twice"], "s2"),
             node("Reshape", ["s2", "merged"], "s3"), node("Mul", ["q4", "s3"], "m"),
             node("Neg", ["q4"], "n"), node("Unsqueeze", ["n", "last"], "n5"),
             node("Unsqueeze", ["q4", "last"], "q5"),
             node("Concat", ["n5", "q5"], "stack", axis=-1),
             node("Reshape", ["stack", "pairs"], "rotated"),
             node("Concat", ["m", "rotated"], "a", axis=-1),
             node("Reshape", ["a", "flat"], "y")]
    loss, expected = first_loss_and_reference(model(nodes, [2, 5, 16], {
        "w": weights(16, 16), "sin": weights(1, 5, 1, 4), "last": np.array([4]),
        "twice": np.array([1, 5, 1, 4, 2]), "merged": np.array([1, 5, 1, 8]),
        "heads": np.array([2, 5, 2, 8]), "pairs": np.array([2, 5, 2, 16]),
        "flat": np.array([2, 5, 48])}, [2, 5, 48]))
    assert loss == pytest.approx(expected, rel=1e-5)
