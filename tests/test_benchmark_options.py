"""The benchmark scripts' numeric options: nan, inf, 0 or a negative value is one usage
line, exit 1, before any work (capped.py's --milp-gib nan was a traceback from the
MILP child's setrlimit; outputs.py --devices -4 searched and ran P=-4 cases)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(("script", "arguments", "message"), [
    ("capped.py", ["--milp-gib", "nan"], "argument --milp-gib: must be a finite number above "
                                         "0, got nan"),
    ("outputs.py", ["out", "--devices", "-4"], "argument --devices: must be at least 1, got -4"),
    # (rc10: a training case with another was run as the training table, the other dropped.)
    ("capped.py", ["--cases", "t16", "small-rc-dp2"], "--cases: the cases with training options "
     "(mlp-adam, t8-adam, t16-dp4, gpt2-adam, gpt2-mom-dp2, small-rc-auto, small-rc-full, "
     "small-rc-dp2) cannot be mixed with the others"),
    # (review33: gpt.py's cap took only whole GiB: 79.5 was "'79.5' is not an integer".)
    ("gpt.py", ["--device-memory-gib", "nan"], "argument --device-memory-gib: must be a finite "
                                               "number above 0, got nan"),
    # (mends4: these two were tracebacks, from the first case and from subprocess.)
    ("pipeline.py", ["--machines", "nope"], "argument --machines: invalid choice: 'nope' "
     "(choose from 'pase-default', 'v100-nvlink', 'a100-nvlink', 'h100-nvlink', "
     "'1080ti-pcie', '2080ti-pcie', 'a100-80gb-dgx', 'h100-80gb-dgx')"),
    ("outputs.py", ["out", "--bin", "nowhere"], "--bin nowhere: no pase-opt and no pase-run "
                                                "to run there"),
])
def test_a_bad_number_is_one_usage_line(script: str, arguments: list[str], message: str,
                                        tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *arguments],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"{script}: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_a_closed_standard_output_is_one_line(tmp_path: Path) -> None:
    """`size.py | head -0`: one line, exit 1 (was a BrokenPipeError traceback, and another
    from Python's flush at exit)."""
    with subprocess.Popen([sys.executable, str(BENCHMARKS / "size.py")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path) as tool:
        assert tool.stdout is not None
        assert tool.stderr is not None
        tool.stdout.close()  # the reader is gone before the table is written
        stderr = tool.stderr.read().decode()
    assert (tool.returncode, stderr) == (
        1, "size.py: error: cannot write the standard output: Broken pipe\n")


def test_outputs_refuses_a_file_as_its_folder(tmp_path: Path) -> None:
    """outputs.py given a file for its folder: one usage line (was a FileExistsError
    traceback), the file untouched."""
    (tmp_path / "taken").write_text("mine")
    result = subprocess.run([sys.executable, str(BENCHMARKS / "outputs.py"), "taken"],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("outputs.py: error: taken is a file, not a folder to write the "
                             "outputs in\n")
    assert (tmp_path / "taken").read_text() == "mine"


def test_an_unknown_machine_is_one_usage_line_before_any_work(tmp_path: Path) -> None:
    """search.py --machine nope searched every case and failed in each (found by hostile2)."""
    result = subprocess.run([sys.executable, str(BENCHMARKS / "search.py"), "--machine",
                             "nope"], capture_output=True, text=True, check=False,
                            cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("search.py: error: argument --machine: unknown machine "
                                     "'nope'; presets are pase-default, ")
    assert result.stderr.count("\n") == 1


def test_outputs_stopped_by_a_signal_leaves_no_folder_and_no_case_running(
        tmp_path: Path) -> None:
    """SIGTERM to outputs.py while its cases run: exit 143, the cases ended, no output
    folder and no staging folder (it left its running cases behind as orphans, and a folder
    of half the cases; found by hostile3). Its tools here are stand-ins that never end."""
    from processes import Proc, children, wait_for

    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("pase-opt", "pase-run"):
        (tools / tool).write_text("#!/bin/sh\nexec sleep 600\n")
        (tools / tool).chmod(0o755)
    run = subprocess.Popen([sys.executable, str(BENCHMARKS / "outputs.py"), "out", "--bin",
                            str(tools), "--models", "mlp", "--devices", "4", "--jobs", "2"],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cases: list[Proc] = wait_for(lambda: children(run.pid)[1:] and children(run.pid),
                                 "two running cases")
    run.terminate()
    stdout, stderr = run.communicate(timeout=60)
    assert (run.returncode, stdout, stderr) == (143, b"", b"")
    assert not any(case.alive() for case in cases)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bin"]
