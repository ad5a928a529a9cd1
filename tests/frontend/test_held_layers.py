"""The layers of models/export_held.py's exports on graphs built as the exporters write
them (no torch), each computing what onnx.reference computes: a bidirectional LSTM and
GRU (`direction="bidirectional"`, both layouts: a forward layer and a backward one over
the reversed sequence), InstanceNormalization with its scale and bias (nn.InstanceNorm2d,
and nn.GroupNorm's reshaped instance norm, its own affine a `[c, 1, 1]` product and sum
that once became one scalar when its entries were equal); and the names of copied
initializers, which once collided and lost one's initial value."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx_graphs import first_loss_and_reference, model, node  # noqa: E402

from pase.frontend.onnx import import_model  # noqa: E402
from pase.frontend.onnx.values import identifier  # noqa: E402


def weights(*shape: int) -> np.ndarray:
    """Seeded by the shape: the same draws whatever runs first."""
    return np.random.default_rng(list(shape)).standard_normal(shape).astype(np.float32)


def recurrent(kind: str, layout: int) -> onnx.ModelProto:
    """x [s, b, 4] (or [b, s, 4] with layout 1) through a bidirectional LSTM or GRU of
    4 units, Y's directions joined per step ([s, b, 8]) as PyTorch exports them, then a
    per-step head to 3 classes."""
    gates = 4 if kind == "LSTM" else 3
    extra = {} if kind == "LSTM" else {"linear_before_reset": 1}
    y_perm = [0, 2, 1, 3] if layout == 0 else [0, 1, 2, 3]
    nodes = [node(kind, ["x", "W", "R", "B"], "r", hidden_size=4,
                  direction="bidirectional", layout=layout, **extra),
             node("Transpose", ["r"], "t", perm=y_perm),
             node("Reshape", ["t", "joined"], "j"), node("MatMul", ["j", "head"], "y")]
    x_shape = [5, 2, 4] if layout == 0 else [2, 5, 4]
    return model(nodes, x_shape, {
        "W": weights(2, gates * 4, 4), "R": weights(2, gates * 4, 4),
        "B": weights(2, 2 * gates * 4), "head": weights(8, 3),
        "joined": np.array([*x_shape[:2], 8])}, [*x_shape[:2], 3])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("layout", [0, 1])
def test_a_bidirectional_layer_computes_what_onnx_computes(kind: str, layout: int):
    loss, expected = first_loss_and_reference(recurrent(kind, layout))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_a_backward_only_layer_is_one_error():
    nodes = [node("LSTM", ["x", "W", "R"], "y", hidden_size=4, direction="reverse")]
    onnx_model = model(nodes, [5, 2, 4], {"W": weights(1, 16, 4), "R": weights(1, 16, 4)},
                       [5, 1, 2, 4])
    with pytest.raises(Exception, match="direction=b'reverse' is not supported"):
        import_model(onnx_model.SerializeToString(), "m.onnx")


def norms(group: bool) -> onnx.ModelProto:
    """A 1x1 convolution to 4 channels, an instance norm (scale and bias drawn at random),
    or a group norm of 2 groups as the exporters write it (a reshape to [b, 2, -1], an
    instance norm of ones and zeros, back, the affine `[4, 1, 1]` of equal entries),
    then per-pixel scores."""
    if group:
        nodes = [node("Conv", ["x", "w"], "c"), node("Reshape", ["c", "groups"], "g"),
                 node("InstanceNormalization", ["g", "ones", "zeros"], "n", epsilon=1e-3),
                 node("Reshape", ["n", "back"], "nb"), node("Mul", ["nb", "gamma"], "m"),
                 node("Add", ["m", "beta"], "a")]
    else:
        nodes = [node("Conv", ["x", "w"], "c"),
                 node("InstanceNormalization", ["c", "scale", "bias"], "a", epsilon=1e-3)]
    nodes += [node("Conv", ["a", "out_w"], "o"), node("Transpose", ["o"], "y",
                                                      perm=[0, 2, 3, 1])]
    return model(nodes, [2, 3, 4, 5], {
        "w": weights(4, 3, 1, 1), "scale": weights(4), "bias": weights(4),
        "groups": np.array([2, 2, -1]), "back": np.array([2, 4, 4, 5]),
        "ones": np.ones(2, np.float32), "zeros": np.zeros(2, np.float32),
        "gamma": np.full((4, 1, 1), 1.5, np.float32),
        "beta": np.full((4, 1, 1), 0.5, np.float32), "out_w": weights(3, 4, 1, 1)},
        [2, 4, 5, 3])


@pytest.mark.parametrize("group", [False, True], ids=["instance norm", "group norm"])
def test_a_norm_computes_what_onnx_computes(group: bool):
    loss, expected = first_loss_and_reference(norms(group))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_a_group_norms_affine_is_one_entry_per_channel():
    imported = import_model(norms(True).SerializeToString(), "m.onnx")
    assert imported.initial_values["gamma"].shape == (4,)
    assert imported.initial_values["beta"].shape == (4,)


def test_copied_initializers_keep_their_own_initial_values():
    """`val_21` read by two nodes becomes `val_21` and a copy `val_21_2` (exporters merge
    equal initializers): as `.dnn` names they were `val21` and `val_212`, which xDSL's
    printer shortened to `val`, the name of another copy's value."""
    assert identifier("val_21_2") == "val212"
    nodes = [node("Mul", ["x", "fill"], "a"), node("Mul", ["a", "fill"], "b"),
             node("Add", ["b", "zero"], "c"), node("Add", ["c", "zero"], "y")]
    onnx_model = model(nodes, [2, 3], {"fill": np.full(3, 2.0, np.float32),
                                       "zero": np.full(3, 0.5, np.float32)}, [2, 3])
    imported = import_model(onnx_model.SerializeToString(), "m.onnx")
    values = sorted(float(v[0]) for v in imported.initial_values.values())
    assert values == [0.5, 0.5, 2.0, 2.0]
