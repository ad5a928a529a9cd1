"""Layers PyTorch users export that pase once refused (models/export_layers.py, whose
whole matrix benchmarks/RESULTS.md records, branch torchx), on the fixtures committed in
models/onnx/ (TorchScript exports) and on graphs built with onnx.helper:

- `einsum`: torch.einsum's ONNX Einsum (projections `bsd,dhe->bhse`, scores
  `bhse,bhte->bhst`, three operands `bhst,bhte,hec->bsc`) as `dnn.einsum`;
- `conv1d`: nn.Conv1d (padding, stride, groups, "same"), MaxPool1d and
  AdaptiveAvgPool1d(1) as 2-D windows of height 1 between two `dnn.reshape`s;
- `encoder_dynamic_batch`: an nn.TransformerEncoderLayer exported with `dynamic_axes`
  (a symbolic batch), read with `batch=8`: the shape computations that read the batch
  (nn.MultiheadAttention's sizes) are folded, as at a static batch;
- `mha_keep`: nn.MultiheadAttention given an attention_mask input (1 = keep) turned into
  its key_padding_mask in forward, read as `dnn.mask padding`;
- `mha_padding`: given the key_padding_mask itself (true = padding), one error saying
  how to export it.

Each one read is searched on 8 devices, passes `pase-run --check` on 4, and pase's first
loss on one device equals softmax cross-entropy over onnx.reference's evaluation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from cli import run_tool  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import import_model, load_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402
from pase.tools.pase_run import main as pase_run  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import with_configs, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"
READ = ["einsum", "mha_keep", "conv1d", "encoder_dynamic_batch"]
BATCH = {"encoder_dynamic_batch": 8}
"""The batch a file exported with a symbolic batch is read at (-f 'onnx{batch=8}',
pase-run --batch 8)."""
RNG = np.random.default_rng(0)


def first_loss_and_reference(model: onnx.ModelProto, imported) -> tuple[float, float]:
    """pase's first loss on one device, and cross-entropy over onnx.reference's output,
    on the same seeded inputs and the model's weights."""
    graph = imported.module.ops.first
    data = with_initial(make_data(graph, seed=0), imported.initial_values)
    inputs = [op.output.name_hint for op in graph.body.block.ops
              if isinstance(op, dnn.InputOp)]
    feeds = {given.name: data[name] for given, name in zip(model.graph.input, inputs,
                                                           strict=False)}
    (logits,) = ReferenceEvaluator(model).run(None, feeds)
    report = train(with_configs(imported.module, None), 1, initial=imported.initial_values)
    return float(report.reference_losses[0]), cross_entropy(logits, data[inputs[-1]])


@pytest.mark.parametrize("name", READ)
def test_the_fixture_computes_what_onnx_computes(name: str):
    path = str(FOLDER / f"{name}.torchscript.onnx")
    loss, expected = first_loss_and_reference(onnx.load(path),
                                              load_model(path, BATCH.get(name, 0)))
    assert loss == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("name", READ)
def test_the_fixture_is_searched_and_checked(name: str, capsys: pytest.CaptureFixture[str]):
    path = str(FOLDER / f"{name}.torchscript.onnx")
    batch = BATCH.get(name)
    status, out, err = run_tool(pase_opt, [path, "-p", "pase-search{devices=8}", *(
        ["-f", f"onnx{{batch={batch}}}"] if batch else [])], capsys)
    assert status == 0, err
    assert "#pase.config" in out
    status, out, err = run_tool(pase_run, [path, "--devices", "4", "--check", *(
        ["--batch", str(batch)] if batch else [])], capsys)
    assert status == 0, err
    assert "check passed" in out


def test_a_symbolic_batch_needs_its_size(capsys: pytest.CaptureFixture[str]):
    path = str(FOLDER / "encoder_dynamic_batch.torchscript.onnx")
    status, _, err = run_tool(pase_opt, [path], capsys)
    assert status == 1
    assert err == (f"{path}: error: the batch axis of input 'x' is symbolic ('batch'); give "
                   "its size: -f 'onnx{batch=N}' (pase-run: --batch N)\n")


