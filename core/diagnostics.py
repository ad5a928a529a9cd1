"""User-facing diagnostics: `file:line:col: error: message`, the source line, a caret.

Every error pase reports about an input file (`.dnn` source, `.mlir` IR, a strategy
file) is a `Diagnostic`; the drivers print it and exit with status 1, never with a
Python traceback.

Example:
    model.dnn:7:12: error: dimension 'h' is not declared in @mlp
      %h = einsum %x, %w1 -> [b, h]
                                 ^
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import PassFailedException

if TYPE_CHECKING:
    from xdsl.ir import Operation


@dataclass
class Diagnostic(PassFailedException):
    """An error at a place in an input file (line and column are 1-based; 0 = unknown).

    It is xDSL's `PassFailedException`, so a pass that raises it is reported by
    `xdsl-opt`'s own error paths too (`--verify-diagnostics` prints it)."""

    message: str
    filename: str = ""
    line: int = 0
    column: int = 0
    source: str | None = None
    length: int = 1
    source_line: str | None = None
    """The offending line, when `source` is not the whole file (a split chunk)."""

    def __str__(self) -> str:
        if not self.filename:
            return f"error: {self.message}"
        if self.line <= 0:
            return f"{self.filename}: error: {self.message}"
        text = f"{self.filename}:{self.line}:{self.column}: error: {self.message}"
        source_line = self.source_line
        if source_line is None and self.source is not None:
            lines = self.source.splitlines()
            if self.line <= len(lines):
                source_line = lines[self.line - 1]
        if source_line is not None:
            caret = " " * max(self.column - 1, 0) + "^" * max(self.length, 1)
            text += f"\n{source_line.expandtabs(1)}\n{caret}"
        return text


def offset_to_line_column(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


def at_op(op: Operation, message: str, filename: str = "", prefix: str = "") -> Diagnostic:
    """`message` at `op`'s `file:line:col`, with its source line. An op without a place
    (IR built in Python) is reported as `prefix + message` in `filename` (or nowhere)."""
    from xdsl.dialects.builtin import FileLineColLoc

    from pase.core.files import read_line

    location = op.location
    if not isinstance(location, FileLineColLoc):
        return Diagnostic(prefix + message, filename)
    filename, line = location.filename.data, location.line.data
    return Diagnostic(message, filename, line, location.column.data,
                      source_line=read_line(filename, line))
