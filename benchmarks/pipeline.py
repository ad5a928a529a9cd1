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
process. "-" marks a plan over the cap. With `--floors`, instead, per model, P and
schedule: the least memory per device any plan with S = 1 needs and any with S > 1
(`Partitioner.least_memory`, over the S and M `stages=auto microbatches=auto` tries),
and where the hybrid's is the lower, a cap between the two: PaSE alone has no plan
under it, the hybrid's plan (searched on each machine) is shown. The modelled memory is that of
docs/cost-model.md, "Pipelines". Progress goes to stderr, and only when it is a
terminal, so the table on stdout is all there is to capture.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from common import add_model_arguments, cpus, markdown_table, non_negative_float, run_main, versions
from xdsl.context import Context

from pase.core.diagnostics import Diagnostic
from pase.core.usage import UsageParser
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import PipelineAttr
from pase.frontend import parse_file
from pase.passes.partition_stages import MAX_AUTO_MICROBATCHES, PartitionStagesPass
from pase.passes.strategy import (
    PRESETS,
    SCHEDULES,
    Partitioner,
    activation_bytes,
    build_problem,
    parameter_bytes,
    preset,
    read_graph,
    segments,
    stage_solver,
)

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


FLOOR_COLUMNS = (
    ("model", "<"),
    ("P", ">"),
    ("schedule", "<"),
    ("S = 1 least memory (GiB)", ">"),
    ("its M", ">"),
    ("S > 1 least memory (GiB)", ">"),
    ("its S, M", ">"),
    ("cap between (GiB)", ">"),
    ("machine", "<"),
    ("S = 1 under the cap", "<"),
    ("hybrid under the cap", "<"),
    ("search CPU (s)", ">"),
)


def floors(path: Path, devices: int, schedule: str, machines: list[str]) -> list[list[str]]:
    """The rows of `--floors` for one model, P and schedule."""
    data = read_graph(parse_file(str(path)))
    index = segments(data.layers, data.edges)
    cuts = [i for i in range(1, len(index)) if index[i] != index[i - 1]]
    assert data.batch is not None
    size = next(d.size for layer in data.layers for d in layer.space.dims if d.name == data.batch)
    stage_counts = [s for s in range(1, devices + 1) if devices % s == 0 and s <= len(cuts) + 1]
    micro_counts = [m for m in range(1, min(size, MAX_AUTO_MICROBATCHES) + 1) if size % m == 0]
    machine = preset(machines[0])  # memory does not depend on the machine
    plans = Partitioner(data.layers, data.edges, data.batch, devices, machine, cuts,
                        stage_solver(machine, data.batch))
    least = {(s, m): plans.least_memory(s, m, schedule) / GIB
             for s in stage_counts for m in micro_counts}
    alone, alone_at = min((v, k) for k, v in least.items() if k[0] == 1)
    head = [path.stem, str(devices), schedule, f"{alone:.4g}", str(alone_at[1])]
    hybrids = [(v, k) for k, v in least.items() if k[0] > 1]
    if not hybrids:
        return [[*head, "-", "-", "-", "-", "-", "-", "-"]]
    hybrid, hybrid_at = min(hybrids)
    head += [f"{hybrid:.4g}", f"{hybrid_at[0]}, {hybrid_at[1]}"]
    if hybrid >= alone:
        return [[*head, "none", "-", "-", "-", "-"]]
    cap = float(f"{(hybrid + alone) / 2:.4g}")
    rows = []
    for name in machines:
        found_alone = plan(path, devices, name, cap, stages=1, schedule=schedule)
        cpu = time.process_time()
        found = plan(path, devices, name, cap, schedule=schedule)
        cpu = time.process_time() - cpu
        rows.append([*head, f"{cap:g}", name,
                     "no plan" if found_alone is None else f"step {found_alone.step.data:.4g}",
                     "no plan" if found is None else
                     f"S={found.stages.data} M={found.microbatches.data} step "
                     f"{found.step.data:.4g}, {found.memory.data / GIB:.4g} GiB",
                     f"{cpu:.2f}"])
    return rows


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(
        parser, "the .dnn models (default: every bundled model)", [8], "device counts (default: 8)"
    )
    parser.add_argument("--machines", nargs="+", default=["v100-nvlink", "2080ti-pcie"],
                        choices=list(PRESETS), metavar="MACHINE",
                        help=f"machine presets (default: v100-nvlink 2080ti-pcie): "
                             f"{', '.join(PRESETS)}")
    parser.add_argument(
        "--cap",
        nargs="+",
        type=non_negative_float,
        default=[0.0],
        help="device-memory caps in GiB, 0 for none (default: 0)",
    )
    parser.add_argument(
        "--floors",
        action="store_true",
        help="the least memory of PaSE alone and of the hybrid, and a cap between (above)",
    )
    args = parser.parse_args()
    rows = []
    progress = sys.stderr.isatty()
    if args.floors:
        for path in args.models:
            for devices in args.devices:
                for schedule in SCHEDULES:
                    if progress:
                        sys.stderr.write(f"\r\033[K{path.stem} P={devices} {schedule}")
                        sys.stderr.flush()
                    rows += floors(path, devices, schedule, args.machines)
        if progress:
            sys.stderr.write("\r\033[K")
        print("\n".join(markdown_table(FLOOR_COLUMNS, rows)))
        print(f"\n{cpus()}; {versions()}")
        return
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
    run_main(main)
