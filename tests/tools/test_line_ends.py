"""One definition of a line (`pase.core.diagnostics`): every hostile character of
tests/lit/tools/Inputs/line_ends.py, in .dnn and .mlir, before an error, gives the location
and the printed line of that location. The lit test line-ends.mlir pins a few through the
installed tool."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from cli import run_tool

from pase.core.diagnostics import Diagnostic
from pase.frontend import parse_text
from pase.tools.pase_opt import main

INPUTS = Path(__file__).resolve().parents[1] / "lit" / "tools" / "Inputs" / "line_ends.py"
SPEC = importlib.util.spec_from_file_location("line_ends", INPUTS)
assert SPEC is not None
assert SPEC.loader is not None
line_ends = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(line_ends)

EXPECTED = {
    "dnn": ":4:10: error: undefined value %y\n  return %y\n         ^^\n",
    "mlir": ":4:14: error: use of undefined value %y\n"
            "  dnn.return %y : !dnn.tensor<[b = 2], f32>\n             ^^\n",
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("line_ends") / "model"
    line_ends.main(str(prefix))
    return prefix


@pytest.mark.parametrize("suffix", ["dnn", "mlir"])
@pytest.mark.parametrize("mark", [*line_ends.MARKS, "crlf"])
def test_the_printed_line_is_the_located_line(inputs: Path, mark: str, suffix: str,
                                              capsys: pytest.CaptureFixture[str]):
    path = f"{inputs}.{mark}.{suffix}"
    status, out, err = run_tool(main, [path], capsys)
    assert (status, out, err) == (1, "", path + EXPECTED[suffix])


@pytest.mark.parametrize("mark", ["\f", "\r", "\t"])
def test_a_space_on_the_error_line_is_one_column(mark: str):
    """`.dnn` takes these as spaces; the caret stays under its column: the mark prints as
    one space."""
    with pytest.raises(Diagnostic) as error:
        parse_text(f"graph @g(b = 2) {{\n  %x = input [b]{mark}return %y\n}}\n", "m.dnn")
    assert str(error.value) == ("m.dnn:2:25: error: undefined value %y\n"
                                "  %x = input [b] return %y\n"
                                "                        ^^")


@pytest.mark.parametrize("mark", ["\v", "\u2028", "\x85", "\x1c"])
def test_a_character_that_is_not_a_space_is_unexpected_at_its_column(mark: str):
    with pytest.raises(Diagnostic) as error:
        parse_text(f"graph @g(b = 2) {{\n  %x = input [b]{mark}return %x\n}}\n", "m.dnn")
    assert str(error.value) == (f"m.dnn:2:17: error: unexpected character {mark!r}\n"
                                "  %x = input [b] return %x\n"
                                "                ^")
