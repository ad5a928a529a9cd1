"""Pipeline stages against data parallelism and PaSE alone, per model, P and machine.

    .venv/bin/python benchmarks/pipeline.py                        # defaults below
    .venv/bin/python benchmarks/pipeline.py --models alexnet --devices 8 16 --cap 11

For each model, device count P and machine, with and without a device-memory cap, it
prints the modelled step time (seconds) and the most memory a device needs of
- data parallelism: every layer splits the batch, one stage (pase's data-parallel
  configuration, as pase-search's speedup counts it);
- PaSE alone: `pase-partition-stages{stages=1 microbatches=1}`, which is pase-search;
- the best hybrid: `stages=auto microbatches=auto` (its S and M),
and the search time of the hybrid: wall-clock and CPU (user + system) seconds, in this
process. "-" marks a plan over the cap. The modelled memory is that of
docs/cost-model.md, "Pipelines". Progress goes to stderr, and only when it is a
terminal, so the table on stdout is all there is to capture.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common import add_model_arguments, cpus, markdown_table, versions
from xdsl.context import Context

from pase.core.diagnostics import Diagnostic
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import PipelineAttr
from pase.frontend import parse_file
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.strategy import build_problem
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.pipeline import activation_bytes, parameter_bytes

GIB = 1 << 30
COLUMNS = (
    ("model", "<"),
    ("P", ">"),
    ("machine", "<"),
    ("cap (GiB)", ">"),
    ("data-parallel step (s)", ">"),
    ("DP memory (GiB)", ">"),
    ("PaSE step (s)", ">"),
    ("PaSE memory (GiB)", ">"),
    ("hybrid S", ">"),
    ("hybrid M", ">"),
    ("hybrid step (s)", ">"),
    ("hybrid memory (GiB)", ">"),
    ("vs PaSE", ">"),
    ("vs data-parallel", ">"),
    ("search (s)", ">"),
    ("search CPU (s)", ">"),
)


def plan(
    path: Path, devices: int, machine: str, cap: float, **options: object
) -> PipelineAttr | None:
    module = parse_file(str(path))
    try:
        PartitionStagesPass(
            devices=devices, machine=machine, device_memory_gib=cap, **options
        ).apply(Context(), module)  # type: ignore[arg-type]
    except Diagnostic:
        return None
    graph = next(op for op in module.walk() if isinstance(op, GraphOp))
    attr = graph.attributes["pase.pipeline"]
    assert isinstance(attr, PipelineAttr)
    return attr


def row(path: Path, devices: int, machine: str, cap: float) -> list[str]:
    module = parse_file(str(path))
    problem = build_problem(module, devices, machine)
    data_parallel = problem.data_parallel()
    layers = read_graph(module).layers
    dp_memory = parameter_bytes(layers, data_parallel) + activation_bytes(layers, data_parallel)
    dp_step = problem.cost(data_parallel)
    dp_fits = not cap or dp_memory <= cap * GIB
    pase = plan(path, devices, machine, cap, stages=1, microbatches=1)
    start, cpu = time.perf_counter(), time.process_time()
    hybrid = plan(path, devices, machine, cap)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    return [
        path.stem,
        str(devices),
        machine,
        f"{cap:g}" if cap else "none",
        number(dp_step if dp_fits else None),
        number(dp_memory / GIB),
        number(pase.step.data if pase else None),
        number(pase.memory.data / GIB if pase else None),
        str(hybrid.stages.data) if hybrid else "-",
        str(hybrid.microbatches.data) if hybrid else "-",
        number(hybrid.step.data if hybrid else None),
        number(hybrid.memory.data / GIB if hybrid else None),
        number(pase.step.data / hybrid.step.data if pase and hybrid else None),
        number(dp_step / hybrid.step.data if hybrid and dp_fits else None),
        f"{seconds:.2f}",
        f"{cpu_seconds:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(
        parser, "the .dnn models (default: every bundled model)", [8], "device counts (default: 8)"
    )
    parser.add_argument("--machines", nargs="+", default=["v100-nvlink", "2080ti-pcie"])
    parser.add_argument(
        "--cap",
        nargs="+",
        type=float,
        default=[0.0],
        help="device-memory caps in GiB, 0 for none (default: 0)",
    )
    args = parser.parse_args()
    rows = []
    progress = sys.stderr.isatty()
    for path in args.models:
        for devices in args.devices:
            for machine in args.machines:
                for cap in args.cap:
                    if progress:
                        sys.stderr.write(f"\r\033[K{path.stem} P={devices} {machine} cap={cap:g}")
                        sys.stderr.flush()
                    rows.append(row(path, devices, machine, cap))
    if progress:
        sys.stderr.write("\r\033[K")
    print("\n".join(markdown_table(COLUMNS, rows)))
    print(f"\n{cpus()}; {versions()}")


if __name__ == "__main__":
    main()
