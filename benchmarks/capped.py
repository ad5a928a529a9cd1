"""pase's capped search against a MILP on the same tables, both in one run (issue 33).

    .venv/bin/python benchmarks/capped.py                    # the three cases
    .venv/bin/python benchmarks/capped.py --cases t16 gpt2   # some of them
    .venv/bin/python benchmarks/capped.py --milp-gib 8 --milp-seconds 1800
    .venv/bin/python benchmarks/capped.py --effort 0         # pase until proven
    .venv/bin/python benchmarks/capped.py --cases pipe64      # the capped pipeline search
    .venv/bin/python benchmarks/capped.py --training         # with the training options
    .venv/bin/python benchmarks/capped.py --training --cases small-rc-auto   # some of them
    .venv/bin/python benchmarks/capped.py --training --profile   # and where pase's CPU goes

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

With `--training`, the cases of `TRAINING` instead (issue 32's training step on small
models: Adam, bf16, ZeRO and recomputation searched, data-parallel pins), each under the
cap `least + fraction x (free - least)` between the least memory any strategy needs and
the unconstrained optimum's (printed in GiB, so `pase-opt` can be given the same cap).
Where something is recomputed the memory is not additive (the largest segment's
recomputed results count, `passes/strategy/recomputed.py`), so the MILP there has one
memory row per segment (the additive memory plus that segment's recomputed results:
their maximum is at most the cap exactly when every row is) on the unpruned tables
(pruning compares one resource). pase's plan is checked against the MILP's optimum
(equal within 1e-9 when pase says proven) and its memory recomputed from the plan.

The pipeline case (`pipe64`) is `pase-opt -p 'pase-partition-stages{...}'` as a user
runs it, its CPU time that of the whole process (parsing and start-up included); it has
no MILP counterpart (its search solves hundreds of stage sub-problems under the cap).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
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


@dataclass(frozen=True)
class Training:
    """A capped case with training options: `model` a file of models/ or `gpt-small`
    (`SMALL_GPT`, written by models/generate.py), the cap at `fraction` of the way from
    the least memory to the unconstrained optimum's, `options` as on `pase-search`."""

    key: str
    model: str
    devices: int
    machine: str
    fraction: float
    options: str


CASE_TABLE = """
mlp-adam      mlp          8 a100-nvlink   0.5 optimizer=adam precision=bf16 zero=auto
t8-adam       transformer  8 a100-nvlink   0.5 optimizer=adam precision=bf16 zero=auto
t16-dp4       transformer 16 a100-nvlink   0.5 optimizer=adam zero=1 data-parallel=4
gpt2-adam     gpt2_small   8 a100-nvlink   0.3 optimizer=adam precision=bf16 zero=auto
gpt2-mom-dp2  gpt2_small   4 pase-default  0.5 optimizer=momentum zero=auto data-parallel=2
small-rc-auto gpt-small    4 a100-nvlink   0.5 optimizer=adam precision=bf16 recompute=auto
    zero=auto
small-rc-full gpt-small    8 a100-nvlink   0.5 optimizer=adam precision=bf16 recompute=full
    zero=2
small-rc-dp2  gpt-small    8 a100-80gb-dgx 0.3 optimizer=adam precision=bf16 recompute=auto
    zero=auto data-parallel=2
"""
"""key, model, devices, machine, fraction, options: one `Training` case a line (an indented
line continues the options)."""
TRAINING = tuple(Training(key, model, int(devices), machine, float(fraction), options)
                 for key, model, devices, machine, fraction, options
                 in (" ".join(case.split()).split(None, 5)
                     for case in CASE_TABLE.strip().replace("\n    ", " ").splitlines()))
SMALL_GPT = {"layers": 2, "hidden": 128, "heads": 4, "sequence": 64, "vocabulary": 512,
             "batch": 16}
TRAINING_COLUMNS = (("case", "<"), ("options", "<"), ("cap (GiB)", ">"),
                    ("pase step (s)", ">"), ("pase proof", "<"), ("pase memory (GiB)", ">"),
                    ("pase CPU (s)", ">"), ("MILP step (s)", ">"), ("MILP outcome", "<"),
                    ("MILP memory (GiB)", ">"), ("MILP CPU (s)", ">"), ("agree", "<"))


