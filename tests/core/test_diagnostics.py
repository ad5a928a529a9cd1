"""`LineIndex` counts lines as `offset_to_line_column` does, at every offset."""

import pytest

from pase.core.diagnostics import LineIndex, offset_to_line_column

TEXTS = ["", "a", "\n", "\n\n", "ab\ncd\n\nef", "x\r\ny\fz\n", "a\u2028b\x85c\rd\ne"]


@pytest.mark.parametrize("text", TEXTS)
def test_line_index_agrees_with_offset_to_line_column(text: str) -> None:
    lines = LineIndex(text)
    assert [lines.line_column(offset) for offset in range(len(text) + 1)] == [
        offset_to_line_column(text, offset) for offset in range(len(text) + 1)]
