"""The `-t jax` program against pase's runtime, per model at P = 8 XLA CPU devices.

    .venv/bin/python benchmarks/jax.py                        # every model, searched
    .venv/bin/python benchmarks/jax.py --models mlp alexnet --data-parallel

Each model gets the strategy `pase-search` finds at full size (or the batch split), shrinks
by its scale (as the tests run it; inception_v3 and resnet101 in f64, whose batchnorms lose
more than 1e-4 to f32 rounding at that size), and runs `--steps` SGD steps both ways on
the same seeded data. The columns:

- JAX step: the compiled step's wall-clock time per step (`pase-run --engine jax`'s child,
  P host devices of this machine, after its compile);
- XLA compile: lowering and compiling the jitted step;
- pase step: pase's runtime on P worker threads, wall-clock per step;
- max error: the largest relative error of losses, gradients and updated parameters
  against pase's 1-device run (the check's tolerance in brackets);
- XLA words, pase words: per device and step, XLA's collectives (from the compiled HLO,
  by the ring formulas of pase's cost model) and pase's prediction for the strategy.

Then the pipelined rows (`--stages S --microbatches M`, default 2 and 4; `--stages 1`
skips them, `--pipeline-only` skips the rows above): the model's plan by
`pase-partition-stages` at full size, scaled, as `pase-run --engine jax --stages S
--microbatches M` runs it. Per row the measured step and compile (every stage's programs
and crossings), the plan's modelled step (full size, on its machine preset), the check's
error, XLA's words within the stages (the sum over stages of one device's words per step)
beside the plan's, and the words the crossings move (collective-permutes, forward and back,
one device of the receiving stage per step) beside what the plan charges its boundaries.
"""

from __future__ import annotations

import sys
import time
from importlib import metadata
from pathlib import Path

from common import add_model_arguments, cpus, markdown_table, positive_int, run_main, versions

from pase.core.usage import UsageParser

SCALES = {"gpt2_small": 0.03125, "alexnet": 0.125, "mlp": 0.125}
F64 = ("inception_v3", "resnet101")
COLUMNS = (("model", "<"), *((title, ">") for title in (
    "P", "JAX step (s)", "XLA compile (s)", "pase step (s)", "max error (tolerance)",
    "XLA words", "pase words", "check")))


def row(path: Path, devices: int, steps: int, data_parallel: bool) -> list[str]:
    from pase.tools.run.check import check_problems, make_data
    from pase.tools.run.jax import train_jax
    from pase.tools.run.load import (
        forward_graph,
        layer_configs,
        load_model,
        strategy_and_scale,
        with_configs,
    )
    from pase.tools.run.runtime import execute, lower

    model = path.stem
    float_type = "f64" if model in F64 else None
    module = strategy_and_scale(load_model(str(path))[0], devices, SCALES.get(model, 0.0625),
                                data_parallel=data_parallel)
    report = train_jax(module, devices, steps, float_type=float_type)
    graph = forward_graph(module)
    program = lower(with_configs(module, layer_configs(graph)), devices, 0.01)
    data = make_data(graph, 0, float_type)
    start = time.perf_counter()
    execute(program, data, steps, "threads", 600.0, float_type)
    pase_step = (time.perf_counter() - start) / steps
    training = report.training
    xla_words = sum(c.words() * c.bytes / c.elements for c in report.compiled.collectives
                    if c.elements) / (8 if training.element == "f64" else 4)
    compiled = report.compiled
    return [model, str(devices), f"{compiled.step_seconds:.3f}", f"{compiled.compile_seconds:.1f}",
            f"{pase_step:.3f}", f"{training.max_error():.1e} ({training.tolerance():.0e})",
            f"{xla_words:,.0f}", f"{sum(report.compiled.predicted.values()):,.0f}",
            "passed" if not check_problems(training) else "FAILED"]


PIPELINE_COLUMNS = (("model", "<"), *((title, ">") for title in (
    "P", "plan", "JAX step (s)", "XLA compile (s)", "modelled step (s)",
    "max error (tolerance)", "XLA words", "pase words", "crossing words", "plan's crossing",
    "check")))


