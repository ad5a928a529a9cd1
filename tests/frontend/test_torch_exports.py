"""The models of models/onnx/, as PyTorch's two exporters wrote them (models/export_torch.py):
each imports, is searched on 8 devices and passes `pase-run --check` on 4 (a model pase
does not read gets the one report naming what it lacks: tests/lit/frontend/onnx/errors.py).
docs/pytorch.md says which exporter wrote which and why."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from cli import run_tool  # noqa: E402
from trained_models import TRAINED  # noqa: E402

from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import load_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402
from pase.tools.pase_run import main as pase_run  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"

READ = ["mlp", "vgg11", "resnet18", "resnet50", "mobilenet_v2", "gpt2", "bert", "lstm",
        "vit_b_16", "t5", "classifier_loss", "token_loss"]
"""Architectures pase reads from every file an exporter wrote (the TorchScript exporter
fails on GPT-2: aten::diff; the dynamo exporter on T5), a classifier exported with its
loss (tests/lit/frontend/onnx/loss.py shows its IR), and a token classifier whose loss
ignores labels of -100 (`nll_loss(log_softmax(z).reshape(-1, C), labels.reshape(-1))`, read
as the loss of the unflattened scores and labels, so it micro-batches)."""

ELSEWHERE = {"bert_v510.torchscript"}
"""Fixtures tested on their own: a vocabulary 8 devices do not divide
(tests/targets/test_jax_one_mesh.py)."""
MASKED = ("bert_mask", "gpt2_mask")
"""Exported with an attention_mask input: test_padding_masks.py."""
MORE = ("pads", "gru", "swin")
"""Exported by models/export_more.py: test_more_exports.py."""
LAYERS = ("einsum", "mha_keep", "mha_padding", "conv1d", "encoder_dynamic_batch")
"""Exported by models/export_layers.py: test_layer_exports.py."""
HELD = ("lenet", "mobilenet_v3", "unet", "llama_fp16", "llama_bf16", "gpt_bf16", "bilstm",
        "bigru", "instnorm", "groupnorm", "gptj", "bilstm2", "bigru2", "upsample_ac", "ceilpool")
"""Exported by models/export_torch.py (onnx12) and models/export_held.py (onnx13, onnx14):
test_held_exports.py."""
MORE_CHECKED = ["pads.dynamo", "gru.torchscript"]
"""Of those, searched and checked here: one file per model (the two exports import as the
same layers)."""

FILES = sorted(path.name.removesuffix(".onnx") for path in FOLDER.glob("*.onnx")
               if path.name.removesuffix(".onnx") not in ELSEWHERE
               and path.name.split(".")[0] not in MASKED + MORE + LAYERS + TRAINED + HELD)
READ_FILES = [name for name in FILES if name.split(".")[0] in READ]


def test_every_file_is_read():
    assert set(FILES) == set(READ_FILES)
    assert {name.split(".")[0] for name in READ_FILES} == set(READ)


@pytest.mark.parametrize("name", READ_FILES)
def test_the_export_imports_with_its_weights(name: str):
    imported = load_model(str(FOLDER / f"{name}.onnx"))
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    ops = graph.body.block.ops
    params = [op.output.name_hint for op in ops if isinstance(op, dnn.ParamOp)]
    fixed_ids = [op.output.name_hint for op in ops if isinstance(op, dnn.InputOp)
                 and op.output.name_hint in imported.initial_values]
    assert params
    assert set(imported.initial_values) == set(params) | set(fixed_ids)
    assert all(imported.initial_values[name].dtype.kind == "i" for name in fixed_ids)
    assert bool(fixed_ids) == name.startswith("t5")


def test_t5s_relative_position_buckets_are_inputs_the_importer_fills():
    """T5's bias gathers a [32 buckets, heads] table by a constant [q, k] bucket matrix: an
    embedding whose ids are a `dnn.input` given the matrix (bucket of k - q: constant
    along each diagonal, 0 on it), which pase-run and `-t jax` programs feed."""
    imported = load_model(str(FOLDER / "t5.torchscript.onnx"))
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    lookups = [op for op in graph.body.block.ops if isinstance(op, dnn.EmbeddingOp)
               and op.operands[0].name_hint in imported.initial_values]
    assert len(lookups) == 2  # the encoder's and the decoder's first block
    for lookup in lookups:
        assert isinstance(lookup.operands[0].owner, dnn.InputOp)
        buckets = imported.initial_values[lookup.operands[0].name_hint]
        assert buckets.shape == (16, 16)
        assert (buckets[1:, 1:] == buckets[:-1, :-1]).all()
        assert (buckets.diagonal() == 0).all()
        assert 0 < buckets.max() < 32


@pytest.mark.parametrize("name", READ_FILES + MORE_CHECKED)
def test_the_export_is_searched_and_checked(name: str, capsys: pytest.CaptureFixture[str]):
    path = str(FOLDER / f"{name}.onnx")
    status, out, err = run_tool(pase_opt, [path, "-p", "pase-search{devices=8}"], capsys)
    assert status == 0, err
    assert "#pase.config" in out
    status, out, err = run_tool(pase_run, [path, "--devices", "4", "--check"], capsys)
    assert status == 0, err
    assert "check passed" in out



@pytest.mark.parametrize("name", ["classifier_loss.torchscript", "token_loss.dynamo",
                                  "token_loss.torchscript"])
def test_a_loss_with_ignored_labels_is_onnx_references_loss(name: str):
    """The exported losses have ignore_index=-100 (PyTorch's default), so pase-run's
    seeded labels have a quarter of their entries -100: pase's first loss on one device
    equals onnx.reference's evaluation of the file's own loss on the same inputs (the
    mean over the labels kept)."""
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    path = str(FOLDER / f"{name}.onnx")
    imported = load_model(path)
    graph = imported.module.ops.first
    assert isinstance(graph, dnn.GraphOp)
    data = with_initial(make_data(graph, seed=0), imported.initial_values)
    inputs = [op.output.name_hint for op in graph.body.block.ops if isinstance(op, dnn.InputOp)]
    model = onnx.load(path)
    assert len(model.graph.input) == len(inputs)
    feeds = {given.name: data[name] for given, name in zip(model.graph.input, inputs,
                                                           strict=True)}
    assert 0 < (feeds[model.graph.input[-1].name] == -100).sum()
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    report = train(strategy_and_scale(imported.module, 1), 1, seed=0,
                   initial=imported.initial_values)
    assert float(report.reference_losses[0]) == pytest.approx(float(expected), rel=1e-6)


@pytest.mark.parametrize(("name", "microbatches", "engine"), [
    ("token_loss.dynamo", "4", "pase"), ("token_loss.torchscript", "2", "jax")])
def test_micro_batches_of_a_loss_with_ignored_labels_give_the_one_device_step(
        name: str, microbatches: str, engine: str, capsys: pytest.CaptureFixture[str]):
    """nn.CrossEntropyLoss() ignores the labels -100: every micro-batch of a 2-stage
    pipeline divides by the count the whole batch keeps, so the step's loss and
    gradients are the one-device step's (--check), on pase's runtime and as the -t jax
    pipeline program (was: refused, M > 1 would divide by each micro-batch's count)."""
    if engine == "jax":
        pytest.importorskip("jax")
    path = str(FOLDER / f"{name}.onnx")
    status, out, err = run_tool(pase_run, [path, "--devices", "2", "--stages", "2",
                                           "--microbatches", microbatches, "--engine",
                                           engine, "--check"], capsys)
    assert status == 0, err
    assert f"2 stages x {microbatches} micro-batches" in out
    assert "1     2.43448" in out  # the loss (both columns: 2.434480667 on one device)
    assert "check passed" in out
