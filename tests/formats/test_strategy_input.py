"""A strategy read from the standard input (`-`): once per run, never from a terminal."""

from __future__ import annotations

import io
import os

import pytest

from pase.core.diagnostics import Diagnostic
from pase.formats.strategy_input import (
    standard_input_strategy,
    standard_input_taken,
    strategy_text,
)


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_read_once_within_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, b'{"layers": []}\n')
    with standard_input_strategy():
        assert strategy_text("-") == ("stdin", '{"layers": []}\n')
        assert strategy_text("-") == ("stdin", '{"layers": []}\n')  # (the pipe is drained)
    with pytest.raises(Diagnostic, match="which is empty"):
        strategy_text("-")  # a new run: the standard input has nothing left


def test_dev_stdin_is_the_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, b"[]")
    with standard_input_strategy():
        assert strategy_text("/dev/stdin") == strategy_text("/dev/fd/0") == ("stdin", "[]")


def test_terminal_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal would make the run wait for typing: refused, not read."""
    controller, terminal = os.openpty()
    try:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.FileIO(terminal, "r",
                                                                    closefd=False)))
        with standard_input_strategy(), pytest.raises(Diagnostic, match="a terminal"):
            strategy_text("-")
    finally:
        os.close(controller)
        os.close(terminal)


def test_taken_by_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, b"{}")
    with standard_input_strategy():
        standard_input_taken("the model")
        with pytest.raises(Diagnostic, match="which the model is read from"):
            strategy_text("-")


def test_not_utf8_located(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, b'{"layers":\n [\xff]}')
    with standard_input_strategy(), pytest.raises(Diagnostic) as error:
        strategy_text("-")
    assert str(error.value).startswith("stdin:2:3: error: the strategy file is not UTF-8")


def test_a_file_is_its_path(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "s.json")
    with open(path, "w") as stream:
        stream.write("{}")
    assert strategy_text(path) == (path, "{}")
