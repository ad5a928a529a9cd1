"""The DP solves of one graph at many multipliers λ (issues 32 and 33): the capped search's
solves, timed in process, with what they return, so that two trees can be compared.

    .venv/bin/python benchmarks/lambdas.py                       # t16 gpt2 t64
    .venv/bin/python benchmarks/lambdas.py --cases t16 t8-adam   # some cases
    .venv/bin/python benchmarks/lambdas.py --rates transformer:16:v100-nvlink --cases
    PYTHONPATH=<an export of main> .venv/bin/python benchmarks/lambdas.py ...  # main's code

Each case (`capped.py`'s `CASES` and `--training` cases, the same caps) runs as
`capped.py`'s pase child does, in this process: the CPU time (`time.process_time`) is
`solve_capped`'s alone, and `solve_graph`'s share of it is measured by wrapping the
function. One JSON line per case:
the step, the bound, whether proven, the solves, the frontier points and a sha256 of the
plan's configurations (what two trees must print the same), then the CPU seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from capped import CASES, MODELS, TRAINING, child, training_child


def measure(key: str) -> dict:
    """`capped.py`'s pase child on the case (`solve_capped`, timed there), with
    `solve_graph`'s own CPU time and the plan it returned."""
    import pase.passes.strategy.exact as exact
    import pase.passes.strategy.memory as memory_module
    from pase.passes.strategy.memory import DEFAULT_EFFORT

    spent = [0.0, 0]
    solved = []
    inner, inner_capped = memory_module.solve_graph, memory_module.solve_capped

    def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            spent[1] += 1

    def kept(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        solved.append(inner_capped(*args, **kwargs))
        return solved[-1]

    memory_module.solve_graph, memory_module.solve_capped = timed, kept
    try:
        if any(case.key == key for case in TRAINING):
            found = training_child(key, "pase", 0.0, DEFAULT_EFFORT)
        else:
            found = child(key, "pase", 0.0, DEFAULT_EFFORT)
    finally:
        memory_module.solve_graph, memory_module.solve_capped = inner, inner_capped
    plan = json.dumps({name: repr(config) for name, config in solved[-1].assignment.items()},
                      sort_keys=True)
    return {"case": key, "step": repr(found["cost"]), "bound": repr(found["bound"]),
            "proven": found["proven"], "solves": found["solves"], "nodes": found["nodes"],
            "plan": hashlib.sha256(plan.encode()).hexdigest()[:16], "code": exact.__file__,
            "cpu": round(found["cpu"], 2), "solve_graph_cpu": round(spent[0], 2),
            "solve_graph_calls": spent[1]}


def rates(model: str, devices: int, machine: str, count: int = 24) -> dict:
    """One graph solved at `count` multipliers λ, as LARAC solves it (`memory.priced`
    costs, the same edge tables): the CPU time of the solves and a digest of their
    strategies and costs."""
    import numpy as np

    from pase.frontend import parse_file
    from pase.passes.strategy import build_problem
    from pase.passes.strategy.costgraph import CostGraph
    from pase.passes.strategy.exact import solve_graph
    from pase.passes.strategy.machines import preset
    from pase.passes.strategy.memory import memory_vectors, priced

    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices, preset(machine))
    graph, memory = problem.cost_graph(), memory_vectors(problem)
    free = solve_graph(graph)
    # (λ around the free optimum's cost per byte, as LARAC's range)
    scale = free.cost / max(1.0, sum(float(m[c]) for m, c in zip(memory, free.choice,
                                                                    strict=True)))
    found = []
    start = time.process_time()
    for rate in scale * np.geomspace(0.01, 3, count):
        result = solve_graph(CostGraph(graph.names, priced(graph.vertex_costs, memory,
                                                           float(rate)),
                                       dict(graph.edge_costs)))
        found.append((result.choice, result.cost.hex()))
    return {"case": f"{model} P={devices} {machine}, {count} multipliers",
            "cpu": round(time.process_time() - start, 2),
            "results": hashlib.sha256(repr(found).encode()).hexdigest()[:16]}


def main() -> int:
    keys = [case[0] for case in CASES] + [case.key for case in TRAINING]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", choices=keys, default=["t16", "gpt2", "t64"])
    parser.add_argument("--rates", nargs="*", default=[], metavar="MODEL:P:MACHINE",
                        help="also solve each graph at 24 multipliers (transformer:16:v100-nvlink)")
    arguments = parser.parse_args()
    for graph in arguments.rates:
        model, devices, machine = graph.split(":")
        print(json.dumps(rates(model, int(devices), machine)), flush=True)
    for key in arguments.cases:
        print(json.dumps(measure(key)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
