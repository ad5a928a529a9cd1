"""The `.dnn` frontend's Python API: `parse_file` / `parse_text` and `Diagnostic`."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import NamedShape
from pase.dialect import dnn
from pase.dialect.pase import ConfigAttr
from pase.frontend import parse_file, parse_text

MLP = Path(__file__).resolve().parents[2] / "models" / "mlp.dnn"


def test_parse_file_returns_a_verified_module():
    """The module's structure from Python; lit (`tests/lit/frontend/`) shows the IR."""
    module = parse_file(str(MLP))
    module.verify()
    (graph,) = module.ops
    assert isinstance(graph, dnn.GraphOp)
    assert graph.sym_name.data == "mlp"
    assert graph.dims == {"b": 64, "d": 256, "h": 1024, "c": 10}
    names = [op.results[0].name_hint for op in graph.body.block.ops if op.results]
    assert names == ["x", "t", "w1", "h", "a", "w2", "z", "l"]
    assert list(graph.layer_names().values()) == ["h", "a", "z", "l"]
    h, relu, _, _ = graph.layers
    assert isinstance(h, dnn.EinsumOp)
    assert h.result_shape == NamedShape(("b", "h"), (64, 1024), "f32")
    assert h.config is None
    assert isinstance(relu.location, FileLineColLoc)
    assert relu.location.filename.data == str(MLP)
    assert (relu.location.line.data, relu.location.column.data) == (7, 9)


def test_pinned_config_becomes_a_pase_config():
    (graph,) = parse_text("graph @g(b = 4) {\n  %x = input [b]\n  %y = relu %x config {b = 2}\n"
                          "  return %y\n}").ops
    assert isinstance(graph, dnn.GraphOp)
    (relu,) = graph.layers
    assert isinstance(relu.config, ConfigAttr)
    assert relu.config.splits == {"b": 2}


def test_a_diagnostic_carries_its_place():
    """Its parts from Python; the lit tests in `tests/lit/frontend/diagnostics/` show how
    every error is reported."""
    source = "graph @g(b = 4) {\n  %x = input [b]\n  %y = relux %x\n  return %y\n}"
    with pytest.raises(Diagnostic) as info:
        parse_text(source, "bad.dnn")
    error = info.value
    assert (error.filename, error.line, error.column, error.length, error.message) == (
        "bad.dnn", 3, 8, 5, "unknown op 'relux'; did you mean 'relu'?")


def test_default_filename():
    with pytest.raises(Diagnostic) as info:
        parse_text("graph @g(b = 4) {\n  return %q\n}")
    assert str(info.value).startswith("<input>:2:10: error: undefined value %q")


def test_diagnostic_without_a_location():
    assert str(Diagnostic("something failed", "m.dnn")) == "m.dnn: error: something failed"