def child(key: str, solver: str, seconds: float, effort: int) -> dict:
    """Build the case's problem and solve it with `solver` (pase or milp)."""
    from pase.frontend import parse_file
    from pase.passes.strategy import build_problem
    from pase.passes.strategy.capped import milp
    from pase.passes.strategy.machines import preset
    from pase.passes.strategy.memory import GIB, memory_vectors, solve_capped
    from pase.passes.strategy.prune import prune

    if any(case.key == key for case in TRAINING):
        return training_child(key, solver, seconds, effort)
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


def training_problem(case: Training):  # noqa: ANN201 (a Problem; imported in the child)
    """The problem of a `TRAINING` case, with its options as `pase-search` takes them."""
    from gpt import generate

    from pase.frontend import parse_file, parse_text
    from pase.passes.strategy import SearchOptions, TrainingOptions, build_problem
    from pase.passes.strategy.machines import preset

    values: dict = dict(item.split("=", 1) for item in case.options.split())
    if "data-parallel" in values:
        values["data_parallel"] = int(values.pop("data-parallel"))
    options = SearchOptions(training=TrainingOptions(**values))
    if case.model == "gpt-small":
        models = generate()
        module = parse_text(models.language_model(models.LanguageModel(**SMALL_GPT),
                                                  "gpt_small").render(), "gpt-small")
    else:
        module = parse_file(str(MODELS / f"{case.model}.dnn"))
    return build_problem(module, case.devices, preset(case.machine), options=options)


def training_child(key: str, solver: str, seconds: float, effort: int) -> dict:
    """A `TRAINING` case solved by pase or by the MILP (with one memory row per segment
    where something is recomputed), under the cap its `fraction` gives."""
    from pase.passes.strategy import solve
    from pase.passes.strategy.memory import memory_parts, memory_vectors, solve_capped
    from pase.passes.strategy.prune import prune
    from pase.passes.strategy.recomputed import Transient

    case = next(case for case in TRAINING if case.key == key)
    problem = training_problem(case)
    memory = memory_vectors(problem)
    transient = Transient.of(problem)
    least = sum(float(vector.min()) for vector in memory) + \
        (transient.least if transient is not None else 0.0)
    free = memory_parts(problem, solve(problem).assignment).total
    cap = float(math.floor(least + case.fraction * (free - least)))
    parts = profiled() if solver == "pase-profile" else None
    start = time.process_time()
    if solver.startswith("pase"):
        capped = solve_capped(problem, cap, effort=effort or None)
        cpu = time.process_time() - start
        return {"cpu": cpu, "cap": cap, "free": free, "cost": capped.cost,
                "bound": capped.lower_bound, "proven": capped.proven,
                "solves": capped.solves, "nodes": capped.nodes, "memory": capped.memory,
                "recounted": memory_parts(problem, capped.assignment).total,
                "choice": list(capped.choice), **({} if parts is None else {"parts": parts})}
    graph = problem.cost_graph()
    if transient is None:
        pruned, kept = prune(graph, extra=memory)
        rows = [[m[k] for m, k in zip(memory, kept, strict=True)]]
    else:
        pruned, kept = graph, [np.arange(vector.size) for vector in memory]
        rows = [[m + (transient.vectors[v] if v in run else 0.0)
                 for v, m in enumerate(memory)] for run in transient.runs]
    result = milp_rows(pruned, rows, cap, seconds)
    cpu = time.process_time() - start
    choice = None if result["choice"] is None else \
        tuple(int(k[c]) for k, c in zip(kept, result["choice"], strict=True))
    recounted = math.nan if choice is None else \
        memory_parts(problem, problem.assignment(choice)).total
    return {"cpu": cpu, "cap": cap, "cost": result["cost"], "bound": result["bound"],
            "proven": result["optimal"], "nodes": result["nodes"], "memory": recounted,
            "variables": sum(pruned.sizes) + sum(t.size for t in pruned.edge_costs.values()),
            "rows": len(rows)}


PARTS = (("DP solves", "memory", "solve_graph"),
         ("diffusions", "capped", "ReducedCosts.__init__"),
         ("frontier searches", "frontier", "frontier_search"),
         ("restrictions", "bound", "_restrict"))
"""What `--profile` times in pase's solve: (label, module of `pase.passes.strategy`,
function there, or `class.method`), each as it is looked up when called (the names
`recomputed` imports are patched there too)."""


