"""MLIR text as an xDSL frontend that locates every op: `file:line:col` on each op, so that
verifier and pass errors point at the source.

    module = LocatedMlirFrontend().parse(context, open("model.mlir", "rb"), "model.mlir")
    verify_located(module)   # a failing op's error names its line

xDSL's own `mlir` frontend (`xdsl.frontend.mlir`) leaves ops unlocated and reports an
undefined value at the end of the input; `LocatedParser` records each op's place, reports
an undefined value at its first use, reports an attribute xDSL rejects as it builds it
(`300 : i8`) or a number of the wrong type (`7 : (i32) -> i32`) at its text, refuses an
integer literal too long to convert,
brackets nested past `pase.core.nesting`'s limit, and a file whose IR would take more than
its memory budget (`-f 'mlir{memory-gib=G}'`, default 4 GiB, as `.dnn`'s): each token is
charged `BYTES_PER_TOKEN` as the parser reads it, and the parse stops at the first one over
the budget (`TokenBudget`; a file of fewer characters than the budget's tokens is not
counted). pase-opt reads `.mlir` with it (each
`--split-input-file` chunk with its `line_offset`) and so does pase-run. It is not in
`pase.universe.PASE`, whose names plain xdsl-opt merges with xDSL's own: the name `mlir`
is xDSL's. `pase.universe.FRONTENDS` holds the frontends pase's tools read with.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, AttributeInvT, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer
from xdsl.utils.mlir_lexer import MLIRTokenKind as TokenKind

from pase.core.budget import DEFAULT_MEMORY_GIB, budget_bytes, check_budget
from pase.core.diagnostics import LineIndex, at_op
from pase.core.files import decode_text
from pase.core.nesting import check_nesting
from pase.core.numbers import LONGEST_INTEGER
from pase.core.options import CheckedOptions
from pase.dialect.traits import VerifyExceptionAt

NOTHING_PARSED = "Could not parse entire input!"

BYTES_PER_TOKEN = 256
"""What the IR built from one token holds at most, measured with tracemalloc at the peak of
parsing 3,000 ops of each form (benchmarks/RESULTS.md, mends13): an op of no operand
`"a.b"() : () -> ()`, 168 bytes a token; with one result, 193; a region, 123; an
attribute list of integers, 92; a `tensor<2x...x2xf32>` of 30 dims, 110 (each dim a token:
`count_tokens`); a pase graph printed by pase-opt, 84."""


@dataclass(frozen=True)
class MlirOptions(CheckedOptions):
    """The options of `-f mlir` (`-f 'mlir{memory-gib=G}'`)."""

    name = "mlir"
    OPTIONS_OF = "-f mlir"

    memory_gib: float | int = DEFAULT_MEMORY_GIB
    """The most the IR of the file may take, in GiB."""


@dataclass(frozen=True)
class LocatedMlirFrontend(Frontend):
    """MLIR text, each op located (`LocatedParser`); `no_implicit_module` as xDSL's `mlir`
    frontend has it, `line_offset` the file lines before this text (a split chunk),
    `memory_gib` the most its IR may take (`MlirOptions`)."""

    name = "mlir"

    no_implicit_module: bool = False
    line_offset: int = 0
    memory_gib: float | int = DEFAULT_MEMORY_GIB

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "<input>") -> ModuleOp:
        text = decode_text(input.read(), input_name)
        limit = budget_bytes(float(self.memory_gib), input_name, "mlir")
        check_nesting(text, input_name, self.line_offset)
        # A token is at least a character: a file of few characters cannot reach the budget.
        counted = limit if len(text) * BYTES_PER_TOKEN > limit else None
        return LocatedParser(ctx, text, input_name, line_offset=self.line_offset,
                             limit=counted).parse_module(not self.no_implicit_module)


def token_weight(token: Token) -> int:
    """What `token` counts towards the budget: one, and a shape's dims, which the lexer reads
    as one word (`x2x2xf32` in `tensor<2x2x2xf32>`), one each."""
    return 1 + (token.text.count("x") if token.kind is TokenKind.BARE_IDENT else 0)


class TokenBudget:
    """The tokens a parse has read, each counted once however often the parser goes back
    over it, and a `Diagnostic` as soon as their IR would take more than `limit` bytes: the
    IR built so far is never much over the budget, and an error early in a large file is
    found without reading the rest of it first."""

    def __init__(self, limit: int, input_name: str) -> None:
        self.limit = limit
        self.input_name = input_name
        self.count = 0
        self.end = 0
        """Where the last counted token ends: the parser re-reads tokens before it."""

    def charge(self, token: Token) -> None:
        if token.span.start < self.end or token.kind is TokenKind.EOF:
            return
        self.end = token.span.end
        self.count += token_weight(token)
        if self.count * BYTES_PER_TOKEN > self.limit:
            check_budget(self.count, "tokens", self.count * BYTES_PER_TOKEN, self.limit,
                         self.input_name, "mlir", first=True)


def count_tokens(text: str, input_name: str) -> int:
    """The MLIR tokens of `text`, up to its first one the lexer refuses (the parse reports
    that one, or an error before it); a shape's dims, which the lexer reads as one word
    (`x2x2xf32` in `tensor<2x2x2xf32>`), count one token each.

        >>> count_tokens('"a.b"() : () -> ()', "m.mlir")
        9
        >>> count_tokens('"a.b"() : () -> tensor<2x2x2xf32>', "m.mlir")
        15
    """
    lexer = MLIRLexer(Input(text, input_name))
    count = 0
    try:
        while (token := lexer.lex()).kind is not TokenKind.EOF:
            count += token_weight(token)
    except ParseError:
        pass
    return count


class LocatedParser(Parser):
    """The MLIR parser, recording each op's `file:line:col` as its location, and reporting
    an undefined value at its first use (xDSL reports it at the end of the input)."""

    def __init__(self, *args: Any, line_offset: int = 0, limit: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line_offset = line_offset
        self.first_uses: dict[str, Span] = {}
        self.lines: LineIndex | None = None  # of the input, made at the first op
        lexer = self._parser_state.lexer
        lex = lexer.lex
        checked_lex: Callable[[], Token]
        if limit is None:
            def checked_lex() -> Token:
                return _checked_integer(lex())
        else:
            charge = TokenBudget(limit, str(lexer.input.name)).charge

            def checked_lex() -> Token:
                token = _checked_integer(lex())
                charge(token)
                return token

        _checked_integer(self._current_token)
        if limit is not None:
            charge(self._current_token)
        lexer.lex = checked_lex  # type: ignore[method-assign]

    def resolve_operand(self, operand: UnresolvedOperand,
                        type: AttributeInvT) -> SSAValue[AttributeInvT]:
        name = operand.operand_name
        if name not in self.ssa_values:
            self.first_uses.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as error:
            if self._current_token.kind == TokenKind.EOF and error.msg == NOTHING_PARSED:
                return ModuleOp([])  # as mlir-opt: no ops (only comments) is an empty module
            undefined = [name for name in self.forward_ssa_references
                         if name in self.first_uses]
            if not error.msg.startswith("values used but not defined") or not undefined:
                raise
            more = f" (and {len(undefined) - 1} more)" if len(undefined) > 1 else ""
            raise ParseError(self.first_uses[undefined[0]],
                             f"use of undefined value %{undefined[0]}{more}") from None

    def parse_optional_attribute(self) -> Attribute | None:
        start = self._current_token.span
        try:
            return super().parse_optional_attribute()
        except VerifyException as error:  # xDSL verifies an attribute as it builds it
            raise ParseError(self._span_from(start), str(error)) from None

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        start = self._current_token.span
        try:
            return super().parse_optional_builtin_int_or_float_attr()
        except ParseError as error:
            if error.span.start < self.pos:
                raise
            # xDSL reports a literal's bad type (`7 : (i32) -> i32`) at the token after it.
            raise ParseError(self._span_from(start), error.msg) from None

    def _span_from(self, start: Span) -> Span:
        """From `start` to the end of the last token read (blanks after it aside)."""
        text = start.input.content
        end = self.pos
        while end > start.start and text[end - 1] in " \t\r\n":
            end -= 1
        return Span(start.start, max(end, start.end), start.input)

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except struct.error as error:  # xDSL packs `[...]` of an i16/i64 array unchecked
            raise ParseError(Span(span.start, self.pos, span.input),
                             f"an integer of this op does not fit its type ({error})") from None
        if not isinstance(op.location, FileLineColLoc):
            if self.lines is None:
                content = span.input.content
                self.lines = LineIndex(content if isinstance(content, str)
                                       else content.decode("utf-8", "replace"))
            line, column = self.lines.line_column(span.start)
            op.location = FileLineColLoc(StringAttr(span.input.name),
                                         IntAttr(line + self.line_offset), IntAttr(column))
        return op


def _checked_integer(token: Token) -> Token:
    """`token`, unless it is an integer literal too long to convert (`LONGEST_INTEGER`): that
    is a parse error at the token, before xDSL converts it."""
    if token.kind == TokenKind.INTEGER_LIT and len(token.text) > LONGEST_INTEGER:
        raise ParseError(token.span, f"integer literal of {len(token.text):,} digits; pase "
                         f"reads integers of at most {LONGEST_INTEGER} digits (a dim, size or "
                         "factor is at most 2^53)")
    return token


def verify_located(module: ModuleOp) -> None:
    """Verify op by op, so a failure names the op's source location."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as error:
            culprit = error.op if isinstance(error, VerifyExceptionAt) else op
            message = f"'{culprit.name}' op " + verifier_message(error)
            raise DiagnosticException(str(at_op(culprit, message))) from None


def verifier_message(error: Exception) -> str:
    """The first line of a verifier's error, with the reasons xDSL puts on the lines after
    a constraint's `does not verify:` (one per level of nesting) joined to it.

        >>> verifier_message(VerifyException("result 'output' at position 0 does not "
        ...     "verify:\\n!foo.bar should be of base attribute dnn.tensor"))
        "result 'output' at position 0 does not verify: !foo.bar should be of base \
attribute dnn.tensor"
    """
    return re.sub(r"(verify:)\n", r"\1 ", str(error)).split("\n", 1)[0]
