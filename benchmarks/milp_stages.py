"""Every capped stage solve of `pase-partition-stages` against the MILP (issue 33).

    .venv/bin/python benchmarks/milp_stages.py                      # the default groups
    .venv/bin/python benchmarks/milp_stages.py --models mlp --devices 4 --fractions 0.5

A group is a model on P devices with training options, as `milp_sweep.py`'s; its caps
are the least memory L any plan needs (as the error under a cap of 1 byte names it: that
cap must hold a plan) and fractions of the way from it to the memory of the whole
model's unconstrained optimum on the P devices. Each cap runs
`pase-partition-stages{devices=P device-memory-gib=G report=true}` (stages and
micro-batches auto, `--effort`) in a child process, with every `solve_capped` the stage
search makes (`pipeline/warm.py`: warm-started at a neighbour's λ, given the stage's
unconstrained optimum, told `enough`) recorded: the stage problem, its cap, the
micro-batches it holds, and what came back. Each distinct one (at most `--checks` a
cap) is then solved by the MILP of `milp_sweep.py` on the same stage tables (its
activations `in_flight` times), and pase's answer checked: a strategy that fits, at the
MILP's optimum where proven, with a lower bound at most it; a bound `enough` accepted
(`BoundReached`) at most it; "nothing fits" only where the MILP finds nothing. The
plan's report line ("optimal under the cap (proven)" or its gap) is printed beside.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
import time

import common
from milp_sweep import (
    OPTIONS,
    TOLERANCE,
    fraction,
    group_problem,
    load,
    milp_case,
    milp_tables,
    model_name,
    pass_fields,
    run_group,
)

from pase.core.usage import UsageParser

COLUMNS = (("group", "<"), ("cap (bytes)", ">"), ("plan", "<"), ("stage solves", ">"),
           ("checked", ">"), ("pase CPU (s)", ">"), ("MILP CPU (s)", ">"),
           ("disagreements", "<"))


def recorded_plan(model: str, fields: dict, cap: float, effort: int) -> tuple[list, str, float]:
    """`pase-partition-stages` under `cap` bytes: every `solve_capped` call it made
    (problem, cap, in_flight, what came back), its report's first line (or its
    diagnostic), and its CPU seconds."""
    from xdsl.context import Context

    from pase.core.diagnostics import Diagnostic
    from pase.passes.partition_stages import PartitionStagesPass
    from pase.passes.strategy.memory import BoundReached, MemoryCapError
    from pase.passes.strategy.pipeline import warm

    calls: list = []
    original = warm.solve_capped

    def recording(problem, limit, **options):  # noqa: ANN001, ANN003, ANN202
        in_flight = options.get("in_flight", 1)
        try:
            found = original(problem, limit, **options)
        except (BoundReached, MemoryCapError) as error:
            calls.append((problem, limit, in_flight, error))
            raise
        calls.append((problem, limit, in_flight, found))
        return found

    warm.solve_capped = recording
    stderr = io.StringIO()
    start = time.process_time()
    try:
        with contextlib.redirect_stderr(stderr):
            PartitionStagesPass(**fields, device_memory_gib=cap / (1 << 30), report=True,
                                effort=effort).apply(Context(), load(model))
        line = stderr.getvalue().splitlines()[0]
    except Diagnostic as error:
        line = str(error)
    finally:
        warm.solve_capped = original
    return calls, line, time.process_time() - start


def check_call(call: tuple, seconds: float) -> tuple[str, float]:
    """One recorded stage solve against the MILP: "" if pase's answer holds, else why
    not; and the MILP's CPU seconds."""
    from pase.passes.strategy.memory import BoundReached, CappedSolution, layers_memory

    problem, cap, in_flight, found = call
    milp = milp_case(milp_tables(problem, 200_000, in_flight), cap, seconds)
    optimum = milp["cost"]
    if not milp["optimal"]:
        return "", milp["cpu"]  # (unfinished: no verdict)
    if isinstance(found, BoundReached):
        wrong = found.bound > optimum * (1 + TOLERANCE)
        return (f"BoundReached {found.bound:.9g} above the optimum {optimum:.9g}"
                if wrong else ""), milp["cpu"]
    if not isinstance(found, CappedSolution):
        return ("says nothing fits; the MILP's plan does" if math.isfinite(optimum)
                else ""), milp["cpu"]
    configs = [found.assignment[layer.name] for layer in problem.layer_data]
    held = layers_memory(problem.model, problem.layer_data, configs, in_flight)
    problems = []
    if held > cap:
        problems.append(f"over the cap ({held:.0f} > {cap:.0f})")
    if found.cost < milp["relaxed"] * (1 - TOLERANCE):
        problems.append(f"{found.cost:.9g} below the MILP's {optimum:.9g}")
    if found.lower_bound > optimum * (1 + TOLERANCE):
        problems.append(f"bound {found.lower_bound:.9g} above the optimum {optimum:.9g}")
    if found.proven and found.cost > optimum * (1 + TOLERANCE):
        problems.append(f"proven at {found.cost:.9g}, the optimum is {optimum:.9g}")
    return "; ".join(problems), milp["cpu"]


