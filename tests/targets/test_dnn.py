"""`-t dnn`: any dnn graph printed as `.dnn` source parses back to the same IR, for every
bundled model and every imported ONNX model (the readable example is a lit test:
tests/lit/targets/dnn.dnn)."""

from __future__ import annotations

import importlib.util
from io import StringIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from pase.core.diagnostics import Diagnostic
from pase.dialect.dnn import Dnn
from pase.dialect.pase import Pase
from pase.frontend import parse_file, parse_text
from pase.targets.dnn import DnnTarget, print_module

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "models").glob("*.dnn"))


def onnx_models() -> dict:
    pytest.importorskip("onnx")
    spec = importlib.util.spec_from_file_location("onnx_models", ROOT / "models" /
                                                  "onnx_models.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


def generic(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue()


def assert_round_trip(module: ModuleOp) -> str:
    out = StringIO()
    DnnTarget().emit(Context(), module, out)
    assert generic(parse_text(out.getvalue(), "printed.dnn")) == generic(module)
    return out.getvalue()


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_bundled_model_round_trips(path: Path):
    assert_round_trip(parse_file(str(path)))


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_every_imported_onnx_model_round_trips(name: str):
    from pase.frontend.onnx import import_model

    build, _ = onnx_models()[name]
    assert_round_trip(import_model(build().SerializeToString(), f"{name}.onnx").module)


def test_unnamed_values_get_unique_names():
    ctx = Context()
    for dialect in (Builtin, Dnn, Pase):
        ctx.load_dialect(dialect)
    tensor = "!dnn.tensor<[b = 2, d = 3], f32>"
    module = Parser(ctx, f"""
      dnn.graph @g(b = 2, d = 3) {{
        %x = dnn.input : {tensor}
        %tanh2 = dnn.relu %x : ({tensor}) -> {tensor}
        %0 = dnn.tanh %tanh2 : ({tensor}) -> {tensor}
        dnn.return %0 : {tensor}
      }}""").parse_module()
    text = print_module(module)
    assert text.splitlines()[1:5] == ["  %x = input [b, d]", "  %tanh2 = relu %x",
                                      "  %tanh2_v2 = tanh %tanh2", "  return %tanh2_v2"]
    parse_text(text, "printed.dnn")


def test_a_module_without_a_graph_is_an_error():
    with pytest.raises(Diagnostic, match="needs a module with a dnn.graph"):
        print_module(ModuleOp([]))
