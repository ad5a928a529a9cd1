"""Running the command-line tools in-process from tests (shared by several test files)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from pase.dialect import get_all_dialects


def run_tool(main: Callable[[list[str]], None], args: list[str],
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run a tool's `main(args)`; returns (exit status, stdout, stderr)."""
    try:
        main(args)
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


def search_and_check(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`path` is searched on 8 devices (a plan and its report) and its step passes
    `pase-run --check` on 4."""
    from pase.tools.pase_opt import main as pase_opt
    from pase.tools.pase_run import main as pase_run

    status, out, err = run_tool(pase_opt, [path, "-p", "pase-search{devices=8 report=true}"],
                                capsys)
    assert status == 0, err
    assert "#pase.config" in out
    assert "predicted speedup" in err
    status, out, err = run_tool(pase_run, [path, "--devices", "4", "--check", "--steps", "3"],
                                capsys)
    assert status == 0, err
    assert "check passed" in out


def parse_ir(text: str) -> ModuleOp:
    """MLIR text as a module, with every pase dialect loaded."""
    context = Context()
    context.load_dialect(Builtin)
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    return Parser(context, text).parse_module()