def test_conv1d_is_a_convolution_of_height_1():
    imported = load_model(str(FOLDER / "conv1d.torchscript.onnx"))
    ops = list(imported.module.ops.first.body.block.ops)
    convs = [op for op in ops if isinstance(op, dnn.Conv2dOp)]
    pools = [op for op in ops if isinstance(op, dnn.Pool2dOp)]
    assert [op.groups.data if op.groups else 1 for op in convs] == [1, 4, 16]
    assert [op.stride.data for op in convs] == [1, 2, 1]
    assert [dnn.shape_of(op.results[0]).sizes for op in convs + pools] == [
        (8, 16, 1, 32), (8, 16, 1, 16), (8, 16, 1, 8), (8, 16, 1, 8)]
    assert sum(isinstance(op, dnn.ReshapeOp) for op in ops) == 8


def test_a_key_padding_mask_input_is_one_error(capsys: pytest.CaptureFixture[str]):
    path = str(FOLDER / "mha_padding.torchscript.onnx")
    status, out, err = run_tool(pase_opt, [path], capsys)
    assert status == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "error: node '/attention/Add_2' (Add): the model's input 'key_padding_mask.1'" in err
    assert "key_padding_mask=(attention_mask == 0)" in err


def einsum_model(equation: str, shapes: list[list[int]], out: list[int]) -> onnx.ModelProto:
    """x (the first operand) is an input, the others weights; y the Einsum."""
    names = [f"w{i}" for i in range(len(shapes))]
    names[0] = "x"
    graph = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], name="e", equation=equation)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shapes[0])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        [numpy_helper.from_array(RNG.standard_normal(s).astype(np.float32), n)
         for n, s in zip(names[1:], shapes[1:], strict=True)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("equation", "shapes", "out"), [
    ("...d,de->...e", [[4, 3, 5], [5, 6]], [4, 3, 6]),         # a linear layer, ellipsis
    ("bij,bjk", [[4, 3, 5], [4, 5, 6]], [3, 6]),               # implicit: ik (b summed)
    ("bs d , d c -> b s c", [[4, 3, 5], [5, 6]], [4, 3, 6]),   # spaces
    ("bsd->bds", [[4, 3, 5]], [4, 5, 3]),                      # a transpose
    ("bsd,tsd->bst", [[4, 3, 5], [3, 3, 5]], [4, 3, 3]),       # s and t the same size
    ("b1d,de->be".replace("1", "o"), [[4, 1, 5], [5, 6]], [4, 6]),  # an axis of size 1
])
def test_an_einsum_computes_what_onnx_computes(equation: str, shapes: list[list[int]],
                                               out: list[int]):
    model = einsum_model(equation, shapes, out)
    imported = import_model(model.SerializeToString(), "einsum.onnx")
    loss, expected = first_loss_and_reference(model, imported)
    assert loss == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(("equation", "shapes", "out", "message"), [
    ("bii->bi", [[4, 3, 3]], [4, 3],
     "node 'e' (Einsum): equation 'bii->bi': a letter repeated in one operand (a diagonal) "
     "is not supported"),
    ("bd,de,ef,fg->bg", [[4, 5], [5, 6], [6, 7], [7, 8]], [4, 8],
     "node 'e' (Einsum): an einsum of 4 operands is not supported"),
    ("bd,de->be", [[4, 5], [6, 7]], [4, 7],
     "node 'e' (Einsum): axes of sizes 6 and 5 must be equal"),
])
def test_an_einsum_pase_does_not_read_is_one_error(equation: str, shapes: list[list[int]],
                                                   out: list[int], message: str):
    with pytest.raises(Diagnostic) as error:
        import_model(einsum_model(equation, shapes, out).SerializeToString(), "einsum.onnx")
    assert str(error.value).startswith("einsum.onnx: error: ")
    assert message in str(error.value)
