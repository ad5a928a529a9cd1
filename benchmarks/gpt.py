"""The GPT family from 1.7B to 1T parameters at 32 to 3,072 devices: pase's plan against the
Megatron-LM layout under the same cost model and the same training step, side by side.

    .venv/bin/python benchmarks/gpt.py --quick                   # the three smallest rows
    .venv/bin/python benchmarks/gpt.py --timeout 600             # all ten rows
    .venv/bin/python benchmarks/gpt.py --rows megatron-1.7b megatron-39b --zero 1
    .venv/bin/python benchmarks/gpt.py --quick --sequence-parallel  # also Megatron-SP

The rows are Megatron-LM's weak-scaling study (Narayanan et al. 2021, Table 1): each model
(`models/generate.py`'s `megatron-*` presets: layers, hidden, heads, context 2048,
vocabulary 51,200, the paper's global batch) on the paper's GPU count, with its layout of
tensor-parallel size t, pipeline depth p and data-parallel size d (t p d = P). Both plans
run M = batch / d micro-batches (a micro-batch of one sequence per data-parallel replica,
as the paper trains) on a 1F1B schedule:

- Megatron: a plan file given to `pase-partition-stages{strategy=...}`: p stages of
  layers / p blocks each (the embeddings in the first, the final norm, output projection
  and loss in the last); every layer splits the micro-batch d ways; the attention layers
  split the heads t ways (column-parallel q, k, v; row-parallel output projection), the
  MLP the feed-forward dim (column-parallel up, row-parallel down), the embedding, the
  output projection and the loss the vocabulary (vocab-parallel, as Megatron-LM); the
  norms, residual adds and the position embedding are not split further (Megatron-LM
  computes them redundantly in each tensor-parallel group, which costs the same time).
  Evaluated, not searched, and not held to the memory cap (the "fits" column says).
  pase places a layer under configuration q on devices 0..q-1 and leaves the others
  idle (docs/cost-model.md, "Placement"), so these unsplit layers run on P / t devices,
  not redundantly on all P, and every move between them and the tensor-parallel layers
  crosses nodes where t > 1 ({b: 32} on devices 0-31 of 64, {b: 32, h: 2} on 0-63).
- Megatron-SP (`--sequence-parallel`): the same layout with Megatron-LM's sequence
  parallelism (Korthikanti et al. 2022): those layers split their sequence dim t ways
  (s, or t for the keys' reshape), so they work on all P devices and each move between
  them and the tensor-parallel layers stays within the tensor group (an all-gather or a
  local slice), as in Megatron-LM.
- pase: `pase-partition-stages{stages=p microbatches=M min-shard=1 device-memory-gib=80}`:
  the same S and M, its own stage boundaries and its own configuration of every layer in
  each stage (min-shard 1, so that its space holds the Megatron layout, whose micro-batch
  of d sequences is split d ways), the fastest plan whose devices fit in 80 GiB
  (`--device-memory-gib`; `--uncapped` searches without the cap). Each stage's
  configurations minimise what the step charges the stage, M (F + B) + AR (its micro-
  batches' forward and backward and its once-per-step gradient all-reduce and update;
  docs/cost-model.md, "Pipelines"), and the cuts minimise the simulated step. The
  Megatron layout is a point of this space. With one stage (p = 1) the step is exactly
  M (F + B) + AR, so pase's plan is at least as fast as Megatron's unless Megatron's does
  not fit the cap or the capped search stops before proving its plan optimal (the plan's
  "gap"). With p > 1 the step is the schedule's longest path, and each stage is solved
  on its own for the path on which it is the bottleneck: a configuration that would
  shorten another path (a non-bottleneck stage's F against its B, the fill and drain)
  is not searched, so there pase's plan can be slower than Megatron's.
  `--pin-data-parallel` pins pase's data-parallel degree to the paper's d (a smaller
  space, a faster search at scale); `--data-parallel D` pins it to D instead, with the
  same M (the row's batch / d): each such plan is a plan of the unpinned space, whose
  optimum is at most the least of them (megatron-76b: the incumbents of its unpinned
  search, benchmarks/RESULTS.md).

The training step, the same for both plans: Adam, bf16 (the paper's fp16 mixed precision
costs the same on an A100: the same peak, the same 2-byte words), full activation
recomputation (`--recompute full`, as the paper trains: every transformer layer's input
kept, the rest recomputed) and ZeRO stage 0 (`--zero 0`: the paper replicates the
optimizer state across data-parallel ranks; `--zero 1` models Megatron-LM's later
distributed optimizer, `--use-distributed-optimizer`, which shards it ZeRO-1-like). The
machine is `a100-80gb-dgx` (`--machine`): DGX A100 nodes of 8 GPUs on NVSwitch, one
200 Gb/s InfiniBand adapter per GPU, at datasheet peaks, so the predicted steps are lower
bounds on a real step (docs/cost-model.md, "Machines as clusters").

Columns, for each plan: search time (wall-clock and CPU seconds, user + system, of the
`pase-opt` process, which parses the model too; `timeout` where it did not finish; for
Megatron the evaluation's),
the predicted step (seconds), the memory per device by part (GiB, the exported plan's
"pipeline" "memory_parts" of its fullest stage: parameters, gradients, optimizer state
with the fp32 master weights, activations kept for the micro-batches the stage holds at
once, and their total; the recomputed activations held again during one backward are not
in the total, as in the cost model), whether the total fits in 80 GiB, and the model
FLOP/s per device ("flops_per_device": the step's model FLOPs, forward and backward of
every layer without the recomputed forward, over the step and the devices). The last two
columns are the paper's measurements, a reference only (no constant of the cost model is
set from them): its achieved teraFLOP/s per GPU (Table 1, on Selene's A100s, mixed
precision, full recomputation) and the step they imply (`published_step`: its eq. 3
FLOPs, which count the recomputed forward, over that rate and the GPUs). Compare steps,
not FLOP/s: pase's FLOP/s leave the recomputed forward out. pase's steps are at datasheet
peaks (lower bounds), so the published step is the longer by about the inverse of the
paper's fraction of peak (44-52%). Progress goes
to stderr, with each row's cells as it is done. Every search is bounded by `--timeout`
(its cell then reads "timeout"); Ctrl-C, SIGTERM or SIGHUP stops the running `pase-opt`,
prints the table of the rows finished and exits 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from common import (
    MODELS_DIR,
    cpus,
    machine,
    markdown_table,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.signals import Terminated, signals_raise
from pase.core.usage import UsageParser

PASE_OPT = Path(sys.executable).parent / "pase-opt"


@dataclass(frozen=True)
class Row:
    """One row of Narayanan et al. 2021, Table 1: a preset, its GPUs and layout."""

    preset: str
    devices: int
    tensor: int
    pipeline: int
    published: float
    """The paper's achieved teraFLOP/s per GPU (its Table 1): a reference, never a
    constant of the model."""

    @property
    def data(self) -> int:
        return self.devices // (self.tensor * self.pipeline)


ROWS = [
    Row("megatron-1.7b", 32, 1, 1, 137),
    Row("megatron-3.6b", 64, 2, 1, 138),
    Row("megatron-7.5b", 128, 4, 1, 142),
    Row("megatron-18b", 256, 8, 1, 135),
    Row("megatron-39b", 512, 8, 2, 138),
    Row("megatron-76b", 1024, 8, 4, 140),
    Row("megatron-146b", 1536, 8, 8, 148),
    Row("megatron-310b", 1920, 8, 16, 155),
    Row("megatron-530b", 2520, 8, 35, 163),
    Row("megatron-1t", 3072, 8, 64, 163),
]
QUICK = ["megatron-1.7b", "megatron-3.6b", "megatron-7.5b"]


def published_step(shape: Any, row: Row) -> float:
    """The step (seconds) that Narayanan et al. 2021 measured for `row`: their FLOPs per
    iteration (their eq. 3, the GEMMs with the recomputed forward, F = 96 B s l h^2 (1 +
    s / 6h + V / 16lh)) over their achieved FLOP/s per GPU (Table 1) times the GPUs:
    1.7B on 32 GPUs, 1.547e16 FLOPs / (137e12 x 32) = 3.53 s, the "about 3.5 s per step"
    of issue 32."""
    b, s, layers, h, v = (shape.batch, shape.sequence, shape.layers, shape.hidden,
                          shape.vocabulary)
    flops = 96 * b * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
    return flops / (row.published * 1e12 * row.devices)


def generate() -> ModuleType:
    """models/generate.py, loaded by path (models/ is not a package)."""
    spec = importlib.util.spec_from_file_location("generate", MODELS_DIR / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module
    spec.loader.exec_module(module)
    return module


def megatron_config(name: str, kind: str, data: int, tensor: int,
                    sequence_parallel: bool = False) -> dict[str, int]:
    """A layer's configuration in the Megatron-LM layout (the module docstring), by its
    name in `models/generate.py`'s language models; with `sequence_parallel`, the layers
    the 2021 layout leaves whole across the tensor group split their sequence dim (s, or
    t for the keys' reshape) t ways instead."""
    config = {"b": data} if name != "pos" else {}
    split = ""
    if "_attn_" in name and not name.endswith("_keys"):
        split = "h"
    elif "_mlp_" in name:
        split = "f"
    elif name in ("tok", "logits", "loss"):
        split = "v"
    elif sequence_parallel and name != "pos":
        split = "t" if name.endswith("_keys") else "s"
    if split and tensor > 1:
        config[split] = tensor
    return {dim: factor for dim, factor in config.items() if factor > 1}


def megatron_plan(graph: str, layers: list[tuple[str, str]], row: Row, blocks: int,
                  microbatches: int, sequence_parallel: bool = False) -> dict:
    """The plan file of the Megatron-LM layout of `row` for the graph's `layers` (name,
    op) in program order, `blocks` transformer blocks (`megatron_config`)."""
    per_stage = blocks // row.pipeline
    stages: list[list[str]] = [[] for _ in range(row.pipeline)]
    for name, _ in layers:
        block = int(name[1:].split("_")[0]) if name.startswith("h") and "_" in name else None
        if block is not None:
            stage = block // per_stage
        else:
            stage = 0 if name in ("tok", "pos", "embedded") else row.pipeline - 1
        stages[stage].append(name)
    return {"graph": graph, "devices": row.devices,
            "pipeline": {"stages": row.pipeline, "microbatches": microbatches,
                         "schedule": "1f1b"},
            "stages": [{"layers": names} for names in stages],
            "layers": [{"name": name, "op": op,
                        "config": megatron_config(name, op, row.data, row.tensor,
                                                  sequence_parallel)}
                       for name, op in layers]}


def layer_names(path: Path) -> list[tuple[str, str]]:
    """The graph's layers (name, op) in program order, from its `.dnn` text."""
    layers = []
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].startswith("%") and words[1] == "=" and \
                words[2] not in ("input", "param"):
            layers.append((words[0][1:], words[2]))
    return layers


