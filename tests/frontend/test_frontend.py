"""The `.dnn` frontend's Python API: `parse_file` / `parse_text` and `Diagnostic`."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

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


def graphs(module: ModuleOp) -> list[dnn.GraphOp]:
    return [op for op in module.ops if isinstance(op, dnn.GraphOp)]


def test_parse_text_returns_a_verified_module():
    module = parse_text(MLP, "mlp.dnn")
    assert isinstance(module, ModuleOp)
    module.verify()
    (graph,) = graphs(module)
    assert graph.sym_name.data == "mlp"
    assert graph.dims == {"b": 64, "d": 256, "h": 1024, "c": 10}
    assert [op.name for op in graph.body.block.ops] == [
        "dnn.input", "dnn.input", "dnn.param", "dnn.einsum", "dnn.relu", "dnn.param",
        "dnn.einsum", "dnn.softmax_cross_entropy", "dnn.return"]


def test_name_hints_survive():
    (graph,) = graphs(parse_text(MLP, "mlp.dnn"))
    names = [op.results[0].name_hint for op in graph.body.block.ops if op.results]
    assert names == ["x", "t", "w1", "h", "a", "w2", "z", "l"]
    assert list(graph.layer_names().values()) == ["h", "a", "z", "l"]
    assert "%w1 = dnn.param" in str(graph)


def test_types_follow_the_header():
    (graph,) = graphs(parse_text(MLP, "mlp.dnn"))
    h = graph.layers[0]
    assert isinstance(h, dnn.EinsumOp)
    assert h.result_shape.dims == ("b", "h")
    assert h.result_shape.sizes == (64, 1024)
    assert h.result_shape.element == "f32"
    labels = next(iter(graph.body.block.ops)).next_op
    assert isinstance(labels, dnn.InputOp)
    assert labels.output.type.shape.element == "i32"
    assert graph.layers[-1].result_shape.dims == ()


def test_pinned_config_becomes_a_pase_config():
    (graph,) = graphs(parse_text(MLP, "mlp.dnn"))
    z = graph.layers[2]
    assert isinstance(z.config, ConfigAttr)
    assert z.config.splits == {"b": 2}
    assert graph.layers[0].config is None


def test_ops_carry_source_locations():
    (graph,) = graphs(parse_text(MLP, "mlp.dnn"))
    relu = graph.layers[1]
    assert isinstance(relu.location, FileLineColLoc)
    assert relu.location.filename.data == "mlp.dnn"
    assert (relu.location.line.data, relu.location.column.data) == (7, 9)


def test_several_graphs_in_one_file():
    text = """
graph @first(b = 4) {
  %x = input [b]
  return %x
}
graph @second(b = 8, d = 2) {
  %x = input [b, d]
  %y = exp %x
  return %y
}
"""
    module = parse_text(text, "two.dnn")
    first, second = graphs(module)
    assert (first.sym_name.data, second.sym_name.data) == ("first", "second")
    assert first.dims == {"b": 4}
    assert second.dims == {"b": 8, "d": 2}
    # Each graph has its own %x: printing keeps both names.
    assert str(module).count("%x = dnn.input") == 2


def test_parse_file(tmp_path: Path):
    path = tmp_path / "mlp.dnn"
    path.write_text(MLP)
    module = parse_file(str(path))
    (graph,) = graphs(module)
    assert graph.sym_name.data == "mlp"
    assert graph.layers[0].location.filename.data == str(path)


def test_parse_file_that_does_not_exist(tmp_path: Path):
    path = tmp_path / "missing.dnn"
    with pytest.raises(Diagnostic) as info:
        parse_file(str(path))
    assert info.value.filename == str(path)
    assert info.value.message.startswith("cannot read the file:")
    assert str(info.value).startswith(f"{path}: error: cannot read the file:")


@pytest.mark.parametrize(
    ("source", "line", "column", "message"),
    [
        ("graph @g(b = 4) {\n  %x = input [b]\n  %y = relux %x\n  return %y\n}",
         3, 8, "unknown op 'relux'; did you mean 'relu'?"),
        ("graph @g(b = 4) {\n  %x = input [b]\n  %y = relu %z\n  return %y\n}",
         3, 13, "undefined value %z"),
        ("graph @g(b = 4) {\n  %x = input [b]\n  %x = relu %x\n  return %x\n}",
         3, 3, "%x is already defined at line 2"),
        ("graph @g(b = 4) {\n  %x = input [b, q]\n  return %x\n}",
         2, 18, "unknown dimension 'q'; declare it in the header of @g"),
        ("graph @g(b = 4, d = 8) {\n  %x = input [b, d]\n  %y = einsum %x -> [b, c]\n"
         "  return %y\n}", 3, 25, "unknown dimension 'c'; declare it in the header of @g"),
        ("graph @g(b = 4) {\n  %x = input [b]\n}", 1, 7, "graph @g has no 'return'"),
        ("graph @g(b = 4) {\n  %x = input [b\n  return %x\n}", 3, 3,
         "unexpected 'return'; expected ',', ']'"),
        ("", 1, 1, "no graph in the file; a .dnn file holds one or more "
         "'graph @name(dim = size, ...) { ... }'"),
    ],
)
def test_diagnostics_point_at_the_error(source: str, line: int, column: int, message: str):
    with pytest.raises(Diagnostic) as info:
        parse_text(source, "bad.dnn")
    error = info.value
    assert (error.filename, error.line, error.column, error.message) == (
        "bad.dnn", line, column, message)
    assert str(error).splitlines()[0] == f"bad.dnn:{line}:{column}: error: {message}"


def test_diagnostic_shows_the_line_and_a_caret():
    source = "graph @g(b = 4) {\n  %x = input [b]\n  %y = relux %x\n  return %y\n}"
    with pytest.raises(Diagnostic) as info:
        parse_text(source, "bad.dnn")
    assert str(info.value).splitlines() == [
        "bad.dnn:3:8: error: unknown op 'relux'; did you mean 'relu'?",
        "  %y = relux %x",
        "       ^^^^^",
    ]


def test_default_filename():
    with pytest.raises(Diagnostic) as info:
        parse_text("graph @g(b = 4) {\n  return %q\n}")
    assert str(info.value).startswith("<input>:2:10: error: undefined value %q")


def test_diagnostic_without_a_location():
    assert str(Diagnostic("something failed", "m.dnn")) == "m.dnn: error: something failed"
