r"""User-facing diagnostics: `file:line:col: error: message`, the source line, a caret.

Every error pase reports about an input file (`.dnn` source, `.mlir` IR, a strategy
file) is a `Diagnostic`; the drivers print it and exit with status 1, never with a
Python traceback.

Example:
    model.dnn:7:12: error: dimension 'h' is not declared in @mlp
      %h = einsum %x, %w1 -> [b, h]
                                 ^

What a line is, everywhere in pase (the lexers, every `file:line:col`, the line printed under
it): a line ends at "\n" only, as lark, xDSL's MLIR lexer and `mlir-opt` count lines and
as every editor agrees; a "\r" just before the "\n" belongs to the line end ("\r\n" files).
Any other character (a lone "\r", form feed, vertical tab, NEL U+0085, U+2028, ...) is a
character of its line, one column wide, and is printed under a diagnostic as a space, so
that the printed line is the one the location counts and the caret stays under its column.
`offset_to_line_column` (and `LineIndex`, for many offsets of one text) counts lines so and
`shown_line` prints them so; nothing else splits source into lines.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import PassFailedException

if TYPE_CHECKING:
    from xdsl.ir import Operation

# A source line longer than this is not printed under a diagnostic (a minified file).
LONGEST_SHOWN_LINE = 200
# A message longer than this shows its start and its end (a name of megabytes from the input).
LONGEST_SHOWN_MESSAGE = 1000


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
        message = bounded(self.message)
        if not self.filename:
            return f"error: {message}"
        filename = escaped(self.filename)  # (a name may hold a line break or an ESC)
        if self.line <= 0:
            return f"{filename}: error: {message}"
        text = f"{filename}:{self.line}:{self.column}: error: {message}"
        source_line = self.source_line
        if source_line is None and self.source is not None:
            source_line = shown_line(self.source, self.line)
        if source_line is not None and len(source_line) <= LONGEST_SHOWN_LINE:
            caret = " " * max(self.column - 1, 0) + "^" * max(self.length, 1)
            text += f"\n{printable(source_line)}\n{caret}"
        return text


def offset_to_line_column(source: str, offset: int) -> tuple[int, int]:
    r"""1-based line and column of a character offset (lines end at "\n" only).

    >>> offset_to_line_column("a\fb\nc\u2028d", 5)
    (2, 2)
    """
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


class LineIndex:
    r"""`offset_to_line_column` for many offsets of one text, each in O(log lines): a parser
    locating every op of a large file calls it once per op.

    >>> LineIndex("a\fb\nc\u2028d").line_column(5)
    (2, 2)
    """

    def __init__(self, source: str):
        self.starts = [0]
        start = source.find("\n")
        while start >= 0:
            self.starts.append(start + 1)
            start = source.find("\n", start + 1)

    def line_column(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


def shown_line(text: str, line: int) -> str | None:
    r"""Line `line` (1-based) of `text`, without its line end, or None when there is none (an
    empty text has no line, and a final "\n" ends the last line) or it is too long to show
    under a diagnostic (a minified file).

    >>> shown_line("one\r\ntwo\u2028still two\nthree", 2)
    'two\u2028still two'
    """
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    if start >= len(text):
        return None
    end = text.find("\n", start)
    shown = text[start:end if end >= 0 else len(text)].removesuffix("\r")
    return shown if line >= 1 and len(shown) <= LONGEST_SHOWN_LINE else None


def read_line(path: str, line: int) -> str | None:
    """Line `line` (1-based) of a text file, to show under a diagnostic; None if it cannot be
    read or is too long to show."""
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            return shown_line(stream.read(), line)
    except (OSError, UnicodeDecodeError):
        return None


def bounded(message: str) -> str:
    """`message`, or when longer than `LONGEST_SHOWN_MESSAGE` its start and end around
    the count of characters left out: a diagnostic stays one readable line whatever the
    input names (a graph name of ten megabytes in a strategy file).

    >>> bounded("@" + "g" * 5000 + ", not @mlp")[-30:]
    'gggggggggggggggggggg, not @mlp'
    """
    if len(message) <= LONGEST_SHOWN_MESSAGE:
        return message
    keep = LONGEST_SHOWN_MESSAGE // 2 - 20
    left_out = len(message) - 2 * keep
    return f"{message[:keep]} [... {left_out:,} characters ...] {message[-keep:]}"


def escaped(text: str) -> str:
    r"""`text` with each character that is not printable as Python escapes it: a message
    that names a character of the input (a NUL, a byte order mark) shows which.

    >>> escaped("Unexpected character: \x00"), escaped("Unexpected character: \ufeff")
    ('Unexpected character: \\x00', 'Unexpected character: \\ufeff')
    """
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def terminal_safe(message: str) -> str:
    r"""`message` as printed on stderr: its lines as they are, each character of a line
    that is not printable as its escape, so that no name from the input (a file's name
    holding an ESC or a lone CR) moves the terminal's cursor or colours its text.

    >>> terminal_safe("a\x1b[31m: error\nsource")
    'a\\x1b[31m: error\nsource'
    """
    return "\n".join(escaped(line) for line in message.split("\n"))


def printable(line: str) -> str:
    r"""A source line as a terminal shows it column for column: every character that is not
    printable (a tab, form feed, lone "\r", U+2028, ...) becomes one space.

    >>> printable("a\tb\x0cc\u2028d")
    'a b c d'
    """
    return "".join(char if char.isprintable() else " " for char in line)


def at_op(op: Operation, message: str, filename: str = "", prefix: str = "") -> Diagnostic:
    """`message` at `op`'s `file:line:col`, with its source line. An op without a place
    (IR built in Python) is reported as `prefix + message` in `filename` (or nowhere)."""
    from xdsl.dialects.builtin import FileLineColLoc

    location = op.location
    if not isinstance(location, FileLineColLoc):
        return Diagnostic(prefix + message, filename)
    filename, line = location.filename.data, location.line.data
    return Diagnostic(message, filename, line, location.column.data,
                      source_line=read_line(filename, line))
