"""How long the search takes and how much memory it needs, per model and device count.

    .venv/bin/python benchmarks/search.py                       # every model, P = 4..64
    .venv/bin/python benchmarks/search.py --models alexnet transformer --devices 8 64

Each case (one model on P devices) runs in a fresh Python process, so its peak resident set
size is its own and not that of earlier cases; the parent collects one JSON line per case and
prints one markdown table. Times are wall-clock (`time.perf_counter`) inside the child:

- tables: enumerating the configurations and building the DP's cost vectors and matrices
  (`build_problem` + `Problem.cost_graph()`);
- DP: everything `solve` does once the tables exist (pruning, elimination order, the DP, and
  compiling its kernel where the engine has one);
- total: parsing the `.dnn` file, tables and DP — everything from the file to the strategy.
- DP numpy / DP JIT: the DP alone on the same pruned tables with `jit="off"` and `jit="on"`
  (the JIT's second run, its kernels compiled; "JIT compile" is what the first run took
  more), their ratio, and the table entries the JIT processes per second; the two must
  give bit-identical costs.
- bfs DP: the same DP (JIT) in PaSE's breadth-first order, or why it does not run: over the
  memory budget, or more than `BFS_ENTRIES` table entries (minutes of work).

With `--deep`, each case is instead the whole process a user runs, `pase-opt MODEL -p
'pase-search{devices=P}'`, timed from outside: its wall time, its CPU time (user + system,
from `os.wait4`; on a shared host it moves less than the wall time) and its peak RSS, for
the cases of the cluster-scale issue: the Transformer and GPT-2 small at P = 64, 256 and 1024,
and GPT-2 small deepened to 24, 48 and 96 identical blocks at P = 64 (`gpt2_b<blocks>`,
written by `models/generate.py`'s `gpt2_stack` to a temporary folder). Each case runs
`--repeat` times (the fastest run is shown); the optimal cost is the one the child prints.

    .venv/bin/python benchmarks/search.py --deep
    .venv/bin/python benchmarks/search.py --deep --cases transformer:64 gpt2_b96:64

Peak RSS is the child's `ru_maxrss`, interpreter and libraries included; a footnote gives the
floor every case pays, measured by searching a one-layer graph in a child of its own. "DP
tables" is the DP's own `peak_table_bytes`: the most table memory held at once, counting the
cost tables (pruned and unpruned) and the DP's minimum and argmin tables, as the memory
budget does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common import (
    BASELINE_GRAPH,
    MODELS_DIR,
    add_model_arguments,
    cpus,
    machine,
    markdown_table,
    model_path,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.usage import UsageParser
from pase.passes.strategy import SearchOptions

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

BFS_ENTRIES = 2 * 10**10
DEFAULT_DEVICES = (4, 8, 16, 32, 64)

COLUMNS = (("model", "<"), *((title, ">") for title in (
    "P", "layers", "max configs/layer", "largest dep. set", "DP table entries", "tables (s)",
    "DP (s)", "total (s)", "peak RSS (MiB)", "DP tables (MiB)", "DP numpy (s)", "DP JIT (s)",
    "JIT compile (s)", "numpy/JIT", "JIT entries/s", "bfs DP (s)", "optimal cost (s)",
    "data-parallel cost (s)", "speedup")))

DEEP_CASES = ("transformer:64", "transformer:256", "transformer:1024", "gpt2_small:64",
              "gpt2_small:256", "gpt2_small:1024", "gpt2_b24:64", "gpt2_b48:64", "gpt2_b96:64")
DEEP_COLUMNS = (("model", "<"), *((title, ">") for title in (
    "P", "wall (s)", "CPU (s)", "peak RSS (MiB)", "optimal cost (s)")), ("outcome", "<"))
PASE_OPT = str(Path(sys.executable).parent / "pase-opt")
TOTAL = re.compile(r"pase\.strategy<devices = \d+, machine = \"[^\"]*\", total = ([^,]+),")

REFERENCE = """\
For comparison (PAPERS.md §1):
- PaSE's Python prototype on this machine class: InceptionV3 at P=64 about 3 min and 3.8 GB;
  the Transformer at P=16 about 6 min and 12.6 GB, and it does not finish at P=64.
