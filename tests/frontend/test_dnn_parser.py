"""The `.dnn` parser's tables (`dnn.lark.json`): current, reproducible, and the same parser
as the one built from the grammar."""

from __future__ import annotations

from pathlib import Path

import pytest
from lark import Lark, Transformer
from lark.exceptions import UnexpectedInput

from pase.frontend import dnn_parser
from pase.frontend.dnn_parser import (
    GRAMMAR,
    OPTIONS,
    TABLES,
    canonical_table,
    current_tables,
    load_parser,
    tables_text,
)

MODELS = Path(__file__).resolve().parents[2] / "models"
BAD_INPUTS = ["graph @g(b = 2) { %x = input [b] return }", "graph @g(b = 2) { %x = ",
              "graph @g(b = 2) { %x = input [b] $ }", "graph g() {}", "graph @g() {} }"]


def test_the_tables_file_is_current() -> None:
    """Fails after an edit of `dnn.lark` or a lark bump: then run
    `.venv/bin/python -m pase.frontend.dnn_parser` (the parser still works, slower)."""
    assert current_tables() is not None
    assert TABLES.read_text(encoding="utf-8") == tables_text()


def test_building_the_tables_twice_gives_the_same_text() -> None:
    assert tables_text() == tables_text()


def test_loaded_and_built_parsers_agree() -> None:
    loaded = load_parser(Transformer())
    built = Lark.open(str(GRAMMAR), **OPTIONS)
    for path in sorted(MODELS.glob("*.dnn")):
        text = path.read_text(encoding="utf-8")
        assert loaded.parse(text) == built.parse(text), path.name
    for text in BAD_INPUTS:
        errors = []
        for parser in (loaded, built):
            with pytest.raises(UnexpectedInput) as error:
                parser.parse(text)
            # Not str(error): lark lists the expected set in hash order, which
            # PYTHONHASHSEED changes from process to process (pase's own
            # diagnostics sort it).
            errors.append((type(error.value), error.value.line, error.value.column,
                           str(getattr(error.value, "token", "")),
                           sorted(getattr(error.value, "expected", ()))))
        assert errors[0] == errors[1], text


@pytest.mark.parametrize("contents", [None, "{not json", '{"lark": "0.0"}'])
def test_missing_or_stale_tables_build_the_parser(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contents: str | None) -> None:
    tables = tmp_path / "dnn.lark.json"
    if contents is not None:
        tables.write_text(contents, encoding="utf-8")
    monkeypatch.setattr(dnn_parser, "TABLES", tables)
    assert current_tables() is None
    parser = load_parser(Transformer())
    assert parser.source_path != "<deserialized>"  # lark's mark of a loaded parser
    assert parser.parse("graph @g(b = 2) { %x = input [b] return %x }").data == "start"


def test_canonical_table_numbers_states_breadth_first_and_tokens_by_name() -> None:
    # States 7 -> 3 on "b" and 7 -> 5 on "a"; 5 reduces by rule {"@": 0} on "b".
    table = {"tokens": {0: "b", 1: "a"},
             "states": {3: {}, 5: {0: (1, {"@": 0})}, 7: {0: (0, 3), 1: (0, 5)}},
             "start_states": {"start": 7}, "end_states": {"start": 3}}
    assert canonical_table(table) == {
        "tokens": {0: "a", 1: "b"},
        "states": {0: {0: (0, 1), 1: (0, 2)}, 1: {1: (1, {"@": 0})}, 2: {}},
        "start_states": {"start": 0}, "end_states": {"start": 2}}
