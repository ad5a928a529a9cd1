"""Pipelined `-t jax` programs with the training options, against pase's 1-device run.

    .venv/bin/python benchmarks/jax_pipeline_training.py               # the mlp
    .venv/bin/python benchmarks/jax_pipeline_training.py --models transformer --steps 3

Each model is planned as a Megatron-style layout on 8 devices at full size
(`pase-partition-stages{devices=8 stages=2 microbatches=2 data-parallel=2 one-mesh=true}`
with the step's options, as `pase-run --engine jax --stages 2 --microbatches 2
--data-parallel 2` plans it), scaled by 1/8, and trained `--steps` steps under each step
(SGD fp32; Adam bf16 recompute full without and with ZeRO 1; momentum fp32 ZeRO 3;
SGD fp16 ZeRO 2). The
columns:

- CPU s: this process's and its children's CPU seconds for the check (the JAX program in
  its child, pase's 1-device reference, and its fp32 rerun under bf16/fp16);
- first -> last loss of the JAX run, and of the reference;
- max error: the check's largest relative error (losses, gradients, updated params and
  optimizer state) and its tolerance (`check.tolerance`);
- params / state B/device: per stage, the bytes one device holds of the params and of the
  optimizer state, read from the arguments of the stage's compiled update (XLA's HLO after
  SPMD partitioning: each argument's per-device shard), from a second 1-step run.
"""

from __future__ import annotations

import re
import resource
import sys

import numpy as np
from common import cpus, markdown_table, model_path, positive_int, run_main, versions

from pase.core.usage import UsageParser
from pase.dialect.dnn.seeding import LEARNING_RATES
from pase.dialect.dnn.training import OPTIMIZER_STATES
from pase.dialect.training_options import StepOptions, set_training
from pase.frontend import parse_file
from pase.targets.jax import jax_program
from pase.tools.run.check import make_data, tolerance
from pase.tools.run.jax import run_program, train_jax
from pase.tools.run.load import Stages, forward_graph, strategy_and_scale

STEPS = [StepOptions(), StepOptions(optimizer="adam", precision="bf16", recompute="full"),
         StepOptions(optimizer="adam", precision="bf16", recompute="full", zero=1),
         StepOptions(optimizer="momentum", zero=3), StepOptions(precision="fp16", zero=2)]

COLUMNS = (("model", "<"), ("step", "<"), ("CPU s", ">"), ("JAX loss", "<"),
           ("reference loss", "<"), ("max error (tolerance)", "<"),
           ("params B/device", "<"), ("state B/device", "<"))

ARGUMENT = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")


def cpu_seconds() -> float:
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def update_bytes(hlo: str, params: int, kinds: int) -> tuple[int, int]:
    """Per device, the bytes of the params and of the optimizer state among the arguments
    of a stage's compiled update (params, gradient sums, state: each sorted by name)."""
    entry = next(line for line in hlo.splitlines() if line.startswith("ENTRY"))
    signature = entry[entry.index("(") + 1:entry.index(") ->")]
    sizes = [int(np.prod([int(d) for d in dims.split(",") if d], dtype=np.int64))
             * int(re.sub(r"\D", "", dtype) or 8) // 8
             for dtype, dims in ARGUMENT.findall(signature)]
    assert len(sizes) == params * (2 + kinds), (len(sizes), params, kinds)
    return sum(sizes[:params]), sum(sizes[2 * params:])


def row(name: str, options: StepOptions, steps: int) -> list[str]:
    module = strategy_and_scale(parse_file(str(model_path(name))), 8, 0.125, "a100-nvlink",
                                stages=Stages(2, 2), options=options, one_mesh=True, ways=2)
    graph = forward_graph(module)
    set_training(graph, options)
    lr = LEARNING_RATES[options.optimizer]
    start = cpu_seconds()
    report = train_jax(module, 8, steps=steps, lr=lr).training
    seconds = cpu_seconds() - start
    program = jax_program(module)
    saved = run_program(program, make_data(graph, 0), 8, 1, lr, False, 1800)
    kinds = len(OPTIMIZER_STATES.get(options.optimizer, ()))
    owners = program.split("PARAM_STAGE = {")[1].split("\n}")[0]
    held = [update_bytes(str(saved[f"hlo/stage{stage}/update"]),
                         len(re.findall(rf": {stage},$", owners, flags=re.M)), kinds)
            for stage in range(2)]
    error = max([*report.loss_errors, report.gradient_error, report.parameter_error])
    step = (f"{options.optimizer} {options.precision} recompute={options.recompute} "
            f"zero={options.zero}")
    return [name, step, f"{seconds:.1f}",
            f"{report.losses[0]:.4f} -> {report.losses[-1]:.4f}",
            f"{report.reference_losses[0]:.4f} -> {report.reference_losses[-1]:.4f}",
            f"{error:.2e} ({tolerance(report.element, report.noise):.1e})",
            " / ".join(str(p) for p, _ in held), " / ".join(str(s) for _, s in held)]


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["mlp"],
                        help="models of models/ (default: mlp)")
    parser.add_argument("--steps", type=positive_int, default=4,
                        help="training steps (default 4)")
    args = parser.parse_args()
    print(f"# {cpus()}; {versions()}", file=sys.stderr)
    rows = []
    for name in args.models:
        for options in STEPS:
            rows.append(row(name, options, args.steps))
            print(" ".join(rows[-1]), file=sys.stderr, flush=True)
    print("\n".join(markdown_table(COLUMNS, rows)))


if __name__ == "__main__":
    run_main(main)
