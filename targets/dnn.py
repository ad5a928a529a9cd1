"""The `.dnn` target: a `dnn` graph printed back as `.dnn` source (`pase-opt -t dnn`).

    pase-opt model.onnx -t dnn -o model.dnn     # read and edit what was imported
    pase-opt models/mlp.dnn -t dnn              # the same graph, as the printer writes it

The source parses back to the same IR (`pase.frontend.dnn`): one statement per op, in the
op's order, with the keyword and clauses the frontend's `STATEMENTS` table gives it, and
a layer's `#pase.config` as `config {...}`. What `.dnn` cannot say is an error, not lost
silently: gradient ops (after pase-autodiff), SPMD programs, other dialects. A norm's
epsilon is its `epsilon` clause where it is not 1e-5 (an imported model's 1e-12 or 1e-6).
Attributes the passes derive (`pase.strategy`, the configuration counts) are left out.

    graph @mlp(b = 64, d = 256, h = 1024, c = 10) {
      %x = input [b, d]
      %w1 = param [d, h]
      %h = einsum %x, %w1 -> [b, h]
      ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.target import Target

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.options import CheckedOptions
from pase.dialect import dnn
from pase.dialect.pase import CONFIG_ATTR_NAME, ConfigAttr
from pase.frontend.dnn_statements import STATEMENTS

KEYWORDS: dict[type[dnn.LayerOp], str] = {s.op: keyword for keyword, s in STATEMENTS.items()}
"""The `.dnn` keyword of each layer op (the inverse of the frontend's table)."""

LINE_WIDTH = 100


@dataclass(frozen=True)
class DnnTarget(CheckedOptions, Target):
    """Print every `dnn.graph` of the module as `.dnn` source."""

    name = "dnn"
    OPTIONS_OF = "-t dnn"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(print_module(module))


def print_module(module: ModuleOp) -> str:
    """The `.dnn` source of the module's graphs; raises `Diagnostic` for what `.dnn`
    cannot express."""
    graphs = []
    for op in module.ops:
        if not isinstance(op, dnn.GraphOp):
            raise at_op(op, f"the dnn target prints dnn.graph ops, not {op.name}")
        graphs.append(print_graph(op))
    if not graphs:
        raise Diagnostic("the dnn target needs a module with a dnn.graph")
    return "\n".join(graphs)


def print_graph(graph: dnn.GraphOp) -> str:
    names = graph.value_names()
    start = f"graph @{graph.sym_name.data}("
    lines = [""]
    for dim, size in graph.dims.items():
        item = f"{dim} = {size}"
        if lines[-1] and len(start) + len(lines[-1]) + len(item) + 5 > LINE_WIDTH:
            lines.append("")
        lines[-1] += f"{', ' if lines[-1] else ''}{item}"
    head = start + (",\n" + " " * len(start)).join(lines) + ") {"
    body = [f"  {statement(op, names)}" for op in graph.body.block.ops]
    return "\n".join([head, *body, "}"]) + "\n"


def statement(op: Operation, names: dict[SSAValue, str]) -> str:
    """One `.dnn` statement for `op`."""
    if isinstance(op, dnn.ReturnOp):
        return "return " + ", ".join(f"%{names[v]}" for v in op.values)
    if isinstance(op, dnn.InputOp | dnn.ParamOp):
        shape = op.output.type.shape
        keyword = "input" if isinstance(op, dnn.InputOp) else "param"
        element = "" if shape.element == "f32" else f" : {shape.element}"
        return f"%{names[op.output]} = {keyword} {_dims(shape.dims)}{element}"
    if not isinstance(op, dnn.LayerOp) or type(op) not in KEYWORDS or op.is_gradient:
        if dnn.is_gradient(op):
            raise at_op(op, f"the dnn target prints forward graphs, but this one has "
                        f"pase-autodiff's {op.name}; print it before pase-autodiff")
        raise at_op(op, f".dnn has no statement for {op.name}")
    keyword = KEYWORDS[type(op)]
    parts = [f"%{names[op.output]} = {keyword}"]
    if op.KIND is not None:
        parts.append(op.kind_prop())
    parts.append(", ".join(f"%{names[v]}" for v in op.inputs))
    text = " ".join(parts) + op.clause_text(op.properties, bare_dim=True)
    if STATEMENTS[keyword].result:
        text += f" -> {_dims(op.result_shape.dims)}"
    config = op.attributes.get(CONFIG_ATTR_NAME)
    if isinstance(config, ConfigAttr):
        splits = ", ".join(f"{dim} = {factor}" for dim, factor in config.splits.items())
        text += f" config {{{splits}}}"
    return text


def _dims(dims: tuple[str, ...]) -> str:
    return "[" + ", ".join(dims) + "]"
