"""pase's capped search against a MILP on the same tables, both in one run (issue 33).

    .venv/bin/python benchmarks/capped.py                    # the three cases
    .venv/bin/python benchmarks/capped.py --cases t16 gpt2   # some of them
    .venv/bin/python benchmarks/capped.py --milp-gib 8 --milp-seconds 1800
    .venv/bin/python benchmarks/capped.py --effort 0         # pase until proven
    .venv/bin/python benchmarks/capped.py --cases pipe64      # the capped pipeline search

For each case (a model on P devices under `device-memory-gib=G`) two child processes
build the same problem: one runs `solve_capped` (pase: LARAC's bound, then the DP with a
(cost, memory) frontier per entry on the configurations the bound keeps,
`passes/strategy/capped.py`, `frontier.py`), the other the plain
MILP on pase's dominance-pruned tables (`prune` with memory as one more criterion: one
binary per layer configuration, one continuous variable per configuration pair of every
edge, memory as one row; HiGHS on one thread, `capped.milp`). The CPU time is the
solve's alone (`time.process_time` around it, the problem built before). The plain MILP
runs under an address-space limit (`--milp-gib`) and HiGHS's time limit
(`--milp-seconds`), which is wall time: on a loaded host it stops the MILP after far
fewer CPU seconds, and its CPU ratio is then a lower bound ("at least"); a child that
runs out of either says so in the table.

The pipeline case (`pipe64`) is `pase-opt -p 'pase-partition-stages{...}'` as a user
runs it, its CPU time that of the whole process (parsing and start-up included); it has
no MILP counterpart (its search solves hundreds of stage sub-problems under the cap).
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import cpus, markdown_table, non_negative_int, positive_float, run_main, versions

from pase.core.usage import UsageParser
from pase.passes.strategy.memory import DEFAULT_EFFORT

# (key, model, devices, machine, device-memory-gib): issue 33's cases.
CASES = (("t16", "transformer", 16, "pase-default", 1.2),
         ("gpt2", "gpt2_small", 8, "pase-default", 2.6),
         ("t64", "transformer", 64, "v100-nvlink", 0.28))
PIPELINES = (("pipe64", "transformer", 64, "v100-nvlink", 0.25),)
COLUMNS = (("case", "<"), ("pase step (s)", ">"), ("pase proof", "<"), ("pase CPU (s)", ">"),
           ("MILP step (s)", ">"), ("MILP outcome", "<"), ("MILP CPU (s)", ">"),
           ("CPU ratio MILP/pase", ">"))
MODELS = Path(__file__).resolve().parents[1] / "models"


def child(key: str, solver: str, seconds: float, effort: int) -> dict:
    """Build the case's problem and solve it with `solver` (pase or milp)."""
    from pase.frontend import parse_file
    from pase.passes.strategy import build_problem
    from pase.passes.strategy.capped import milp
    from pase.passes.strategy.machines import preset
    from pase.passes.strategy.memory import GIB, memory_vectors, solve_capped
    from pase.passes.strategy.prune import prune

    _, model, devices, machine, gib = next(case for case in CASES if case[0] == key)
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices, preset(machine))
    cap = gib * GIB
    if solver == "pase":
        start = time.process_time()
        capped = solve_capped(problem, cap, effort=effort or None)
        return {"cpu": time.process_time() - start, "cost": capped.cost,
                "bound": capped.lower_bound, "proven": capped.proven,
                "solves": capped.solves, "nodes": capped.nodes}
    graph = problem.cost_graph()
    memory = memory_vectors(problem)
    start = time.process_time()
    pruned, kept = prune(graph, extra=memory)
    result = milp(pruned, [m[k] for m, k in zip(memory, kept, strict=True)], cap,
                  time_limit=seconds)
    return {"cpu": time.process_time() - start, "cost": result.cost, "bound": result.bound,
            "proven": result.optimal, "nodes": result.nodes,
            "variables": sum(pruned.sizes) + sum(t.size for t in pruned.edge_costs.values())}


