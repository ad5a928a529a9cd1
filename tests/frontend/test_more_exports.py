"""The models of models/onnx/ that models/export_more.py exported (layers the ten
architectures of export_torch.py lack), from both exporters: each imports as the layers
it spells, is searched on 8 devices and passes `pase-run --check` on 4 (one file per model,
with the other exports: test_torch_exports.py), and pase's first
loss on one device equals softmax cross-entropy over onnx.reference's evaluation of the
file on the same data and weights.

- `pads`: reflect, "same" (uneven zeros), zero before a max pool, replicate: `dnn.pad`
  (a zero pad before a convolution folds into its padding).
- `gru`: a two-layer nn.GRU language model: one `dnn.gru` per ONNX GRU node (PyTorch's
  `linear_before_reset=1`), with its input and recurrent biases.
- `swin`: torchvision's Swin Transformer (small config): PatchMerging's strided slices
  (`x[..., 0::2, 0::2, :]`) as a reshape and slices, the rolls as slices and concats,
  the dynamo export's shifted-window mask (ScatterND into a zero buffer) folded.

And the Pads and GRUs pase does not read, one error each naming the node.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import import_model, load_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import with_configs, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"
FILES = ["pads.dynamo", "pads.torchscript", "gru.dynamo", "gru.torchscript", "swin.dynamo"]
"""Swin's TorchScript export is not among them: its import takes three times as long (its
shape computations, 673 Constant nodes), and its slices are the dynamo export's."""

LAYERS = {"pads": {("pad", "reflect"): 2, ("pad", "zeros"): 4, ("pad", "edge"): 2,
                   ("conv2d", ""): 4},
          "gru": {("gru", ""): 2},
          "swin": {("slice", ""): 26, ("softmax", ""): 4, ("concat", ""): 5}}
"""The layers each model must import as (kind and count): the uneven zero pad of the
"same" convolution is two `pad zeros` (height, width), as is the max pool's. Swin's
slices: the shifted block's rolls, q, k and v, and PatchMerging's four strided slices (a
pick of the step axis each)."""


def layer_counts(graph: dnn.GraphOp, names: set[str]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for op in graph.body.block.ops:
        name = op.name.removeprefix("dnn.")
        if isinstance(op, dnn.LayerOp) and name in names:
            kind = op.kind_prop() if op.KIND is not None else ""
            counts[(name, kind)] = counts.get((name, kind), 0) + 1
    return counts


@pytest.mark.parametrize("name", FILES)
def test_the_export_imports_as_its_layers_and_computes_what_onnx_computes(name: str):
    path = str(FOLDER / f"{name}.onnx")
    imported = load_model(path)
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    wanted = LAYERS[name.split(".")[0]]
    assert layer_counts(graph, {layer for layer, _ in wanted}) == wanted
    data = with_initial(make_data(graph, seed=0), imported.initial_values)
    inputs = [op.output.name_hint or "" for op in graph.body.block.ops
              if isinstance(op, dnn.InputOp)]
    model = onnx.load(path)
    (logits,) = ReferenceEvaluator(model).run(None, {model.graph.input[0].name:
                                                     data[inputs[0]]})
    expected = cross_entropy(logits, data[inputs[-1]])
    report = train(with_configs(imported.module, None), 1, initial=imported.initial_values)
    assert report.reference_losses[0] == pytest.approx(expected, rel=1e-5)


def one_node(op_type: str, inputs: dict[str, list[int]], constants: dict[str, np.ndarray],
             output: list[int], **attributes: object) -> bytes:
    """A model of one node named 'n', reading `inputs` then `constants`, as bytes."""
    rng = np.random.default_rng(0)
    initializers = [numpy_helper.from_array(
        value if value.dtype != np.float64 else rng.standard_normal(value.shape).astype(
            np.float32), name) for name, value in constants.items()]
    graph = helper.make_graph(
        [helper.make_node(op_type, [*inputs, *constants], ["y"], name="n", **attributes)],
        "g", [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, v)
              for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, output)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def pad(pads: list[int], mode: str = "constant", value: float | None = None) -> bytes:
    constants = {"pads": np.array(pads)} | (
        {} if value is None else {"value": np.array(value, np.float32)})
    shape = [size + pads[axis] + pads[4 + axis] for axis, size in enumerate([2, 3, 6, 6])]
    return one_node("Pad", {"x": [2, 3, 6, 6]}, constants, shape, mode=mode)


def gru(**attributes: object) -> bytes:
    """A GRU over x [5 steps, 2, 4] with W, R (float64 placeholders: random weights)."""
    return one_node("GRU", {"x": [5, 2, 4]}, {"W": np.zeros((1, 12, 4)),
                                              "R": np.zeros((1, 12, 4))}, [5, 1, 2, 4],
                    hidden_size=4, **attributes)


ERRORS = {
    "wrap": (pad([0, 0, 1, 1, 0, 0, 1, 1], "wrap"),
             "Pad mode 'wrap' is not supported (only constant, reflect and edge)"),
    "value": (pad([0, 0, 1, 1, 0, 0, 1, 1], value=1.0),
              "a Pad whose value is 1 is not supported (only zeros)"),
    "crop": (pad([0, 0, -1, 0, 0, 0, 0, 0]),
             "negative pads [0, 0, -1, 0, 0, 0, 0, 0] (cropping) are not supported"),
    "slice_step": (one_node("Slice", {"x": [2, 7]}, {"starts": np.array([0]),
                                                     "ends": np.array([7]),
                                                     "axes": np.array([1]),
                                                     "steps": np.array([2])}, [2, 4]),
                   "a slice with step 2 of an axis of size 7 is supported when the size is "
                   "a multiple of the step"),
    "gru_reset": (gru(), "linear_before_reset=0 is not supported: pase's gru applies the "
                  "reset gate after the recurrent product, as PyTorch's nn.GRU "
                  "(linear_before_reset=1)"),
    "gru_reverse": (gru(linear_before_reset=1, direction="reverse"),
                    "direction=b'reverse' is not supported (only forward and "
                    "bidirectional; pase's gru runs forward)"),
}
"""What stays one error (tests/lit/frontend/onnx/pads.py shows the Pads that are read)."""


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_a_pad_gru_or_slice_pase_does_not_read_is_one_error_naming_the_node(case: str):
    data, message = ERRORS[case]
    with pytest.raises(Diagnostic) as caught:
        import_model(data, "m.onnx")
    op_type = {"gru": "GRU", "slice": "Slice"}.get(case.split("_")[0], "Pad")
    assert str(caught.value) == f"m.onnx: error: node 'n' ({op_type}): {message}"


def test_a_window_mask_is_a_constant_input_not_a_parameter():
    """Swin's shifted-window mask (0 within a window's region, -100 across, different
    for each window) added to the scores is fed as an input, not trained."""
    mask = np.zeros((2, 1, 4, 4), np.float32)
    mask[1, 0, :2, 2:] = mask[1, 0, 2:, :2] = -100.0
    graph = helper.make_graph(
        [helper.make_node("Add", ["scores", "mask"], ["y"], name="n")], "g",
        [helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, [3, 2, 2, 4, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 2, 2, 4, 4])],
        [numpy_helper.from_array(mask, "mask")])
    imported = import_model(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), "m.onnx")
    ops = list(imported.module.ops.first.body.block.ops)  # type: ignore[union-attr]
    assert not [op for op in ops if isinstance(op, dnn.ParamOp)]
    (fed,) = [value for value in imported.initial_values.values() if value.ndim == 3]
    np.testing.assert_array_equal(fed, mask.reshape(2, 4, 4))
