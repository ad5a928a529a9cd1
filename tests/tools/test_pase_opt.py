"""`pase-opt` in-process: output on success, exit status 1 and a short stderr on errors."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from cli import lines, run_tool

import pase.tools.pase_opt as pase_opt
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

INVALID_MLIR = """\
dnn.graph @g(b = 4) {
  %x = dnn.input : !dnn.tensor<[b = 4], i32>
  %y = dnn.exp %x : (!dnn.tensor<[b = 4], i32>) -> !dnn.tensor<[b = 4], i32>
  dnn.return %y : !dnn.tensor<[b = 4], i32>
}
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_tool(main, args, capsys)


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.dnn"
    path.write_text(MLP)
    return path


def test_prints_the_module(mlp: Path, capsys: pytest.CaptureFixture[str]):
    status, out, err = run([str(mlp)], capsys)
    assert (status, err) == (0, "")
    assert out.startswith("builtin.module {\n  dnn.graph @mlp(b = 8, d = 16, h = 32) {\n")
    assert "    %h = dnn.einsum %x, %w : " in out
    assert "    %a = dnn.relu %h : " in out


def test_runs_a_pass_pipeline(mlp: Path, capsys: pytest.CaptureFixture[str]):
    status, out, err = run([str(mlp), "-p", "pase-annotate-configs{devices=4 min-shard=1}"],
                           capsys)
    assert (status, err) == (0, "")
    # einsum b=8, h=32, d=16, each {1, 2, 4}: 10 products <= 4; relu b, h: 6
    assert "%h = dnn.einsum %x, %w {pase.num_configs = 10 : i64}" in out
    assert "%a = dnn.relu %h {pase.num_configs = 6 : i64}" in out


def test_output_is_reparsed_from_mlir(mlp: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]):
    status, first, _ = run([str(mlp), "--print-op-generic"], capsys)
    assert status == 0
    generic = tmp_path / "mlp.mlir"
    generic.write_text(first)
    status, second, err = run([str(generic)], capsys)
    assert (status, err) == (0, "")
    _, direct, _ = run([str(mlp)], capsys)
    assert second == direct


def test_reads_dnn_from_stdin(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]):
    stdin = io.TextIOWrapper(io.BytesIO(MLP.encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    status, out, err = run(["-f", "dnn"], capsys)
    assert (status, err) == (0, "")
    assert "dnn.graph @mlp" in out


def test_output_file(mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    target = tmp_path / "out.mlir"
    status, out, err = run([str(mlp), "-o", str(target)], capsys)
    assert (status, out, err) == (0, "", "")
    assert target.read_text().startswith("builtin.module {\n  dnn.graph @mlp")
    # No temporary file is left next to it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.dnn", "out.mlir"]


def test_failing_run_writes_no_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.dnn"
    bad.write_text(MLP.replace("relu %h", "relu %q"))
    target = tmp_path / "out.mlir"
    status, _, _ = run([str(bad), "-o", str(target)], capsys)
    assert status == 1
    assert not target.exists()
    target.write_text("kept")
    status, _, _ = run([str(bad), "-o", str(target)], capsys)
    assert status == 1
    assert target.read_text() == "kept"


@pytest.mark.parametrize(("args", "first_line", "count"), [
    (["-p", "no-such-pass"], "pase-opt: error: Unrecognized passes: ['no-such-pass']", 1),
    (["-p", "pase-annotate-configs{devices=x}"],
     "pase-opt: error: pase-annotate-configs: option 'devices' takes an integer, got \"x\"", 1),
    (["-p", "pase-annotate-configs{gpus=2}"],
     "pase-opt: error: pase-annotate-configs: unknown option 'gpus'; its options are "
     "devices, min-shard", 1),
    (["-p", "pase-annotate-configs{devices=0}"],
     "error: pase-annotate-configs: devices must be at least 1, got 0", 1),
    (["-p", "pase-annotate-configs{devices=4"],
     "pase-opt: error: Error parsing pass pipeline specification:", 5),
])
def test_pipeline_errors(mlp: Path, args: list[str], first_line: str, count: int,
                         capsys: pytest.CaptureFixture[str]):
    status, out, err = run([str(mlp), *args], capsys)
    assert (status, out) == (1, "")
    assert lines(err)[0] == first_line
    assert len(lines(err)) == count
    assert "Traceback" not in err


def test_frontend_diagnostic(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.dnn"
    bad.write_text(MLP.replace("relu %h", "relux %h"))
    status, out, err = run([str(bad)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [f"{bad}:5:8: error: unknown op 'relux'; did you mean 'relu'?",
                          "  %a = relux %h",
                          "       ^^^^^"]


def test_verifier_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.mlir"
    bad.write_text(INVALID_MLIR)
    message = f"{bad}:3:3: error: 'dnn.exp' op exp takes floating-point tensors, got i32"
    status, out, err = run([str(bad)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [message, INVALID_MLIR.splitlines()[2], "  ^"]
    # --verify-diagnostics prints the same on stdout and succeeds
    status, out, err = run([str(bad), "--verify-diagnostics"], capsys)
    assert (status, err) == (0, "")
    assert lines(out)[0] == message


def test_mlir_parse_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.mlir"
    bad.write_text(INVALID_MLIR.replace("[b = 4], i32>\n  %y", "[b = 4, b = 4], i32>\n  %y"))
    status, out, err = run([str(bad)], capsys)
    assert (status, out) == (1, "")
    assert lines(err)[0] == f"{bad}:2:31: error: dimension 'b' appears twice in a !dnn.tensor"
    assert len(lines(err)) == 3


@pytest.mark.parametrize(("args", "message"), [
    (["missing.dnn"], "pase-opt: error: cannot open missing.dnn: No such file or directory"),
    (["--no-such-flag"],
     "pase-opt: error: unrecognized arguments: --no-such-flag (see pase-opt --help)"),
])
def test_usage_errors_exit_1(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(sys, "argv", ["pase-opt"])  # argparse names the program after it
    status, out, err = run(args, capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [message]


def test_internal_errors_are_one_line(mlp: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]):
    def broken(text: str, filename: str = "<input>") -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pase_opt, "parse_text", broken)
    monkeypatch.delenv("PASE_DEBUG", raising=False)
    status, out, err = run([str(mlp)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == ["pase-opt: internal error: RuntimeError: boom (rerun with "
                          "PASE_DEBUG=1 for the traceback, and please report it)"]
    monkeypatch.setenv("PASE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main([str(mlp)])


def test_help_and_version(capsys: pytest.CaptureFixture[str]):
    status, out, _ = run(["--help"], capsys)
    assert status == 0
    assert "pase passes:\n  pase-annotate-configs{devices=P min-shard=4}\n" in out
    status, out, _ = run(["--version"], capsys)
    assert status == 0
    assert out.startswith("pase-opt (xdsl ")