@dataclass(frozen=True)
class Result:
    seconds: float
    cpu: float
    """The child's CPU seconds (user + system): on a loaded host, the steadier figure."""
    pipeline: dict[str, Any] | None = None
    error: str = ""


def run(model: Path, options: str, export: Path, timeout: float) -> Result:
    """`pase-partition-stages{options}` on `model`, timed; its exported plan's "pipeline"
    (step, memory_parts, flops_per_device)."""
    pipeline = f'pase-partition-stages{{{options} export="{export}"}}'
    start = time.perf_counter()
    before = children_cpu()
    try:
        done = subprocess.run([str(PASE_OPT), str(model), "-p", pipeline, "-o", "/dev/null"],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Result(time.perf_counter() - start, children_cpu() - before, error="timeout")
    seconds, cpu = time.perf_counter() - start, children_cpu() - before
    if done.returncode != 0:
        return Result(seconds, cpu, error=(done.stderr.strip().splitlines() or ["failed"])[-1])
    return Result(seconds, cpu, json.loads(export.read_text())["pipeline"])


def children_cpu() -> float:
    """The CPU seconds (user + system) of this process's children that have ended."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


SEQUENCE_PARALLEL_CELLS = (0, 1, 6, 8)
"""The cells of the sequence-parallel layout shown: eval time, step, total GiB, TFLOP/s."""

PARTS = ("parameters", "gradients", "optimizer_state", "activations", "total")
"""The memory breakdown's columns (the plan's "memory_parts"), GiB per device."""


def cells(result: Result, device_gib: float) -> list[str]:
    """A plan's cells: time, step, memory by part, whether it fits, TFLOP/s per device."""
    if result.pipeline is None:
        return [f"{result.seconds:.1f} / {result.cpu:.1f} ({result.error[:40]})", "-",
                *("-" for _ in PARTS), "-", "-"]
    # The default step (sgd, fp32, none, 0) exports no breakdown: its total only.
    parts = result.pipeline.get("memory_parts", {"total": result.pipeline["memory"]})
    fits = "yes" if parts["total"] <= device_gib * 2**30 else "no"
    flops = result.pipeline.get("flops_per_device")
    # A plan with a stage solved under the cap unproven: its gap to the proven bound.
    gap = result.pipeline.get("gap", 0.0)
    step = f"{result.pipeline['step']:.4g}" + (f" (gap {gap:.2%})" if gap > 0 else "")
    return [f"{result.seconds:.1f} / {result.cpu:.1f}", step,
            *(f"{parts[part] / 2**30:.3g}" if part in parts else "-" for part in PARTS),
            fits, f"{flops / 1e12:.3g}" if flops is not None else "-"]


