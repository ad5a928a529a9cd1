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
])
def test_a_bad_number_is_one_usage_line(script: str, arguments: list[str], message: str,
                                        tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *arguments],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"{script}: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


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
