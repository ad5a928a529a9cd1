"""The `-t jax` program's collectives against the cost model's, per ZeRO stage, on plans
with tensor-parallel axes (docs/cost-model.md, "ZeRO's collectives on tensor-parallel plans").

    .venv/bin/python benchmarks/jax_zero_collectives.py --models mlp --devices 4
    .venv/bin/python benchmarks/jax_zero_collectives.py --models transformer --devices 8 \\
        --data-parallel 2 --scale 0.125

Each case is the plan `pase-run --engine jax` runs (`--data-parallel D`: D ways on the
batch, the rest searched; 0: searched) at full size on `--machine`, scaled by `--scale`,
with Adam under `--precisions` and every `--zero` stage. Its program's step is partitioned
on P XLA CPU devices (`pase.tools.run.jax.partitioned`: the HLO XLA's SPMD partitioner
leaves, before the CPU backend's own passes widen bf16 collectives to f32) and its
collectives summed per kind, bytes received per device by the ring formulas at each
collective's HLO element type (the loss's scalar sum left out). Beside them the cost
model's bytes for the same plan: its layers' collectives (`TrainingCost.layer_costs`: the
gradients' reduction, ZeRO's gathers, the layers' own all-reduces) and its edges'
redistribution (`predicted_words`), times the precision's bytes. Run it with another
tree's `pase` first on `PYTHONPATH` to measure that tree's programs.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import MODELS_DIR, markdown_table, positive_int, run_main

COLUMNS = (("model", "<"), ("P", ">"), ("D", ">"), ("precision", "<"), ("ZeRO", ">"),
           ("XLA, per kind (B)", "<"), ("XLA total (B)", ">"), ("cost model (B)", ">"),
           ("XLA / model", ">"), ("CPU s", ">"))
SHORT = {"all-reduce": "AR", "all-gather": "AG", "reduce-scatter": "RS",
         "collective-permute": "CP", "all-to-all": "A2A"}


def case(model: str, devices: int, ways: int, scale: float, machine: str, precision: str,
         zero: int) -> list[str]:
    from pase.dialect.training_options import StepOptions, set_training
    from pase.passes.strategy import build_problem, predicted_words
    from pase.passes.strategy.options import SearchOptions, TrainingOptions
    from pase.targets.jax import jax_program
    from pase.tools.run.jax import collectives, partitioned
    from pase.tools.run.load import (
        forward_graph,
        layer_configs,
        load_model,
        strategy_and_scale,
        with_configs,
    )

    start = cpu_seconds()
    options = StepOptions(optimizer="adam", precision=precision, zero=zero)
    loaded, _ = load_model(str(MODELS_DIR / f"{model}.dnn"))
    module = strategy_and_scale(loaded, devices, scale, machine, options=options,
                                one_mesh=True, ways=ways)
    graph = forward_graph(module)
    set_training(graph, options)
    configs = layer_configs(graph)
    with tempfile.TemporaryDirectory(prefix="pase-zero-") as folder:
        hlo = partitioned(jax_program(with_configs(module, configs), devices), devices,
                          Path(folder))["jit_step"]
    moved: dict[str, float] = defaultdict(float)
    for collective in collectives(hlo):
        if collective.elements > 1:
            moved[collective.kind] += (collective.words() * collective.bytes
                                       / collective.elements)
    training = TrainingOptions(optimizer="adam", precision=precision, zero=str(zero))
    problem = build_problem(graph, devices, machine=machine, pinned=configs,
                            options=SearchOptions(training=training))
    words = sum(float(problem.model.layer_costs(layer, choices, problem.machine).words[0])
                for layer, choices in zip(problem.layer_data, problem.config_lists,
                                          strict=True))
    words += sum(w for (kind, _), w in predicted_words(problem, configs).items()
                 if kind == "edge")
    charged = words * training.element_bytes
    total = sum(moved.values())
    kinds = ", ".join(f"{SHORT[k]} {v:,.0f}" for k, v in sorted(moved.items()))
    return [model, str(devices), str(ways or "searched"), precision, str(zero), kinds,
            f"{total:,.0f}", f"{charged:,.0f}", f"{total / charged:.3f}" if charged else "-",
            f"{cpu_seconds() - start:.1f}"]


def cpu_seconds() -> float:
    """This process's CPU seconds and its finished children's (the partitioning runs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["mlp"])
    parser.add_argument("--devices", type=positive_int, nargs="+", default=[4])
    parser.add_argument("--data-parallel", type=int, nargs="+", default=[2],
                        help="batch ways D of each case (0: the searched plan)")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--zero", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--machine", default="a100-nvlink")
    args = parser.parse_args()
    rows = [case(model, devices, ways, args.scale, args.machine, precision, zero)
            for model in args.models for devices in args.devices
            for ways in args.data_parallel for precision in args.precisions
            for zero in args.zero]
    print("\n".join(markdown_table(COLUMNS, rows)))
    print("(CPU s: user and system, the partitioning child's included)")
    return 0


if __name__ == "__main__":
    run_main(main)
