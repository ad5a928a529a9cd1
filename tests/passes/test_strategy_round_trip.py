"""A strategy `pase-search{export=...}` writes reads back with `strategy=...` on every form of
the same graph: IR whose values are unnamed (`%0`), IR whose layers share one name (`%h`,
`%h_1`, ...), its generic form and its `.dnn` print (`-t dnn`). Layer names are one function,
`GraphOp.layer_names`, for both directions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import parse_ir, run_tool
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from pase.dialect.dnn import GraphOp
from pase.dialect.pase import ConfigAttr
from pase.frontend import parse_file, parse_text
from pase.targets.dnn import print_module
from pase.tools.pase_opt import main

MODELS = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.dnn"))
MLP = str(MODELS[0].parent / "mlp.dnn")



def ir_text(module: ModuleOp, generic: bool = False) -> str:
    from io import StringIO

    stream = StringIO()
    Printer(stream, print_generic_format=generic).print_op(module)
    return stream.getvalue() + "\n"


def renamed(module: ModuleOp, hint: str | None) -> ModuleOp:
    """A copy whose values all have the name hint `hint` (None: unnamed, printed `%0`)."""
    copy = module.clone()
    for op in copy.walk():
        for result in op.results:
            result.name_hint = hint
    return copy


def forms(module: ModuleOp) -> dict[str, str]:
    """The hostile forms of a graph, as the text of a file: suffix -> text."""
    texts = {}
    for prefix, hint in (("unnamed", None), ("same", "h")):
        form = renamed(module, hint)
        texts |= {f"{prefix}.mlir": ir_text(form), f"{prefix}-generic.mlir": ir_text(form, True),
                  f"{prefix}.dnn": print_module(form)}
    return texts


def read_form(suffix: str, text: str) -> GraphOp:
    module = parse_text(text, "form.dnn") if suffix.endswith(".dnn") else parse_ir(text)
    graph = module.ops.first
    assert isinstance(graph, GraphOp)
    return graph


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_every_form_of_every_model_names_its_layers_alike(model: Path):
    """Printed and read back in any form, a layer keeps its name (the names a strategy file
    holds): a form and its `.dnn` print name every layer alike."""
    names = {suffix: list(read_form(suffix, text).layer_names().values())
             for suffix, text in forms(parse_file(str(model))).items()}
    for prefix in ("unnamed", "same"):
        first = names[f"{prefix}.mlir"]
        assert len(set(first)) == len(first)
        assert all(other == first for suffix, other in names.items()
                   if suffix.startswith(prefix)), prefix


def test_unnamed_layers_are_named_by_op_and_position():
    graph = read_form("unnamed.mlir", forms(parse_file(MLP))["unnamed.mlir"])
    assert list(graph.layer_names().values()) == ["einsum3", "relu4", "einsum6",
                                                  "softmax_cross_entropy7"]
    assert list(graph.value_names().values())[:3] == ["input0", "input1", "param2"]


def test_a_name_taken_twice_gets_a_suffix_dnn_accepts():
    graph = read_form("same.mlir", forms(parse_file(MLP))["same.mlir"])
    assert list(graph.layer_names().values()) == ["h_v4", "h_v5", "h_v7", "h_v8"]
    assert list(graph.value_names().values())[:3] == ["h", "h_v2", "h_v3"]


@pytest.mark.parametrize("prefix", ["unnamed", "same"])
def test_export_reads_back_on_every_form(prefix: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]):
    """Export from the IR, read on it, its generic form and its `.dnn` print: each layer
    gets the exported config (tests/lit/passes/pase-search-round-trip.mlir runs the tools)."""
    files = {}
    for suffix, text in forms(parse_file(MLP)).items():
        if suffix.startswith(prefix):
            files[suffix] = tmp_path / f"model.{suffix}"
            files[suffix].write_text(text)
    exported = tmp_path / "s.json"
    status, _, err = run_tool(main, [str(files[f"{prefix}.mlir"]), "-p",
                                     f'pase-search{{devices=8 export="{exported}"}}'], capsys)
    assert (status, err) == (0, "")
    expected = [layer["config"] for layer in json.loads(exported.read_text())["layers"]]
    assert any(expected)  # some layer is split: the pins are seen
    for suffix, path in files.items():
        status, out, err = run_tool(main, [str(path), "-p",
                                           f'pase-search{{devices=8 strategy="{exported}"}}'],
                                    capsys)
        assert (status, err) == (0, ""), (suffix, err)
        graph = parse_ir(out).ops.first
        assert isinstance(graph, GraphOp)
        configs = [layer.attributes["pase.config"] for layer in graph.layers]
        assert all(isinstance(config, ConfigAttr) for config in configs)
        assert [c.splits for c in configs] == expected, suffix  # type: ignore[union-attr]
