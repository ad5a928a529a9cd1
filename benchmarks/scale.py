"""How far the exact search of one GPT graph scales: GPT-3 175B and Megatron-LM's 1T model
at 32 to 3,072 devices, searched whole (no pipeline) as `pase-search` searches them.

    .venv/bin/python benchmarks/scale.py                          # every row, 120 s each
    .venv/bin/python benchmarks/scale.py --models megatron-1t --devices 48 3072
    .venv/bin/python benchmarks/scale.py --device-memory-gib 80   # the capped search

Each row is one `models/generate.py` preset on P devices of `a100-80gb-dgx` with the
training step of `benchmarks/gpt.py` (Adam, bf16, full recomputation, ZeRO-1), searched
by the engine exactly as `pase-search{devices=P machine=a100-80gb-dgx optimizer=adam
precision=bf16 recompute=full zero=1}` searches it (`build_problem`, then `solve`, or
`solve_capped` with `--device-memory-gib`), under the pass's default memory budget of
4 GiB (`--memory-gib`). It runs in a child process of its own, killed after `--timeout`
seconds (the issue's target is 60 s; the default leaves room to see how far over a row
is). Columns:

- configs: the most configurations of one layer (the q/k/v projections);
- build: seconds to parse the model, list the configurations and build the cost tables
  (of the whole problem; where `solve` narrows it first, `narrow.py`, only the
  configurations: the narrowed problem's tables are built within the search);
- search: seconds `solve` took after that (narrowing, pruning, bounds, the DP);
- total: wall-clock seconds of the child from the file to the strategy, or "refused"
  (the memory budget's refusal, with the memory it says the search needs) or
  "over T s" (killed at the timeout);
- CPU: the child's user + system seconds (`os.wait4`; on a shared host the wall time
  moves more);
- step: the predicted step of the optimal strategy (seconds);
- reused: DP eliminations that took an earlier step's tables (the layers of repeated
  blocks), of all eliminations; with bounds, those of the DP's last round;
- peak tables: the most memory the budget counted at once (cost tables, pruning's copies,
  the DP's minimum and argmin tables).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import (
    MODELS_DIR,
    cpus,
    markdown_table,
    non_negative_float,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.usage import UsageParser

MODELS = ["gpt3-175b", "megatron-1t"]
DEVICES = [32, 64, 128, 256, 512, 1024, 3072]
TRAINING = {"optimizer": "adam", "precision": "bf16", "recompute": "full", "zero": "1"}


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=MODELS, metavar="PRESET")
    parser.add_argument("--devices", nargs="+", type=positive_int, default=DEVICES)
    parser.add_argument("--timeout", type=positive_int, default=120,
                        help="seconds per row (default 120)")
    parser.add_argument("--memory-gib", type=positive_float, default=4.0,
                        help="the search's memory budget (default 4, pase-search's)")
    parser.add_argument("--device-memory-gib", type=non_negative_float, default=0.0,
                        help="cap each device's memory (the capped search); 0 for none")
    parser.add_argument("--child", nargs=2, metavar=("MODEL_FILE", "DEVICES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), args.memory_gib, args.device_memory_gib)
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for preset in args.models:
            path = Path(folder) / f"{preset}.dnn"
            if subprocess.run([sys.executable, str(MODELS_DIR / "generate.py"), preset,
                               "-o", str(path)], check=False).returncode:
                sys.exit(1)  # (generate.py said why in one line: an unknown preset)
            for devices in args.devices:
                print(f"{preset} at P={devices} ...", file=sys.stderr, flush=True)
                rows.append([preset, f"{devices:,}",
                             *run_row(path, devices, args.timeout, args.memory_gib,
                                      args.device_memory_gib)])
                # Each row as it comes (a long run stopped early keeps the rows it has).
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    cap = (f"capped at {args.device_memory_gib:g} GiB per device" if args.device_memory_gib
           else "uncapped")
    print(f"Exact search of whole GPT graphs on a100-80gb-dgx, {cap}, memory budget "
          f"{args.memory_gib:g} GiB, {args.timeout} s per row; {cpus()}; {versions()}\n")
    columns = (("model", "<"), ("P", ">"), ("configs", ">"), ("build s", ">"),
               ("search s", ">"), ("total s", ">"), ("CPU s", ">"), ("step s", ">"),
               ("reused", ">"), ("peak tables", ">"))
    print("\n".join(markdown_table(columns, rows)))


def run_row(path: Path, devices: int, timeout: int, memory_gib: float,
            device_memory_gib: float) -> list[str]:
    """One row's cells after the model and P, from a child process."""
    command = [sys.executable, __file__, "--child", str(path), str(devices),
               "--memory-gib", str(memory_gib), "--device-memory-gib", str(device_memory_gib)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return ["", "", "", f"over {timeout}", "", "", "", ""]
    result = json.loads(output.strip().splitlines()[-1])
    cpu = result["cpu"]
    if "refused" in result:
        return [f"{result['configs']:,}", f"{result['build']:.1f}", "",
                f"refused: {result['refused']}", f"{cpu:.1f}", "", "", ""]
    return [f"{result['configs']:,}", f"{result['build']:.1f}", f"{result['search']:.1f}",
            f"{result['total']:.1f}", f"{cpu:.1f}", f"{result['step']:.4g}",
            f"{result['reused']:,} / {result['steps']:,}", _gib(result["peak"])]


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.2f} GiB"


