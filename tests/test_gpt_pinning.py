"""`benchmarks/gpt.py --data-parallel D` pins pase's search to D ways of data
parallelism at the row's own M (the pinned incumbents of an unpinned row, such as
megatron-76b's), `--pin-data-parallel` to the paper's d, and neither pins nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def options(*flags: str) -> str:
    """pase's `pase-partition-stages` options for megatron-76b (1024 devices, 8 x 4 x 32,
    M = 56) under `gpt.py`'s `flags`."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import gpt; "
            "sys.argv = ['gpt.py', *sys.argv[2:]]; args = gpt.arguments(); "
            "row = next(r for r in gpt.ROWS if r.preset == 'megatron-76b'); "
            "print(gpt.pase_options(row, 56, ' device-memory-gib=80', args))")
    done = subprocess.run([sys.executable, "-c", code, str(BENCHMARKS), *flags],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(("flags", "pin"), [
    ((), ""),
    (("--pin-data-parallel",), " data-parallel=32"),
    (("--data-parallel", "16"), " data-parallel=16"),
    (("--pin-data-parallel", "--data-parallel", "8"), " data-parallel=8"),
])
def test_the_pinned_degree(flags: tuple[str, ...], pin: str) -> None:
    assert options(*flags) == f"stages=4 microbatches=56 min-shard=1 device-memory-gib=80{pin}"


def test_a_degree_below_one_is_one_usage_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / "gpt.py"), "--data-parallel", "0"],
                            capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "gpt.py: error: argument --data-parallel: must be at least 1, got 0\n"
