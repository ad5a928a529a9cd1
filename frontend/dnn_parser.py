"""The `.dnn` LALR parser, loaded from the tables lark built from `dnn.lark` ahead of time.

    parser = load_parser(transformer)        # as Lark.open("dnn.lark", **OPTIONS) would

Building the parser from the grammar takes lark about 70 ms, most of a small model's
start-up (issue 13); loading its tables takes 3 ms. `dnn.lark.json` holds the tables
with the grammar text, the options and the lark version they were built from; when any
of these differs from what is installed (the grammar was edited, lark bumped), the parser
is built from the grammar, as before, and is the same parser. After editing the grammar,
regenerate the file (a test checks it is current):

    .venv/bin/python -m pase.frontend.dnn_parser

lark numbers the LALR states and tokens in an order that changes from run to run (it
iterates sets of objects hashed by identity), so the file renumbers them in an order
that depends only on the automaton (`canonical_table`): regenerating an unchanged
grammar rewrites the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.grammar import Rule
from lark.lexer import TerminalDef

from pase.core.diagnostics import Diagnostic

GRAMMAR = Path(__file__).resolve().with_name("dnn.lark")
TABLES = GRAMMAR.with_name("dnn.lark.json")
OPTIONS: dict[str, Any] = {"parser": "lalr", "propagate_positions": True,
                           "maybe_placeholders": True}
SHIFT = 0  # lark's action code in a serialized table (1 is reduce)


def load_parser(transformer: Transformer) -> Lark:
    """The parser of `dnn.lark` calling `transformer` as it reduces: from `dnn.lark.json`
    when the file is current, else built from the grammar."""
    tables = current_tables()
    if tables is None:
        return Lark.open(str(GRAMMAR), transformer=transformer, **OPTIONS)
    # What lark's standalone parsers call; of the options, lark lets a loaded parser
    # change only the callbacks and the like (propagate_positions is one).
    return Lark._load_from_dict(tables["data"], tables["memo"], transformer=transformer,
                                propagate_positions=OPTIONS["propagate_positions"])


def current_tables() -> dict[str, Any] | None:
    """The contents of `dnn.lark.json`, or None when it is missing or was built from
    another grammar, other options or another lark."""
    try:
        tables = json.loads(TABLES.read_text(encoding="utf-8"), object_hook=_integer_keys)
    except (OSError, ValueError):
        return None
    made_from = (tables.get("lark"), tables.get("grammar"), tables.get("options"))
    if made_from != (lark.__version__, GRAMMAR.read_text(encoding="utf-8"), OPTIONS):
        return None
    return tables


def tables_text() -> str:
    """What `dnn.lark.json` holds for the installed grammar and lark: the same text each
    time it is built."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    parser = Lark(grammar, **OPTIONS)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["parser"]["parser"] = canonical_table(data["parser"]["parser"])
    return json.dumps({"lark": lark.__version__, "grammar": grammar, "options": OPTIONS,
                       "data": data, "memo": memo}, indent=1, sort_keys=True) + "\n"


def canonical_table(table: dict[str, Any]) -> dict[str, Any]:
    """A serialized LALR table (`tokens`: number -> name, `states`: state -> {token number:
    (action, argument)}, `start_states`, `end_states`) renumbered: tokens by name, states
    breadth-first from the start states, following shifts in token-name order. Every state
    is reached (a state the start cannot reach is not in lark's table)."""
    names: dict[int, str] = table["tokens"]
    states: dict[int, dict[int, tuple[int, Any]]] = table["states"]

    def by_name(actions: dict[int, tuple[int, Any]]) -> list[tuple[int, tuple[int, Any]]]:
        return sorted(actions.items(), key=lambda item: names[item[0]])

    number = {state: index for index, state in enumerate(
        table["start_states"][start] for start in sorted(table["start_states"]))}
    queue = list(number)
    for state in queue:
        for _, (action, target) in by_name(states[state]):
            if action == SHIFT and target not in number:
                number[target] = len(number)
                queue.append(target)
    assert len(number) == len(states), "a state the start states do not reach"
    token = {name: index for index, name in enumerate(sorted(names.values()))}
    return {
        "tokens": {index: name for name, index in token.items()},
        "states": {number[state]: {token[names[symbol]]: (action, number[target]
                                                          if action == SHIFT else target)
                                   for symbol, (action, target) in by_name(actions)}
                   for state, actions in sorted(states.items(), key=lambda s: number[s[0]])},
        "start_states": {start: number[state] for start, state in table["start_states"].items()},
        "end_states": {start: number[state] for start, state in table["end_states"].items()},
    }


def _integer_keys(mapping: dict[str, Any]) -> dict[Any, Any]:
    """JSON keys are strings; the tables' numeric keys (states, tokens, memo entries) are
    the only keys of digits alone, so those become integers again."""
    return {int(key) if key.isdigit() else key: value for key, value in mapping.items()}


if __name__ == "__main__":
    TABLES.write_text(tables_text(), encoding="utf-8")
    print(f"wrote {TABLES}")


_TOKEN_NAMES = {
    "VALUE": "a %value", "NAME": "a name", "NUMBER": "a number", "GRAPH_NAME": "@name",
    "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'",
    "RBRACE": "'}'", "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "__ANON_0": "'->'",
    "KIND": "max, avg, sum, mean, causal, padding, zeros, edge or reflect", "ALONG": "'along'",
    "NUMBER_CLAUSE": "groups, min, max, from, fill, exponent, ignore, before, after or "
                     "epsilon",
    "GRAPH": "'graph'",
    "RETURN": "'return'", "DATA": "input or param",
}


def syntax_error(error: UnexpectedInput, text: str, filename: str) -> Diagnostic:
    """What a syntax error of `.dnn` text says: the token found and the tokens expected,
    by the names a reader knows (`_TOKEN_NAMES`), at the error's line and column."""
    line, column = getattr(error, "line", 0), getattr(error, "column", 0)
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = sorted({_TOKEN_NAMES.get(t, t.lower().strip("_")) for t in error.expected})
        if token.type == "$END":
            line, column = _end_position(text)
            message = "unexpected end of file"
        else:
            message = f"unexpected '{token}'"
        if expected:
            message += "; expected " + ", ".join(expected[:8])
        return Diagnostic(message, filename, line, column, text, max(len(str(token)), 1))
    if isinstance(error, UnexpectedCharacters):
        return Diagnostic(f"unexpected character {text[error.pos_in_stream or 0]!r}", filename,
                          line, column, text)
    if isinstance(error, UnexpectedEOF):
        line, column = _end_position(text)
        return Diagnostic("unexpected end of file", filename, line, column, text)
    return Diagnostic(str(error), filename, line, column, text)


def _end_position(text: str) -> tuple[int, int]:
    lines = text.rstrip("\n").split("\n") or [""]
    return len(lines), len(lines[-1]) + 1
