"""The `.dnn` frontend: from `.dnn` source to the `dnn` dialect (IR generation).

The lark grammar (`dnn.lark`) is deliberately uniform: every layer statement is
`%v = op [kind] [dims] [operands] clauses* [-> dims] [: type] [config {...}]`. This
module checks each statement against its op's row in `STATEMENTS`, infers the result
type with the shape rules of `pase.core.shapes`, and builds the IR. Every error is a
`Diagnostic` pointing at the offending token.

`DnnFrontend` is this module as an xDSL `Frontend`, so `pase-opt model.dnn` and plain
`xdsl-opt model.dnn` (through `pase.universe`) read `.dnn` files.

Example:
    >>> module = parse_text("graph @g(b = 2, d = 3) { %x = input [b, d]\\n"
    ...                     "%y = relu %x\\n return %y }", "g.dnn")
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from lark import Token, Transformer, Tree
from lark.exceptions import UnexpectedInput
from lark.tree import Meta
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    ModuleOp,
    StringAttr,
    f64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.frontend import Frontend

from pase.core.budget import DEFAULT_MEMORY_GIB, budget_bytes, check_budget
from pase.core.diagnostics import Diagnostic, offset_to_line_column
from pase.core.files import decode_text, read_text
from pase.core.numbers import SHOWN_DIGITS, read_float, read_integer
from pase.core.options import CheckedOptions
from pase.core.shapes import ELEMENT_TYPES, NamedShape, ShapeError, shape_over
from pase.core.signals import raise_if_received
from pase.dialect import dnn
from pase.dialect.dnn.epsilon import epsilon_property
from pase.dialect.pase import CONFIG_ATTR_NAME, ConfigAttr
from pase.dialect.traits import VerifyExceptionAt
from pase.frontend.dnn_parser import load_parser, syntax_error
from pase.frontend.dnn_statements import (
    CLAUSE_EXAMPLES,
    DATA_STATEMENTS,
    STATEMENTS,
    Statement,
)

# Children of lark parse trees are Tokens or Trees, untyped: the builder checks which.
Node = Any



class _Streaming(Transformer):
    """The parser's callbacks for graphs and statements (lark calls them as it reduces,
    LALR): each graph header and statement becomes IR at once and its tokens are dropped,
    so no tree of the whole file is ever built, and a syntax error on the last line of a
    large file costs no more memory than the lexer's state. The other rules stay small
    trees, one statement's worth. `builder` is the `_Builder` of the parse under way
    (`_PARSE_LOCK` keeps one at a time); with None, the parse only checks the syntax and
    builds nothing."""

    builder: _Builder | None = None
    counted_statements = 0
    """The statements and operands the syntax check read (`parse_text` bounds the memory
    of the IR it builds for them)."""
    counted_operands = 0

    def graph_head(self, children: list[Node]) -> None:
        if self.builder:
            self.builder.begin_graph(children)

    def data(self, children: list[Node]) -> None:
        self._statement("data", children)

    def layer(self, children: list[Node]) -> None:
        self._statement("layer", children)

    def ret(self, children: list[Node]) -> None:
        self._statement("ret", children)

    def _statement(self, kind: str, children: list[Node]) -> None:
        # A signal whose exception Python dropped (taken in a garbage collector's callback,
        # as a parse of a million statements makes likely) stops the parse here, at the
        # next statement, not after the whole file and the passes after it.
        raise_if_received()
        if self.builder:
            self.builder.statement(_tree(kind, children))
        else:
            self.counted_statements += 1
            self.counted_operands += sum(len(child.children) for child in children
                                 if isinstance(child, Tree) and child.data == "operands")

    def graph(self, children: list[Node]) -> dnn.GraphOp | None:
        return self.builder.end_graph() if self.builder else None


def _tree(data: str, children: list[Node]) -> Tree:
    """A statement's tree, placed at its first token (as `propagate_positions` would)."""
    meta = Meta()
    meta.line, meta.column, meta.empty = children[0].line, children[0].column, False
    return Tree(data, children, meta)


