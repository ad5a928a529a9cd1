"""`benchmarks/gpt.py`'s step cell says when pase's plan is not proven: a stage solved under
the cap without proof leaves the plan's "gap" above 0, and the cell shows it next to the
step (before, a plan within 3% of its bound read as the optimum)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def step_cell(pipeline: dict) -> str:
    """The step cell `gpt.cells` gives a plan whose exported "pipeline" is `pipeline`."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import gpt; "
            "r = gpt.Result(1.0, 1.0, json.loads(sys.argv[2])); "
            "print(gpt.cells(r, 80.0)[1])")
    done = subprocess.run([sys.executable, "-c", code, str(BENCHMARKS), json.dumps(pipeline)],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_proven_plan_shows_its_step_alone() -> None:
    assert step_cell({"step": 15.1712, "memory": 2**30, "gap": 0.0}) == "15.17"


def test_an_unproven_plan_shows_its_gap() -> None:
    assert step_cell({"step": 15.1712, "memory": 2**30, "gap": 0.0352}) == "15.17 (gap 3.52%)"