def child(path: Path, devices: int, memory_gib: float, device_memory_gib: float) -> None:
    """Search one row and print one JSON line."""
    started = time.perf_counter()
    from pase.formats.machine_toml import load_machine
    from pase.frontend import parse_file
    from pase.passes.options import training_options
    from pase.passes.strategy import (
        MemoryBudget,
        SearchError,
        SearchOptions,
        build_problem,
        solve,
        solve_capped,
    )
    from pase.passes.strategy.narrow import NARROW_MIN_ENTRIES, largest_edge_entries

    training = training_options("scale", devices, TRAINING["optimizer"],
                                TRAINING["precision"], TRAINING["recompute"],
                                TRAINING["zero"], 0)
    options = SearchOptions(training=training,
                            memory_budget=int(memory_gib * (1 << 30)))
    budget = MemoryBudget(options.memory_budget)
    result: dict[str, object] = {}
    try:
        problem = build_problem(parse_file(str(path)), devices, load_machine("a100-80gb-dgx"),
                                None, options, budget)
        result["configs"] = max(len(configs) for configs in problem.config_lists)
        narrowed = largest_edge_entries(problem) >= NARROW_MIN_ENTRIES
        if not narrowed or device_memory_gib:
            problem.cost_graph(budget)
        built = time.perf_counter()
        result["build"] = built - started
        if device_memory_gib:
            capped = solve_capped(problem, device_memory_gib * (1 << 30), options.method,
                                  options.order, budget, jit=options.jit)
            cost, stats = capped.cost, capped.stats
        else:
            solution = solve(problem, options, memory_budget=budget)
            cost, stats = solution.cost, solution.stats
        finished = time.perf_counter()
        result.update(search=finished - built, total=finished - started, step=cost,
                      reused=stats.reused_steps if stats else 0,
                      steps=len(stats.order) if stats else 0, peak=budget.peak)
    except SearchError as error:
        result.setdefault("configs", 0)
        result.setdefault("build", time.perf_counter() - started)
        least = getattr(error, "least", None)  # (a MemoryCapError: nothing fits the cap)
        result["refused"] = (_needed(str(error)) if least is None
                             else f"nothing fits; the least is {_gib(int(least))}")
    times = os.times()
    result["cpu"] = times.user + times.system
    print(json.dumps(result))


def _needed(message: str) -> str:
    """The memory a refusal says the search needs ("would take 52.7 GiB" -> "52.7 GiB")."""
    for marker in ("would take ", "would bring the live tables to "):
        if marker in message:
            return "needs " + message.split(marker, 1)[1].split(" ", 2)[0] + " " + \
                message.split(marker, 1)[1].split(" ", 2)[1].rstrip(",;")
    return message[:60]


if __name__ == "__main__":
    run_main(main)
