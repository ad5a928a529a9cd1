"""`benchmarks/capped.py --training`: its MILP keeps every memory row (under recomputation
one per segment, so a plan whose largest segment's recomputed results do not fit is out),
and its "agree" column calls a proven optimum that is not the MILP's a mismatch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def in_benchmark(code: str, *arguments: str) -> object:
    """`code` run with benchmarks/ on the path (capped.py's own imports), its JSON output."""
    done = subprocess.run([sys.executable, "-c", "import json, sys; sys.path.insert(0, "
                           f"sys.argv[1]); import capped; {code}", str(BENCHMARKS),
                           *arguments], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


MILP = """
import numpy as np
from pase.passes.strategy.costgraph import CostGraph
graph = CostGraph(["a", "b"], [np.array([1.0, 3.0]), np.array([1.0, 2.0])])
graph.add_edge(0, 1, np.array([[0.0, 5.0], [5.0, 0.0]]))
rows = [[np.array(v, dtype=float) for v in row] for row in json.loads(sys.argv[2])]
result = capped.milp_rows(graph, rows, 5.0, 60.0)
print(json.dumps([result["choice"], result["cost"], result["optimal"]]))
"""


def test_every_memory_row_binds() -> None:
    # One row: (1, 1) costs 5 and weighs 2; (0, 0) costs 2 but weighs 8.
    assert in_benchmark(MILP, json.dumps([[[4, 1], [4, 1]]])) == [[1, 1], 5.0, True]
    # A second row (a segment's recomputed results on b) rules out (1, 1) and (0, 1):
    # (1, 0) costs 3 + 1 + 5.
    assert in_benchmark(MILP, json.dumps([[[4, 1], [4, 1]], [[4, 1], [4, 9]]])) == \
        [[1, 0], 9.0, True]


ROW = ("case = capped.TRAINING[0]; print(json.dumps(capped.training_row(case, "
       "json.loads(sys.argv[2]), json.loads(sys.argv[3]))))")
PASE = {"cpu": 1.0, "cap": 100.0, "cost": 2.0, "bound": 2.0, "proven": True, "solves": 3,
        "nodes": 10, "memory": 90.0, "recounted": 90.0}
PLAIN = {"cpu": 5.0, "cap": 100.0, "cost": 2.0, "bound": 2.0, "proven": True, "nodes": 1,
         "memory": 95.0, "variables": 10, "rows": 1}


def test_the_agree_column_flags_a_proven_optimum_the_milp_beats() -> None:
    assert in_benchmark(ROW, json.dumps(PASE), json.dumps(PLAIN))[-1] == "yes"
    beaten = {**PLAIN, "cost": 1.5, "bound": 1.5}
    assert in_benchmark(ROW, json.dumps(PASE), json.dumps(beaten))[-1] == \
        "NO: pase's proven optimum is not the MILP's"
    over = {**PASE, "recounted": 101.0}
    assert in_benchmark(ROW, json.dumps(over), json.dumps(PLAIN))[-1] == \
        "NO: pase's plan is over the cap"
    unproven = {**PASE, "bound": 1.0, "proven": False}
    assert in_benchmark(ROW, json.dumps(unproven), json.dumps(PLAIN))[-1] == \
        "optimal, not proven"


SELECTED = "print(json.dumps(capped.selected(json.loads(sys.argv[2]), sys.argv[3] == 'yes')))"


def test_cases_with_training_runs_only_those_asked() -> None:
    # (`--training --cases small-rc-dp2` ran every training case: `--cases` was ignored.)
    assert in_benchmark(SELECTED, json.dumps(["small-rc-dp2"]), "yes") == \
        [["small-rc-dp2"], True]
    assert in_benchmark(SELECTED, json.dumps(["small-rc-dp2"]), "no") == \
        [["small-rc-dp2"], True]
    assert in_benchmark(SELECTED, "null", "yes") == \
        [["mlp-adam", "t8-adam", "t16-dp4", "gpt2-adam", "gpt2-mom-dp2", "small-rc-auto",
          "small-rc-full", "small-rc-dp2"], True]
    assert in_benchmark(SELECTED, "null", "no") == [["t16", "gpt2", "t64", "pipe64"], False]
