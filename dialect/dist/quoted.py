"""`custom<Quoted>($prop)`: a string property of a `dist` op's syntax as a quoted string.

    assembly_format = "$input `tag` custom<Quoted>($tag) attr-dict `:` type($result)"

A plain `$tag` is parsed as any attribute, so `tag 7 : (...) -> ...` reads as the integer 7
typed by the op's own type, and the error comes past that type, on the next line. This
directive takes a string literal only, and anything else is an error at its own token.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer


@irdl_custom_directive
class Quoted(CustomDirective):
    """A string property, printed and parsed as a quoted string (`tag "h"`)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        text = parser.parse_optional_str_literal()
        if text is None:
            parser.raise_error(f"expected the {self.value.name.replace('_', ' ')} as a "
                               "quoted string")
        self.value.set(state, StringAttr(text))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        value = self.value.get(op)
        assert isinstance(value, StringAttr)
        printer.print_string_literal(value.data)
