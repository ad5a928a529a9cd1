"""How deep brackets may nest in MLIR input: `MAX_NESTING` levels of `(`, `[`, `{` and `<`
together (attributes, types and regions), checked before parsing.

xDSL's parser, verifier and printer recurse (about ten Python frames per level of a
nested dictionary attribute), so a few thousand nested brackets used to end in a
RecursionError. `check_nesting` stops such input at the bracket that opens one level too
many, with a located diagnostic, and `allow_nesting` gives the tools the Python recursion
depth that input of `MAX_NESTING` levels needs, so everything accepted also verifies,
runs through the passes and prints.

    check_nesting("builtin.module attributes {a = " + "[" * 300 + "]" * 300 + "} {}",
                  "deep.mlir")
    # Diagnostic: deep.mlir:1:287: error: brackets nest deeper than 256 levels here; ...
"""

from __future__ import annotations

import re
import sys

from pase.core.diagnostics import Diagnostic, offset_to_line_column

MAX_NESTING = 256
"""The deepest nesting of brackets pase reads; real IR nests a few tens deep."""

RECURSION_LIMIT = 12_000
"""The Python recursion limit under which input nested `MAX_NESTING` deep parses, verifies
and prints: a dictionary attribute nested 256 deep, the deepest construct measured, takes
2,588 frames to parse, verify and print."""

# A string or a comment (skipped), the arrow `->` (not a closing '>'), or one bracket.
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[(\[{<)\]}>]')
_OPENING = frozenset("([{<")
_CLOSING = frozenset(")]}>")


def check_nesting(text: str, filename: str, line_offset: int = 0) -> None:
    """Raise a `Diagnostic` at the first bracket of `text` that opens level
    `MAX_NESTING + 1` (`line_offset`: the file lines before `text`, for a split chunk).
    One pass over the text; mismatched brackets are left to the parser."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in _OPENING:
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(text, match.start(), filename, line_offset)
        elif token in _CLOSING and depth:
            depth -= 1


def _too_deep(text: str, offset: int, filename: str, line_offset: int) -> Diagnostic:
    line, column = offset_to_line_column(text, offset)
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return Diagnostic(f"brackets nest deeper than {MAX_NESTING} levels here; pase reads "
                      f"attributes, types and regions nested at most {MAX_NESTING} deep",
                      filename, line + line_offset, column,
                      source_line=text[start:end if end >= 0 else len(text)])


def allow_nesting() -> None:
    """Raise Python's recursion limit to `RECURSION_LIMIT` (never lower it), as the tools
    do before they read input."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
