"""A pipelined `-t jax` program's collectives per stage against the plan's, in words.

    .venv/bin/python benchmarks/jax_pipeline_collectives.py --cases alexnet:2:4:0 \\
        transformer:2:2:2

Each case `MODEL:S:M:D` is the plan `pase-run MODEL --devices 8 --scale 0.125 --stages S
--microbatches M --data-parallel D --engine jax --check` runs (D 0: the batch's ways
searched; SGD in fp32, or Adam at ZeRO stage Z for `MODEL:S:M:D:Z`, on `--machine`),
planned at full size with `one-mesh=true` and
scaled. Its program runs one step against pase's 1-device run (the check's result is a
column) and each stage's compiled programs are read (`tools/run/jax_pipeline`): XLA's
collectives per step (its forward and backward programs times M, its update once), the
words one device receives by the ring formulas, beside what the plan charges the stage
(`predicted_pipeline_words`: its layers' collectives and the redistributions between
them, the parameter gradients' all-reduce once a step, ZeRO 3's gathers), and the
crossings between stages beside the plan's boundary words. Run it with another tree's
`pase` first on `PYTHONPATH` to measure that tree's programs.
"""

from __future__ import annotations

import resource
import sys
import time

from common import cpus, markdown_table, model_path, run_main, versions

from pase.core.usage import UsageParser

COLUMNS = (("case", "<"), ("stage", "<"), ("XLA, per kind (words)", "<"),
           ("XLA total", ">"), ("plan", ">"), ("XLA / plan", ">"), ("check", "<"),
           ("CPU s", ">"))
SHORT = {"all-reduce": "AR", "all-gather": "AG", "reduce-scatter": "RS",
         "collective-permute": "CP", "all-to-all": "A2A"}


def cpu_seconds() -> float:
    """This process's CPU seconds and its finished children's (the JAX program's)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def case_rows(case: str, machine: str) -> list[list[str]]:
    from pase.dialect.training_options import StepOptions
    from pase.frontend import parse_file
    from pase.tools.run.jax import train_jax
    from pase.tools.run.jax_pipeline import PipelineCompiled
    from pase.tools.run.load import Stages, strategy_and_scale

    name, stages, microbatches, ways, *zero = case.split(":")
    start = cpu_seconds()
    options = StepOptions(optimizer="adam", zero=int(zero[0])) if zero else None
    module = strategy_and_scale(parse_file(str(model_path(name))), 8, 0.125, machine,
                                stages=Stages(int(stages), int(microbatches)),
                                one_mesh=True, ways=int(ways), options=options)
    report = train_jax(module, 8, steps=1)
    compiled = report.compiled
    assert isinstance(compiled, PipelineCompiled)
    seconds = cpu_seconds() - start
    passed = "passed" if report.training.passed() else "FAILED"
    rows = []
    for stage in compiled.stages:
        kinds: dict[str, float] = {}
        for collective, runs in stage.collectives:
            kinds[collective.kind] = kinds.get(collective.kind, 0.0) + runs * collective.words()
        total = sum(kinds.values())
        plan = stage.predicted_layer + stage.predicted_edge
        rows.append([case, f"{stage.index} ({stage.devices.start}-{stage.devices.stop - 1})",
                     ", ".join(f"{SHORT[k]} {v:,.0f}" for k, v in sorted(kinds.items())),
                     f"{total:,.0f}", f"{plan:,.0f}", f"{total / plan:.3f}" if plan else "-",
                     passed, f"{seconds:.1f}"])
    for b in compiled.boundaries:
        measured, plan = b.forward + b.backward, b.predicted_forward + b.predicted_backward
        rows.append([case, f"{b.source} -> {b.target} (%{b.value})", f"CP {measured:,.0f}",
                     f"{measured:,.0f}", f"{plan:,.0f}",
                     f"{measured / plan:.3f}" if plan else "-", passed, ""])
    return rows


def main() -> int:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["alexnet:2:4:0", "transformer:2:2:2"],
                        help="MODEL:STAGES:MICROBATCHES:DATA_PARALLEL[:ZERO] (0: searched; "
                        "ZERO: Adam at that ZeRO stage, else SGD)")
    parser.add_argument("--machine", default="pase-default")
    args = parser.parse_args()
    print(f"# {cpus()}; {versions()}", file=sys.stderr)
    rows = [row for case in args.cases for row in case_rows(case, args.machine)]
    print("\n".join(markdown_table(COLUMNS, rows)))
    print("(CPU s: the case's, the JAX child's and pase's reference run included)")
    return 0


if __name__ == "__main__":
    run_main(main)