_STREAMING = _Streaming()
_PARSE_LOCK = threading.Lock()
PARSER = load_parser(_STREAMING)



BYTES_PER_STATEMENT = 3 << 10
BYTES_PER_OPERAND = 150
"""What building one statement's IR holds at most, measured with tracemalloc (a chain of
relu: 2.7 KiB at the peak; a layernorm with its clauses, 2.8; each operand past the
first, 120 bytes more: a concat of 64, 9.3 KiB)."""


def parse_file(path: str, memory_gib: float = DEFAULT_MEMORY_GIB) -> ModuleOp:
    """Parse a `.dnn` file into a verified `builtin.module` of `dnn.graph`s."""
    return parse_text(read_text(path), path, memory_gib)


def parse_text(text: str, filename: str = "<input>",
               memory_gib: float = DEFAULT_MEMORY_GIB) -> ModuleOp:
    """Parse `.dnn` source; raises `Diagnostic` on any error: the first syntax error, else
    the first other error in the file.

    Two passes, each linear in the text: the LALR parser first checks the syntax, building
    nothing (a syntax error on the last line of a large file costs no memory for the lines
    before it, and a tenth of the time of building them), then hands each statement to the
    builder as soon as it is complete (`_Streaming`). Between the two, the IR's memory
    (`BYTES_PER_STATEMENT` and `BYTES_PER_OPERAND`) is checked against `memory_gib`: a
    file whose IR would not fit is one error, before any of it is built."""
    limit = budget_bytes(memory_gib, filename, "dnn")
    builder = _Builder(text, filename)
    with _PARSE_LOCK:
        _STREAMING.counted_statements = _STREAMING.counted_operands = 0
        for pass_builder in (None, builder):
            if pass_builder is not None:
                statements = _STREAMING.counted_statements
                check_budget(statements, "statements", statements * BYTES_PER_STATEMENT +
                             _STREAMING.counted_operands * BYTES_PER_OPERAND, limit, filename,
                             "dnn")
            _STREAMING.builder = pass_builder
            try:
                tree = PARSER.parse(text)
            except UnexpectedInput as error:
                raise _unknown_op_before(error, text, filename) or syntax_error(
                    error, text, filename) from None
            finally:
                _STREAMING.builder = None
    # `_Streaming.graph` made each child a dnn.GraphOp.
    graphs: list[dnn.GraphOp] = tree.children  # type: ignore[assignment]
    if not graphs:
        raise Diagnostic("no graph in the file; a .dnn file holds one or more "
                         "'graph @name(dim = size, ...) { ... }'", filename, 1, 1, text)
    module = ModuleOp(graphs)
    for op in module.walk():
        raise_if_received()
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            culprit = error.op if isinstance(error, VerifyExceptionAt) else op
            raise builder.error_at_op(culprit, str(error)) from None
    return module


