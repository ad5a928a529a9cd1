"""`pase-run`: train a model sharded on p workers and check it against one device.

    pase-run models/transformer.dnn --devices 8 --scale 0.125 --check

Searches the strategy of the full-size model (or loads `--strategy FILE`, or takes
`--data-parallel`; `--data-parallel D` searches with every batch split D ways, and with
`--stages S` is a Megatron-style t x p x d plan); with `--scale F` the model then shrinks
and each split factor becomes the largest divisor of the smaller dim that divides it. Then it runs
`--steps` training steps (SGD, or `--optimizer`) through pase-autodiff and pase-lower-spmd on
`--devices` workers and on one device with the same seeded data, and prints per step
the loss and the largest relative errors, and per layer and edge the words moved next to
the cost model's prediction. Errors are normwise: the largest difference over all gradients (or
parameters) relative to the largest value among them. `--check` exits 1 unless the errors
are within tolerance (f64 1e-9; f32 1e-4, or twice the f32 rounding error of the
1-device run itself when a deep model loses more than that to f32 alone) and the words
match the prediction.

The model is the forward graph, before pase-autodiff. Its loss is the first value it
returns: a floating-point scalar computed by any layer, whose gradient is 1. A graph
that returns a tensor there is rejected, naming the value, as pase-autodiff and
PyTorch's `backward()` reject it: the reduction belongs in the model
(`%loss = reduce mean %y over [b, c]`).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import time
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp

from pase.core.diagnostics import escaped
from pase.core.files import deferred_writes, write_atomically
from pase.core.nesting import allow_nesting
from pase.core.numbers import SHOWN_DIGITS, float_literal, read_integer, too_many_gib
from pase.core.usage import UsageParser
from pase.dialect.dnn.seeding import LEARNING_RATES
from pase.dialect.training_options import (
    CHOICES,
    StepOptions,
    TrainingOptionError,
    checked,
    set_training,
    training_of,
)
from pase.formats.strategy_input import (
    SHOWN_NAME,
    STANDARD_INPUT,
    is_standard_input,
    standard_input_strategy,
)
from pase.formats.strategy_json import is_pipeline_plan
from pase.formats.strategy_step import file_step
from pase.passes.strategy import PRESETS, SCHEDULES
from pase.runtime.communicator import BACKENDS
from pase.tools.errors import ToolError, fail, report_errors
from pase.tools.run.check import TrainingReport, check_problems
from pase.tools.run.harness import Backend, check_training
from pase.tools.run.load import (
    Stages,
    check_run_memory,
    forward_graph,
    load_model,
    onnx_inputs_fit,
    pipeline_spec,
    strategy_and_scale,
)
from pase.tools.run.report import print_pipeline, print_report, print_unsplit
from pase.tools.run.runtime import RuntimeBackend
from pase.universe import FRONTENDS

# Each device is a thread (or a Python process) of this machine: past these counts a run
# spends its time starting workers and its memory on their interpreters.
MAX_WORKERS = {"threads": 1024, "processes": 64}

NEGATIVE_NUMBER = re.compile(r"^-(?:\.?\d|inf(?:inity)?$|nan$)", re.IGNORECASE)
"""What argparse takes for a negative number, not a flag (`-1e-3`, `-inf`, `-nan`)."""


def _integer(text: str) -> int:
    """An integer flag's value, at most 2^53 (`pase.core.numbers.read_integer`)."""
    if not re.fullmatch(r"[-+]?[0-9]+", text):
        shown = text if len(text) <= SHOWN_DIGITS else text[:SHOWN_DIGITS] + "..."
        raise argparse.ArgumentTypeError(f"expected an integer, got '{shown}'")
    try:
        return read_integer(text, "the value")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _number(text: str) -> float:
    """A float flag's value: a decimal literal a float holds (`float_literal`: not
    `1_000`, not `1e-400`, which Python's `float` reads as 0); nan and inf are left to
    the flag's own range check."""
    try:
        return float_literal(text)
    except ValueError as error:
        shown = text if len(text) <= SHOWN_DIGITS else text[:SHOWN_DIGITS] + "..."
        raise argparse.ArgumentTypeError(f"expected a number, got '{shown}': {error}") \
            from None


