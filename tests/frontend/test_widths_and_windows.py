"""The layers of models/export_held.py's second round of exports (branch onnx14) on graphs
built as the exporters write them (no torch), each computing what onnx.reference computes:
an LSTM and a GRU whose hidden size differs from their input size (the second layer of
`nn.LSTM(num_layers=2, bidirectional=True)` reads 2h features; an embedding narrower than
the hidden state), Resize in linear mode with align_corners coordinates (`F.interpolate(
mode="bilinear", align_corners=True)`), MaxPool with `ceil_mode=1` where rounding up adds
a window (GoogLeNet's, SqueezeNet's); and one error for what stays unread."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx_graphs import first_loss_and_reference, model, node  # noqa: E402

from pase.dialect import dnn  # noqa: E402
from pase.dialect.dnn.seeding import LEARNING_RATE  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import RuntimeBackend  # noqa: E402


def weights(*shape: int) -> np.ndarray:
    """Seeded by the shape: the same draws whatever runs first."""
    return np.random.default_rng(list(shape)).standard_normal(shape).astype(np.float32)


def recurrent(kind: str, size: int, hidden: int, direction: str) -> onnx.ModelProto:
    """x [5, 2, size] through an LSTM or GRU of `hidden` units, its directions joined
    per step, then a per-step head to 3 classes."""
    gates, count = (4 if kind == "LSTM" else 3), (2 if direction == "bidirectional" else 1)
    extra = {} if kind == "LSTM" else {"linear_before_reset": 1}
    nodes = [node(kind, ["x", "W", "R", "B"], "r", hidden_size=hidden, direction=direction,
                  **extra),
             node("Transpose", ["r"], "t", perm=[0, 2, 1, 3]),
             node("Reshape", ["t", "joined"], "j"), node("MatMul", ["j", "head"], "y")]
    return model(nodes, [5, 2, size], {
        "W": weights(count, gates * hidden, size), "R": weights(count, gates * hidden, hidden),
        "B": weights(count, 2 * gates * hidden), "head": weights(count * hidden, 3),
        "joined": np.array([5, 2, count * hidden])}, [5, 2, 3])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize(("size", "hidden", "direction"), [
    (8, 4, "bidirectional"), (3, 4, "forward"), (6, 4, "forward")])
def test_a_layer_of_other_widths_computes_what_onnx_computes(kind: str, size: int,
                                                             hidden: int, direction: str):
    loss, expected = first_loss_and_reference(recurrent(kind, size, hidden, direction))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_the_padded_layer_has_the_width_of_the_wider_side():
    text = str(import_model(recurrent("LSTM", 8, 4, "bidirectional").SerializeToString(),
                            "m.onnx").module)
    assert text.count("dnn.lstm") == 2
    assert "[l = 1, k = 16, n = 32]" in text  # 8 units of 4 gates, from 8 inputs + 8 units
    assert text.count("dnn.slice") == 2 + 2 * 5  # the 4 units of each; the reversal's 5


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_the_padded_units_stay_zero_in_training(kind: str):
    """8 inputs, 4 units: the 4 units past the hidden size start with zero weights,
    biases and recurrent rows and get exactly zero gradients, so three steps of training
    leave them 0 while the live weights move."""
    imported = import_model(recurrent(kind, 8, 4, "bidirectional").SerializeToString(),
                            "m.onnx")
    gates = 4 if kind == "LSTM" else 3
    data = with_initial(make_data(imported.module.ops.first, seed=3), imported.initial_values)
    trained = RuntimeBackend(1, words=False).train(strategy_and_scale(imported.module, 1),
                                                   data, 3, LEARNING_RATE, None)
    layers = [op for op in imported.module.walk() if isinstance(op, dnn.LstmOp | dnn.GruOp)]
    assert len(layers) == 2
    for layer in layers:
        weight, *biases = (operand.name_hint for operand in layer.operands[1:])
        start, end = data[weight], trained.params[weight]
        assert start.shape == end.shape == (1, 16, 8 * gates)
        live = [gates * unit + gate for unit in range(4) for gate in range(gates)]
        dead = [column for column in range(8 * gates) if column not in live]
        assert not end[:, :, dead].any()
        assert not end[:, 12:, :].any()
        assert not np.array_equal(start[:, :12, live], end[:, :12, live])
        for bias in biases:
            assert not trained.params[bias][:, dead].any()
            assert trained.params[bias][:, live].all()


def resize(sizes: list[int], coordinates: str = "align_corners") -> onnx.ModelProto:
    """x [2, 3, 4, 6] resized to `sizes`, then a linear head over the flattened map."""
    out = [2, 3, *sizes]
    nodes = [node("Resize", ["x", "", "", "sizes"], "r", mode="linear",
                  coordinate_transformation_mode=coordinates),
             node("Reshape", ["r", "flat"], "f"), node("MatMul", ["f", "head"], "y")]
    return model(nodes, [2, 3, 4, 6], {
        "sizes": np.array(out), "flat": np.array([2, 3 * sizes[0] * sizes[1]]),
        "head": weights(3 * sizes[0] * sizes[1], 5)}, [2, 5])


@pytest.mark.parametrize("sizes", [[8, 12], [7, 9], [3, 6], [4, 2]])
def test_an_aligned_resize_computes_what_onnx_computes(sizes: list[int]):
    """Up by 2, to sizes of no whole factor, down, and one axis kept."""
    loss, expected = first_loss_and_reference(resize(sizes))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_an_aligned_resize_is_a_constant_input_not_a_param():
    """The interpolation matrices are inputs the importer fills: not trained."""
    imported = import_model(resize([8, 12]).SerializeToString(), "m.onnx")
    text = str(imported.module)
    assert "%r_h_weights = dnn.input : !dnn.tensor<[h = 4, h1 = 8], f32>" in text
    assert "%r_weights = dnn.input : !dnn.tensor<[w = 6, w1 = 12], f32>" in text
    assert "dnn.param : !dnn.tensor<[d = 288, c1 = 5], f32>" in text  # the head's only
    assert imported.initial_values["r_weights"].sum(axis=0).tolist() == [1.0] * 12


def test_an_aligned_resize_to_one_entry_is_one_error():
    with pytest.raises(Exception, match="resizing an axis of 6 to 1 with align_corners"):
        import_model(resize([4, 1]).SerializeToString(), "m.onnx")


def pool(kind: str, size: int, pads: int, window: int = 3) -> onnx.ModelProto:
    """x [2, 3, size, size] pooled by a 3x3 window of stride 2 with `ceil_mode=1`, then a
    linear head over the flattened map."""
    out = -(-(size + 2 * pads - window) // 2) + 1
    if (out - 1) * 2 >= size + pads:
        out -= 1
    nodes = [node(kind, ["x"], "p", kernel_shape=[window, window], strides=[2, 2],
                  pads=[pads] * 4, ceil_mode=1),
             node("Reshape", ["p", "flat"], "f"), node("MatMul", ["f", "head"], "y")]
    return model(nodes, [2, 3, size, size], {
        "flat": np.array([2, 3 * out * out]), "head": weights(3 * out * out, 5)}, [2, 5])


@pytest.mark.parametrize(("size", "pads", "window"), [(8, 0, 3), (8, 1, 3), (7, 1, 3),
                                                      (6, 0, 3), (9, 1, 2)])
def test_a_ceil_mode_max_pool_computes_what_onnx_computes(size: int, pads: int, window: int):
    """One more window than rounding down (8, 0; 8, 1), the same (7, 1), and where the
    rounded-up last window would start in the padding and is dropped (9, 1, window 2)."""
    loss, expected = first_loss_and_reference(pool("MaxPool", size, pads, window))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_a_ceil_mode_average_pool_with_one_more_window_is_one_error():
    with pytest.raises(Exception, match=r"node 'p' \(AveragePool\): ceil_mode=1 of an "
                                        "AveragePool is supported only where"):
        import_model(pool("AveragePool", 8, 0).SerializeToString(), "m.onnx")