def profiled() -> dict[str, list[float]]:
    """Wraps each function of `PARTS` so that it counts its calls and their CPU time into
    the dict returned (label: [calls, seconds]); the parts do not call each other."""
    import functools
    import importlib

    parts: dict[str, list[float]] = {}
    for label, module_name, name in PARTS:
        module = importlib.import_module(f"pase.passes.strategy.{module_name}")
        owner, attribute = (getattr(module, name.split(".")[0]), name.split(".")[1]) \
            if "." in name else (module, name)
        real = getattr(owner, attribute)
        tally = parts.setdefault(label, [0, 0.0])

        def timed(*arguments: object, _real=real, _tally=tally, **keywords: object) -> object:
            _tally[0] += 1
            start = time.process_time()
            try:
                return _real(*arguments, **keywords)
            finally:
                _tally[1] += time.process_time() - start

        setattr(owner, attribute, functools.wraps(real)(timed))
        recomputed = importlib.import_module("pase.passes.strategy.recomputed")
        if "." not in name and getattr(recomputed, name, None) is real:
            setattr(recomputed, name, getattr(owner, attribute))
    return parts


def profile_table(rows: list[tuple[str, dict]]) -> list[str]:
    """`--profile`'s table: each case's pase CPU, and the calls and CPU of each part."""
    columns = (("case", "<"), ("pase CPU (s)", ">"),
               *((f"{label} (calls, CPU s)", ">") for label, _, _ in PARTS),
               ("the rest (s)", ">"))
    cells = []
    for key, pase in rows:
        parts = pase["parts"]
        rest = pase["cpu"] - sum(seconds for _, seconds in parts.values())
        cells.append([key, f"{pase['cpu']:.3f}",
                      *(f"{int(parts[label][0])}, {parts[label][1]:.3f}"
                        for label, _, _ in PARTS), f"{rest:.3f}"])
    return markdown_table(columns, cells)


def milp_rows(graph, rows: list[list[np.ndarray]], cap: float,  # noqa: ANN001
              seconds: float) -> dict:
    """`capped.milp` with several memory rows (each a vector per vertex; the strategy's
    sum of every row at most `cap`): its first row as `milp`'s, the others added."""
    import highspy

    from pase.passes.strategy import capped

    kept = [np.arange(cost.size) for cost in graph.vertex_costs]
    model = capped._Model(graph, rows[0], cap, kept)  # noqa: SLF001 (the same MILP)
    highs = highspy.Highs()
    for option, value in (("output_flag", False), ("threads", 1), ("random_seed", 0),
                          ("mip_rel_gap", capped.MIP_RELATIVE_GAP), ("mip_abs_gap", 0.0),
                          ("mip_feasibility_tolerance", 1e-9),
                          ("primal_feasibility_tolerance", 1e-9),
                          ("time_limit", float(seconds))):
        highs.setOptionValue(option, value)
    highs.passModel(model.lp())
    for row in rows[1:]:
        weights = np.concatenate([np.asarray(vector, dtype=np.float64) for vector in row])
        used = np.flatnonzero(weights)
        highs.addRow(-highspy.kHighsInf, 1.0, used.size, used.astype(np.int32),
                     weights[used] / cap)
    highs.run()
    status, info = highs.getModelStatus(), highs.getInfo()
    finished = status in (highspy.HighsModelStatus.kOptimal,
                          highspy.HighsModelStatus.kInfeasible)
    if info.primal_solution_status != 2:
        return {"choice": None, "cost": math.inf, "bound": math.inf, "optimal": finished,
                "nodes": int(info.mip_node_count)}
    choice = model.decode(np.asarray(highs.getSolution().col_value))
    cost = graph.total_cost(choice)
    return {"choice": choice, "cost": cost, "optimal": finished,
            "bound": cost if finished else min(cost, model.unscale(info.mip_dual_bound)),
            "nodes": int(info.mip_node_count)}