def child(spec: dict) -> None:
    """One group: a JSON line per cap. The caps: the least memory of any plan the error
    under a cap of 1 byte names (L, which it says holds a plan), and L + f (F - L) for
    each fraction f, F the whole model's unconstrained optimum's memory on P devices."""
    from pase.passes.strategy import solve
    from pase.passes.strategy.memory import GIB, memory_parts

    problem = group_problem(spec["model"], spec["devices"], spec["machine"], spec["options"])
    free = memory_parts(problem, solve(problem).assignment).total
    fields = pass_fields(spec["devices"], spec["machine"], spec["options"])
    _, line, _ = recorded_plan(spec["model"], fields, 1.0, spec["effort"])
    # ("needs is X": the least, which holds a plan; under recompute "needs at least X",
    # a lower bound that may not.)
    exact = "needs is " in line
    words = "needs is " if exact else "needs at least "
    least = float(line.split(words)[1].split(" GiB")[0]) * GIB if words in line else 1.0
    caps = [least] + [float(math.floor(least + f * (free - least)))
                      for f in spec["fractions"] if free > least]
    for cap in caps:
        calls, line, cpu = recorded_plan(spec["model"], fields, cap, spec["effort"])
        seen, problems, milp_cpu, checked = set(), [], 0.0, 0
        if cap == least and exact and "no plan fits" in line:
            problems.append("no plan fits at the least memory the error named")
        for call in calls:
            key = (id(call[0]), call[1], call[2], type(call[3]).__name__)
            if key in seen or checked >= spec["checks"]:
                continue
            seen.add(key)
            checked += 1
            wrong, used = check_call(call, spec["seconds"])
            milp_cpu += used
            if wrong:
                names = [layer.name for layer in call[0].layer_data]
                problems.append(f"stage {names[0]}..{names[-1]} in_flight={call[2]}: {wrong}")
        print(json.dumps({"cap": cap, "line": line, "calls": len(calls), "checked": checked,
                          "cpu": cpu, "milp_cpu": milp_cpu, "problems": problems}),
              flush=True)


def groups(arguments) -> list[tuple[str, int, str, str]]:  # noqa: ANN001 (a Namespace)
    """(model, devices, machine, options) of each group: every `--options` set in turn
    (the machine taken in turn, one with a bf16 peak for bf16), or with `--seed`,
    `--groups` drawn at random (`milp_random.draw`)."""
    if arguments.seed is not None:
        import random

        from milp_random import draw

        rng, made = random.Random(arguments.seed), []
        for _ in range(100 * arguments.groups):
            group = draw(rng, arguments.models, arguments.devices, arguments.machines)
            if group not in made:
                made.append(group)
            if len(made) == arguments.groups:
                break
        return made
    made = []
    machines = ("pase-default", "v100-nvlink", "a100-nvlink")
    for model in arguments.models:
        for devices in arguments.devices:
            for key in arguments.options:
                machine = ("a100-nvlink", "h100-nvlink")[len(made) % 2] \
                    if "bf16" in OPTIONS[key] else machines[len(made) % 3]
                made.append((model, devices, machine, OPTIONS[key]))
    return made


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
        return 0
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=model_name,
                        default=["mlp", "rnnlm", "alexnet", "gpt-small"])
    parser.add_argument("--devices", nargs="+", type=common.positive_int, default=[4, 8])
    parser.add_argument("--options", nargs="+", choices=list(OPTIONS),
                        default=["plain", "adam", "rc-auto"])
    parser.add_argument("--fractions", nargs="+", type=fraction, default=[0.02, 0.2, 0.5])
    parser.add_argument("--effort", type=common.non_negative_int, default=30_000,
                        help="the pass's effort (default 30000; 0 for none)")
    parser.add_argument("--checks", type=common.positive_int, default=40,
                        help="the most stage solves checked a cap (default 40)")
    parser.add_argument("--milp-seconds", type=common.positive_float, default=60.0)
    parser.add_argument("--child-cpu", type=common.positive_float, default=300.0)
    parser.add_argument("--cpu-budget", type=common.positive_float, default=900.0)
    parser.add_argument("--seed", type=int, default=None,
                        help="draw --groups groups from every option (milp_random.py's "
                             "draw) over --models, --devices and --machines")
    parser.add_argument("--groups", type=common.positive_int, default=10)
    parser.add_argument("--machines", nargs="+", type=common.machine,
                        default=["pase-default", "v100-nvlink", "a100-80gb-dgx"])
    arguments = parser.parse_args()
    rows, spent = [], 0.0
    for model, devices, machine, options in groups(arguments):
        label = f"{model} P={devices} {machine} {options}"
        if spent >= arguments.cpu_budget:
            rows.append([label, "-", "not run (CPU budget spent)", "-", "-", "-", "-", "-"])
            continue
        spec = {"model": model, "devices": devices, "machine": machine, "options": options,
                "fractions": arguments.fractions, "effort": arguments.effort,
                "checks": arguments.checks, "seconds": arguments.milp_seconds}
        lines, used, failed = run_group(spec, 4.0, arguments.child_cpu, __file__)
        spent += used
        if failed and not lines:
            rows.append([label, "-", f"failed: {failed}", "-", "-", "-", "-", "-"])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
        for line in lines:
            rows.append([label, f"{line['cap']:.0f}", line["line"][:90],
                         str(line["calls"]), str(line["checked"]),
                         f"{line['cpu']:.1f}", f"{line['milp_cpu']:.1f}",
                         "; ".join(line["problems"]) or "none"])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print(f"{common.cpus()}; {common.versions()}; {spent:.0f} s CPU in all")
    print("\n".join(common.markdown_table(COLUMNS, rows)))
    return 0


if __name__ == "__main__":
    common.run_main(main)
