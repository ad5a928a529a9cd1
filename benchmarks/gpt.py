"""The GPT family from 1.7B to 1T parameters at 32 to 3,072 devices: pase's plan against the
Megatron-LM layout under the same cost model, side by side.

    .venv/bin/python benchmarks/gpt.py --quick                   # the three smallest rows
    .venv/bin/python benchmarks/gpt.py --machine a100-nvlink --timeout 600
    .venv/bin/python benchmarks/gpt.py --rows megatron-1.7b megatron-39b

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
- pase: `pase-partition-stages{stages=p microbatches=M min-shard=1}`: the same S and M,
  its own stage boundaries and its own configuration of every layer in each stage
  (min-shard 1, so that its space holds the Megatron layout, whose micro-batch of d
  sequences is split d ways). Each stage's configurations are pase's optimum for one
  micro-batch, gradient all-reduce included, which the step pays once for M micro-batches
  (DESIGN.md, "Layer-wise partitioning"): with M > 1 the plan can be slower than a layout
  that all-reduces more and computes less, such as Megatron-LM's data parallelism.

Columns: search time (wall-clock seconds of the `pase-opt` process, which parses the
model too; `timeout` where it did not finish), the predicted step (seconds), the memory
per device (GiB, the cost model's: fp32 parameters and gradients and the activations a
stage keeps), and the model FLOP/s per device: Megatron-LM's count of a step's FLOPs
without recomputation, 72 B s l h^2 (1 + s / (6h) + V / (12 l h)) (Narayanan et al.
2021, Section 5.1, without the recomputed forward), over the step and the devices. The
machine preset is an argument (`--machine`); the table names it. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from common import MODELS_DIR, cpus, markdown_table, positive_int, versions

PASE_OPT = Path(sys.executable).parent / "pase-opt"


@dataclass(frozen=True)
class Row:
    """One row of Narayanan et al. 2021, Table 1: a preset, its GPUs and layout."""

    preset: str
    devices: int
    tensor: int
    pipeline: int

    @property
    def data(self) -> int:
        return self.devices // (self.tensor * self.pipeline)


ROWS = [
    Row("megatron-1.7b", 32, 1, 1),
    Row("megatron-3.6b", 64, 2, 1),
    Row("megatron-7.5b", 128, 4, 1),
    Row("megatron-18b", 256, 8, 1),
    Row("megatron-39b", 512, 8, 2),
    Row("megatron-76b", 1024, 8, 4),
    Row("megatron-146b", 1536, 8, 8),
    Row("megatron-310b", 1920, 8, 16),
    Row("megatron-530b", 2520, 8, 35),
    Row("megatron-1t", 3072, 8, 64),
]
QUICK = ["megatron-1.7b", "megatron-3.6b", "megatron-7.5b"]


def generate() -> ModuleType:
    """models/generate.py, loaded by path (models/ is not a package)."""
    spec = importlib.util.spec_from_file_location("generate", MODELS_DIR / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module
    spec.loader.exec_module(module)
    return module


def megatron_config(name: str, kind: str, data: int, tensor: int) -> dict[str, int]:
    """A layer's configuration in the Megatron-LM layout (the module docstring), by its
    name in `models/generate.py`'s language models."""
    config = {"b": data} if name != "pos" else {}
    split = ""
    if "_attn_" in name and not name.endswith("_keys"):
        split = "h"
    elif "_mlp_" in name:
        split = "f"
    elif name in ("tok", "logits", "loss"):
        split = "v"
    if split and tensor > 1:
        config[split] = tensor
    return {dim: factor for dim, factor in config.items() if factor > 1}


def megatron_plan(graph: str, layers: list[tuple[str, str]], row: Row, blocks: int,
                  microbatches: int) -> dict:
    """The plan file of the Megatron-LM layout of `row` for the graph's `layers` (name,
    op) in program order, `blocks` transformer blocks."""
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
                        "config": megatron_config(name, op, row.data, row.tensor)}
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
    step: float | None = None
    memory: float | None = None
    error: str = ""


def run(model: Path, options: str, export: Path, timeout: float) -> Result:
    """`pase-partition-stages{options}` on `model`, timed; its exported plan's step and
    memory."""
    pipeline = f'pase-partition-stages{{{options} export="{export}"}}'
    start = time.perf_counter()
    try:
        done = subprocess.run([str(PASE_OPT), str(model), "-p", pipeline, "-o", "/dev/null"],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Result(time.perf_counter() - start, error="timeout")
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        return Result(seconds, error=(done.stderr.strip().splitlines() or ["failed"])[-1])
    plan = json.loads(export.read_text())["pipeline"]
    return Result(seconds, plan["step"], plan["memory"])


def step_flops(shape: Any) -> float:
    """Megatron-LM's FLOPs of a training step without recomputation (module docstring)."""
    b, s, layers, h, v = shape.batch, shape.sequence, shape.layers, shape.hidden, \
        shape.vocabulary
    return 72 * b * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h))


def cells(result: Result, flops: float, devices: int) -> list[str]:
    if result.error:
        return [f"{result.seconds:.1f} ({result.error[:40]})", "-", "-", "-"]
    assert result.step is not None
    assert result.memory is not None
    return [f"{result.seconds:.1f}", f"{result.step:.4g}", f"{result.memory / 2**30:.4g}",
            f"{flops / result.step / devices / 1e12:.3g}"]


COLUMNS = (("model", "<"), ("P", ">"), ("t x p x d", "<"), ("M", ">"),
           ("pase search (s)", ">"), ("pase step (s)", ">"), ("pase GiB/device", ">"),
           ("pase TFLOP/s/device", ">"),
           ("Megatron eval (s)", ">"), ("Megatron step (s)", ">"),
           ("Megatron GiB/device", ">"), ("Megatron TFLOP/s/device", ">"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", choices=[row.preset for row in ROWS],
                        metavar="PRESET", help="the rows to run (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)} (32 to 128 devices)")
    parser.add_argument("--machine", default="a100-nvlink",
                        help="the machine preset (or TOML file) of both plans")
    parser.add_argument("--timeout", type=positive_int, default=600,
                        help="seconds a search may take before it is stopped (default 600)")
    args = parser.parse_args()
    chosen = QUICK if args.quick else (args.rows or [row.preset for row in ROWS])
    presets = generate().LANGUAGE_MODELS
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for row in (row for row in ROWS if row.preset in chosen):
            shape = presets[row.preset]
            model = Path(folder) / f"{row.preset}.dnn"
            graph = generate().graph_name(row.preset)
            model.write_text(generate().language_model(shape, graph).render())
            microbatches = shape.batch // row.data
            plan = Path(folder) / "megatron.json"
            plan.write_text(json.dumps(megatron_plan(graph, layer_names(model), row,
                                                     shape.layers, microbatches)))
            common = f"devices={row.devices} machine={args.machine}"
            print(f"{row.preset} on {row.devices} devices ...", file=sys.stderr, flush=True)
            megatron = run(model, f'{common} strategy="{plan}"', Path(folder) / "m.json",
                           args.timeout)
            pase = run(model, f"{common} stages={row.pipeline} microbatches={microbatches} "
                             "min-shard=1",
                       Path(folder) / "p.json", args.timeout)
            flops = step_flops(shape)
            rows.append([row.preset.removeprefix("megatron-"), str(row.devices),
                         f"{row.tensor} x {row.pipeline} x {row.data}", str(microbatches),
                         *cells(pase, flops, row.devices),
                         *cells(megatron, flops, row.devices)])
    print(f"machine {args.machine}; {cpus()}; {versions()}", flush=True)
    print("\n".join(markdown_table(COLUMNS, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