def run(key: str, solver: str, gib: float, seconds: float, effort: int = 0) -> dict:
    """`child` in a process of its own, under `gib` GiB of address space (0: none)."""
    def limit() -> None:
        if gib:
            nbytes = int(gib * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    done = subprocess.run([sys.executable, __file__, "--child", key, solver, str(seconds),
                           str(effort)],
                          capture_output=True, text=True, preexec_fn=limit, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"failed": "out of memory" if "MemoryError" in done.stderr
                or "bad_alloc" in done.stderr else tail}
    return json.loads(lines[-1])


def pipeline(key: str, effort: int) -> dict:
    """`pase-partition-stages` on the pipeline case, in a process of its own."""
    _, model, devices, machine, gib = next(case for case in PIPELINES if case[0] == key)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    options = (f"devices={devices} machine={machine} device-memory-gib={gib} "
               f"effort={effort} report=true")
    done = subprocess.run([str(Path(sys.executable).parent / "pase-opt"),
                           str(MODELS / f"{model}.dnn"), "-p",
                           f"pase-partition-stages{{{options}}}", "-o", "/dev/null"],
                          capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode:
        return {"failed": (done.stderr.strip().splitlines() or ["?"])[-1]}
    first = done.stderr.splitlines()[0]
    step = float(first.split("step ")[1].split(" s")[0]) if "step " in first else math.nan
    return {"cpu": cpu, "cost": step, "proven": "not proven" not in done.stderr,
            "summary": first}


def row(key: str, pase: dict, plain: dict, gib: float, seconds: float) -> list[str]:
    proof = (f"proven ({pase['solves']} solves, {pase['nodes']:,} points)" if pase["proven"]
             else f"gap {100 * (pase['cost'] / pase['bound'] - 1):.3g}%")
    if "failed" in plain:
        outcome, milp_cost, milp_cpu, ratio = (f"{plain['failed']} (limit {gib:g} GiB)", "-",
                                               "-", "-")
    else:
        outcome = ("proven" if plain["proven"] else
                   f"time limit {seconds:g} s (wall): bound {plain['bound']:.6f}") + \
            f", {plain['nodes']} nodes, {plain['variables']:,} variables"
        milp_cost = f"{plain['cost']:.6f}" if math.isfinite(plain["cost"]) else "none"
        milp_cpu = f"{plain['cpu']:.1f}"
        ratio = f"{plain['cpu'] / pase['cpu']:.1f}x" + ("" if plain["proven"] else " (at least)")
    return [key, f"{pase['cost']:.6f}", proof, f"{pase['cpu']:.1f}", milp_cost, outcome,
            milp_cpu, ratio]


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))))
        return 0
    parser = UsageParser(description=__doc__.splitlines()[0])
    keys = [case[0] for case in (*CASES, *PIPELINES)]
    parser.add_argument("--cases", nargs="+", choices=keys, default=keys)
    parser.add_argument("--milp-gib", type=positive_float, default=8.0,
                        help="the plain MILP's address-space limit (default 8 GiB)")
    parser.add_argument("--milp-seconds", type=positive_float, default=1800.0,
                        help="the plain MILP's time limit, wall time (default 1800 s)")
    parser.add_argument("--effort", type=non_negative_int, default=DEFAULT_EFFORT,
                        help="pase's effort bound in thousands of frontier points (default "
                             f"{DEFAULT_EFFORT}; 0 for none)")
    arguments = parser.parse_args()
    print(f"{cpus()}; {versions()}; effort={arguments.effort}")
    rows = []
    for key in arguments.cases:
        if any(case[0] == key for case in PIPELINES):
            plan = pipeline(key, arguments.effort)
            if "failed" in plan:
                print(f"{key}: pase failed: {plan['failed']}", file=sys.stderr)
                return 1
            rows.append([key, f"{plan['cost']:.6f}",
                         "stages proven" if plan["proven"] else "gap (see stderr)",
                         f"{plan['cpu']:.1f}", "-", "no MILP counterpart", "-", "-"])
            print(f"{key}: {json.dumps(plan)}", file=sys.stderr, flush=True)
            continue
        pase = run(key, "pase", 0.0, 0.0, arguments.effort)
        if "failed" in pase:
            print(f"{key}: pase failed: {pase['failed']}", file=sys.stderr)
            return 1
        plain = run(key, "milp", arguments.milp_gib, arguments.milp_seconds)
        rows.append(row(key, pase, plain, arguments.milp_gib, arguments.milp_seconds))
        print(f"{key}: pase {json.dumps(pase)}; MILP {json.dumps(plain)}", file=sys.stderr,
              flush=True)
    print("\n".join(markdown_table(COLUMNS, rows)))
    return 0


if __name__ == "__main__":
    run_main(main)