- The paper (old Xeon host): 3 min 16 s for InceptionV3 at P=64 and 31 min 23 s for the
  Transformer at P=64."""


@dataclass(frozen=True)
class Case:
    model: str
    path: Path
    devices: int


def main() -> None:
    args = parse_arguments()
    if args.one is not None:
        run_one(args)
        return
    if args.deep:
        run_deep(args)
        return
    cases = [Case(path.stem, path, devices) for path in args.models for devices in args.devices]
    progress = sys.stderr.isatty()
    load_before = os.getloadavg()[0]
    results = []
    try:
        baseline = run_child(child_command(args, ["--baseline"]), args.timeout)
        for number, case in enumerate(cases, 1):
            if progress:
                print(f"[{number}/{len(cases)}] {case.model} P={case.devices} started",
                      file=sys.stderr, flush=True)
            start = time.perf_counter()
            result = run_child(child_command(args, ["--one", str(case.path), str(case.devices)]),
                               args.timeout)
            results.append((case, result))
            if progress:
                print(f"[{number}/{len(cases)}] {case.model} P={case.devices} finished "
                      f"({result['status']}) in {time.perf_counter() - start:.1f} s",
                      file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("interrupted; no table printed", file=sys.stderr)
        sys.exit(130)
    print(machine_header(args, load_before, os.getloadavg()[0]))
    print()
    print(format_table(results, baseline))
    print()
    print(REFERENCE)


def parse_arguments() -> argparse.Namespace:
    parser = UsageParser(
        description="Measure PaSE's search (configuration enumeration, cost tables, DP) on "
        "each model and device count, each case in a fresh process, and print one markdown "
        "table: layers, largest configuration list, largest dependent set, DP table entries, "
        "time to build the cost tables, DP time, total time (parse + tables + DP), peak RSS "
        "of the case's process, the DP's peak table memory, the optimal and data-parallel "
        "costs and the predicted speedup. A case over the DP memory budget shows 'out of "
        "budget', one past --timeout shows 'timeout'.",
    )
    add_model_arguments(parser, "model names in models/ (e.g. alexnet) or .dnn paths "
                        "(default: every models/*.dnn, sorted)", list(DEFAULT_DEVICES),
                        "device counts (default: 4 8 16 32 64)")
    parser.add_argument("--order", default="genseq", choices=("genseq", "bfs", "minfill"),
                        help="elimination order of the DP (default: genseq)")
    parser.add_argument("--machine", type=machine, default="pase-default",
                        help="machine preset or TOML file (default: pase-default)")
    parser.add_argument("--min-shard", type=positive_int, default=4,
                        help="PaSE's cutoff: the smallest shard a split may leave (default: 4)")
    parser.add_argument("--memory-gib", type=positive_float, default=4.0,
                        help="the search's table memory budget in GiB (default: 4, as pase-search)")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="seconds allowed per case, process start included (default: 300)")
    parser.add_argument("--deep", action="store_true",
                        help="time whole pase-opt processes on the cluster-scale cases "
                        "instead (wall, CPU, peak RSS)")
    parser.add_argument("--cases", nargs="+", metavar="MODEL:P", default=list(DEEP_CASES),
                        help="with --deep: the cases (default: " + " ".join(DEEP_CASES) + ")")
    parser.add_argument("--repeat", type=positive_int, default=1,
                        help="with --deep: runs per case, the fastest shown (default: 1)")
    # Internal: run one case (or the baseline graph) in this process and print a JSON line.
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "P"), help=argparse.SUPPRESS)
    parser.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_gib <= 0:
        parser.error("--memory-gib must be positive")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.baseline:
        args.one = ()
    return args


def child_command(args: argparse.Namespace, case_arguments: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *case_arguments,
            "--order", args.order, "--machine", args.machine, "--min-shard", str(args.min_shard),
            "--memory-gib", str(args.memory_gib)]


def run_child(command: list[str], timeout: float) -> dict:
    """Run one case in a fresh process; its JSON result, or a status saying why there is none."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return {"status": "timeout", "message": f"no result after {timeout:g} s"}
    except BaseException:
        child.kill()
        child.communicate()
        raise
    lines = stdout.strip().splitlines()
    if child.returncode == 0 and lines:
        return json.loads(lines[-1])
    if child.returncode < 0:
        reason = f"killed by {signal.Signals(-child.returncode).name}"
        if child.returncode == -signal.SIGKILL:
            reason += " (the system may have run out of memory)"
    else:
        last = stderr.strip().splitlines()
        reason = f"exit status {child.returncode}" + (f": {last[-1]}" if last else "")
    return {"status": "failed", "message": reason}


