"""The `.dnn` frontend's Python API: `parse_file` / `parse_text` and `Diagnostic`."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc

from pase.core.shapes import NamedShape
from pase.dialect import dnn
from pase.dialect.pase import ConfigAttr
from pase.frontend import Diagnostic, parse_file, parse_text

MLP = """\
// two-layer perceptron
graph @mlp(b = 64, d = 256, h = 1024, c = 10) {
  %x  = input [b, d]
  %t  = input [b] : i32
  %w1 = param [d, h]
  %h  = einsum %x, %w1 -> [b, h]
  %a  = relu %h
  %w2 = param [h, c]
  %z  = einsum %a, %w2 -> [b, c] config {b = 2}
  %l  = softmax_cross_entropy %z, %t over c
  return %l
}
"""


def test_parse_text_returns_a_verified_module():
    """The module's structure from Python; lit (`tests/lit/frontend/`) shows the IR."""
    module = parse_text(MLP, "mlp.dnn")
    module.verify()
    (graph,) = module.ops
    assert isinstance(graph, dnn.GraphOp)
    assert graph.sym_name.data == "mlp"
    assert graph.dims == {"b": 64, "d": 256, "h": 1024, "c": 10}
    names = [op.results[0].name_hint for op in graph.body.block.ops if op.results]
    assert names == ["x", "t", "w1", "h", "a", "w2", "z", "l"]
    assert list(graph.layer_names().values()) == ["h", "a", "z", "l"]
    h, relu, z, _ = graph.layers
    assert isinstance(h, dnn.EinsumOp)
    assert h.result_shape == NamedShape(("b", "h"), (64, 1024), "f32")
    assert isinstance(z.config, ConfigAttr)
    assert z.config.splits == {"b": 2}
    assert h.config is None
    assert isinstance(relu.location, FileLineColLoc)
    assert relu.location.filename.data == "mlp.dnn"
    assert (relu.location.line.data, relu.location.column.data) == (7, 9)


def test_parse_file(tmp_path: Path):
    path = tmp_path / "mlp.dnn"
    path.write_text(MLP)
    (graph,) = parse_file(str(path)).ops
    assert isinstance(graph, dnn.GraphOp)
    assert graph.layers[0].location.filename.data == str(path)


def test_parse_file_that_does_not_exist(tmp_path: Path):
    path = tmp_path / "missing.dnn"
    with pytest.raises(Diagnostic) as info:
        parse_file(str(path))
    assert info.value.filename == str(path)
    assert info.value.message.startswith("cannot read the file:")
    assert str(info.value).startswith(f"{path}: error: cannot read the file:")


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
