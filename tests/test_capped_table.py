"""`benchmarks/capped.py`'s table says what each side proved and what stopped it: HiGHS's
time limit is a clock's, so a MILP it stopped is marked as stopped by wall time, and its
CPU ratio as a lower bound (issue 33: on a loaded host the GPT-2 case's MILP stopped at
its 1,800 s limit after 177 s of CPU, which read as if the limit were CPU seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def capped_row(pase: dict, plain: dict) -> list[str]:
    """`capped.row` on these results, in the benchmark's own environment."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import capped; "
            "print(json.dumps(capped.row('gpt2', json.loads(sys.argv[2]), "
            "json.loads(sys.argv[3]), 8.0, 1800.0)))")
    done = subprocess.run([sys.executable, "-c", code, str(BENCHMARKS), json.dumps(pase),
                           json.dumps(plain)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


PASE = {"cpu": 1.2, "cost": 0.305278, "bound": 0.305278, "proven": True, "solves": 6,
        "nodes": 1064365}


def test_a_milp_stopped_by_its_time_limit_says_wall_time_and_at_least() -> None:
    plain = {"cpu": 176.8, "cost": 0.305278, "bound": 0.304403, "proven": False,
             "nodes": 1452, "variables": 303888}
    assert capped_row(PASE, plain) == [
        "gpt2", "0.305278", "proven (6 solves, 1,064,365 points)", "1.2", "0.305278",
        "time limit 1800 s (wall): bound 0.304403, 1452 nodes, 303,888 variables", "176.8",
        "147.3x (at least)"]


def test_a_milp_out_of_memory_and_a_pase_gap() -> None:
    pase = {**PASE, "proven": False, "bound": 0.3}
    row = capped_row(pase, {"failed": "out of memory"})
    assert row == ["gpt2", "0.305278", "gap 1.76%", "1.2", "-",
                   "out of memory (limit 8 GiB)", "-", "-"]
