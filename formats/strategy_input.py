"""Where a strategy file's text comes from: its file, or the standard input for `-`.

    pase-opt m.dnn -p 'pase-search{devices=8 export="-"}' -o /dev/null \\
        | pase-run m.dnn --devices 8 --strategy -

`-` names the standard input wherever a strategy file is read (`pase-run --strategy -`,
`pase-search{strategy="-"}`, `pase-partition-stages{strategy="-"}`), as `-` names it for
the model. A pipe can be read once, and a run reads its strategy file several times (pase-run
for the step it was searched for and whether it is a pipeline plan, then the pass for its
pins), so within `standard_input_strategy()` the standard input is read once and its text
kept. It is refused, one error each, when it is a terminal (the run would wait for typing),
empty, or already the model's (`standard_input_taken`). Diagnostics name it `stdin`, as
they name a model read from it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pase.core.diagnostics import Diagnostic
from pase.core.files import decode_text, read_bounded, read_text

STANDARD_INPUT = "-"
SHOWN_NAME = "stdin"
STANDARD_INPUT_PATHS = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
"""Paths of the standard input itself: read as `-` (a pipe read once is empty after)."""

_kept: ContextVar[dict[str, str] | None] = ContextVar("pase_standard_input", default=None)
"""Within `standard_input_strategy()`: the standard input's text once read (key "text"), or
what took it (key "taken")."""


@contextmanager
def standard_input_strategy() -> Iterator[None]:
    """Read the standard input at most once for the strategy `-` within the block."""
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


def standard_input_taken(by: str) -> None:
    """Record that `by` (the model) reads the standard input: a strategy `-` is then an
    error saying so, not an empty file."""
    kept = _kept.get()
    if kept is not None:
        kept["taken"] = by


def is_standard_input(path: str) -> bool:
    """Whether the strategy file `path` is the standard input (`-`, `/dev/stdin`, ...)."""
    return path == STANDARD_INPUT or path in STANDARD_INPUT_PATHS


def strategy_text(path: str) -> tuple[str, str]:
    """The name diagnostics give the strategy file `path`, and its text (`read_text`'s
    errors); `-` is the standard input."""
    if not is_standard_input(path):
        return path, read_text(path, "strategy file")
    kept = _kept.get()
    if kept is not None and "text" in kept:
        return SHOWN_NAME, kept["text"]
    if kept is not None and "taken" in kept:
        raise Diagnostic(f"the strategy '{path}' is the standard input, which {kept['taken']} "
                         "is read from; give the strategy as a file", SHOWN_NAME)
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None or stream.isatty():
        raise Diagnostic(f"the strategy '{path}' is the standard input, which is a terminal; "
                         "pipe or redirect the strategy JSON into it", SHOWN_NAME)
    text = decode_text(read_bounded(stream, SHOWN_NAME, "strategy file"), SHOWN_NAME,
                       "strategy file")
    if not text.strip():
        raise Diagnostic(f"the strategy '{path}' is the standard input, which is empty",
                         SHOWN_NAME)
    if kept is not None:
        kept["text"] = text
    return SHOWN_NAME, text