def training_row(case: Training, pase: dict, plain: dict) -> list[str]:
    """The table row of a `TRAINING` case; "agree" checks pase's claim against the MILP's."""
    gib = 1 << 30
    proof = (f"proven ({pase['solves']} solves, {pase['nodes']:,} points)" if pase["proven"]
             else f"gap {100 * (pase['cost'] / pase['bound'] - 1):.3g}%")
    memory = f"{pase['memory'] / gib:.7g}" + \
        ("" if pase["memory"] == pase["recounted"] else
         f" (plan's: {pase['recounted'] / gib:.7g})")
    if "failed" in plain:
        return [case.key, case.options, f"{pase['cap'] / gib:.7g}", f"{pase['cost']:.9g}",
                proof, memory, f"{pase['cpu']:.1f}", "-", plain["failed"], "-", "-", "-"]
    outcome = ("proven" if plain["proven"] else f"time limit: bound {plain['bound']:.9g}") + \
        f", {plain['nodes']} nodes, {plain['variables']:,} variables, {plain['rows']} rows"
    close = abs(pase["cost"] - plain["cost"]) <= 1e-9 * plain["cost"]
    fits = pase["recounted"] <= pase["cap"]
    if not fits:
        agree = "NO: pase's plan is over the cap"
    elif plain["proven"] and pase["proven"] and not close:
        agree = "NO: pase's proven optimum is not the MILP's"
    elif plain["proven"] and pase["cost"] < plain["cost"] * (1 - 1e-9):
        agree = "NO: pase beats the MILP's optimum"
    elif plain["proven"]:
        agree = ("yes" if pase["proven"] else "optimal, not proven") if close \
            else "pase not proven, above the optimum"
    else:
        agree = "MILP unfinished"
    return [case.key, case.options, f"{pase['cap'] / gib:.7g}", f"{pase['cost']:.9g}", proof,
            memory, f"{pase['cpu']:.1f}", f"{plain['cost']:.9g}", outcome,
            f"{plain['memory'] / gib:.7g}", f"{plain['cpu']:.1f}", agree]


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


def training_table(arguments: argparse.Namespace) -> int:
    """The `TRAINING` cases asked for (all of them with `--training`), one row each."""
    rows, profiles = [], []
    for case in TRAINING:
        if case.key not in arguments.cases:
            continue
        pase = run(case.key, "pase", 0.0, 0.0, arguments.effort)
        if "failed" in pase:
            print(f"{case.key}: pase failed: {pase['failed']}", file=sys.stderr)
            return 1
        plain = run(case.key, "milp", arguments.milp_gib, arguments.milp_seconds)
        rows.append(training_row(case, pase, plain))
        print(f"{case.key}: pase {json.dumps(pase)}; MILP {json.dumps(plain)}",
              file=sys.stderr, flush=True)
        if arguments.profile:
            profiles.append((case.key, run(case.key, "pase-profile", 0.0, 0.0,
                                           arguments.effort)))
    print("\n".join(markdown_table(TRAINING_COLUMNS, rows)))
    if profiles:
        print("\n" + "\n".join(profile_table(profiles)))
    return 0


def selected(cases: list[str] | None, training: bool) -> tuple[list[str], bool]:
    """The keys `--cases` and `--training` ask for (`cases` None: every case of the table
    chosen), and whether they are `TRAINING`'s; `ValueError` where both kinds are asked."""
    keys = [case[0] for case in (*CASES, *PIPELINES)]
    trained = [case.key for case in TRAINING]
    chosen = cases or (trained if training else keys)
    with_training = training or any(key in trained for key in chosen)
    if with_training and any(key not in trained for key in chosen):
        raise ValueError("--cases: the cases with training options (" + ", ".join(trained)
                         + ") cannot be mixed with the others")
    return chosen, with_training


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))))
        return 0
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+",
                        choices=[case[0] for case in (*CASES, *PIPELINES)] +
                        [case.key for case in TRAINING],
                        help="the cases to run (default: every case of the table chosen)")
    parser.add_argument("--training", action="store_true",
                        help="the cases with training options (TRAINING) instead")
    parser.add_argument("--profile", action="store_true",
                        help="with --training: pase once more, timing its parts (PARTS)")
    parser.add_argument("--milp-gib", type=positive_float, default=8.0,
                        help="the plain MILP's address-space limit (default 8 GiB)")
    parser.add_argument("--milp-seconds", type=positive_float, default=1800.0,
                        help="the plain MILP's time limit, wall time (default 1800 s)")
    parser.add_argument("--effort", type=non_negative_int, default=DEFAULT_EFFORT,
                        help="pase's effort bound in thousands of frontier points (default "
                             f"{DEFAULT_EFFORT}; 0 for none)")
    arguments = parser.parse_args()
    try:
        chosen, with_training = selected(arguments.cases, arguments.training)
    except ValueError as error:
        parser.error(str(error))
    print(f"{cpus()}; {versions()}; effort={arguments.effort}")
    if with_training:
        arguments.cases = chosen
        return training_table(arguments)
    rows = []
    for key in chosen:
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
