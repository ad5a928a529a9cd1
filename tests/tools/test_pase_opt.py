"""`pase-opt` in-process, for what its stderr cannot show: a bug in pase (injected here)
is still one line, and `-o` leaves no temporary file. Everything a user sees on stdout
or stderr is a lit test (`tests/lit/tools/`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from cli import run_tool
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from pase.frontend.dnn import DnnFrontend
from pase.frontend.mlir import verify_located
from pase.tools.opt_main import verify_once
from pase.tools.pase_opt import main

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "lit" / "tools" / "Inputs" / "tiny.dnn")


def test_output_file_leaves_no_temporary_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_tool(main, [TINY, "-o", str(tmp_path / "out.mlir")], capsys)
    assert (status, out, err) == (0, "", "")
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


def test_internal_errors_are_one_line(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def broken(self: DnnFrontend, ctx: Context, input: IO[bytes],
               input_name: str = "") -> ModuleOp:
        raise RuntimeError("boom")

    monkeypatch.setattr(DnnFrontend, "parse", broken)
    monkeypatch.delenv("PASE_DEBUG", raising=False)
    status, out, err = run_tool(main, [TINY], capsys)
    assert (status, out) == (1, "")
    assert err.splitlines() == ["pase-opt: internal error: RuntimeError: boom (rerun with "
                                "PASE_DEBUG=1 for the traceback, and please report it)"]
    monkeypatch.setenv("PASE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main([TINY])


def test_verify_once_raises_what_op_by_op_and_whole_module_verification_raise() -> None:
    """pase-opt verifies once per pipeline step (`verify_once`): an op's error located as
    `verify_located` words it (lit shows those), and a structural error only the whole
    module's verifier sees, as xDSL words it."""
    empty = func.FuncOp("f", ((), ()), Region(Block()))  # no terminator in its block
    module = ModuleOp([empty])
    verify_located(module)  # each op verifies on its own
    with pytest.raises(VerifyException, match="contains empty block in single-block region"):
        verify_once(module)
    empty.body.block.add_op(func.ReturnOp())
    verify_once(module)


NOT_ON_THE_SEARCH_PATH = (
    "pase.runtime",
    "pase.targets.jax",
    "pase.passes.strategy.jit",
    "llvmlite",
    "tomllib",
)


def test_a_small_search_imports_only_what_it_uses() -> None:
    """Issue 13 (start-up): pase-opt on mlp at P=8, in a process of its own, loads none of
    the modules it does not need and OpenBLAS single-threaded."""
    probe = ("import os, sys\n"
             "from pase.tools.pase_opt import main\n"
             "try:\n"
             "    main(sys.argv[1:])\n"
             "finally:\n"
             "    print(os.environ.get('OPENBLAS_NUM_THREADS'), *sorted(sys.modules),\n"
             "          file=sys.stderr)\n")
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "models" / "mlp.dnn"),
                           "-p", "pase-search{devices=8}"], capture_output=True, text=True,
                          env=env, check=True)
    assert "pase.strategy = #pase.strategy<devices = 8" in done.stdout
    threads, *modules = done.stderr.split()
    assert threads == "1"
    assert "pase.passes.search" in modules
    loaded = [name for name in modules
              if any(name == unwanted or name.startswith(unwanted + ".")
                     for unwanted in NOT_ON_THE_SEARCH_PATH)]
    assert loaded == []


def test_a_users_blas_threads_win() -> None:
    probe = ("import os, sys\n"
             "from pase.tools.pase_opt import main\n"
             "try:\n"
             "    main(['--version'])\n"
             "finally:\n"
             "    print(os.environ['OPENBLAS_NUM_THREADS'], file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "3"}, check=True)
    assert done.stderr.strip() == "3"
