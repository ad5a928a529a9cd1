"""The DP solves of one graph at many multipliers λ (issues 32 and 33): the capped search's
solves, timed in process, with what they return, so that two trees can be compared.

    .venv/bin/python benchmarks/lambdas.py                       # t16 gpt2 t64
    .venv/bin/python benchmarks/lambdas.py --cases t16 t8-adam   # some cases
    PYTHONPATH=<an export of main> .venv/bin/python benchmarks/lambdas.py ...  # main's code

Each case (`capped.py`'s `CASES` and `--training` cases, the same caps) is built, then
`solve_capped` runs on it; the CPU time (`time.process_time`) is the solve's alone, and
`solve_graph`'s share of it is measured by wrapping the function. One JSON line per case:
the step, the bound, whether proven, the solves, the frontier points and a sha256 of the
plan's configurations (what two trees must print the same), then the CPU seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time

from capped import CASES, MODELS, TRAINING, training_problem


def problem_and_cap(key: str):  # noqa: ANN201 (a Problem and a cap in bytes)
    """The case's problem and its cap, as `capped.py` builds them."""
    from pase.frontend import parse_file
    from pase.passes.strategy import build_problem, solve
    from pase.passes.strategy.machines import preset
    from pase.passes.strategy.memory import GIB, memory_parts, memory_vectors
    from pase.passes.strategy.recomputed import Transient

    for case in CASES:
        if case[0] == key:
            _, model, devices, machine, gib = case
            problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices,
                                    preset(machine))
            return problem, gib * GIB
    case = next(case for case in TRAINING if case.key == key)
    problem = training_problem(case)
    memory = memory_vectors(problem)
    transient = Transient.of(problem)
    least = sum(float(vector.min()) for vector in memory) + \
        (transient.least if transient is not None else 0.0)
    free = memory_parts(problem, solve(problem).assignment).total
    return problem, float(math.floor(least + case.fraction * (free - least)))


def measure(key: str) -> dict:
    """`solve_capped` on the case, timed, with `solve_graph`'s own CPU time."""
    import pase.passes.strategy.exact as exact
    import pase.passes.strategy.memory as memory_module
    from pase.passes.strategy.memory import solve_capped

    problem, cap = problem_and_cap(key)
    spent = [0.0, 0]
    inner = memory_module.solve_graph

    def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            spent[1] += 1

    memory_module.solve_graph = timed
    try:
        start = time.process_time()
        capped = solve_capped(problem, cap)
        cpu = time.process_time() - start
    finally:
        memory_module.solve_graph = inner
    plan = json.dumps({name: repr(config) for name, config in capped.assignment.items()},
                      sort_keys=True)
    return {"case": key, "step": repr(capped.cost), "bound": repr(capped.lower_bound),
            "proven": capped.proven, "solves": capped.solves, "nodes": capped.nodes,
            "plan": hashlib.sha256(plan.encode()).hexdigest()[:16],
            "code": exact.__file__,
            "cpu": round(cpu, 2), "solve_graph_cpu": round(spent[0], 2),
            "solve_graph_calls": spent[1]}


def main() -> int:
    keys = [case[0] for case in CASES] + [case.key for case in TRAINING]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=keys, default=["t16", "gpt2", "t64"])
    arguments = parser.parse_args()
    for key in arguments.cases:
        print(json.dumps(measure(key)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
