"""Where a value of a JSON text is: line and column for a diagnostic that points at it.

    located("layers[0] must be an object", "s.json", text, ("layers", 0))  # a Diagnostic

The strategy files' diagnostics (`strategy_json`, `strategy_step`) point at the value or
key a JSON path names, found in the text itself (json.loads keeps no positions).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pase.core.diagnostics import Diagnostic, offset_to_line_column
from pase.core.files import shown_line
from pase.core.numbers import LONGEST_INTEGER

# A string, a TOML comment, or an integer literal: not the whole part of a float (`12.5`,
# `12e3`), nor digits within a word or after a point.
_LITERAL = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|#[^\n]*|"
                      r"(?<![\w.])[-+]?\d[\d_]*(?![\d_.eE])")

JsonPath = tuple[str | int, ...]
"""Keys and list indices from the top of a JSON document: ("layers", 3, "config", "b")."""


def located(message: str, path: str, text: str, where: JsonPath | int,
             key: bool = False) -> Diagnostic:
    """A diagnostic at the value `where` points to (an offset, or a JSON path: see `locate`)."""
    offset, length = (where, 1) if isinstance(where, int) else locate(text, where, key)
    line, column = offset_to_line_column(text, offset)
    source_line = shown_line(text, line)
    if source_line is not None:
        length = max(1, min(length, len(source_line) - column + 1))
    return Diagnostic(message, path, line, column, length=length, source_line=source_line)


_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?Infinity|NaN|true|false|null|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def locate(text: str, where: JsonPath, key: bool = False) -> tuple[int, int]:
    """Offset and length of the value at `where` in the valid JSON `text` (with `key`, of its
    key); of the nearest enclosing value when `where` is not there. Iterative, so any depth;
    of duplicate keys, the last, as `json.loads` keeps.

    >>> locate('{"layers": [{"name": "h"}]}', ("layers", 0, "name"))
    (21, 3)
    """
    found = (0, 1)
    # One frame per open container: [its path, is it an object, key or index of the next
    # value, does an object expect a key next].
    stack: list[list[Any]] = []
    position = _SPACE.match(text).end()  # type: ignore[union-attr]
    while position < len(text):
        char = text[position]
        if char in ",:":
            if char == "," and stack:
                frame = stack[-1]
                if frame[1]:
                    frame[3] = True
                else:
                    frame[2] += 1
            position = _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
            continue
        if char in "]}":
            stack.pop()
            position = _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
            continue
        string = ""
        if char == '"':
            string, end = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
        elif char in "[{":
            end = position + 1
        else:
            match = _SCALAR.match(text, position)
            end = match.end() if match else position + 1
        if stack and stack[-1][1] and stack[-1][3]:  # an object's key
            frame = stack[-1]
            frame[2], frame[3] = string, False
            if key and (*frame[0], string) == where:
                found = (position, end - position)
            position = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            continue
        value_path = (*stack[-1][0], stack[-1][2]) if stack else ()
        # A later duplicate key is the one JSON readers keep, so a later match wins.
        if value_path == where[:len(value_path)] and not (key and value_path == where):
            found = (position, end - position)
        if char in "[{":
            stack.append([value_path, char == "{", 0, char == "{"])
        position = _SPACE.match(text, end).end()  # type: ignore[union-attr]
    return found


def long_integer(text: str) -> tuple[int, int] | None:
    """Offset and length of the first integer literal of a JSON or TOML `text` with more than
    `LONGEST_INTEGER` digits (outside strings and comments; a float's digits are not one),
    None if there is none: pase refuses it where it is written.

        >>> long_integer('{"devices": 8, "cost": 1' + "0" * 45 + '.5, "b": -' + "9" * 41 + "}")
        (78, 42)
    """
    for match in _LITERAL.finditer(text):
        token = match.group()
        if token[0] not in "\"'#" and len(token.lstrip("+-").replace("_", "")) > LONGEST_INTEGER:
            return match.start(), len(token)
    return None
