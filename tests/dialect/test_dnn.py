"""The dnn dialect's structure from Python: which ops belong to the backward pass, and the
module shape of graph and layer_op."""

from __future__ import annotations

import ast
from pathlib import Path

from xdsl.context import Context

from pase.dialect import dnn
from pase.frontend import parse_text
from pase.passes.autodiff import AutodiffPass

DIALECT = Path(__file__).resolve().parents[2] / "dialect" / "dnn"

MODEL = """\
graph @g(b = 8, d = 16, h = 4) {
  %x = input [b, d]
  %w = param [d, h]
  %h = einsum %x, %w -> [b, h]
  %e = add %h, %h
  %l = reduce sum %e over [b, h]
  return %l
}
"""


def test_is_gradient_marks_the_backward_pass_and_layers_are_the_rest():
    module = parse_text(MODEL)
    (graph,) = [op for op in module.walk() if isinstance(op, dnn.GraphOp)]
    forward = list(graph.layers)
    AutodiffPass().apply(Context(), module)
    ops = list(graph.body.block.ops)
    backward = ops[ops.index(forward[-1]) + 1:-1]
    assert graph.layers == forward
    assert not any(dnn.is_gradient(op) for op in forward)
    assert backward
    assert all(dnn.is_gradient(op) for op in backward)
    kinds = {type(op) for op in backward}
    assert {dnn.VjpOp, dnn.SgdOp, dnn.EinsumOp, dnn.AddOp} <= kinds
    assert not dnn.is_gradient(graph)
    assert not any(dnn.is_gradient(op) for op in ops if isinstance(op, dnn.InputOp | dnn.ParamOp))


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at any level (also inside functions)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_graph_and_layer_op_form_no_import_circle():
    assert "pase.dialect.dnn.layer_op" in imported_modules(DIALECT / "graph.py")
    assert not {m for m in imported_modules(DIALECT / "layer_op.py")
                if m.startswith("pase.dialect.dnn")} - {"pase.dialect.dnn.types"}
