"""How long the runtime takes for one training step, sharded and on one device.

    .venv/bin/python benchmarks/runtime.py                       # every model, P = 4, 8
    .venv/bin/python benchmarks/runtime.py --models mlp alexnet --devices 2 --repeat 5

For each model and device count P, the model gets the strategy `pase-search` finds at full
size (or, with `--data-parallel`, the batch split), shrinks by `--scale` as in `pase-run`,
and goes through `pase-autodiff` and `pase-lower-spmd` (not timed). Then, on the same
seeded data (not timed either), the columns are:

- sharded step: wall-clock time of `execute` on P workers (threads) divided by `--steps`,
  the best of `--repeat` runs;
- unsharded step: the same for the one-device program (once per model: it does not
  depend on P);
- ratio: sharded over unsharded. P workers share this machine's cores and Python's GIL,
  so the ratio measures the runtime's overhead, not a speedup;
- interpreter: the cost of interpreting one program step, from a graph of many tiny
  layers on P workers: the best time of one training step divided by the number of
  steps in the program, in microseconds;
- words/device/step: summed over tags (layers and edges), the most words any device
  received, per training step — what the cost model predicts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common import (
    add_model_arguments,
    cpus,
    machine,
    markdown_table,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.usage import UsageParser

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp

    from pase.dialect.dnn import GraphOp
    from pase.runtime.program import Program

TINY_LAYERS = 100
COLUMNS = (("model", "<"), *((title, ">") for title in (
    "P", "sharded step (s)", "unsharded step (s)", "ratio", "interpreter (µs/op)",
    "words/device/step")))


@dataclass(frozen=True)
class Row:
    model: str
    devices: int
    sharded: float
    unsharded: float
    interpreter: float
    words: float


def main() -> None:
    args = parse_arguments()
    progress = sys.stderr.isatty()
    rows: list[Row | tuple[str, int, str]] = []
    try:
        interpreter = {devices: interpreter_microseconds(devices, args)
                       for devices in args.devices}
        for path in args.models:
            unsharded: float | None = None
            for devices in args.devices:
                if progress:
                    print(f"{path.stem} P={devices} ...", file=sys.stderr, flush=True)
                try:
                    sharded, reference, data = prepare(path, devices, args)
                    seconds, counters = best_of(sharded, data, args)
                    if unsharded is None:
                        unsharded, _ = best_of(reference, data, args)
                except Exception as error:  # a failing case is a row, not the end of the run
                    rows.append((path.stem, devices, f"{type(error).__name__}: {error}"))
                    continue
                rows.append(Row(path.stem, devices, seconds, unsharded,
                                interpreter[devices], words_per_device(counters, args.steps)))
    except KeyboardInterrupt:
        print("interrupted; no table printed", file=sys.stderr)
        sys.exit(130)
    print(machine_line())
    print()
    print(format_table(rows, args))


def parse_arguments() -> argparse.Namespace:
    parser = UsageParser(
        description="Time one training step of each model sharded on P workers and on one "
        "device, and print one markdown table.",
        epilog="example: benchmarks/runtime.py --models mlp transformer --devices 4 8")
    add_model_arguments(parser, "model names in models/ or .dnn paths (default: all)", [4, 8],
                        "device counts (default: 4 8)")
    parser.add_argument("--scale", type=positive_float, default=0.125,
                        help="shrink every model by this factor (default 0.125)")
    parser.add_argument("--steps", type=positive_int, default=1,
                        help="training steps per run (default 1)")
    parser.add_argument("--repeat", type=positive_int, default=3,
                        help="runs per measurement; the best counts (default 3)")
    parser.add_argument("--f64", action="store_true", help="run in double precision")
    parser.add_argument("--data-parallel", action="store_true",
                        help="split every layer's batch instead of searching")
    parser.add_argument("--machine", type=machine, default="pase-default",
                        help="machine for the search")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="seconds a collective may wait (default 300)")
    args = parser.parse_args()
    if not 0 < args.scale <= 1:
        parser.error(f"--scale must be in (0, 1], got {args.scale}")
    return args


# --- measuring ---------------------------------------------------------------------------


def strategy(module: ModuleOp, devices: int, args: argparse.Namespace) -> ModuleOp:
    """The module with a configuration on every layer: searched, or the batch split."""
    from xdsl.context import Context

    from pase.passes.search import PaseSearchPass
    from pase.passes.strategy import build_problem
    from pase.tools.run.load import with_configs

    if args.data_parallel:
        return with_configs(module, build_problem(module, devices, args.machine).data_parallel())
    searched = module.clone()
    PaseSearchPass(devices=devices, machine=args.machine).apply(Context(), searched)
    return searched


def graph_of(module: ModuleOp) -> GraphOp:
    from pase.dialect.dnn import GraphOp

    return next(op for op in module.walk() if isinstance(op, GraphOp))


def prepare(path: Path, devices: int, args: argparse.Namespace
            ) -> tuple[Program, Program, dict[str, np.ndarray]]:
    """(sharded program, one-device program, seeded data), as `train` makes them; the
    search runs on the full-size model."""
    from pase.frontend import parse_file
    from pase.passes.scale import scale_module
    from pase.tools.run.check import make_data
    from pase.tools.run.load import layer_configs, with_configs
    from pase.tools.run.runtime import lower

    module = scale_module(strategy(parse_file(str(path)), devices, args), args.scale)
    configs = layer_configs(graph_of(module))
    sharded = lower(with_configs(module, configs), devices, lr=0.01)
    reference = lower(with_configs(module, None), 1, lr=0.01)
    data = make_data(graph_of(module), seed=0, float_type="f64" if args.f64 else None)
    return sharded, reference, data


def best_of(program: Program, data: dict[str, np.ndarray], args: argparse.Namespace
            ) -> tuple[float, dict[int, dict[str, dict[str, int]]]]:
    """The best wall-clock seconds per training step of `execute`, and its counters."""
    from pase.tools.run.runtime import execute

    float_type = "f64" if args.f64 else None
    best = float("inf")
    counters: dict[int, dict[str, dict[str, int]]] = {}
    for _ in range(args.repeat):
        start = time.perf_counter()
        _, counters = execute(program, data, args.steps, "threads", args.timeout, float_type)
        best = min(best, (time.perf_counter() - start) / args.steps)
    return best, counters


def words_per_device(counters: dict[int, dict[str, dict[str, int]]], steps: int) -> float:
    """Summed over tags, the most words any device received, per training step."""
    most: dict[str, int] = {}
    for tags in counters.values():
        for tag, count in tags.items():
            most[tag] = max(most.get(tag, 0), count["received"])
    return sum(most.values()) / steps


def tiny_source(layers: int) -> str:
    """A chain of `layers` tiny layers (a bias, then relus) ending in a loss."""
    body = ["  %x = input [b, d]", "  %t = input [b] : i32", "  %bias = param [d]",
            "  %h0 = add %x, %bias"]
    body += [f"  %h{i} = relu %h{i - 1}" for i in range(1, layers)]
    body += [f"  %l = softmax_cross_entropy %h{layers - 1}, %t over d", "  return %l"]
    return "graph @tiny(b = 8, d = 4) {\n" + "\n".join(body) + "\n}\n"


def interpreter_microseconds(devices: int, args: argparse.Namespace) -> float:
    """Microseconds per executed program step: a graph of many tiny layers, its batch split
    over the devices (as far as it divides), so every device runs every layer."""
    from pase.frontend import parse_text
    from pase.passes.strategy import build_problem
    from pase.tools.run.check import make_data
    from pase.tools.run.load import with_configs
    from pase.tools.run.runtime import execute, lower

    module = parse_text(tiny_source(TINY_LAYERS))
    module = with_configs(module, build_problem(module, devices).data_parallel())
    program = lower(module, devices, lr=0.01)
    data = make_data(graph_of(module), seed=0)
    execute(program, data, 1, "threads", args.timeout)  # warm up
    return min(timed(lambda: execute(program, data, 1, "threads", args.timeout))
               for _ in range(args.repeat)) / len(program.steps) * 1e6


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


# --- printing ----------------------------------------------------------------------------


def machine_line() -> str:
    return f"Host: {cpus()}, {versions()}; load average {os.getloadavg()[0]:.1f}."


def format_table(rows: list[Row | tuple[str, int, str]], args: argparse.Namespace) -> str:
    cells: list[list[str]] = []
    footnotes: list[str] = []
    for row in rows:
        if isinstance(row, Row):
            cells.append([row.model, str(row.devices), f"{row.sharded:.4f}",
                          f"{row.unsharded:.4f}", f"{row.sharded / row.unsharded:.2f}",
                          f"{row.interpreter:.0f}", f"{row.words:,.0f}"])
        else:
            model, devices, message = row
            footnotes.append(f"[{len(footnotes) + 1}] {model} P={devices}: {message}")
            cells.append([model, str(devices), f"failed [{len(footnotes)}]", *["—"] * 4])
    lines = markdown_table(COLUMNS, cells)
    lines.append("")
    how = "the batch split" if args.data_parallel else f"searched (machine={args.machine})"
    element = "f64" if args.f64 else "the models' element types"
    lines.append(f"Strategy {how} at full size, models scaled by {args.scale:g}, "
                 f"{args.steps} step(s) per run, best of {args.repeat}; threads backend, "
                 f"{element}. "
                 f"Interpreter: a chain of {TINY_LAYERS} tiny layers.")
    lines += footnotes
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main)
