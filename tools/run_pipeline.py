"""pase-run's pipeline, one pass per line: strategy, scale, autodiff, SPMD; then it runs.

    module = load_model("models/mlp.dnn")
    pipeline_spec(devices=4, factor=0.125)  # what pase-run --print-pipeline prints:
    # 'pase-search{devices=4},pase-scale{factor=0.125},pase-autodiff,pase-lower-spmd{devices=4}'
    report = train(strategy_and_scale(module, devices=4, factor=0.125), devices=4)

As in Toy's `compiler.transform`, each stage is a pass pipeline spec that
`PassPipeline.parse_spec` turns into passes, so `pase-run --print-pipeline` prints a
spec that `pase-opt model.dnn -p SPEC` replays. The graph with `#pase.config` on every
layer then goes through `pase-autodiff` and `pase-lower-spmd` twice: as it is, on
`devices` workers, and with every layer unsplit, on one worker (the reference). Both
run the same numpy kernels on the same seeded data (`run_check`), which compares them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.shapes import ELEMENTS
from pase.dialect import dist, dnn
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    PIPELINE_ATTR_NAME,
    STAGE_ATTR_NAME,
    STRATEGY_ATTR_NAME,
    ConfigAttr,
    pipeline_of,
    stage_of,
)
from pase.formats.machine_toml import load_machine
from pase.formats.strategy_json import is_pipeline_plan
from pase.frontend import parse_file
from pase.passes.autodiff import AutodiffPass
from pase.passes.lower_spmd import LowerSpmdPass
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.scale import ScalePass, scale_module
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import build_problem, format_bytes
from pase.runtime.executor import DeviceResult, run_device
from pase.runtime.program import Program, program_from_ir
from pase.runtime.workers import run_workers
from pase.tools.run_check import (
    TrainingReport,
    assemble,
    make_data,
    needs_rounding_reference,
    normwise_error,
    predicted_pipeline_words,
    predicted_words,
    relative_error,
    words_rows,
)
from pase.universe import PASE


@dataclass(frozen=True)
class Stages:
    """A pipelined run's plan options (pase-partition-stages): S stages and M
    micro-batches (each an int or "auto") under `schedule`, fitting each device's
    memory (GiB, 0 for no cap)."""

    stages: int | str = 1
    microbatches: int | str = 1
    schedule: str = "1f1b"
    device_memory_gib: float = 0.0


def pipeline_spec(devices: int, factor: float = 1.0, lr: float = 0.01,
                  machine: str = "pase-default", strategy: str = "",
                  data_parallel: bool = False, stages: Stages | None = None) -> str:
    """The `-p` spec of pase-run's passes, from the model to the sharded `dist.program`.

        >>> pipeline_spec(8, factor=0.125, strategy="s.json").split(",")
        ['pase-search{devices=8 strategy="s.json"}', 'pase-scale{factor=0.125}', \
'pase-autodiff', 'pase-lower-spmd{devices=8}']

    With `data_parallel` the strategy (every batch dim split over the devices) is not a
    pass, so the spec starts at pase-scale and needs a model that has its
    configurations already."""
    return ",".join([strategy_spec(devices, factor, machine, strategy, data_parallel,
                                   stages),
                     lowering_spec(devices, lr)]).lstrip(",")


def strategy_spec(devices: int, factor: float = 1.0, machine: str = "pase-default",
                  strategy: str = "", data_parallel: bool = False,
                  stages: Stages | None = None) -> str:
    """The passes that give every layer its configuration (and with `stages`, or a
    pipeline plan file as `strategy`, its pipeline stage), then scale the model."""
    if stages is None and strategy and is_pipeline_plan(strategy):
        stages = Stages()  # a plan file: pase-partition-stages reads it
    passes: list[ModulePass] = [] if data_parallel else [
        PaseSearchPass(devices=devices, machine=machine, strategy=strategy)
        if stages is None else PartitionStagesPass(devices=devices, machine=machine,
                                                   strategy=strategy) if strategy
        else PartitionStagesPass(
            devices=devices, stages=stages.stages, microbatches=stages.microbatches,
            schedule=stages.schedule, device_memory_gib=stages.device_memory_gib,
            machine=machine)]
    return _spec([*passes, ScalePass(factor=factor)])


def lowering_spec(devices: int, lr: float = 0.01) -> str:
    """The passes from a graph with configurations to its `dist.program`."""
    return _spec([AutodiffPass(lr=lr), LowerSpmdPass(devices=devices)])


def _spec(passes: list[ModulePass]) -> str:
    return ",".join(str(_spellable(p.pipeline_pass_spec())) for p in passes)


def _spellable(spec: ArgSpec) -> ArgSpec:
    """`spec` with each float the spec syntax cannot read (it has no exponents: 1e+30)
    as a string, which `PasePass` reads back as that float."""
    return ArgSpec(spec.name, {key: tuple(
        str(value) if isinstance(value, float) and not re.fullmatch(r"-?\d+\.\d+", str(value))
        else value for value in values) for key, values in spec.parameters.items()})


def run_passes(module: ModuleOp, spec: str) -> None:
    """Apply the pass pipeline `spec` (pase-opt's `-p` syntax) to `module`."""
    PassPipeline.parse_spec(PASE.all_passes, spec).apply(Context(), module)


def load_model(path: str) -> ModuleOp:
    """The model's forward graph, parsed and verified like pase-opt does (`.mlir` errors
    are located diagnostics too)."""
    if path.endswith(".dnn"):
        module = parse_file(path)
    else:
        from pase.tools.opt_main import PaseOptMain, verify_located

        driver = PaseOptMain(["--", path])
        try:
            chunks, extension = driver.prepare_input()
        except OSError as error:
            raise Diagnostic(f"cannot read the file: {error.strerror}", path) from None
        try:
            parsed = driver.parse_chunk(chunks[0][0], extension)
        finally:
            chunks[0][0].close()
        assert parsed is not None
        module = parsed
        verify_located(module)
    forward_graph(module, path)
    return module


def load_onnx(path: str, batch: int = 0, loss: str = "cross-entropy"
              ) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """An ONNX model's forward graph (`pase.frontend.onnx` with its `batch` and `loss`
    options), and its initializers' values by param name: `train(initial=...)`."""
    from pase.frontend.onnx import load_model as load_onnx_model

    imported = load_onnx_model(path, batch, loss)
    forward_graph(imported.module, path)
    return imported.module, imported.initial_values


def with_initial(data: dict[str, np.ndarray], initial: dict[str, np.ndarray] | None
                 ) -> dict[str, np.ndarray]:
    """`data` with the `initial` parameter values, if every one fits its param (a model
    shrunk by --scale has other shapes: then its parameters stay the seeded ones)."""
    if not initial or any(name not in data or data[name].shape != array.shape
                          for name, array in initial.items()):
        return data
    return data | {name: array.astype(data[name].dtype) for name, array in initial.items()}


def strategy_and_scale(module: ModuleOp, devices: int, factor: float = 1.0,
                       machine: str = "pase-default", strategy: str = "",
                       data_parallel: bool = False, stages: Stages | None = None
                       ) -> ModuleOp:
    """The model with a configuration on every layer, searched (or loaded from
    `strategy`, or the batch split with `data_parallel`, or with `stages` a pipeline
    plan) at full size, then scaled."""
    if data_parallel:
        module = with_configs(module, build_problem(module, devices,
                                                    load_machine(machine)).data_parallel())
    run_passes(module, strategy_spec(devices, factor, machine, strategy, data_parallel,
                                     stages))
    return module


RUN_COPIES_PER_PROCESS = 2
"""What a training run holds of each forward tensor, per copy of the model: its value and
its gradient (measured: `pase-run` of the Transformer on 2 workers peaks at 4.2 to 4.5
times the bytes of its forward tensors above its baseline, under the 6 this predicts)."""


def run_memory(module: ModuleOp, devices: int, float_type: str | None = None) -> int:
    """An upper bound of the bytes a `train` of `module` allocates: every forward tensor
    (params, inputs, activations) with its gradient, in each of the `devices` workers
    (at most whole, however sharded) and in the one-device reference.

        >>> run_memory(parse_file("models/mlp.dnn"), devices=2) // 1024
        9856
    """
    graph = forward_graph(module)
    total = 0
    for op in graph.body.block.ops:
        for result in op.results:
            shape = dnn.shape_of(result)
            total += shape.num_elements * ELEMENTS[float_type or shape.element].bytes
    return RUN_COPIES_PER_PROCESS * (devices + 1) * total


def check_run_memory(module: ModuleOp, devices: int, factor: float, limit: int,
                     float_type: str | None = None) -> None:
    """Raise `Diagnostic` before a run of `module` (scaled by `factor` already) that
    `run_memory` puts over `limit` bytes, naming the estimate and the largest
    `--scale` (`factor` halved until it fits) whose run would fit."""
    needed = run_memory(module, devices, float_type)
    if needed <= limit:
        return
    smaller = factor
    for _ in range(60):
        smaller /= 2
        if run_memory(scale_module(module, smaller / factor), devices, float_type) <= limit:
            break
    raise Diagnostic(f"training @{forward_graph(module).sym_name.data} on {devices} "
                     f"workers would take about {format_bytes(needed)} (each tensor and its "
                     f"gradient in every worker and the one-device reference), over "
                     f"--memory-gib {limit / (1 << 30):g}; use --scale {smaller:g} or less, "
                     "or raise --memory-gib")


def forward_graph(module: ModuleOp, filename: str = "") -> dnn.GraphOp:
    """The one forward graph of `module` that pase-run can train, or a `Diagnostic` (at
    the offending op where it has a location, else naming `filename`) saying why not.

    pase-run runs pase-autodiff and pase-lower-spmd itself, so it takes the model before
    them. The loss is the first value the graph returns: a floating-point scalar that a
    layer computes (any layer: `softmax_cross_entropy`, `reduce mean ... over [b, c]`,
    an einsum `-> []`, ...). A tensor is not summed silently into a loss: PyTorch's
    `backward()` and pase-autodiff refuse a non-scalar output too, so pase-run asks for
    the reduction to be written in the model.
    """
    programs = [op for op in module.walk() if isinstance(op, dist.ProgramOp)]
    if programs:
        raise at_op(programs[0], "pase-run takes a forward graph, but this is the "
                    f"dist.program @{programs[0].sym_name.data} from pase-lower-spmd; give "
                    "it the model before pase-autodiff", filename)
    graphs = [op for op in module.walk() if isinstance(op, dnn.GraphOp)]
    if len(graphs) != 1:
        raise Diagnostic(f"pase-run runs one dnn.graph, the file has {len(graphs)}",
                         filename)
    graph = graphs[0]
    gradient_ops = [op for op in graph.body.block.ops if dnn.is_gradient(op)]
    if gradient_ops:
        named = [op for op in gradient_ops if isinstance(op, dnn.VjpOp | dnn.SgdOp)]
        kinds = ", ".join(sorted({op.name for op in named or gradient_ops}, reverse=True))
        raise at_op(gradient_ops[0], f"pase-run takes a forward graph, but "
                    f"@{graph.sym_name.data} already has gradient ops ({kinds}) from "
                    "pase-autodiff; give it the model before pase-autodiff", filename)
    if (problem := graph.loss_problem()) is not None:
        raise at_op(graph.body.block.ops.last, problem, filename)  # type: ignore[arg-type]
    return graph


def layer_configs(graph: dnn.GraphOp) -> dict[str, dict[str, int]]:
    """Each layer's configuration, by the names the search uses (`layer_names`)."""
    return {name: (layer.config.splits if layer.config else {})
            for layer, name in graph.layer_names().items()}


def with_configs(module: ModuleOp, configs: dict[str, dict[str, int]] | None) -> ModuleOp:
    """A copy whose layers carry `configs` (None: every layer unsplit, on one device:
    no pipeline either)."""
    copy = module.clone()
    [graph] = [op for op in copy.walk() if isinstance(op, dnn.GraphOp)]
    for layer, name in graph.layer_names().items():
        config = {} if configs is None else configs[name]
        layer.attributes[CONFIG_ATTR_NAME] = ConfigAttr(config)
        if configs is None:
            layer.attributes.pop(STAGE_ATTR_NAME, None)
    graph.attributes.pop(STRATEGY_ATTR_NAME, None)
    if configs is None:
        graph.attributes.pop(PIPELINE_ATTR_NAME, None)
    return copy


def lower(module: ModuleOp, devices: int, lr: float) -> Program:
    """`module` through pase-autodiff and pase-lower-spmd, as a runtime `Program`."""
    lowered = module.clone()
    run_passes(lowered, lowering_spec(devices, lr))
    lowered.verify()
    return program_from_ir(lowered)


def execute(program: Program, data: dict[str, np.ndarray], steps: int, backend: str,
            timeout: float, float_type: str | None = None, record: bool = False
            ) -> tuple[list[DeviceResult], dict[int, dict[str, dict[str, int]]]]:
    results = run_workers(partial(run_device, program=program, data=data, steps=steps,
                                  float_type=float_type, record=record),
                          program.devices, backend=backend, timeout=timeout)
    return list(results), results.counters()


def train(module: ModuleOp, devices: int, steps: int = 1, seed: int = 0, lr: float = 0.01,
          backend: str = "threads", timeout: float = 120.0,
          float_type: str | None = None,
          initial: dict[str, np.ndarray] | None = None,
          record: bool = False) -> TrainingReport:
    """Run `steps` SGD steps sharded (the configurations in `module`) and unsharded;
    `float_type="f64"` runs an f32 model in double precision. Training that overflows
    (too large an `lr`) shows as losses and errors that are not finite, and
    `report.diverged`; it raises no numpy warnings. `initial` gives parameters their
    starting values by name (an ONNX model's initializers); the others are seeded.
    `record` keeps when each device ran each op of the first step (`report.spans`,
    `report.program`), for `pase-run --timeline`."""
    graph = forward_graph(module)
    # Workers silence floating-point warnings themselves (run_device); inf and nan
    # reach the report, which says the training diverged.
    with np.errstate(all="ignore"):
        return _train(module, graph, devices, steps, seed, lr, backend, timeout, float_type,
                      initial, record)


def _train(module: ModuleOp, graph: dnn.GraphOp, devices: int, steps: int, seed: int,
           lr: float, backend: str, timeout: float, float_type: str | None,
           initial: dict[str, np.ndarray] | None = None,
           record: bool = False) -> TrainingReport:
    configs = layer_configs(graph)
    element = float_type or next((op.output.type.shape.element for op in graph.body.block.ops
                                  if isinstance(op, dnn.ParamOp)), "f32")
    data = with_initial(make_data(graph, seed, float_type), initial)
    sharded = lower(with_configs(module, configs), devices, lr)
    reference = lower(with_configs(module, None), 1, lr)
    results, counters = execute(sharded, data, steps, backend, timeout, float_type, record)
    expected, _ = execute(reference, data, steps, backend, timeout, float_type)
    errors = _errors(results, data, expected, data)
    diverged = not all(np.all(np.isfinite(array)) for array in [
        np.asarray(expected[0].losses), *assemble(expected, "grads", data).values(),
        *assemble(expected, "params", data).values()])
    noise = 0.0
    if needs_rounding_reference(element, errors, diverged):
        exact_data = with_initial(make_data(graph, seed, "f64"), initial)
        exact, _ = execute(reference, exact_data, steps, backend, timeout, "f64")
        noise = max(_errors(expected, data, exact, exact_data))
    pipeline = pipeline_of(graph)
    if pipeline is not None and (pipeline.stages.data > 1 or pipeline.microbatches.data > 1):
        predicted = predicted_pipeline_words(graph, configs, load_machine(pipeline.machine.data))
    else:
        predicted = predicted_words(build_problem(graph, devices, pinned=configs), configs)
    rows = words_rows(predicted, counters, steps)
    *loss_errors, gradient_error, parameter_error = errors
    return TrainingReport(graph.sym_name.data, devices, element, _losses(results),
                          expected[0].losses, loss_errors, gradient_error, parameter_error,
                          rows, noise, diverged,
                          spans=[r.spans for r in results] if record else [],
                          program=sharded if record else None)


def _errors(measured: list[DeviceResult], measured_data: dict[str, np.ndarray],
            reference: list[DeviceResult], reference_data: dict[str, np.ndarray]
            ) -> list[float]:
    """`measured` against `reference`: per step the loss's relative error, then the
    normwise errors of the gradients and of the updated parameters."""
    losses = [relative_error(np.asarray(a), np.asarray(b))
              for a, b in zip(_losses(measured), _losses(reference), strict=True)]
    return [*losses, *(normwise_error(assemble(measured, which, measured_data),
                                      assemble(reference, which, reference_data))
                       for which in ("grads", "params"))]


def _losses(results: list[DeviceResult]) -> list[float]:
    """The losses of every step, from a device that holds the loss."""
    return next((r.losses for r in results if r.holds_loss), results[0].losses)


def print_pipeline(module: ModuleOp) -> None:
    """The plan a pipelined run trained: its stages, their devices and layers."""
    graph = forward_graph(module)
    pipeline = pipeline_of(graph)
    if pipeline is None:
        return
    names = graph.layer_names()
    stages_count, micro = pipeline.stages.data, pipeline.microbatches.data
    print(f"pipeline: {stages_count} stage{'s' if stages_count > 1 else ''} x {micro} "
          f"micro-batch{'es' if micro > 1 else ''}, {pipeline.schedule.data}; modelled step "
          f"{pipeline.step.data:.4g} s at full size on {pipeline.machine.data}, bubble "
          f"{pipeline.bubble.data:.3f}")
    stages: dict[int, list[str]] = {}
    groups: dict[int, range] = {}
    for layer in graph.layers:
        stage = stage_of(layer)
        assert stage is not None  # pase-partition-stages put one on every layer
        stages.setdefault(stage.index.data, []).append(names[layer])
        groups[stage.index.data] = stage.device_ids
    for index, layers in sorted(stages.items()):
        devices = groups[index]
        span = layers[0] if len(layers) == 1 else f"{layers[0]} .. {layers[-1]}"
        print(f"  stage {index}: devices {devices.start}-{devices.stop - 1}, "
              f"{len(layers)} layer{'s' if len(layers) > 1 else ''} ({span})")
