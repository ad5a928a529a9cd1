"""pase's capped optimum against an exact MILP on the same tables, over many cases (issue 33).

    .venv/bin/python benchmarks/milp_sweep.py                          # the default sweep
    .venv/bin/python benchmarks/milp_sweep.py --models mlp rnnlm --devices 2 4 8
    .venv/bin/python benchmarks/milp_sweep.py --options plain rc-auto --cpu-budget 600
    .venv/bin/python benchmarks/milp_sweep.py --passes      # also through both passes

A group is a model (a models/*.dnn name or a models/onnx fixture's file name) on P
devices of a machine with a set of training options (`OPTIONS`); its problem is the one
`pase-search` builds (`PaseSearchPass.search_options`). Each group runs in a child
process of its own (under `--child-gib` of address space), which finds the least memory
any strategy needs (L: the sum of each layer's least where memory is additive, else the
MILP minimising it, `least_memory`) and the unconstrained optimum's (F), then tries the
caps L - 1 byte (nothing fits), L, L + f (F - L) for each `--fractions` f, and F - 1 byte.
Under each cap it runs `memory.solve_capped` (what both passes call) with no effort
bound and with each `--efforts` bound, and the MILP of `benchmarks/capped.py`
(`milp_rows`: one binary per layer configuration, one continuous variable per
configuration pair of every edge, one memory row, or one per recomputed segment) on the
unpruned tables (pruned, memory a criterion, above `--prune-above` entries and without
recomputation). The CPU times are `time.process_time` around each solve.

The "agree" column checks what pase claims: its plan fits (its memory recounted from the
plan, `memory_parts`); a plan said proven (or found without an effort bound) costs the
MILP's optimum within 1e-9; the lower bound it reports is at most that optimum (a true
gap); `cap_note`'s words ("optimal under the cap (proven" only where it is); "no
strategy fits" only where the MILP finds none, with the least memory it names true.
With `--passes` the caps L and L - 1 byte and the middle fraction also go through
`pase-search{device-memory-gib=G report=true}` (its report's cap line checked the same
way) and `pase-partition-stages{stages=1 microbatches=1 ...}` (the same optimum: with
S = M = 1 its configurations are pase-search's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from capped import milp_rows
from common import (
    cpus,
    machine,
    markdown_table,
    non_negative_int,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.usage import UsageParser

MODELS = Path(__file__).resolve().parents[1] / "models"
OPTIONS = {
    "plain": "",
    "adam": "optimizer=adam precision=bf16 zero=auto",
    "mom-z1-dp2": "optimizer=momentum zero=1 data-parallel=2",
    "rc-full": "optimizer=adam recompute=full zero=2",
    "rc-auto": "optimizer=adam precision=bf16 recompute=auto zero=auto",
    "rc-auto-dp2": "recompute=auto data-parallel=2",
}
"""The training options of a group, as `pase-search` takes them."""
COLUMNS = (("case", "<"), ("cap (bytes)", ">"), ("effort", ">"), ("pase step (s)", ">"),
           ("pase proof", "<"), ("pase CPU (s)", ">"), ("MILP step (s)", ">"),
           ("MILP outcome", "<"), ("MILP CPU (s)", ">"), ("agree", "<"))
TOLERANCE = 1e-9
"""Two steps within this (relative) are the same (`memory.RELATIVE_TOLERANCE`)."""


def model_name(text: str) -> str:
    """A model `load` reads (as an argparse type): a models/*.dnn name, a models/onnx
    file's name, or gpt-small."""
    if text == "gpt-small" or (MODELS / f"{text}.dnn").is_file() or \
            (text.endswith(".onnx") and (MODELS / "onnx" / text).is_file()):
        return text
    raise argparse.ArgumentTypeError(f"no model '{text}' (a models/*.dnn name, a "
                                     "models/onnx file name, or gpt-small)")


def fraction(text: str) -> float:
    """A number from 0 to 1 (as an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:  # (nan too)
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def pass_fields(devices: int, machine: str, options: str) -> dict:
    """The keyword arguments of both passes for a group (`OPTIONS`' text parsed)."""
    fields: dict = {"devices": devices, "machine": machine}
    for item in options.split():
        key, value = item.split("=", 1)
        fields[key.replace("-", "_")] = int(value) if key == "data-parallel" else value
    return fields


def load(model: str):  # noqa: ANN201 (a ModuleOp; imported in the child)
    """A models/*.dnn name, a models/onnx fixture's file name, or gpt-small
    (`capped.SMALL_GPT`, as models/generate.py writes it), parsed."""
    if model == "gpt-small":
        from capped import SMALL_GPT
        from gpt import generate

        from pase.frontend import parse_text

        models = generate()
        return parse_text(models.language_model(models.LanguageModel(**SMALL_GPT),
                                                "gpt_small").render(), "gpt-small")
    if model.endswith(".onnx"):
        from pase.frontend.onnx import load_model

        return load_model(str(MODELS / "onnx" / model)).module
    from pase.frontend import parse_file

    return parse_file(str(MODELS / f"{model}.dnn"))


def group_problem(model: str, devices: int, machine: str, options: str):  # noqa: ANN201
    """The problem `pase-search` builds for the group; a group the pass refuses (its
    options' checks) is skipped (SystemExit)."""
    from pase.core.diagnostics import Diagnostic
    from pase.dialect.dnn import GraphOp
    from pase.passes.options import check_training
    from pase.passes.search import PaseSearchPass, contrary_pin
    from pase.passes.strategy import build_problem
    from pase.passes.strategy.machines import preset
    from pase.passes.training import graph_batch

    graph = next(op for op in load(model).walk() if isinstance(op, GraphOp))
    try:
        search = PaseSearchPass(**pass_fields(devices, machine, options))
        found = search.search_options()
        check_training(search.name, graph.sym_name.data, found.training, preset(machine),
                       graph_batch(graph))
    except Diagnostic as error:
        raise SystemExit(f"skipped: {error}") from None
    problem = build_problem(graph, devices, preset(machine), options=found)
    if (contrary := contrary_pin(problem, found.training.data_parallel)):
        raise SystemExit(f"skipped: {contrary[1]}")
    return problem


def milp_tables(problem, prune_above: int, in_flight: int = 1):  # noqa: ANN001, ANN201
    """The MILP's graph, its memory rows (`milp_rows`') and each vertex's kept indices:
    the unpruned tables, or pruned ones (memory a criterion) where memory is additive and
    the tables have more than `prune_above` entries; with recomputation one row per
    segment (its additive memory plus that segment's recomputed results); the
    activations of `in_flight` micro-batches held (a pipeline stage's)."""
    from pase.passes.strategy.memory import memory_vectors
    from pase.passes.strategy.prune import prune
    from pase.passes.strategy.recomputed import Transient

    graph = problem.cost_graph()
    memory = memory_vectors(problem, in_flight)
    transient = Transient.of(problem)
    entries = sum(graph.sizes) + sum(table.size for table in graph.edge_costs.values())
    if transient is None and entries > prune_above:
        pruned, kept = prune(graph, extra=memory)
        return pruned, [[m[k] for m, k in zip(memory, kept, strict=True)]], kept
    kept = [np.arange(vector.size) for vector in memory]
    if transient is None:
        return graph, [memory], kept
    return graph, [[m + (transient.vectors[v] if v in run else 0.0)
                    for v, m in enumerate(memory)] for run in transient.runs], kept


def least_memory(graph, rows: list[list[np.ndarray]]) -> float:  # noqa: ANN001
    """The least over strategies of the largest row's sum: each layer's least where there
    is one row, else the MILP minimising it (HiGHS, gap 0)."""
    if len(rows) == 1:
        return float(sum(float(vector.min()) for vector in rows[0]))
    import highspy

    from pase.passes.strategy import capped

    kept = [np.arange(cost.size) for cost in graph.vertex_costs]
    model = capped._Model(graph, rows[0], math.inf, kept)  # noqa: SLF001 (its columns)
    lp = model.lp()
    scale = float(max(max(float(v.max()) for v in row) for row in rows)) or 1.0
    lp.col_cost_ = np.zeros(model.columns)
    highs = highspy.Highs()
    for option, value in (("output_flag", False), ("threads", 1), ("random_seed", 0),
                          ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0)):
        highs.setOptionValue(option, value)
    highs.passModel(lp)
    highs.addVar(0.0, highspy.kHighsInf)  # z >= every row's sum
    highs.changeColCost(model.columns, 1.0)
    for row in rows:
        weights = np.concatenate([np.asarray(v, dtype=np.float64) for v in row]) / scale
        used = np.flatnonzero(weights)
        index = np.append(used, model.columns).astype(np.int32)
        highs.addRow(-highspy.kHighsInf, 0.0, index.size, index,
                     np.append(weights[used], -1.0))
    highs.run()
    choice = model.decode(np.asarray(highs.getSolution().col_value)[:model.columns])
    return max(sum(float(v[c]) for v, c in zip(row, choice, strict=True)) for row in rows)


def caps(least: float, free: float, fractions: list[float]) -> list[tuple[str, float]]:
    """The caps of a group: just below the least memory, the least, fractions of the way
    to the unconstrained optimum's, and just below that."""
    found = [("L-1", least - 1.0), ("L", least)]
    if free > least:
        found += [(f"L+{f:g}", float(math.floor(least + f * (free - least))))
                  for f in fractions]
        found.append(("F-1", free - 1.0))
    unique: dict[float, str] = {}
    for name, cap in found:
        unique.setdefault(cap, name)
    return [(name, cap) for cap, name in unique.items()]


def pase_case(problem, cap: float, effort: int | None) -> dict:  # noqa: ANN001
    """`solve_capped` under `cap` with `effort`: its step, bound, proof and report line."""
    from pase.formats.report import cap_note
    from pase.passes.strategy.memory import MemoryCapError, memory_parts, solve_capped

    start = time.process_time()
    try:
        capped = solve_capped(problem, cap, effort=effort)
    except MemoryCapError as error:
        return {"cpu": time.process_time() - start, "fits": False, "least": error.least,
                "message": str(error)}
    cpu = time.process_time() - start
    return {"cpu": cpu, "fits": True, "cost": capped.cost, "bound": capped.lower_bound,
            "proven": capped.proven, "stopped": capped.stopped, "memory": capped.memory,
            "recounted": memory_parts(problem, capped.assignment).total,
            "note": cap_note(capped), "free_fits": capped.unconstrained_fits}


def milp_case(tables, cap: float, seconds: float, problem=None) -> dict:  # noqa: ANN001
    """The MILP under `cap` (`milp_rows`), its plan's memory recounted exactly; with the
    `problem`, also its plan's memory (`memory_parts`) and step (`Problem.cost`) as pase
    counts them off the tables ("recounted", "recost")."""
    graph, rows, kept = tables
    start = time.process_time()
    # Each vertex's least (over every row) is taken off its vectors and their sum off
    # the cap: the same plans fit, and HiGHS's tolerance (1e-9 of the row) is 1e-9 of
    # the room left. A plan it finds over the cap all the same (bytes need not be whole:
    # 2051.5) is solved again with the room less twice that tolerance: a plan that fits,
    # whose step is then at least the optimum, and the first solve's ("relaxed") at most.
    least = [min(float(row[v].min()) for row in rows) for v in range(len(rows[0]))]
    shifted = [[vector - low for vector, low in zip(row, least, strict=True)] for row in rows]
    room, relaxed = cap - math.fsum(least), None
    for _ in range(2):
        result = milp_rows(graph, shifted, max(room, 1e-3), seconds) if room >= 0 else \
            {"choice": None, "cost": math.inf, "optimal": True, "bound": math.inf,
             "nodes": 0}
        memory = math.nan if result["choice"] is None else max(
            sum(float(v[c]) for v, c in zip(row, result["choice"], strict=True))
            for row in rows)
        if not memory > cap or relaxed is not None:
            break
        relaxed, room = result["cost"], room * (1 - 2e-9) - 1e-3
    cpu = time.process_time() - start
    found = {"cpu": cpu, "cost": result["cost"], "optimal": result["optimal"],
             "bound": result["bound"], "memory": memory, "nodes": result["nodes"],
             "relaxed": result["cost"] if relaxed is None else relaxed}
    if problem is not None and result["choice"] is not None:
        from pase.passes.strategy.memory import memory_parts

        plan = problem.assignment([int(k[c]) for k, c in zip(kept, result["choice"],
                                                                strict=True)])
        found.update(recounted=memory_parts(problem, plan).total, recost=problem.cost(plan))
    return found


def least_words(message: str, least: float) -> str:
    """What is false in a "nothing fits" `message` of the least memory `least` (bytes):
    "needs at least X GiB" with X above it, or a least memory "is X GiB" with a cap of X
    not holding it ("" where neither)."""
    gib = float(1 << 30)
    for words, wrong in ((" at least ", lambda x: x * gib > least),
                         (" is ", lambda x: x * gib < least)):
        if words in message and " GiB" in message.split(words, 1)[1]:
            number = message.split(words, 1)[1].split(" GiB")[0]
            with contextlib.suppress(ValueError):
                if wrong(float(number)):
                    return f"says{words}{number} GiB; the least is {least / gib:.9g} GiB"
    return ""


def verdict(pase: dict, milp: dict, cap: float, effort: int | None, least: float) -> str:
    """Whether pase's claims hold against the MILP's (module docstring); "yes" or why not."""
    if math.isfinite(milp["cost"]) and milp["memory"] > cap:
        return "MILP's plan over the cap (its tolerance): no verdict"
    found = math.isfinite(milp["cost"])
    if found and "recounted" in milp and (abs(milp["recounted"] - milp["memory"]) > 0.5 or
                                          abs(milp["recost"] - milp["cost"]) >
                                          TOLERANCE * milp["cost"]):
        return f"NO: the tables count the MILP's plan {milp['memory']:.0f} B, " \
            f"{milp['cost']:.9g} s; pase {milp['recounted']:.0f} B, {milp['recost']:.9g} s"
    if not pase["fits"]:
        if found:
            return "NO: pase says nothing fits; the MILP's plan does"
        if pase["least"] > least * (1 + TOLERANCE) and "least memory" in pase["message"] \
                and "at least" not in pase["message"]:
            return f"NO: the least memory named ({pase['least']:.0f}) is not the least " \
                   f"({least:.0f})"
        if (false := least_words(pase["message"], least)):
            return f"NO: the message {false}"
        return "yes" if milp["optimal"] else "MILP unfinished"
    if pase["recounted"] > cap:
        return "NO: pase's plan is over the cap"
    if abs(pase["recounted"] - pase["memory"]) > 0.5:
        return "NO: pase's memory is not its plan's"
    if not milp["optimal"]:
        optimum = milp["cost"]  # (at least the optimum: a bound above it is still false)
        if pase["bound"] > optimum * (1 + TOLERANCE):
            return "NO: pase's bound is above a plan that fits"
        return "MILP unfinished"
    optimum = milp["cost"]
    if not math.isfinite(optimum):
        return "NO: the MILP finds nothing that fits; pase's plan fits" \
            " (MILP tolerance?)"
    if pase["cost"] < milp["relaxed"] * (1 - TOLERANCE):
        return "NO: pase beats the MILP's optimum"
    if pase["bound"] > optimum * (1 + TOLERANCE):
        return "NO: pase's bound is above the optimum (a false gap)"
    close = pase["cost"] <= optimum * (1 + TOLERANCE)
    if pase["proven"] and not close:
        return "NO: pase says proven; the MILP's optimum is lower"
    if "(proven" in pase["note"] and not close:
        return "NO: the report says proven; it is not"
    if effort is None and not pase["proven"]:
        return "NO: not proven without an effort bound" if close else \
            "NO: not optimal without an effort bound"
    return "yes" if close else "above the optimum, gap true"


def child(spec: dict) -> None:
    """One group (`spec`: model, devices, machine, options, fractions, efforts, seconds,
    prune_above, passes): a JSON line for the group, then one per case."""
    from milp_passes import pass_verdict, through_passes

    from pase.passes.strategy import solve
    from pase.passes.strategy.memory import memory_parts

    if spec["points"]:
        # Small effort bounds on small graphs: the effort counted in single points, and
        # the branch and bound over recomputed results stopped after a few nodes.
        from pase.passes.strategy import capped, recomputed

        capped.POINTS_PER_EFFORT = spec["points"]
        recomputed.MAX_NODES = spec["nodes"]
    start = time.process_time()
    problem = group_problem(spec["model"], spec["devices"], spec["machine"], spec["options"])
    graph = problem.cost_graph()
    entries = sum(graph.sizes) + sum(t.size for t in graph.edge_costs.values())
    if entries > spec["max_entries"]:
        raise SystemExit(f"skipped: {entries:,} table entries (--max-entries)")
    tables = milp_tables(problem, spec["prune_above"])
    least = least_memory(tables[0], tables[1])
    free = memory_parts(problem, solve(problem).assignment).total
    graph = tables[0]
    print(json.dumps({"least": least, "free": free, "rows": len(tables[1]),
                      "entries": sum(graph.sizes) + sum(t.size for t in
                                                        graph.edge_costs.values()),
                      "setup": time.process_time() - start}), flush=True)
    middle = f"L+{spec['fractions'][len(spec['fractions']) // 2]:g}"
    for name, cap in caps(least, free, spec["fractions"]):
        milp = milp_case(tables, cap, spec["seconds"], problem)
        for effort in (None, *spec["efforts"]):
            pase = pase_case(problem, cap, effort)
            row = {"cap_name": name, "cap": cap, "effort": effort, "pase": pase, "milp": milp,
                   "agree": verdict(pase, milp, cap, effort, least)}
            if spec["passes"] and effort is None and name in ("L-1", "L", middle):
                fields = pass_fields(spec["devices"], spec["machine"], spec["options"])
                row["passes"] = pass_verdict(through_passes(spec["model"], fields, cap),
                                             milp, least)
            print(json.dumps(row), flush=True)


MODEL_NAMES = ("mlp", "rnnlm", "alexnet", "mlp.dynamo.onnx", "cnn_bn.torchscript.onnx",
               "token_loss.dynamo.onnx", "lstm.dynamo.onnx", "gpt-small", "transformer",
               "gpt2_small", "inception_v3")
MACHINES = ("pase-default", "v100-nvlink", "a100-nvlink")
BF16_MACHINES = ("a100-nvlink", "h100-nvlink", "a100-80gb-dgx")
"""The presets with a bf16 peak: a group with precision=bf16 takes its machine in turn
from these."""


def groups(arguments: argparse.Namespace) -> list[dict]:
    """Every (model, devices, options) asked for, smallest model first, the machine taken
    in turn from `--machines` (a count: the same groups on every run)."""
    made = []
    for model in arguments.models:
        for devices in arguments.devices:
            for options in arguments.options:
                machines = BF16_MACHINES if "bf16" in OPTIONS[options] else \
                    arguments.machines
                machine = machines[len(made) % len(machines)]
                made.append({"model": model, "devices": devices, "machine": machine,
                             "options": OPTIONS[options], "key": options,
                             "fractions": arguments.fractions, "efforts": arguments.efforts,
                             "seconds": arguments.milp_seconds,
                             "prune_above": arguments.prune_above,
                             "max_entries": arguments.max_entries,
                             "passes": arguments.passes,
                             "points": arguments.points_per_effort,
                             "nodes": arguments.max_nodes})
    return made


def run_group(spec: dict, gib: float, cpu: float, script: str = __file__
              ) -> tuple[list[dict], float, str]:
    """`script --child spec` (this one's `child(spec)`) in a process of its own under
    `gib` GiB of address space and `cpu` CPU seconds: its lines, the CPU it took, and
    why it failed ("" if it did not)."""
    def limit() -> None:
        nbytes = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 5))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, script, "--child", json.dumps(spec)],
                          capture_output=True, text=True, preexec_fn=limit, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failed = ""
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or [f"signal {-done.returncode}"])[-1]
        failed = "CPU limit" if done.returncode in (-9, -24) else \
            "out of memory" if "MemoryError" in done.stderr else tail[:120]
    return lines, used, failed


def case_row(spec: dict, row: dict) -> list[str]:
    """One case's table row."""
    pase, milp = row["pase"], row["milp"]
    name = f"{spec['model']} P={spec['devices']} {spec['machine']} {spec['key']} " \
        f"{row['cap_name']}"
    if pase["fits"]:
        proof = "proven" if pase["proven"] else \
            f"gap {100 * (pase['cost'] / pase['bound'] - 1):.3g}%"
        step = f"{pase['cost']:.9g}"
    else:
        proof, step = "nothing fits", "-"
    outcome = ("optimal" if milp["optimal"] else "unfinished") + \
        ("" if math.isfinite(milp["cost"]) else ", nothing fits")
    agree = row["agree"] + (f"; passes: {row['passes']}" if "passes" in row else "")
    return [name, f"{row['cap']:.0f}", "-" if row["effort"] is None else str(row["effort"]),
            step, proof, f"{pase['cpu']:.2f}",
            f"{milp['cost']:.9g}" if math.isfinite(milp["cost"]) else "-", outcome,
            f"{milp['cpu']:.2f}", agree]


def difference(row: dict) -> float:
    """|pase - MILP| / MILP of a case where pase says proven and the MILP optimal (0
    otherwise)."""
    pase, milp = row["pase"], row["milp"]
    if not (pase["fits"] and pase["proven"] and milp["optimal"]) or \
            not math.isfinite(milp["cost"]):
        return 0.0
    return abs(pase["cost"] - milp["cost"]) / milp["cost"]


def sweep(arguments: argparse.Namespace, specs: list[dict] | None = None) -> int:
    """Runs the groups (`specs`, else `groups(arguments)`) until `--cpu-budget` CPU
    seconds are spent; prints the table and the largest |pase - MILP| where both say
    optimal (relative)."""
    rows, summary, spent, largest = [], [], 0.0, 0.0
    for spec in groups(arguments) if specs is None else specs:
        if spent >= arguments.cpu_budget:
            summary.append(f"not run (CPU budget spent): {spec['model']} "
                           f"P={spec['devices']} {spec['key']}")
            continue
        lines, used, failed = run_group(spec, arguments.child_gib, arguments.child_cpu)
        spent += used
        head = lines[0] if lines else {}
        label = f"{spec['model']} P={spec['devices']} {spec['machine']} {spec['key']}"
        if failed and not lines:
            summary.append(f"{label}: failed before its cases: {failed}")
            print(summary[-1], file=sys.stderr, flush=True)
            continue
        cases = [case_row(spec, row) for row in lines[1:]]
        largest = max([largest, *(difference(row) for row in lines[1:])])
        wrong = [case for case in cases if "NO" in case[-1] or "passes: " in case[-1] and
                 case[-1].split("passes: ")[1] not in ("yes", "MILP unfinished")]
        rows += cases if arguments.all_rows else wrong
        gaps = sum(case[4].startswith("gap") for case in cases)
        open_ = sum(("no verdict" in case[-1] or "unfinished" in case[-1]) for case in cases)
        summary.append(f"{label}: {len(cases)} cases ({gaps} stopped by effort), "
                       f"{len(wrong)} disagree, {open_} without a verdict, "
                       f"{head.get('entries', 0):,} entries, {head.get('rows', 0)} memory "
                       f"row(s), {used:.1f} s CPU" + (f"; stopped: {failed}" if failed else ""))
        print(summary[-1], file=sys.stderr, flush=True)
    print(f"{cpus()}; {versions()}; {spent:.0f} s CPU in all; largest |pase - MILP| / "
          f"MILP where both say optimal: {largest:.3g}")
    print("\n".join(f"- {line}" for line in summary))
    print()
    print("\n".join(markdown_table(COLUMNS, rows)) if rows else "no disagreement")
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        spec = json.loads(sys.argv[2])
        child(spec)
        return 0
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=model_name, default=list(MODEL_NAMES),
                        help="models/*.dnn names and models/onnx file names")
    parser.add_argument("--devices", nargs="+", type=positive_int, default=[2, 3, 4, 6, 8, 16])
    parser.add_argument("--machines", nargs="+", type=machine, default=list(MACHINES))
    parser.add_argument("--options", nargs="+", choices=list(OPTIONS), default=list(OPTIONS))
    parser.add_argument("--fractions", nargs="+", type=fraction,
                        default=[0.01, 0.1, 0.3, 0.6, 0.9])
    parser.add_argument("--efforts", nargs="*", type=non_negative_int, default=[1, 4],
                        help="effort bounds tried besides none (thousands of points)")
    parser.add_argument("--milp-seconds", type=positive_float, default=60.0,
                        help="HiGHS's time limit per MILP (wall; default 60 s)")
    parser.add_argument("--prune-above", type=positive_int, default=200_000,
                        help="table entries above which the additive MILP is pruned")
    parser.add_argument("--max-entries", type=positive_int, default=400_000,
                        help="groups with more table entries are skipped")
    parser.add_argument("--child-gib", type=positive_float, default=4.0)
    parser.add_argument("--child-cpu", type=positive_float, default=300.0,
                        help="CPU seconds a group may take (default 300)")
    parser.add_argument("--cpu-budget", type=positive_float, default=1800.0,
                        help="no group starts once the sweep has taken this many CPU s")
    parser.add_argument("--points-per-effort", type=non_negative_int, default=0,
                        help="count the effort in this many points, not capped's "
                             "POINTS_PER_EFFORT (small bounds on small graphs; 0: as is)")
    parser.add_argument("--max-nodes", type=non_negative_int, default=3,
                        help="with --points-per-effort, recomputed.MAX_NODES (default 3)")
    parser.add_argument("--passes", action="store_true",
                        help="also through both passes at three caps a group")
    parser.add_argument("--all-rows", action="store_true",
                        help="every case in the table, not only the disagreements")
    return sweep(parser.parse_args())


if __name__ == "__main__":
    run_main(main)