def _count(text: str) -> int | str:
    """A stage or micro-batch count: a positive integer or `auto`."""
    if text == "auto":
        return text
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected auto or a count of at least 1, got {value}")
    return value


def _choice(option: str) -> Callable[[str], str]:
    """The type of a training-option flag: its value if the option takes it."""
    def read(text: str) -> str:
        try:
            return checked(option, text)
        except TrainingOptionError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return read


def training_options(args: argparse.Namespace, module: ModuleOp) -> StepOptions:
    """The step to run: the graph's `pase.training` with the flags given in its place."""
    graph = forward_graph(module)
    return training_of(graph).overridden(optimizer=args.optimizer, precision=args.precision,
                                         recompute=args.recompute, zero=args.zero)


def stages_of(args: argparse.Namespace) -> Stages | None:
    """The pipeline plan options of a run, or None for one stage of pase-search."""
    if args.stages is None and args.microbatches is None:
        return None
    stages = args.stages if args.stages is not None else 1
    micro = args.microbatches if args.microbatches is not None else (
        "auto" if stages == "auto" else 1)
    return Stages(stages, micro, args.schedule or "1f1b", args.device_memory_gib)


_EPILOG = ("the model is a forward graph (before pase-autodiff); its loss is the first "
           "value it returns,\na floating-point scalar that any layer computes "
           "(softmax_cross_entropy, reduce mean,\nan einsum -> [], ...). A tensor there is "
           "an error, not summed silently: reduce it\nin the model.\n\n"
           "example: pase-run models/alexnet.dnn --devices 4 --scale 0.125 --check")


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = UsageParser(
        prog="pase-run", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EPILOG)
    # A value that starts with '-' is a negative number, so that `--lr -1e-3` and `--scale
    # -inf` get their flag's own error: argparse takes only `-1` and `-0.5` for numbers, and
    # anything else for a flag (`expected one argument`). pase-run has no flag `-<digit>`.
    parser._negative_number_matcher = NEGATIVE_NUMBER
    parser.add_argument("model", help="a .dnn model, an .onnx model (its initializers are "
                        "the initial parameters), or .mlir with one dnn.graph; - reads it "
                        "from the standard input (with -f; an .onnx model there has no "
                        "folder, so no external data)")
    parser.add_argument("-f", "--format", choices=tuple(FRONTENDS),
                        help="the model's format, where its name does not end with it (as "
                        "pase-opt -f): needed with -")
    parser.add_argument("--devices", type=_integer, required=True,
                        help="number of workers P (at most 1024 threads, or 64 processes)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--strategy", help="a strategy JSON (pase-search export=); layers it "
                     "does not name are searched. A pipeline plan (pase-partition-stages "
                     "export=) runs as that pipeline; - reads it from the standard input")
    how.add_argument("--data-parallel", nargs="?", const=True, type=_integer, metavar="D",
                     help="alone: split every layer's batch dim over the devices instead of "
                     "searching; with D: split it exactly D ways in every layer and search "
                     "the rest (with --stages S, D ways within each stage: a Megatron-style "
                     "t x p x d layout, t = P/(S D), as pase-partition-stages{data-parallel=D})")
    pipeline = parser.add_argument_group(
        "pipelines (pase-partition-stages: S stages on disjoint device groups, M micro-batches)")
    pipeline.add_argument("--stages", type=_count,
                          help="pipeline stages S (a divisor of --devices) or auto")
    pipeline.add_argument("--microbatches", type=_count,
                          help="micro-batches M per step (a divisor of the batch) or auto; "
                          "default 1 with --stages, auto with --stages auto")
    pipeline.add_argument("--schedule", choices=SCHEDULES,
                          help="pipeline schedule (default 1f1b)")
    pipeline.add_argument("--device-memory-gib", type=_number, default=0.0,
                          help="each device's memory at full size, in GiB: the plan must "
                          "fit (default 0: no cap)")
    pipeline.add_argument("--timeline", metavar="FILE",
                          help="draw the measured per-device timeline of the first step next "
                          "to the modelled one, to FILE.svg or FILE.png (needs pip install "
                          "'pase[plot]')")
    parser.add_argument("--machine", default="pase-default",
                        help=f"machine for the search: {', '.join(PRESETS)} or a .toml file")
    parser.add_argument("--steps", type=_integer, default=1,
                        help="training steps (default 1)")
    parser.add_argument("--seed", type=_integer, default=0, help="seed of the data (default 0)")
    parser.add_argument("--scale", type=_number, default=1.0,
                        help="shrink every dimension by this factor, e.g. 0.125")
    parser.add_argument("--memory-gib", type=_number, default=4.0,
                        help="refuse a run estimated to take more memory than this, in GiB, "
                        "and name the --scale that fits (default 4)")
    parser.add_argument("--lr", type=_number,
                        help="learning rate (default: the optimizer's, "
                        + ", ".join(f"{k} {v}" for k, v in LEARNING_RATES.items()) + ")")
    step = parser.add_argument_group(
        "the training step (default: the plan's pase.training, else sgd fp32 none 0)")
    step.add_argument("--optimizer", type=_choice("optimizer"),
                      help="sgd, momentum (beta 0.9) or adam (0.9, 0.999, 1e-8)")
    step.add_argument("--precision", type=_choice("precision"),
                      help="fp32, bf16 or fp16 compute and activations (fp32 master weights, "
                      "optimizer state and loss)")
    step.add_argument("--recompute", type=_choice("recompute"),
                      help="none, full or auto (the plan's pase.recompute layers)")
    step.add_argument("--zero", type=_choice("zero"),
                      help="ZeRO stage 0, 1, 2, 3 or auto (the plan's pase.zero per layer)")
    parser.add_argument("--backend", choices=BACKENDS, default="threads",
                        help="workers are threads (default) or processes")
    parser.add_argument("--timeout", type=_number,
                        help="seconds a collective may wait (default 120); with --engine jax, "
                        "seconds the JAX program may run, compile included (default 600)")
    parser.add_argument("--f64", action="store_true",
                        help="run in double precision (tolerance 1e-9 instead of 1e-4)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless results match and words equal the prediction")
    parser.add_argument("--engine", choices=("pase", "jax"), default="pase",
                        help="run on pase's runtime (default) or as the -t jax program on P "
                        "XLA devices (CPU devices in a child process; needs pip install "
                        "'pase[jax]'), a pipeline too with --stages")
    parser.add_argument("--dump-mlir", metavar="FILE",
                        help="with --engine jax: write the lowered StableHLO module to FILE")
    parser.add_argument("--jax-log", metavar="FILE",
                        help="with --engine jax: if the JAX program fails, write its command, "
                        "output and source to FILE (otherwise nothing of it is kept)")
    onnx = parser.add_argument_group("ONNX models (pase-opt: -f 'onnx{batch=N loss=mean}')")
    onnx.add_argument("--batch", type=_integer,
                      help="the batch size: the size of the inputs' symbolic batch axis "
                      "(axis 0), or a new size for a static one where the graph does not "
                      "fix it")
    onnx.add_argument("--loss", choices=("cross-entropy", "mean"),
                      help="the training loss of a model whose output is not a scalar: "
                      "softmax cross-entropy over its last axis against new labels "
                      "(default), or the output's mean")
    parser.add_argument("--print-pipeline", action="store_true",
                        help="print the pass pipeline (pase-opt's -p spec) and exit")
    args = parser.parse_args(argv)
    _validate(parser, args)
    return args


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flags that do not go together or are out of range, one line each, and
    default `--timeout` by engine."""
    if args.timeout is None:
        args.timeout = 600.0 if args.engine == "jax" else 120.0
    workers = MAX_WORKERS[args.backend]
    planned = args.stages is not None or args.microbatches is not None
    ways = args.data_parallel if isinstance(args.data_parallel, int) else 0
    pipelined = planned or (args.strategy is not None and is_pipeline_plan(args.strategy))
    for bad, message in [
            (args.devices < 1, "--devices must be at least 1"),
            (args.model == STANDARD_INPUT and is_standard_input(args.strategy or ""),
             f"--strategy {args.strategy} and the model - both read the standard input; "
             "give one of them as a file"),
            (planned and (args.strategy is not None or args.data_parallel is True),
             "--stages and --microbatches plan their own strategy; drop --strategy and "
             "--data-parallel (or give --data-parallel D: the batch split D ways in each "
             "stage)"),
            (args.data_parallel not in (None, True) and ways < 1,
             f"--data-parallel D must be at least 1, got {args.data_parallel}"),
            (undivided(args) is not None, str(undivided(args))),
            (not (math.isfinite(args.device_memory_gib) and args.device_memory_gib >= 0),
             f"--device-memory-gib must be a finite number at least 0, got "
             f"{args.device_memory_gib}"),
            *((message is not None, f"--{message}") for message in (
                too_many_gib("device-memory-gib", args.device_memory_gib),
                too_many_gib("memory-gib", args.memory_gib))),
            (args.device_memory_gib > 0 and not planned,
             "--device-memory-gib caps a pipeline plan; give --stages (auto or S)"),
            (args.schedule is not None and not planned,
             "--schedule orders a pipeline plan's micro-batches; give --stages (auto or S)"),
            ((args.batch is not None or args.loss is not None)
             and (args.format or os.path.splitext(args.model)[1][1:]) != "onnx",
             "--batch and --loss are options of the ONNX frontend; give them with an .onnx "
             "model"),
            (missing_peak(args.precision, args.machine) is not None,
             str(missing_peak(args.precision, args.machine))),
            (args.batch is not None and args.batch < 1,
             f"--batch must be at least 1, got {args.batch}"),
            (args.timeline is not None and not pipelined,
             "--timeline draws a pipeline; give --stages (and --microbatches)"),
            (args.timeline is not None and not args.timeline.endswith((".svg", ".png")),
             f"--timeline writes .svg or .png, got '{args.timeline}'"),
            (args.dump_mlir is not None and args.engine != "jax",
             "--dump-mlir needs --engine jax"),
            (args.jax_log is not None and args.engine != "jax", "--jax-log needs --engine jax"),
            (args.dump_mlir is not None and pipelined, "--dump-mlir writes one program; a "
             "pipeline compiles several per stage: drop --dump-mlir"),
            (args.timeline is not None and args.engine == "jax",
             "--timeline draws pase's runtime: drop --engine jax"),
            *((unwritable(name) is not None, f"{flag} {escaped(name)}: {unwritable(name)}")
              for flag, name in (("--timeline", args.timeline), ("--dump-mlir", args.dump_mlir),
                                 ("--jax-log", args.jax_log))
              if name),
            *((True, f"{flag} {escaped(name)} is the {what}: pase-run would overwrite it")
              for flag, name in (("--timeline", args.timeline), ("--dump-mlir", args.dump_mlir),
                                 ("--jax-log", args.jax_log))
              for what, given in (("model", args.model), ("strategy file", args.strategy))
              if name and given not in (None, "-") and same_file(name, given)),
            (args.devices > workers, f"--devices {args.devices} is more than the "
             f"{args.backend} backend runs on one machine (at most {workers})"),
            (not 0 < args.scale <= 1, f"--scale must be in (0, 1], got {args.scale}"),
            (not (math.isfinite(args.memory_gib) and args.memory_gib > 0),
             f"--memory-gib must be a finite number above 0, got {args.memory_gib}"),
            (args.steps < 1, "--steps must be at least 1"),
            (args.seed < 0, f"--seed must be at least 0, got {args.seed}"),
            (args.lr is not None and not (math.isfinite(args.lr) and args.lr >= 0),
             f"--lr must be a finite number at least 0, got {args.lr}"),
            (not (math.isfinite(args.timeout) and args.timeout > 0),
             f"--timeout must be a finite number of seconds above 0, got {args.timeout}")]:
        if bad:
            parser.error(message)


def take_file_step(args: argparse.Namespace) -> None:
    """With `--strategy FILE`, the step options the flags do not give from the file's
    "training" (`strategy_step.file_step`; a flag that contradicts it is an error), and
    the file's precision checked against the machine's peaks as `--precision` is."""
    if args.strategy is None:
        return
    step = file_step(args.strategy, {option: getattr(args, option) for option in CHOICES})
    shown = SHOWN_NAME if args.strategy == STANDARD_INPUT else args.strategy
    if args.precision is None and (missing := missing_peak(
            step["precision"], args.machine, f"{shown} was searched for precision")):
        raise ToolError(missing)
    for option, value in step.items():
        setattr(args, option, value)


def undivided(args: argparse.Namespace) -> str | None:
    """Why `--data-parallel D` cannot split the batch D ways on the devices (of each
    stage, with `--stages S`), in the flags' words; None if it can."""
    ways = data_parallel_ways(args)
    if ways < 1:
        return None
    if args.devices % ways:
        return f"--data-parallel {ways} does not divide --devices {args.devices}"
    stages = args.stages
    if isinstance(stages, int) and stages > 0 and args.devices % stages == 0 and \
            (args.devices // stages) % ways:
        return (f"--data-parallel {ways} does not divide the {args.devices // stages} "
                f"devices of each of --stages {stages}")
    return None


def data_parallel_ways(args: argparse.Namespace) -> int:
    """`--data-parallel D`'s D: the ways every layer's batch dim is split (0: not given,
    or `--data-parallel` alone, which splits it over all devices without a search)."""
    given = args.data_parallel
    return 0 if given is None or isinstance(given, bool) else given


def missing_peak(precision: str | None, machine: str, source: str = "--precision"
                 ) -> str | None:
    """Why `--precision` (or the `source` that gave it) cannot be planned on the preset
    `machine` (None: it can, or `machine` is a file, which the search reads and checks).

    >>> missing_peak("bf16", "a100-nvlink") is None, missing_peak("fp32", "pase-default")
    (True, None)
    >>> print(missing_peak("bf16", "v100-nvlink"))
    --precision bf16: the search plans for --machine v100-nvlink, which has no bf16 peak; \
give --machine with one (a100-nvlink, h100-nvlink, a100-80gb-dgx, h100-80gb-dgx, or a \
machine file with bf16_flops)
    """
    if precision not in ("bf16", "fp16") or machine not in PRESETS or \
            PRESETS[machine].peak_or_zero(precision):
        return None
    having = ", ".join(name for name, preset in PRESETS.items()
                       if preset.peak_or_zero(precision))
    return (f"{source} {precision}: the search plans for --machine {machine}, which has "
            f"no {precision} peak; give --machine with one ({having}, or a machine file "
            f"with {precision}_flops)")


def same_file(output: str, given: str) -> bool:
    """Whether the output path `output` names the file `given` (a link to it too)."""
    try:
        return os.path.samefile(output, given)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(output) == os.path.realpath(given)


def unwritable(path: str) -> str | None:
    """Why an output file cannot be written, known before the run: an existing folder
    of that name, or a folder to put it in that does not exist (None: it may be).

    >>> unwritable("."), unwritable("no/such/folder/t.svg"), unwritable("t.svg")
    ('it is a folder', 'its folder no/such/folder does not exist', None)
    """
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        return "it is a folder"
    if folder and not os.path.isdir(folder):
        return f"its folder {folder} does not exist"
    return None


def main(argv: Sequence[str] | None = None) -> None:
    # `--strategy -` reads the standard input once, however often the run reads the file.
    with standard_input_strategy():
        _main(argv)


def _main(argv: Sequence[str] | None) -> None:
    args = _arguments(argv)
    allow_nesting()
    # Every file pase-run writes (--timeline, --dump-mlir) waits for the run to succeed.
    with report_errors("pase-run"), deferred_writes():
        take_file_step(args)
        stages = stages_of(args)
        given = StepOptions().overridden(optimizer=args.optimizer, precision=args.precision,
                                         recompute=args.recompute, zero=args.zero)
        lr = args.lr if args.lr is not None else LEARNING_RATES[given.optimizer]
        # The JAX program runs a strategy on one mesh: search only the grids it holds.
        one_mesh = args.engine == "jax"
        everywhere = args.data_parallel is True  # (the batch over all devices, no search)
        ways = data_parallel_ways(args)
        spec = pipeline_spec(args.devices, args.scale, lr, args.machine, args.strategy or "",
                             everywhere, stages, given, one_mesh, ways)
        if args.print_pipeline:
            print(spec)
            return
        float_type = "f64" if args.f64 else None
        limit = int(args.memory_gib * (1 << 30))
        # An ONNX model whose inputs alone are over the memory budget is refused before
        # its import.
        inputs_fit = onnx_inputs_fit(args.devices, limit, float_type) \
            if args.scale == 1 else None
        model, initial = load_model(args.model, args.batch or 0,
                                    args.loss or "cross-entropy", inputs_fit, limit,
                                    args.format or "")
        module = strategy_and_scale(model, args.devices, args.scale,
                                    args.machine, args.strategy or "", everywhere,
                                    stages, given, one_mesh, ways)
        options = training_options(args, module)
        set_training(forward_graph(module), options)
        if args.lr is None:
            lr = LEARNING_RATES[options.optimizer]
        check_run_memory(module, args.devices, args.scale, limit, float_type)
        start = time.perf_counter()
        backend: Backend
        if args.engine == "jax":
            from pase.tools.run.jax import JaxBackend

            backend = JaxBackend(args.devices, args.timeout, args.jax_log)
        else:
            backend = RuntimeBackend(args.devices, args.backend, args.timeout,
                                     record=args.timeline is not None)
        reference = RuntimeBackend(1, args.backend, args.timeout, words=False)
        report, _ = check_training(module, backend, reference, args.steps, args.seed,
                                   lr, float_type, initial)
        _print(args, module, report, backend, time.perf_counter() - start)


def _print(args: argparse.Namespace, module: ModuleOp, report: TrainingReport,
           backend: Backend, seconds: float) -> None:
    """Print the run's report and write its files; with `--check`, a run that fails it
    writes no file (`--timeline`, `--dump-mlir`) and exits 1."""
    problems = check_problems(report) if args.check else []
    files = [] if problems else [name for name in (args.timeline, args.dump_mlir) if name]
    if args.engine == "jax":
        from pase.core.shapes import ELEMENTS
        from pase.tools.run.jax import JaxBackend, JaxReport
        from pase.tools.run.jax_pipeline import PipelineCompiled, print_pipeline_collectives
        from pase.tools.run.report import print_collectives

        assert isinstance(backend, JaxBackend)
        assert backend.compiled is not None
        print_report(report, seconds, engine="JAX")
        if isinstance(backend.compiled, PipelineCompiled):
            print_pipeline(module)
            # (words of the run's element: bf16/fp16 activations are 2 bytes)
            print_pipeline_collectives(backend.compiled, 2 if report.element in (
                "bf16", "fp16") else ELEMENTS[report.element].bytes)
        else:
            print_collectives(JaxReport(report, backend.compiled))
        if args.dump_mlir in files:
            write_atomically(args.dump_mlir, backend.compiled.stablehlo)
    else:
        print_report(report, seconds)
        print_unsplit(module)
        print_pipeline(module)
        if args.timeline in files:
            from pase.tools.run.timeline import draw_timeline  # (matplotlib: an extra)

            draw_timeline(args.timeline, module, report, args.scale)
    if problems:
        unwritten = [name for name in (args.timeline, args.dump_mlir) if name]
        fail("check failed: " + "; ".join(problems) + (
            f" (so {' and '.join(unwritten)} {'was' if len(unwritten) == 1 else 'were'} "
            "not written)" if unwritten else ""))
    if args.check:
        print("check passed")