def columns(plan: str, search: str, device_gib: float) -> tuple[tuple[str, str], ...]:
    """One plan's column titles (`cells`)."""
    return ((f"{plan} {search} (s, wall / CPU)", ">"), (f"{plan} step (s)", ">"),
            (f"{plan} params", ">"), (f"{plan} grads", ">"), (f"{plan} optimizer", ">"),
            (f"{plan} activations", ">"), (f"{plan} total GiB", ">"),
            (f"{plan} fits {device_gib:g} GiB", "<"), (f"{plan} TFLOP/s/device", ">"))


def training(args: argparse.Namespace) -> str:
    """The training options both plans are charged under."""
    return (f"optimizer={args.optimizer} precision={args.precision} "
            f"recompute={args.recompute} zero={args.zero}")


def measure(row: Row, folder: Path, presets: dict[str, Any], cap: str,
            args: argparse.Namespace) -> list[str]:
    """One row's cells: pase's search and the Megatron layout's evaluation (and
    Megatron-SP's with `--sequence-parallel`), each a `pase-opt` child in `folder`."""
    shape = presets[row.preset]
    model = folder / f"{row.preset}.dnn"
    graph = generate().graph_name(row.preset)
    model.write_text(generate().language_model(shape, graph).render())
    microbatches = shape.batch // row.data
    plan = folder / "megatron.json"
    plan.write_text(json.dumps(megatron_plan(graph, layer_names(model), row,
                                             shape.layers, microbatches)))
    common = f"devices={row.devices} machine={args.machine} {training(args)}"
    print(f"{row.preset} on {row.devices} devices ...", file=sys.stderr, flush=True)
    megatron = run(model, f'{common} strategy="{plan}"', folder / "m.json",
                   args.timeout)
    sequence_parallel = []
    if args.sequence_parallel:
        plan.write_text(json.dumps(megatron_plan(graph, layer_names(model), row,
                                                 shape.layers, microbatches, True)))
        result = run(model, f'{common} strategy="{plan}"', folder / "s.json",
                     args.timeout)
        sequence_parallel = [cells(result, args.device_memory_gib)[i]
                             for i in SEQUENCE_PARALLEL_CELLS]
    pase = run(model, f"{common} {pase_options(row, microbatches, cap, args)}",
               folder / "p.json", args.timeout)
    return [row.preset.removeprefix("megatron-"), str(row.devices),
            f"{row.tensor} x {row.pipeline} x {row.data}", str(microbatches),
            *cells(pase, args.device_memory_gib),
            *cells(megatron, args.device_memory_gib), *sequence_parallel,
            f"{row.published:g}", f"{published_step(shape, row):.4g}"]


