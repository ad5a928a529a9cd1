"""Where the tools' outputs go, as processes: `-o /dev/stdout` on a pipe and appended to a
file, a full device, a closed pipe, and a run with several outputs that writes all or none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from processes import MODELS, command

MLP = str(MODELS / "mlp.dnn")


def run(tool: str, args: list[str], **options: object) -> subprocess.CompletedProcess[bytes]:
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(command(tool, args), stderr=subprocess.PIPE, timeout=120,
                          check=False, **options)  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def mlp_ir() -> bytes:
    """What `pase-opt mlp.dnn` prints."""
    done = run("pase-opt", [MLP])
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "-"])
def test_the_standard_output_on_a_pipe(target: str, mlp_ir: bytes) -> None:
    done = run("pase-opt", [MLP, "-o", target])
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == mlp_ir


def test_the_standard_output_appended_to_a_file_is_appended_to(tmp_path: Path,
                                                               mlp_ir: bytes) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"earlier lines\n")
    strategy = tmp_path / "s.json"
    with log.open("ab") as stream:
        done = run("pase-opt", [MLP, "-p", f'pase-search{{devices=8 export="{strategy}"}}',
                                "-o", "/dev/stdout"], stdout=stream)
    assert (done.returncode, done.stderr) == (0, b"")
    text = log.read_bytes()
    assert text.startswith(b"earlier lines\nbuiltin.module {\n")
    assert b"#pase.config" in text
    assert strategy.read_text(encoding="utf-8").startswith('{\n  "graph": "mlp"')


def test_a_link_to_the_standard_output_writes_through_it(tmp_path: Path,
                                                         mlp_ir: bytes) -> None:
    link = tmp_path / "out.mlir"
    link.symlink_to("/dev/stdout")
    done = run("pase-opt", [MLP, "-o", str(link)])
    assert (done.returncode, done.stderr, done.stdout) == (0, b"", mlp_ir)
    assert link.is_symlink()


def test_a_descriptor_the_shell_did_not_open_is_one_error() -> None:
    done = run("pase-opt", [MLP, "-o", "/dev/fd/9"])
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"pase-opt: error: cannot write /dev/fd/9: Bad file descriptor\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("option", ["-o", "export"])
def test_a_full_device_is_one_error_and_no_other_output_changes(tmp_path: Path,
                                                                option: str) -> None:
    kept, out = tmp_path / "s.json", tmp_path / "out.mlir"
    kept.write_text("old", encoding="utf-8")
    export = "/dev/full" if option == "export" else str(kept)
    target = str(out) if option == "export" else "/dev/full"
    done = run("pase-opt", [MLP, "-p", f'pase-search{{devices=8 export="{export}"}}',
                            "-o", target])
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"pase-opt: error: cannot write /dev/full: No space left on device\n"
    assert kept.read_text(encoding="utf-8") == "old"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_pase_runs_report_on_a_full_standard_output_names_it() -> None:
    """(It said 'cannot open None: No space left on device'.)"""
    with open("/dev/full", "wb") as full:
        done = run("pase-run", [MLP, "--devices", "2", "--print-pipeline"], stdout=full)
    assert (done.returncode, done.stderr) == (
        1, b"pase-run: error: cannot write the standard output: No space left on device\n")


@pytest.mark.parametrize(("target", "reason"), [
    ("missing/out.mlir", "No such file or directory"), (".", "Is a directory")])
def test_a_failing_output_file_leaves_the_exported_strategy_as_it_was(
        tmp_path: Path, target: str, reason: str) -> None:
    kept = tmp_path / "s.json"
    kept.write_text("old", encoding="utf-8")
    done = run("pase-opt", [MLP, "-p", 'pase-search{devices=8 export="s.json"}',
                            "-o", target], cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == f"pase-opt: error: cannot write {target}: {reason}\n".encode()
    assert kept.read_text(encoding="utf-8") == "old"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s.json"]


@pytest.mark.parametrize(("tool", "args", "target"), [
    ("pase-opt", [MLP], "the standard output"),
    ("pase-opt", [MLP, "-o", "/dev/stdout"], "/dev/stdout"),
    ("pase-run", [MLP, "--devices", "2", "--print-pipeline"], "the standard output")])
def test_a_pipe_whose_reader_is_gone_is_one_error(tool: str, args: list[str],
                                                  target: str) -> None:
    reader, writer = os.pipe()
    os.close(reader)   # before the tool starts: `| head -1` that has its line already
    try:
        done = run(tool, args, stdout=writer)
    finally:
        os.close(writer)
    assert done.returncode == 1
    assert done.stderr.decode() == f"{tool}: error: cannot write {target}: Broken pipe\n"


def launched(tool: str, args: list[str], closed: int, cwd: Path
             ) -> subprocess.CompletedProcess[bytes]:
    """`tool` run through its console script's entry point with descriptor `closed`
    closed, as `>&-` or `<&-` leaves it."""
    entry = tool.replace("-", "_")
    code = f"from pase.tools.launch import {entry}; {entry}()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, timeout=120,
                          check=False, stdin=subprocess.DEVNULL, capture_output=True,
                          preexec_fn=lambda: os.close(closed))  # noqa: PLW1509


@pytest.mark.parametrize(("tool", "args"), [
    ("pase-opt", [MLP]), ("pase-run", [MLP, "--devices", "2", "--print-pipeline"])])
def test_a_closed_standard_output_is_one_error(tool: str, args: list[str],
                                               tmp_path: Path) -> None:
    """(Python's sys.stdout was None: a traceback.)"""
    done = launched(tool, args, 1, tmp_path)
    assert (done.returncode, done.stderr.decode()) == (
        1, f"{tool}: error: cannot write the standard output: Bad file descriptor\n")


def test_a_closed_standard_output_is_not_taken_by_an_output_file(tmp_path: Path,
                                                                 mlp_ir: bytes) -> None:
    """With fd 1 closed, `-o`'s temporary took its number; with 0 closed, stdin is empty."""
    done = launched("pase-opt", [MLP, "-o", "out.mlir"], 1, tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (tmp_path / "out.mlir").read_bytes() == mlp_ir
    done = launched("pase-opt", ["-f", "dnn"], 0, tmp_path)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("stdin:1:1: error: no graph in the file")
