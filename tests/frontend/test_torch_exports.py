"""The models of models/onnx/, as PyTorch's two exporters wrote them (models/export_torch.py):
those pase reads import, are searched on 8 devices and pass `pase-run --check` on 4; the
others get the one report naming what pase lacks. docs/pytorch.md says which and why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from cli import run_tool  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import load_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402
from pase.tools.pase_run import main as pase_run  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"

READ = ["mlp", "vgg11", "resnet18", "resnet50", "mobilenet_v2", "gpt2", "bert", "lstm",
        "vit_b_16"]
"""Architectures pase reads from every file an exporter wrote (the TorchScript exporter
fails on GPT-2: aten::diff)."""

NOT_READ = {
    "t5.torchscript": "Gather with constant indices is supported for consecutive indices",
}
"""Files pase does not read yet, and the start of what it says."""

FILES = sorted(path.name.removesuffix(".onnx") for path in FOLDER.glob("*.onnx"))
READ_FILES = [name for name in FILES if name.split(".")[0] in READ]


def test_every_file_is_either_read_or_known_not_to_be():
    assert set(FILES) == set(READ_FILES) | set(NOT_READ)
    assert {name.split(".")[0] for name in READ_FILES} == set(READ)


@pytest.mark.parametrize("name", READ_FILES)
def test_the_export_imports_with_its_weights(name: str):
    imported = load_model(str(FOLDER / f"{name}.onnx"))
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    params = [op.output.name_hint for op in graph.body.block.ops
              if isinstance(op, dnn.ParamOp)]
    assert params
    assert set(imported.initial_values) == set(params)


@pytest.mark.parametrize("name", READ_FILES)
def test_the_export_is_searched_and_checked(name: str, capsys: pytest.CaptureFixture[str]):
    path = str(FOLDER / f"{name}.onnx")
    status, out, err = run_tool(pase_opt, [path, "-p", "pase-search{devices=8}"], capsys)
    assert status == 0, err
    assert "#pase.config" in out
    status, out, err = run_tool(pase_run, [path, "--devices", "4", "--check"], capsys)
    assert status == 0, err
    assert "check passed" in out


@pytest.mark.parametrize("name", sorted(NOT_READ))
def test_what_pase_does_not_read_is_one_report(name: str):
    with pytest.raises(Diagnostic, match=re.escape(NOT_READ[name])):
        load_model(str(FOLDER / f"{name}.onnx"))
