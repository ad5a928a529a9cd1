"""`pase-opt` in-process, for what its stderr cannot show: a bug in pase (injected here)
is still one line, and `-o` leaves no temporary file. Everything a user sees on stdout
or stderr is a lit test (`tests/lit/tools/`)."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import pytest
from cli import lines, run_tool
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.frontend.dnn import DnnFrontend
from pase.tools.pase_opt import main

MLP = """\
graph @mlp(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w = param [d, h]
  %h = einsum %x, %w -> [b, h]
  %a = relu %h
  return %a
}
"""


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.dnn"
    path.write_text(MLP)
    return path


def test_output_file_leaves_no_temporary_file(mlp: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out.mlir"
    status, out, err = run_tool(main, [str(mlp), "-o", str(target)], capsys)
    assert (status, out, err) == (0, "", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.dnn", "out.mlir"]


def test_internal_errors_are_one_line(mlp: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def broken(self: DnnFrontend, ctx: Context, input: IO[bytes],
               input_name: str = "") -> ModuleOp:
        raise RuntimeError("boom")

    monkeypatch.setattr(DnnFrontend, "parse", broken)
    monkeypatch.delenv("PASE_DEBUG", raising=False)
    status, out, err = run_tool(main, [str(mlp)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == ["pase-opt: internal error: RuntimeError: boom (rerun with "
                          "PASE_DEBUG=1 for the traceback, and please report it)"]
    monkeypatch.setenv("PASE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main([str(mlp)])
