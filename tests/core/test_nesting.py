"""`check_nesting`: the bracket depth of MLIR text, counted once, located at the bracket
that opens one level too many."""

from __future__ import annotations

import pytest

from pase.core.diagnostics import Diagnostic
from pase.core.nesting import MAX_NESTING, check_nesting


def test_the_limit_itself_is_read() -> None:
    check_nesting("[" * MAX_NESTING + "]" * MAX_NESTING, "f.mlir")


@pytest.mark.parametrize("opening", ["(", "[", "{", "<"])
def test_one_level_more_is_an_error_at_that_bracket(opening: str) -> None:
    text = "x\n  " + opening * (MAX_NESTING + 1)
    with pytest.raises(Diagnostic) as caught:
        check_nesting(text, "f.mlir", line_offset=10)
    assert (caught.value.line, caught.value.column) == (12, 3 + MAX_NESTING)
    assert caught.value.source_line == "  " + opening * (MAX_NESTING + 1)


def test_kinds_of_bracket_count_together() -> None:
    with pytest.raises(Diagnostic):
        check_nesting("([{<" * (MAX_NESTING // 4) + "(", "f.mlir")


def test_closed_brackets_do_not_add_up() -> None:
    check_nesting("[" * MAX_NESTING + "]" * MAX_NESTING + "[" * MAX_NESTING, "f.mlir")


@pytest.mark.parametrize("text", [
    '"' + "[" * 1000 + '"',     # in a string
    '"\\"' + "[" * 1000 + '"',  # after an escaped quote in a string
    "// " + "[" * 1000 + "\n",  # in a comment
])
def test_brackets_in_strings_and_comments_do_not_count(text: str) -> None:
    check_nesting(text, "f.mlir")


def test_an_arrow_closes_no_bracket() -> None:
    with pytest.raises(Diagnostic):
        check_nesting("<" * MAX_NESTING + "->" * 1000 + "<", "f.mlir")