def pinned_degree(row: Row, args: argparse.Namespace) -> int | None:
    """The data-parallel degree pase's search is pinned to: `--data-parallel`'s, else the
    paper's d with `--pin-data-parallel`, else none (searched)."""
    if args.data_parallel is not None:
        return int(args.data_parallel)
    return row.data if args.pin_data_parallel else None


def pase_options(row: Row, microbatches: int, cap: str, args: argparse.Namespace) -> str:
    """`pase-partition-stages`' options of pase's cell, but the machine and training."""
    degree = pinned_degree(row, args)
    pinned = f" data-parallel={degree}" if degree is not None else ""
    return f"stages={row.pipeline} microbatches={microbatches} min-shard=1{cap}{pinned}"


def arguments() -> argparse.Namespace:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", choices=[row.preset for row in ROWS],
                        metavar="PRESET", help="the rows to run (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)} (32 to 128 devices)")
    parser.add_argument("--machine", type=machine, default="a100-80gb-dgx",
                        help="the machine preset (or TOML file) of both plans "
                             "(default a100-80gb-dgx)")
    parser.add_argument("--optimizer", default="adam", choices=("sgd", "momentum", "adam"),
                        help="both plans' optimizer (default adam, as the paper)")
    parser.add_argument("--precision", default="bf16", choices=("fp32", "bf16", "fp16"),
                        help="both plans' precision (default bf16; the paper's fp16 mixed "
                             "precision costs the same on an A100)")
    parser.add_argument("--recompute", default="full", choices=("none", "full", "auto"),
                        help="both plans' activation recomputation (default full, as the "
                             "paper trains)")
    parser.add_argument("--zero", default="0", choices=("0", "1", "2", "3", "auto"),
                        help="both plans' ZeRO stage (default 0, as the paper: optimizer "
                             "state replicated; 1 is Megatron-LM's later distributed "
                             "optimizer)")
    parser.add_argument("--device-memory-gib", type=positive_float, default=80.0,
                        help="each device's memory: the 'fits' columns and the cap of "
                             "pase's search (default 80)")
    parser.add_argument("--uncapped", action="store_true",
                        help="search pase's plan without the memory cap")
    parser.add_argument("--pin-data-parallel", action="store_true",
                        help="pin pase's data-parallel degree to the paper's d "
                             "(data-parallel=d: a smaller space, a faster search)")
    parser.add_argument("--data-parallel", type=positive_int, metavar="D",
                        help="pin pase's data-parallel degree to D (the same M as the "
                             "row's: batch / the paper's d); D must divide each stage's "
                             "devices and the micro-batch, else pase's cell shows the error")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="also evaluate the Megatron layout with sequence parallelism "
                             "(its 'Megatron-SP' columns)")
    parser.add_argument("--timeout", type=positive_int, default=600,
                        help="seconds a search may take before it is stopped (default 600)")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    chosen = QUICK if args.quick else (args.rows or [row.preset for row in ROWS])
    presets = generate().LANGUAGE_MODELS
    cap = "" if args.uncapped else f" device-memory-gib={args.device_memory_gib:g}"
    rows: list[list[str]] = []
    stopped = 0
    try:
        with signals_raise(), tempfile.TemporaryDirectory() as folder:
            for row in (row for row in ROWS if row.preset in chosen):
                rows.append(measure(row, Path(folder), presets, cap, args))
                # (Each row as it is done, in case a later one is stopped.)
                print("| " + " | ".join(rows[-1]) + " |", file=sys.stderr, flush=True)
    except Terminated as signal:  # (the running pase-opt is killed by subprocess.run)
        stopped = signal.exit_status
        print(f"{signal}: the table below has the {len(rows)} rows finished",
              file=sys.stderr, flush=True)
    search = "search" + ("" if args.uncapped else f" under {args.device_memory_gib:g} GiB") + \
        (f", d pinned to {args.data_parallel}" if args.data_parallel is not None
         else ", d pinned" if args.pin_data_parallel else "")
    print(f"machine {args.machine}; {training(args)}; pase: {search}; {cpus()}; "
          f"{versions()}", flush=True)
    table = (("model", "<"), ("P", ">"), ("t x p x d", "<"), ("M", ">"),
             *columns("pase", "search", args.device_memory_gib),
             *columns("Megatron", "eval", args.device_memory_gib),
             *(column for i, column in enumerate(columns("Megatron-SP", "eval",
                                                         args.device_memory_gib))
               if args.sequence_parallel and i in SEQUENCE_PARALLEL_CELLS),
             ("published TFLOP/s/GPU", ">"), ("published step (s)", ">"))
    print("\n".join(markdown_table(table, rows)))
    return stopped


if __name__ == "__main__":
    run_main(main)