@dataclass(frozen=True)
class DnnFrontend(CheckedOptions, Frontend):
    """`.dnn` source as an xDSL frontend (`-f dnn`, or any `*.dnn` input).

        >>> from io import BytesIO
        >>> DnnFrontend().parse(Context(), BytesIO(b"graph @g(b = 2) { %x = input [b]\\n"
        ...                                        b"return %x }"), "g.dnn").ops.first.name
        'dnn.graph'

    The ops are built directly, so `ctx` needs no dialect registered."""

    name = "dnn"
    OPTIONS_OF = "-f dnn"

    memory_gib: float | int = DEFAULT_MEMORY_GIB
    """The most the IR of the file may take, in GiB (`-f 'dnn{memory-gib=G}'`)."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "<input>") -> ModuleOp:
        return parse_text(decode_text(input.read(), input_name), input_name,
                          float(self.memory_gib))


_STATEMENT_START = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*\s*=\s*([A-Za-z_][A-Za-z0-9_]*)")


def _unknown_op_before(error: UnexpectedInput, text: str, filename: str) -> Diagnostic | None:
    """An unknown op name before a syntax error is the likelier mistake: report that."""
    end = getattr(error, "pos_in_stream", None)
    end = len(text) if end is None or end < 0 else end
    code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group()), text[:end + 1])
    known = {*STATEMENTS, *DATA_STATEMENTS}
    for match in _STATEMENT_START.finditer(code):
        op = match.group(1)
        if op not in known:
            line, column = offset_to_line_column(text, match.start(1))
            return Diagnostic(f"unknown op '{op}'{_did_you_mean(op, sorted(known))}", filename,
                              line, column, text, len(op))
    return None


def _did_you_mean(name: str, known: Iterable[str], spelled: str = "'{}'") -> str:
    """`; did you mean 'relu'?` for the known name closest to `name`, or nothing."""
    hint = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {spelled.format(hint[0])}?" if hint else ""


def _items(node: Node) -> list[Node]:
    """The items of a bracketed list, or the one item written without brackets."""
    children = [node] if isinstance(node, Token) else node.children
    return [child for child in children if child is not None]


class _Builder:
    """Turns parse trees into `dnn` ops, checking names and shapes as it goes."""

    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.graph_names: dict[str, int] = {}
        self.tensor_types: dict[NamedShape, dnn.TensorType] = {}

    def error(self, message: str, token: Node | Tree | None) -> Diagnostic:
        if isinstance(token, Token):
            return Diagnostic(message, self.filename, token.line or 0, token.column or 0,
                              self.text, len(str(token)))
        if isinstance(token, Tree) and not token.meta.empty:
            return Diagnostic(message, self.filename, token.meta.line, token.meta.column,
                              self.text, 1)
        return Diagnostic(message, self.filename, source=self.text)

    def error_at_op(self, op: Operation, message: str) -> Diagnostic:
        if not isinstance(location := op.location, FileLineColLoc):
            return Diagnostic(message, self.filename, 0, 0, self.text)
        return Diagnostic(message, self.filename, location.line.data, location.column.data,
                          self.text)

    def tensor_type(self, shape: NamedShape) -> dnn.TensorType:
        """`dnn.TensorType.of(shape)`, built once per shape (attributes are immutable)."""
        if shape not in self.tensor_types:
            self.tensor_types[shape] = dnn.TensorType.of(shape)
        return self.tensor_types[shape]

    def locate(self, op: Operation, token: Node) -> Operation:
        op.location = FileLineColLoc(StringAttr(self.filename), IntAttr(token.line or 0),
                                     IntAttr(token.column or 0))
        return op

    # -- graphs --

    def begin_graph(self, header: list[Node]) -> None:
        """Start a graph from its header: `@name` and its dim declarations."""
        name_token: Node
        name_token, *declarations = header
        name = str(name_token)[1:]
        if name in self.graph_names:
            raise self.error(f"graph @{name} is already defined at line "
                             f"{self.graph_names[name]}", name_token)
        self.graph_names[name] = name_token.line or 0
        dims: dict[str, int] = {}
        for child in declarations:
            if child is None:
                continue
            dim, size = child.children
            if str(dim) in dims:
                raise self.error(f"dimension '{dim}' is declared twice in @{name}", dim)
            dims[str(dim)] = self.positive_int(size, f"size of dimension '{dim}'")
        if not dims:
            raise self.error(f"graph @{name} declares no dimensions; list them in its header, "
                             f"e.g. 'graph @{name}(b = 64, d = 256)'", name_token)
        self.scope = _Scope(self, name, dims)
        self.name_token = name_token
        self.ops: list[Operation] = []
        self.returned = False

    def statement(self, statement: Tree) -> None:
        """The op of one statement of the graph begun last."""
        if self.returned:
            raise self.error("statement after 'return'; 'return' ends the graph", statement)
        if statement.data == "ret":
            self.ops.append(self.locate(self.scope.ret(statement), statement.children[0]))
            self.returned = True
        else:
            self.ops.append(self.scope.layer(statement))

    def end_graph(self) -> dnn.GraphOp:
        """The graph begun last, once its '}' is read."""
        name = self.scope.graph
        if not self.returned:
            raise self.error(f"graph @{name} has no 'return'", self.name_token)
        graph = dnn.GraphOp(name, self.scope.dims, self.ops)
        self.locate(graph, self.name_token)
        return graph

    def positive_int(self, token: Node, what: str, least: int = 1) -> int:
        """`token` as an int of at least `least` (1 or 0) and at most 2^53, or an error
        about `what`."""
        text = str(token)
        if not text.lstrip("+").isdigit() or text.strip("+0") == "" and least:
            kind = "positive" if least else "non-negative"
            shown = text if len(text) <= SHOWN_DIGITS else f"{text[:SHOWN_DIGITS]}..."
            raise self.error(f"{what} must be a {kind} integer, got '{shown}'", token)
        try:
            return read_integer(text, what)
        except ValueError as error:
            raise self.error(str(error), token) from None

    def signed_int(self, token: Node, what: str) -> int:
        """`token` as an int of magnitude at most 2^53 (`ignore -100`), or an error about
        `what`."""
        text = str(token)
        if not text.lstrip("+-").isdigit():
            shown = text if len(text) <= SHOWN_DIGITS else f"{text[:SHOWN_DIGITS]}..."
            raise self.error(f"{what} must be an integer, got '{shown}'", token)
        try:
            magnitude = read_integer(text.lstrip("+-"), what)
        except ValueError as error:
            raise self.error(str(error), token) from None
        return -magnitude if text.startswith("-") else magnitude


class _Scope:
    """The values and dimensions of one graph while it is being built."""

    def __init__(self, builder: _Builder, graph: str, dims: dict[str, int]):
        self.builder = builder
        self.graph = graph
        self.dims = dims
        self.values: dict[str, tuple[SSAValue, int]] = {}

    def error(self, message: str, token: Node | Tree | None) -> Diagnostic:
        return self.builder.error(message, token)

    def value(self, token: Node) -> SSAValue:
        name = str(token)[1:]
        if name not in self.values:
            raise self.error(f"undefined value %{name}{_did_you_mean(name, self.values, '%{}')}",
                             token)
        return self.values[name][0]

    def shape(self, dim_tokens: Sequence[Node], element: str = "f32") -> NamedShape:
        for token in dim_tokens:
            if str(token) not in self.dims:
                raise self.error(f"unknown dimension '{token}'; declare it in the header of "
                                 f"@{self.graph}{_did_you_mean(str(token), self.dims)}", token)
        for i, token in enumerate(dim_tokens):
            if str(token) in (str(t) for t in dim_tokens[:i]):
                raise self.error(f"dimension '{token}' appears twice in one tensor", token)
        try:
            return shape_over([str(t) for t in dim_tokens], self.dims, element)
        except ShapeError as error:  # too many elements
            raise self.error(str(error), dim_tokens[0]) from None

    def define(self, token: Node, value: SSAValue) -> None:
        name = str(token)[1:]
        if name in self.values:
            raise self.error(f"%{name} is already defined at line {self.values[name][1]}", token)
        if (suffix := re.search(r"_([0-9]+)$", name)) is not None:
            # xDSL, like MLIR, drops such a suffix from a name hint and uses it to keep
            # printed names unique, so %h_1 would not survive printing.
            stem = name[:suffix.start()]
            raise self.error(f"value names may not end in '_<number>' (the printer uses that "
                             f"suffix to keep names unique); write %{stem}{suffix.group(1)} "
                             f"or %{stem}_v{suffix.group(1)}", token)
        value.name_hint = name
        self.values[name] = (value, token.line or 0)

    def ret(self, tree: Tree) -> dnn.ReturnOp:
        return dnn.ReturnOp(*(self.value(t) for t in tree.children[1:]))

    def layer(self, tree: Tree) -> Operation:
        if tree.data == "data":
            target, op_token, dim_list, element = tree.children
            op = self.data(op_token, dim_list, element)
        else:
            target, op_token, kind, operand_tree, *rest = tree.children
            clauses = [c for c in rest[:-3] if c is not None]
            result, element, config = rest[-3:]
            op = self.compute(op_token, kind, operand_tree, clauses, result, element, config)
        self.builder.locate(op, op_token)
        self.define(target, op.results[0])
        return op

    def data(self, op_token: Node, dim_list: Tree, element: Tree | None) -> Operation:
        op = str(op_token)
        element_name = "f32"
        if element is not None:
            element_token = element.children[0]
            element_name = str(element_token)
            if element_name not in ELEMENT_TYPES:
                raise self.error(f"unknown element type '{element_name}'; expected one of "
                                 + ", ".join(ELEMENT_TYPES), element_token)
            if op == "param" and element_name not in ("f32", "f64"):
                raise self.error("param must be floating-point (f32 or f64)", element_token)
        dims = _items(dim_list)
        tensor = self.builder.tensor_type(self.shape(dims, element_name))
        return dnn.InputOp(tensor) if op == "input" else dnn.ParamOp(tensor)

    def compute(self, op_token: Node, kind: Node, operand_tree: Tree,
                clauses: list[Tree], result: Tree | None, element: Tree | None,
                config: Tree | None) -> Operation:
        op = str(op_token)
        statement = STATEMENTS.get(op)
        if statement is None:
            known = sorted([*STATEMENTS, *DATA_STATEMENTS])
            raise self.error(f"unknown op '{op}'{_did_you_mean(op, known)}", op_token)
        if element is not None:
            raise self.error(f"{op} infers its element type; remove ': "
                             f"{element.children[0]}'", element)
        properties: dict[str, Attribute] = {}
        if statement.kinds:
            if kind is None:
                raise self.error(f"{op} needs a kind: {' or '.join(statement.kinds)}", op_token)
            if str(kind) not in statement.kinds:
                raise self.error(f"{op} kind must be {' or '.join(statement.kinds)}, "
                                 f"got '{kind}'", kind)
            assert statement.op.KIND is not None
            properties[statement.op.KIND[0]] = StringAttr(str(kind))
        elif kind is not None:
            raise self.error(f"{op} takes no kind '{kind}'", kind)
        operand_tokens = list(operand_tree.children)
        low, high = statement.operands
        if not low <= len(operand_tokens) <= high:
            want = str(low) if low == high else f"{low} to {high}"
            if statement.op in (dnn.LayerNormOp, dnn.BatchNormOp):
                want = "1, or 3 with scale and bias,"
            raise self.error(f"{op} takes {want} operand{'s' if high > 1 else ''}, "
                             f"got {len(operand_tokens)}", op_token)
        operands = [self.value(t) for t in operand_tokens]
        properties |= self.clauses(op, statement, clauses, op_token)
        result_type: dnn.TensorType | None = None
        if statement.result:
            if result is None:
                raise self.error(f"{op} needs its result dimensions: '-> [dims]'", op_token)
            result_dims = _items(result.children[0])
            element_name = dnn.shape_of(operands[0]).element if operands else "f32"
            if statement.op is dnn.EmbeddingOp and len(operands) > 1:
                element_name = dnn.shape_of(operands[1]).element
            result_type = self.builder.tensor_type(self.shape(result_dims, element_name))
        elif result is not None:
            raise self.error(f"{op} infers its result dimensions; remove '-> [...]'", result)
        layer = self.build(statement, operands, properties, result_type, op_token)
        if config is not None:
            layer.attributes[CONFIG_ATTR_NAME] = self.config(layer, config)
        return layer

    def clauses(self, op: str, statement: Statement, clauses: list[Tree],
                op_token: Node) -> dict[str, Attribute]:
        """The properties of the statement's clauses, each read by its op's clause form
        (`LayerOp.CLAUSES`)."""
        forms = statement.forms
        properties: dict[str, Attribute] = {}
        given: set[str] = set()
        for clause in clauses:
            keyword, value = clause.children
            name = str(keyword)
            if name not in statement.clauses:
                raise self.error(f"{op} takes no '{name}'", keyword)
            if name in given:
                raise self.error(f"'{name}' given twice", keyword)
            given.add(name)
            prop, form = forms[name]
            if (attr := self.clause_value(name, form, value, keyword)) is not None:
                properties[prop] = attr
        for name in statement.required:
            if name not in given:
                example = CLAUSE_EXAMPLES.get(name, f"{name} 1")
                raise self.error(f"{op} needs '{name}', e.g. '{example}'", op_token)
        for name, default in statement.defaults.items():
            properties.setdefault(name, IntAttr(default) if name == "stride"
                                  else ArrayAttr((IntAttr(default), IntAttr(default))))
        # In the op's clause order, as its parser builds them, so that the generic form
        # prints the same whether the module came from .dnn source or from IR.
        return {prop: properties[prop] for prop, _ in forms.values() if prop in properties}

    def clause_value(self, name: str, form: str, value: Node,
                     keyword: Node) -> Attribute | None:
        """One clause's property (None: a `count` of 1, which is left out)."""
        if form == "dims":
            dims = _items(value)
            self.shape(dims)
            return ArrayAttr(StringAttr(str(d)) for d in dims)
        if form == "dim":
            if not isinstance(value, Token) or value.type != "NAME":
                raise self.error(f"'{name}' takes one dimension name", keyword)
            self.shape([value])
            return StringAttr(str(value))
        if form == "ints":
            return ArrayAttr(IntAttr(self.builder.positive_int(n, f"{name} size"))
                             for n in _items(value))
        if form == "signed":
            return IntAttr(self.builder.signed_int(value, name))
        if form in ("int", "count", "index"):
            number = self.builder.positive_int(value, name, least=0 if form == "index" else 1)
            return None if form == "count" and number == 1 else IntAttr(number)
        if form in ("float", "epsilon"):
            try:
                real = read_float(str(value), name)
            except ValueError as error:
                raise self.error(str(error), value) from None
            if form == "float":
                return FloatAttr(real, f64)
            if real <= 0:
                raise self.error(f"epsilon must be above 0, got {value}", value)
            return epsilon_property(real).get("epsilon")  # (None: the default, 1e-5)
        pads = _items(value)
        if len(pads) not in (1, 2):
            raise self.error("padding is one number or [height, width]", keyword)
        values = [self.builder.positive_int(p, "padding", least=0) for p in pads]
        values = values if len(values) == 2 else values * 2
        return ArrayAttr(IntAttr(v) for v in values)

    def build(self, statement: Statement, operands: list[SSAValue],
              properties: dict[str, Attribute], result_type: dnn.TensorType | None,
              op_token: Node) -> dnn.LayerOp:
        wanted = result_type.shape if result_type is not None else dnn.NO_RESULT
        try:
            inferred = statement.op.infer_shape([dnn.shape_of(o) for o in operands],
                                                properties, wanted)
        except ShapeError as error:
            raise self.error(str(error), op_token) from None
        if result_type is None:
            result_type = self.builder.tensor_type(inferred)
        elif inferred != result_type.shape:
            raise self.error(f"the result {result_type.shape} does not fit the operands: "
                             f"expected {dnn.TensorType.of(inferred)}", op_token)
        return statement.op.create(operands=operands, result_types=[result_type],
                                   properties=properties)

    def config(self, layer: dnn.LayerOp, tree: Tree) -> ConfigAttr:
        splits: dict[str, int] = {}
        for split in _items(tree)[1:]:
            dim, factor = split.children
            if str(dim) in splits:
                raise self.error(f"dimension '{dim}' is split twice", dim)
            splits[str(dim)] = self.builder.positive_int(factor, f"split factor of '{dim}'")
        config = ConfigAttr(splits)
        try:
            layer.verify_config(config)
        except VerifyException as error:
            raise self.error(str(error), tree) from None
        return config
