"""What pricing an edge table costs per entry, and whole searches, on this tree and another
(main's, exported) side by side, in fresh processes, in CPU seconds (issue 32).

    .venv/bin/python benchmarks/pricing.py capture edges.npz        # GPT-3 175B, P = 3,072
    .venv/bin/python benchmarks/pricing.py entries edges.npz --peer ../main-tree
    .venv/bin/python benchmarks/pricing.py searches --peer ../main-tree

`capture` runs GPT-3 175B's search at P devices (3,072) as `scale.py`'s child does and
keeps the inputs of the `--keep` largest of its first `--calls` placed-seconds calls (the
block's first round: on main 663628b.. the 212 x 1,071 and 341 x 212 layouts of q ->
scores-like edges): each side's per-dim layouts, the link numbers and whether the edge
moves a gradient back. `entries` prices them as `cost.edge_costs` does on that path
(`dim_pricing.redistribution_words`, then `placed_seconds`, compiled walk), each call
in a process of its own (cold memos), and prints CPU seconds, microseconds per entry
(pairs of layouts) and a sha256 of the result's bytes. `searches` runs `build_problem` +
`solve` of gpt3-175b at 512 and 1,024 and megatron-1t at 1,024 (`--rows`), printing CPU
seconds, the step (repr) and a sha256 prefix of the plan's JSON. With `--peer DIR`, each
process also runs with DIR on PYTHONPATH (a tree whose `pase/` is another commit's
package, e.g. `git archive main --prefix=pase/ | tar -x -C DIR`), and both are listed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import MODELS_DIR, positive_int, run_main

from pase.core.usage import UsageParser

ROWS = ["gpt3-175b:512", "gpt3-175b:1024", "megatron-1t:1024"]
_FIELDS = ("working", "stride", "factor", "length")
_KERNELS = ("dim_links", "dim_stats", "boxes", "least")


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["capture", "entries", "searches", "child-entries",
                                         "child-search"])
    parser.add_argument("path", nargs="?", help="the captured calls (.npz); for a child, "
                        "the call index or MODEL:P")
    parser.add_argument("--devices", type=positive_int, default=3072)
    parser.add_argument("--calls", type=positive_int, default=13)
    parser.add_argument("--keep", type=positive_int, default=2)
    parser.add_argument("--rows", nargs="+", default=ROWS, metavar="MODEL:P")
    parser.add_argument("--peer", help="a tree with another commit's pase/ package")
    parser.add_argument("--input", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "capture":
        capture(Path(args.path), args.devices, args.calls, args.keep)
    elif args.mode == "child-entries":
        print(json.dumps(price_call(Path(args.input), int(args.path))))
    elif args.mode == "child-search":
        print(json.dumps(search_row(args.path)))
    elif args.mode == "entries":
        with np.load(args.path) as saved:
            count = int(saved["count"])
        for index in range(count):
            _compare(["child-entries", str(index), "--input", args.path], args.peer)
    else:
        for row in args.rows:
            _compare(["child-search", row], args.peer)


def _compare(arguments: list[str], peer: str | None) -> None:
    """One child per tree (the peer's first), each result printed as a JSON line."""
    for tree in ([peer] if peer else []) + [None]:
        environment = dict(os.environ)
        if tree:
            environment["PYTHONPATH"] = tree
        output = subprocess.run([sys.executable, __file__, *arguments], env=environment,
                                check=True, capture_output=True, text=True).stdout
        result = json.loads(output.strip().splitlines()[-1])
        print(json.dumps({"tree": tree or "this", **result}), flush=True)


def _model(name: str, folder: str) -> str:
    path = Path(folder) / f"{name}.dnn"
    subprocess.run([sys.executable, str(MODELS_DIR / "generate.py"), name, "-o", str(path)],
                   check=True)
    return str(path)


def _problem(name: str, devices: int, folder: str):  # type: ignore[no-untyped-def]
    """`build_problem` as `scale.py`'s child calls it, and the options and budget."""
    from pase.formats.machine_toml import load_machine
    from pase.frontend import parse_file
    from pase.passes.options import training_options
    from pase.passes.strategy import MemoryBudget, SearchOptions, build_problem

    training = training_options("scale", devices, "adam", "bf16", "full", "1", 0)
    options = SearchOptions(training=training, memory_budget=4 << 30)
    budget = MemoryBudget(options.memory_budget)
    problem = build_problem(parse_file(_model(name, folder)), devices,
                            load_machine("a100-80gb-dgx"), None, options, budget)
    return problem, options, budget


class _Enough(Exception):
    """Raised by the capture's hook once it has seen the calls it keeps."""


def capture(path: Path, devices: int, calls: int, keep: int) -> None:
    """The module docstring's `capture`."""
    from pase.passes.strategy import dim_pricing, solve

    seen: list[dict[str, np.ndarray]] = []
    original = dim_pricing.placed_seconds

    def hook(held, needed, forward, backward, *links, **named):  # type: ignore[no-untyped-def]
        arrays = {f"held_{f}": getattr(held, f) for f in _FIELDS}
        arrays.update({f"needed_{f}": getattr(needed, f) for f in _FIELDS})
        arrays["numbers"] = np.array([held.devices, int(backward is not None),
                                      links[0], links[3]], dtype=np.int64)
        arrays["bandwidths"] = np.array(links[1:3], dtype=np.float64)
        seen.append(arrays)
        if len(seen) >= calls:
            raise _Enough
        return original(held, needed, forward, backward, *links, **named)

    dim_pricing.placed_seconds = hook
    with tempfile.TemporaryDirectory() as folder:
        problem, options, budget = _problem("gpt3-175b", devices, folder)
        try:
            solve(problem, options, memory_budget=budget)
        except _Enough:
            pass
    largest = sorted(seen, key=lambda a: -len(a["held_working"]) * len(a["needed_working"]))
    saved = {f"{i}_{name}": value for i, arrays in enumerate(largest[:keep])
             for name, value in arrays.items()}
    np.savez(path, count=min(keep, len(largest)), **saved)
    for arrays in largest[:keep]:
        print(f"{len(arrays['held_working'])} x {len(arrays['needed_working'])} layouts")


def price_call(path: Path, index: int) -> dict[str, object]:
    """Call `index` of the capture priced as `cost.edge_costs` prices it, timed."""
    from pase.passes.strategy import dim_pricing
    from pase.passes.strategy.dim_pricing import DimLayouts

    with np.load(path) as saved:
        arrays = {name[len(f"{index}_"):]: saved[name] for name in saved.files
                  if name.startswith(f"{index}_")}
    devices, backward, element_bytes, per_node = arrays["numbers"].tolist()
    held, needed = (DimLayouts(*(arrays[f"{side}_{f}"] for f in _FIELDS), devices)
                    for side in ("held", "needed"))
    for module in _KERNELS:  # (each tree's kernels compiled before the clock starts)
        try:
            kernel = importlib.import_module(f"pase.passes.strategy.jit.{module}")
        except ImportError:
            continue
        for name in ("_compiled", "_rows", "_walk"):
            if hasattr(kernel, name):
                getattr(kernel, name)()
    started = time.process_time()
    words = dim_pricing.redistribution_words
    compiled = (True,) if len(inspect.signature(words).parameters) > 2 else ()
    forward, back = words(held, needed, *compiled)
    seconds = dim_pricing.placed_seconds(held, needed, forward, back if backward else None,
                                         element_bytes, *arrays["bandwidths"].tolist(),
                                         per_node, True)
    cpu = time.process_time() - started
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes()
                                     for a in (forward, back, seconds))).hexdigest()[:16]
    entries = len(held) * len(needed)
    return {"layouts": f"{len(held)} x {len(needed)}", "entries": entries, "cpu": cpu,
            "us_per_entry": cpu / entries * 1e6, "sha256": digest}


def search_row(row: str) -> dict[str, object]:
    """`build_problem` + `solve` of one MODEL:P row, timed by the process's CPU."""
    from pase.passes.strategy import solve

    name, devices = row.split(":")
    with tempfile.TemporaryDirectory() as folder:
        started = time.process_time()
        problem, options, budget = _problem(name, int(devices), folder)
        solution = solve(problem, options, memory_budget=budget)
        cpu = time.process_time() - started
    plan = json.dumps({layer: dict(config) for layer, config
                       in sorted(solution.assignment.items())}, sort_keys=True)
    return {"row": row, "cpu": cpu, "step": repr(solution.cost),
            "plan": hashlib.sha256(plan.encode()).hexdigest()[:16], "peak": budget.peak}


if __name__ == "__main__":
    run_main(main)
