"""Models users train, as PyTorch's two exporters wrote them (models/export_trained.py):
Hugging Face's LLaMA (and with grouped-query attention and a tied head), Mistral, Qwen2,
Qwen3, Gemma, Gemma 2, Phi-3, GPT-NeoX, OLMo, LLaMA and BERT exported with their own
loss, BART, Whisper, ELECTRA, DeBERTa-v2, ViT, DeiT, CLIP's vision tower and ResNet; a CNN
with batch norm exported in eval and in training mode, nn.TransformerEncoder batch-first
and sequence-first, an MLP with dropout exported in training mode, and a hand-written
decoder with nn.RMSNorm, rotary embeddings, a GELU-tanh gated MLP and a tied head.

Every file's first loss on one device equals onnx.reference's evaluation of the file as
pase trains it (no dropout, batch norm with the batch's statistics, each norm with the
model's own epsilon); one file per model is searched on 8 devices and passes `pase-run --devices
4 --check --steps 3`. benchmarks/RESULTS.md (branch torchx2) has the whole table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from cli import search_and_check  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402
from trained_models import TRAINED  # noqa: E402

from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import load_model  # noqa: E402
from pase.frontend.onnx.values import identifier  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"


NOT_EXPORTED = {"whisper.torchscript": "aten::diff", "rope_lm.torchscript": "aten::rms_norm"}
"""The TorchScript exporter's own failures (opset 17)."""

FILES = sorted(f"{name}.{exporter}" for name in TRAINED
               for exporter in ("dynamo", "torchscript")
               if f"{name}.{exporter}" not in NOT_EXPORTED)

SEARCHED = [f"{name}.torchscript" if i % 2 and f"{name}.torchscript" in FILES
            else f"{name}.dynamo" for i, name in enumerate(TRAINED)]
"""One file per model, the exporters taken in turn."""

def test_every_trained_fixture_is_here():
    present = {path.name.removesuffix(".onnx") for path in FOLDER.glob("*.onnx")
               if path.name.split(".")[0] in TRAINED}
    assert present == set(FILES)


def as_pase_trains(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model as pase trains it: Dropout the identity, BatchNormalization with the
    batch's statistics. The norms keep their epsilon (DeiT's 1e-12, LLaMA's 1e-6), as pase
    reads it."""
    for node in model.graph.node:
        if node.op_type == "Dropout":
            node.op_type = "Identity"
            del node.input[1:], node.output[1:], node.attribute[:]
        if node.op_type == "BatchNormalization":
            kept = [a for a in node.attribute if a.name != "training_mode"]
            del node.attribute[:]
            node.attribute.extend([*kept, helper.make_attribute("training_mode", 1)])
    return model


def first_loss_and_reference(name: str) -> tuple[float, float]:
    """pase's first loss on one device, and onnx.reference's on the same seeded inputs:
    the file's own loss, or softmax cross-entropy over its output against pase's labels
    (their axes put in the output's order: nn.TransformerEncoder's sequence-first output
    is read as [s, b, c], transposed back to [b, s, c] in the file)."""
    path = str(FOLDER / f"{name}.onnx")
    imported = load_model(path)
    graph = imported.module.ops.first
    assert isinstance(graph, dnn.GraphOp)
    data = with_initial(make_data(graph, seed=0), imported.initial_values)
    report = train(strategy_and_scale(imported.module, 1), 1, seed=0,
                   initial=imported.initial_values)
    model = as_pase_trains(onnx.load(path))
    weights = {init.name for init in model.graph.initializer}
    feeds = {value.name: data[identifier(value.name)] for value in model.graph.input
             if value.name not in weights}
    (output,) = ReferenceEvaluator(model).run([model.graph.output[0].name], feeds)
    if np.asarray(output).size == 1:
        return float(report.reference_losses[0]), float(output)
    labels = labels_in_order(graph, data)
    return float(report.reference_losses[0]), cross_entropy(np.asarray(output), labels)


def labels_in_order(graph: dnn.GraphOp, data: dict[str, np.ndarray]) -> np.ndarray:
    """pase's labels, their axes in the order of the first input's (the output's batch
    and sequence order, as every model here writes it)."""
    inputs = [op.output for op in graph.body.block.ops if isinstance(op, dnn.InputOp)]
    first, labels = (dnn.shape_of(value).dims for value in (inputs[0], inputs[-1]))
    order = [labels.index(dim) for dim in first if dim in labels]
    return data[inputs[-1].name_hint].transpose(order + [i for i in range(len(labels))
                                                         if i not in order])


@pytest.mark.parametrize("name", FILES)
def test_the_fixture_computes_what_onnx_computes(name: str):
    loss, expected = first_loss_and_reference(name)
    assert loss == pytest.approx(expected, rel=2e-5)


@pytest.mark.parametrize("name", SEARCHED)
def test_the_fixture_is_searched_and_checked(name: str, capsys: pytest.CaptureFixture[str]):
    search_and_check(str(FOLDER / f"{name}.onnx"), capsys)


def test_the_dynamo_exporters_rms_norm_is_one_layer():
    """nn.RMSNorm from the dynamo exporter reduces over axis 2 of [b, s, d] (not -1) and
    multiplies by Reciprocal(Sqrt(·)): five `dnn.rmsnorm`s (was: Reciprocal refused)."""
    ops = list(load_model(str(FOLDER / "rope_lm.dynamo.onnx")).module.ops.first.body.block.ops)
    assert sum(isinstance(op, dnn.RmsNormOp) for op in ops) == 5


def test_a_layer_norm_without_bias_gets_a_zero_bias():
    """OLMo's norms have no weights: the dynamo exporter writes LayerNormalization(x,
    ones) without B; each gets a bias param starting at zeros (was: refused)."""
    imported = load_model(str(FOLDER / "olmo.dynamo.onnx"))
    norms = [op for op in imported.module.ops.first.body.block.ops
             if isinstance(op, dnn.LayerNormOp)]
    assert len(norms) == 5
    biases = [imported.initial_values[op.operands[2].name_hint] for op in norms]
    assert all(bias.shape == (32,) and not bias.any() for bias in biases)
    assert len({op.operands[2].name_hint for op in norms}) == 5