def pipeline_row(path: Path, devices: int, steps: int, stages: int,
                 microbatches: int) -> list[str]:
    from pase.core.diagnostics import Diagnostic
    from pase.tools.errors import ToolError
    from pase.tools.run.check import check_problems
    from pase.tools.run.jax import train_jax
    from pase.tools.run.jax_pipeline import PipelineCompiled
    from pase.tools.run.load import Stages, load_model, strategy_and_scale

    model = path.stem
    float_type = "f64" if model in F64 else None
    plan = f"{stages}x{microbatches} 1f1b"
    try:
        module = strategy_and_scale(load_model(str(path))[0], devices,
                                    SCALES.get(model, 0.0625),
                                    stages=Stages(stages, microbatches))
        report = train_jax(module, devices, steps, float_type=float_type)
    except (Diagnostic, ToolError, ValueError) as error:  # no such plan (batch norms)
        return [model, str(devices), plan, *["-"] * 8,
                "no plan: " + str(error).split(": ")[-1].split(", so")[0].strip()]
    compiled = report.compiled
    assert isinstance(compiled, PipelineCompiled)
    width = 8 if report.training.element == "f64" else 4
    xla = sum(runs * c.words() * c.bytes / c.elements / width
              for stage in compiled.stages for c, runs in stage.collectives if c.elements)
    predicted = sum(s.predicted_layer + s.predicted_edge for s in compiled.stages)
    crossing = sum(b.forward + b.backward for b in compiled.boundaries)
    charged = sum(b.predicted_forward + b.predicted_backward for b in compiled.boundaries)
    training = report.training
    return [model, str(devices), plan, f"{compiled.step_seconds:.3f}",
            f"{compiled.compile_seconds:.1f}", f"{compiled.modelled_step:.2g}",
            f"{training.max_error():.1e} ({training.tolerance():.0e})", f"{xla:,.0f}",
            f"{predicted:,.0f}", f"{crossing:,.0f}", f"{charged:,.0f}",
            "passed" if not check_problems(training) else "FAILED"]


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser, "models (default: all of models/)", [8],
                        "device counts (default 8)")
    # One step by default: at this scale the deep f64 models lose digits fast with more
    # steps on either engine (pase's own runtime, sharded against one device, is 2.6e-6
    # off in resnet101's third loss), so a longer check measures conditioning, not pase.
    parser.add_argument("--steps", type=positive_int, default=1, help="SGD steps (default 1)")
    parser.add_argument("--data-parallel", action="store_true",
                        help="split the batch instead of searching")
    parser.add_argument("--stages", type=positive_int, default=2,
                        help="pipeline stages of the pipelined rows (default 2; 1: none)")
    parser.add_argument("--microbatches", type=positive_int, default=4,
                        help="micro-batches of the pipelined rows (default 4)")
    parser.add_argument("--pipeline-only", action="store_true",
                        help="only the pipelined rows")
    args = parser.parse_args()
    # Not `import jax`: this file is benchmarks/jax.py, which that would import.
    print(f"# {cpus()}; {versions()}, jax {metadata.version('jax')}", file=sys.stderr)
    rows, pipelined = [], []
    for path in args.models:
        for devices in args.devices:
            if not args.pipeline_only:
                rows.append(row(path, devices, args.steps, args.data_parallel))
                print(" ".join(rows[-1]), file=sys.stderr, flush=True)
            if args.stages > 1:
                pipelined.append(pipeline_row(path, devices, args.steps, args.stages,
                                              args.microbatches))
                print(" ".join(pipelined[-1]), file=sys.stderr, flush=True)
    if rows:
        print("\n".join(markdown_table(COLUMNS, rows)))
    if pipelined:
        print("\n" * bool(rows) + "\n".join(markdown_table(PIPELINE_COLUMNS, pipelined)))


if __name__ == "__main__":
    run_main(main)
