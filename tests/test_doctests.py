"""The examples in the source's docstrings are the API's contract, so each one runs here.

Every module of the `pase` package is found by walking the package (a moved or new module is
included with nothing to edit), imported by its own name, and its doctests run from the
checkout's root, where examples name `models/mlp.dnn`. An example that cannot run here (it
writes a file, or needs what the caller has) says so with `# doctest: +SKIP`.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
from pathlib import Path

import pytest

import pase

ROOT = Path(__file__).resolve().parents[1]


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    tests = []
    for module in pkgutil.walk_packages(pase.__path__, "pase."):
        tests += [test for test in finder.find(importlib.import_module(module.name))
                  if test.examples]
    return sorted(tests, key=lambda test: test.name)


DOCTESTS = _doctests()


def test_the_walk_finds_the_examples() -> None:
    """The walk reaches subpackages and finds the examples (a broken walk would pass
    every test below by finding none)."""
    names = {test.name for test in DOCTESTS}
    assert "pase.core.diagnostics.shown_line" in names
    assert any(name.startswith("pase.dialect.dnn.") for name in names)
    assert len(DOCTESTS) >= 50


@pytest.mark.parametrize("test", DOCTESTS, ids=lambda test: test.name.removeprefix("pase."))
def test_docstring_examples(test: doctest.DocTest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    runner = doctest.DocTestRunner()
    report = io.StringIO()
    test.globs = dict(test.globs)
    result = runner.run(test, out=report.write, clear_globs=False)
    assert result.failed == 0, report.getvalue()