def run_one(args: argparse.Namespace) -> None:
    """The child: import, search, measure, and print one JSON line (never a traceback)."""
    try:
        result = measure(args)
    except Exception as error:  # the parent reports it in a footnote
        from pase.passes.strategy import SearchMemoryError

        status = "out of budget" if isinstance(error, SearchMemoryError) else "error"
        result = {"status": status, "message": f"{type(error).__name__}: {error}"}
    result["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(result))


def measure(args: argparse.Namespace) -> dict:
    from pase.frontend import parse_file, parse_text

    if not args.one:
        return search(lambda: parse_text(BASELINE_GRAPH, "<baseline>"), 2, args)
    path, devices = args.one[0], int(args.one[1])
    return search(lambda: parse_file(path), devices, args)


def search(parse: Callable[[], ModuleOp], devices: int, args: argparse.Namespace) -> dict:
    from pase.formats.machine_toml import load_machine
    from pase.passes.strategy import build_problem, collector_paused, solve

    start = time.perf_counter()
    module = parse()
    parsed = time.perf_counter()
    budget = int(args.memory_gib * (1 << 30))
    with collector_paused():  # one pause for the whole search, as pase-search does
        problem = build_problem(module, devices, load_machine(args.machine),
                                options=SearchOptions(min_shard=args.min_shard))
        problem.cost_graph(budget)
        tabled = time.perf_counter()
        solution = solve(problem, SearchOptions(method="dp", order=args.order),
                         memory_budget=budget)
        solved = time.perf_counter()
    stats = solution.stats
    assert stats is not None
    data_parallel = problem.cost(problem.data_parallel())
    modes = compare_kernels(problem, args)
    return {
        **modes,
        "status": "ok",
        "layers": len(problem.layers),
        "max_configs": max(len(configs) for configs in problem.config_lists),
        "max_dependent_set": stats.max_dependent_set,
        "table_entries": stats.table_entries,
        "parse_seconds": parsed - start,
        "tables_seconds": tabled - parsed,
        "dp_seconds": solved - tabled,
        "total_seconds": solved - start,
        "peak_table_bytes": stats.peak_table_bytes,
        "optimal_cost": problem.cost(solution.assignment),
        "dp_cost": solution.cost,
        "data_parallel_cost": data_parallel,
    }


def compare_kernels(problem: object, args: argparse.Namespace) -> dict:
    """The DP alone on the pruned tables, numpy against the llvmlite kernel, and in BFS order."""
    import math

    from pase.passes.strategy import SearchMemoryError
    from pase.passes.strategy.dp import solve_dp
    from pase.passes.strategy.orders import dependent_sets, elimination_order
    from pase.passes.strategy.prune import prune

    graph, _ = prune(problem.cost_graph())  # type: ignore[attr-defined]
    budget = int(args.memory_gib * (1 << 30))
    timings = {}
    # The second JIT run finds its kernels compiled by the first ("cold").
    for label, mode in (("off", "off"), ("cold", "on"), ("on", "on")):
        start = time.perf_counter()
        result = solve_dp(graph, args.order, budget, jit=mode)
        timings[label] = (time.perf_counter() - start, result.cost, result.table_entries)
    neighbours = graph.neighbours()
    order = elimination_order(neighbours, "bfs")
    sizes = graph.sizes
    bfs_entries = sum(sizes[v] * math.prod(sizes[u] for u in dependent)
                      for v, dependent in zip(order, dependent_sets(neighbours, order),
                                              strict=True))
    if bfs_entries > BFS_ENTRIES:
        bfs = f"{bfs_entries:.0e} entries"
    else:
        try:
            start = time.perf_counter()
            solve_dp(graph, "bfs", budget, jit="on")
            bfs = f"{time.perf_counter() - start:.3f}"
        except SearchMemoryError:
            bfs = "over budget"
    numpy_seconds, numpy_cost, entries = timings["off"]
    jit_seconds, jit_cost, _ = timings["on"]
    return {"numpy_seconds": numpy_seconds, "jit_seconds": jit_seconds,
            "jit_compile_seconds": max(timings["cold"][0] - jit_seconds, 0.0),
            "kernels_agree": numpy_cost == jit_cost, "pruned_entries": entries,
            "bfs": bfs}


def run_deep(args: argparse.Namespace) -> None:
    """The whole-process table of `--deep`."""
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases:
            model, _, devices = case.rpartition(":")
            path = deep_model(model, Path(folder))
            runs = [run_pase_opt(path, int(devices), args) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["wall"])
            if sys.stderr.isatty():
                print(f"{case}: {best['wall']:.1f} s", file=sys.stderr, flush=True)
            rows.append([model, devices, f"{best['wall']:.2f}", f"{best['cpu']:.2f}",
                         f"{best['rss'] / 1024:.0f}", best["cost"], best["outcome"]])
    print(machine_header(args, load_before, os.getloadavg()[0]))
    print()
    print("\n".join(markdown_table(DEEP_COLUMNS, rows)))


def deep_model(model: str, folder: Path) -> Path:
    """A model of models/, or `gpt2_b<blocks>` written to `folder`."""
    match = re.fullmatch(r"gpt2_b(\d+)", model)
    if match is None:
        return model_path(model)
    spec = importlib.util.spec_from_file_location("generate", MODELS_DIR / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    path = folder / f"{model}.dnn"
    path.write_text(generate.gpt2_stack(int(match.group(1))).render())
    return path


def run_pase_opt(path: Path, devices: int, args: argparse.Namespace) -> dict:
    """`pase-opt path -p 'pase-search{devices=P ...}'` in a child: wall and CPU seconds,
    peak RSS (KiB), the optimal cost it printed, and how it ended."""
    spec = (f"pase-search{{devices={devices} order={args.order} machine={args.machine} "
            f"min-shard={args.min_shard} memory-gib={args.memory_gib:g}}}")
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen([PASE_OPT, str(path), "-p", spec], stdout=stdout,
                                 stderr=stderr)
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > args.timeout:
                child.kill()
            time.sleep(0.02)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        found = TOTAL.search(stdout.read())
        errors = [line for line in stderr.read().splitlines() if "error" in line]
    if code == 0:
        outcome = "ok"
    elif code == -signal.SIGKILL:
        outcome = f"killed after {args.timeout:g} s"
    else:
        outcome = errors[0][:120] if errors else f"exit status {code}"
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss,
            "cost": found.group(1) if found else "—", "outcome": outcome}


def machine_header(args: argparse.Namespace, load_before: float, load_after: float) -> str:
    return (f"Host: {cpus()}, {memory_total()}, {versions()}; "
            f"load average {load_before:.1f} before the run, {load_after:.1f} after "
            "(one process per case; other work on the host slows it). "
            f"Search: order={args.order}, machine={args.machine}, min-shard={args.min_shard}, "
            f"DP budget {args.memory_gib:g} GiB, timeout {args.timeout:g} s per case.")


def memory_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / (1 << 20):.1f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


def format_table(results: list[tuple[Case, dict]], baseline: dict) -> str:
    rows: list[list[str]] = []
    footnotes: list[str] = []
    for case, result in results:
        rows.append(format_row(case, result, footnotes))
    lines = markdown_table(COLUMNS, rows)
    lines.append("")
    if baseline["status"] == "ok":
        lines.append(f"Every case pays a fixed floor: a child that searches a one-layer graph "
                     f"peaks at {baseline['peak_rss_kib'] / 1024:.0f} MiB RSS and spends "
                     f"{baseline['dp_seconds']:.3f} s in the DP (interpreter, imports, modules "
                     f"loaded on demand, kernel compilation).")
    else:
        lines.append(f"The baseline (a one-layer graph) did not run: {baseline['message']}")
    lines += footnotes
    return "\n".join(lines)


def format_row(case: Case, result: dict, footnotes: list[str]) -> list[str]:
    row = [case.model, str(case.devices)] + ["—"] * (len(COLUMNS) - 2)
    rss = result.get("peak_rss_kib")
    if rss is not None:
        row[9] = f"{rss / 1024:.0f}"
    if result["status"] != "ok":
        footnotes.append(f"[{len(footnotes) + 1}] {case.model} P={case.devices}: "
                         f"{result['message']}")
        row[17] = f"{result['status']} [{len(footnotes)}]"
        return row
    cost, data_parallel = result["optimal_cost"], result["data_parallel_cost"]
    seconds = [f"{result[key]:.3f}" for key in ("tables_seconds", "dp_seconds", "total_seconds")]
    row[2:] = [
        str(result["layers"]), str(result["max_configs"]), str(result["max_dependent_set"]),
        f"{result['table_entries']:,}", *seconds, row[9],
        f"{result['peak_table_bytes'] / (1 << 20):.1f}",
        *(f"{result[key]:.3f}" for key in ("numpy_seconds", "jit_seconds",
                                            "jit_compile_seconds")),
        f"{result['numpy_seconds'] / result['jit_seconds']:.1f}",
        f"{result['pruned_entries'] / result['jit_seconds']:.2e}", result["bfs"],
        f"{cost:.4e}", f"{data_parallel:.4e}",
        f"{data_parallel / cost:.2f}" if cost > 0 else "—",
    ]
    if abs(cost - result["dp_cost"]) > 1e-9 * max(cost, 1e-30):
        footnotes.append(f"[{len(footnotes) + 1}] {case.model} P={case.devices}: the DP's "
                         f"cost {result['dp_cost']:.6e} s differs from the re-evaluated "
                         f"{cost:.6e} s")
        row[17] += f" [{len(footnotes)}]"
    if not result["kernels_agree"]:
        footnotes.append(f"[{len(footnotes) + 1}] {case.model} P={case.devices}: numpy and "
                         "the JIT found different costs")
        row[14] += f" [{len(footnotes)}]"
    return row


if __name__ == "__main__":
    run_main(main)
