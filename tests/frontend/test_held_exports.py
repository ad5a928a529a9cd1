"""Real PyTorch exports pase once refused, bundled in models/onnx/ (models/export_torch.py
writes them, both exporters): LeNet (LeakyRelu), MobileNetV3-Small (HardSwish,
HardSigmoid), a U-Net (ConvTranspose with stride 2, nearest Resize), and LLaMA and a
GPT-2-style decoder exported in float16 and bfloat16 (read as their float32 master copy);
and (models/export_held.py) token taggers over a bidirectional LSTM and GRU, CNNs with
InstanceNorm2d and with GroupNorm and a bilinear upsampling, and GPT-J; and (onnx14) taggers
over a two-layer bidirectional LSTM and GRU, a CNN with bilinear upsampling of
align_corners=True, and one with GoogLeNet's MaxPool2d(ceil_mode=True).
Each file's first loss on one device equals onnx.reference's evaluation of the file;
each is searched on 8 devices and passes `pase-run --devices 4 --check --steps 3`.

The graph-built cases below hold what the exports need without torch: the operators'
arithmetic against onnx.reference, and one error for what they do not read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from cli import search_and_check  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.frontend.onnx import load_model  # noqa: E402
from pase.frontend.onnx.half_precision import to_float32  # noqa: E402
from pase.frontend.onnx.values import identifier  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"
FLOAT32 = ["lenet", "mobilenet_v3", "unet", "bilstm", "bigru", "instnorm", "groupnorm", "gptj",
           "bilstm2", "bigru2", "upsample_ac", "ceilpool"]
HALF = ["llama_fp16", "llama_bf16", "gpt_bf16"]
NOT_EXPORTED = {"llama_bf16.torchscript": "ScalarType ComplexDouble"}
"""The TorchScript exporter's own failure (opset 17)."""
FILES = sorted(f"{name}.{exporter}" for name in FLOAT32 + HALF
               for exporter in ("dynamo", "torchscript")
               if f"{name}.{exporter}" not in NOT_EXPORTED)


def test_every_fixture_is_here():
    present = {path.name.removesuffix(".onnx") for path in FOLDER.glob("*.onnx")
               if path.name.split(".")[0] in FLOAT32 + HALF}
    assert present == set(FILES)


def first_losses(path: Path) -> tuple[float, float, float]:
    """pase's first loss on one device; onnx.reference's on the same inputs, of the file
    as exported and of its float32 copy (the same for a float32 file): its own loss, or
    softmax cross-entropy over its output against pase's labels."""
    imported = load_model(str(path))
    data = with_initial(make_data(imported.module.ops.first, seed=0), imported.initial_values)
    report = train(strategy_and_scale(imported.module, 1), 1, seed=0,
                   initial=imported.initial_values)
    model = onnx.load(str(path))
    full = onnx.load(str(path))
    to_float32(onnx, full)
    feeds = {value.name: data[identifier(value.name)] for value in model.graph.input}
    losses = []
    for version in (model, full):  # (the half models' inputs are token ids)
        (output,) = ReferenceEvaluator(version).run([version.graph.output[0].name], feeds)
        scores = np.asarray(output).astype(np.float64)
        losses.append(float(scores) if scores.size == 1
                      else cross_entropy(scores, data["labels"]))
    return float(report.reference_losses[0]), losses[0], losses[1]


@pytest.mark.parametrize("name", FILES)
def test_the_fixture_computes_what_onnx_computes(name: str):
    """Within float32's rounding of the float32 computation; a half model also within
    1e-3 of its computation in its own precision (onnx.reference rounds each op)."""
    loss, as_exported, in_float32 = first_losses(FOLDER / f"{name}.onnx")
    assert loss == pytest.approx(in_float32, rel=2e-5)
    assert loss == pytest.approx(as_exported, rel=1e-3 if name.split(".")[0] in HALF
                                 else 2e-5)


@pytest.mark.parametrize("name", FILES)
def test_the_fixture_is_searched_and_checked(name: str, capsys: pytest.CaptureFixture[str]):
    search_and_check(str(FOLDER / f"{name}.onnx"), capsys)
