"""pase-run's input: the model through its frontend, and its passes, one pass per line.

    module, initial = load_model("models/mlp.dnn")
    pipeline_spec(devices=4, factor=0.125)  # what pase-run --print-pipeline prints:
    # 'pase-search{devices=4},pase-scale{factor=0.125},'
    # 'pase-autodiff{lr=0.03 selected_rates=true},'
    # 'pase-lower-spmd{devices=4}'
    report = train(strategy_and_scale(module, devices=4, factor=0.125), devices=4)

As in Toy's `compiler.transform`, each stage is a pass pipeline spec that
`PassPipeline.parse_spec` turns into passes, so `pase-run --print-pipeline` prints a
spec that `pase-opt model.dnn -p SPEC` replays. The graph with `#pase.config` on every
layer then goes through `pase-autodiff` and `pase-lower-spmd` twice: as it is, on
`devices` workers, and with every layer unsplit, on one worker (the reference). Both
run the same numpy kernels on the same seeded data (`check.make_data`), and
`harness.check_training` compares them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils.arg_spec import ArgSpec

from pase.core.diagnostics import Diagnostic, at_op, escaped
from pase.core.files import decode_text, note_input, read_bounded
from pase.core.shapes import ELEMENTS, MAX_ELEMENTS, MAX_RANK
from pase.dialect import dist, dnn
from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    PIPELINE_ATTR_NAME,
    STAGE_ATTR_NAME,
    STRATEGY_ATTR_NAME,
    ConfigAttr,
)
from pase.dialect.training_options import StepOptions
from pase.formats.machine_toml import load_machine
from pase.formats.strategy_json import is_pipeline_plan
from pase.frontend.mlir import verify_located
from pase.passes.autodiff import AutodiffPass
from pase.passes.lower_spmd import LowerSpmdPass
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.scale import ScaleError, ScalePass, scale_module
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import build_problem, over_gib
from pase.tools.errors import ToolError
from pase.universe import FRONTENDS, PASE


@dataclass(frozen=True)
class Stages:
    """A pipelined run's plan options (pase-partition-stages): S stages and M
    micro-batches (each an int or "auto") under `schedule`, fitting each device's
    memory (GiB, 0 for no cap)."""

    stages: int | str = 1
    microbatches: int | str = 1
    schedule: str = "1f1b"
    device_memory_gib: float = 0.0


def pipeline_spec(devices: int, factor: float = 1.0, lr: float = LEARNING_RATE,
                  machine: str = "pase-default", strategy: str = "",
                  data_parallel: bool = False, stages: Stages | None = None,
                  options: StepOptions | None = None, one_mesh: bool = False,
                  ways: int = 0) -> str:
    """The `-p` spec of pase-run's passes, from the model to the sharded `dist.program`.

        >>> pipeline_spec(8, factor=0.125, strategy="s.json").split(",")
        ['pase-search{devices=8 strategy="s.json"}', 'pase-scale{factor=0.125}', \
'pase-autodiff{lr=0.03 selected_rates=true}', 'pase-lower-spmd{devices=8}']

    With `data_parallel` the strategy (every batch dim split over the devices) is not a
    pass, so the spec starts at pase-scale and needs a model that has its
    configurations already."""
    optimizer = options.optimizer if options is not None and options.optimizer != "sgd" \
        else ""
    return ",".join([strategy_spec(devices, factor, machine, strategy, data_parallel,
                                   stages, options, one_mesh, ways),
                     lowering_spec(devices, lr, optimizer)]).lstrip(",")


def search_options(pass_class: type[ModulePass], options: StepOptions | None
                   ) -> dict[str, Any]:
    """The training options that differ from their defaults, for a search pass that has
    them (`pase-search` and `pase-partition-stages` take optimizer, precision, recompute
    and zero), each as the type of the pass's own default.

        >>> search_options(ScalePass, StepOptions(optimizer="adam"))
        {}
        >>> search_options(AutodiffPass, StepOptions(optimizer="adam", zero=1))
        {'optimizer': 'adam'}
    """
    if options is None:
        return {}
    fields: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(pass_class)}  # type: ignore[arg-type]
    given: dict[str, Any] = {}
    for name in ("optimizer", "precision", "recompute", "zero"):
        value = getattr(options, name)
        if name in fields and value != getattr(StepOptions(), name):
            default = fields[name]
            try:
                given[name] = (type(default)(value) if isinstance(default, str | int)
                               else value)
            except ValueError:
                given[name] = str(value)
    return given


def strategy_spec(devices: int, factor: float = 1.0, machine: str = "pase-default",
                  strategy: str = "", data_parallel: bool = False,
                  stages: Stages | None = None, options: StepOptions | None = None,
                  one_mesh: bool = False, ways: int = 0) -> str:
    """The passes that give every layer its configuration (and with `stages`, or a
    pipeline plan file as `strategy`, its pipeline stage), then scale the model.
    `one_mesh`: search only the grids one device mesh holds (`--engine jax`); `ways`:
    every layer's batch dim split exactly that many ways (the passes' `data-parallel`,
    0: searched)."""
    if stages is None and strategy and is_pipeline_plan(strategy):
        stages = Stages()  # a plan file: pase-partition-stages reads it
    mesh: dict[str, Any] = {"one_mesh": True} if one_mesh else {}
    mesh |= {"data_parallel": ways} if ways else {}
    searched = search_options(PaseSearchPass, options) | mesh
    partitioned = search_options(PartitionStagesPass, options) | mesh
    passes: list[ModulePass] = [] if data_parallel else [
        PaseSearchPass(devices=devices, machine=machine, strategy=strategy, **searched)
        if stages is None else PartitionStagesPass(devices=devices, machine=machine,
                                                   strategy=strategy, **partitioned)
        if strategy else PartitionStagesPass(
            devices=devices, stages=stages.stages, microbatches=stages.microbatches,
            schedule=stages.schedule, device_memory_gib=stages.device_memory_gib,
            machine=machine, **partitioned)]
    return _spec([*passes, ScalePass(factor=factor)])


def lowering_spec(devices: int, lr: float = LEARNING_RATE, optimizer: str = "") -> str:
    """The passes from a graph with configurations to its `dist.program` (`optimizer`
    "": the graph's `pase.training`, else sgd)."""
    return _spec([AutodiffPass(lr=lr, optimizer=optimizer, selected_rates=True),
                  LowerSpmdPass(devices=devices)])


def _spec(passes: list[ModulePass]) -> str:
    return ",".join(str(_spellable(p.pipeline_pass_spec())) for p in passes)


def _spellable(spec: ArgSpec) -> ArgSpec:
    """`spec` with each float the spec syntax cannot read (it has no exponents: 1e+30)
    as a string, which `PasePass` reads back as that float, and each string (a file's
    path) with the escapes of the spec syntax's string literals for the characters it
    cannot hold as they are (`"`, `\\`, line breaks: `--strategy 'a"b.json'`)."""
    return ArgSpec(spec.name, {key: tuple(
        str(value) if isinstance(value, float) and not re.fullmatch(r"-?\d+\.\d+", str(value))
        else spec_string(value) if isinstance(value, str) else value
        for value in values) for key, values in spec.parameters.items()})


SPEC_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}
"""xDSL's pass-pipeline string literals: these characters only as escapes."""


def spec_string(value: str) -> str:
    r"""`value` as the body of a pass option's string literal; a `ToolError` for a carriage
    return, form feed or vertical tab, which such a literal holds neither as it is nor as
    an escape xDSL reads back.

        >>> print(spec_string('a"b\\c\nd'))
        a\"b\\c\nd
    """
    if any(char in value for char in "\r\f\v"):
        raise ToolError(f"the file name {escaped(value)} holds a carriage return, form feed "
                        "or vertical tab, which pase's pass options cannot hold; rename the "
                        "file")
    return "".join(SPEC_ESCAPES.get(char, char) for char in value)


def run_passes(module: ModuleOp, spec: str) -> None:
    """Apply the pass pipeline `spec` (pase-opt's `-p` syntax) to `module`."""
    PassPipeline.parse_spec(PASE.all_passes, spec).apply(Context(), module)


def load_model(path: str, batch: int = 0, loss: str = "cross-entropy",
               inputs_fit: Callable[[Any], None] | None = None,
               memory_limit: int = 4 << 30, model_format: str = ""
               ) -> tuple[ModuleOp, dict[str, np.ndarray] | None]:
    """The model's forward graph, read by the frontend of `model_format` or else of its
    file extension (`pase.universe.FRONTENDS`: `.dnn`, `.onnx`, `.mlir`; `-` is the
    standard input, whose format `model_format` names) and verified as pase-opt does
    (`.mlir` errors are located diagnostics too), and an ONNX model's initializer values
    by param name (None for the other formats); `batch`, `loss`, `inputs_fit` and
    `memory_limit` (bytes of the model's file and external data) are the ONNX frontend's
    options."""
    stdin = path == "-"
    name = "stdin" if stdin else path  # (as pase-opt names it)
    extension = model_format or os.path.splitext(path)[1].lstrip(".")
    if stdin and not model_format:
        raise Diagnostic("cannot tell the format of the standard input; give -f dnn (or "
                         "mlir, onnx)", name)
    if extension not in FRONTENDS:
        raise Diagnostic(f"pase-run reads .dnn, .onnx and .mlir models, not '.{extension}'"
                         if extension else "pase-run reads .dnn, .onnx and .mlir models; "
                         "this file has no extension (give -f dnn, mlir or onnx)", path)
    initial = None
    note_input(path)  # no output of the run may replace it
    if extension == "onnx":
        # (The frontend's own reader: `OnnxFrontend.parse` keeps only the module, and
        # pase-run starts from the model's initializers.)
        from pase.frontend.onnx import load_model as load_onnx_model

        imported = load_onnx_model(path, batch, loss, inputs_fit, memory_limit)
        module, initial = imported.module, imported.initial_values
        for param, array in initial.items():
            count = int(np.sum(~np.isfinite(array)))
            if count:
                raise Diagnostic(f"initializer '{param}' holds {count:,} "
                                 f"{'value' if count == 1 else 'values'} that "
                                 f"{'is' if count == 1 else 'are'} not finite (inf or nan); "
                                 "pase-run trains from finite weights", name)
    else:
        try:
            with sys.stdin.buffer if stdin else open(path, "rb") as stream:
                data = read_bounded(stream, name, "model")
        except OSError as error:
            raise Diagnostic(f"cannot read the file: {error.strerror}", name) from None
        text = decode_text(data, name, "file" if extension == "dnn" else "input")
        module = FRONTENDS[extension]()().parse(_context(), BytesIO(text.encode()), name)
        if extension == "mlir":
            verify_located(module)
    forward_graph(module, name)
    return module, initial


def _context() -> Context:
    """A context with every dialect of xDSL's multiverse (pase's and xDSL's own), as
    pase-opt has."""
    context = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        context.register_dialect(name, factory)
    return context


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
                       data_parallel: bool = False, stages: Stages | None = None,
                       options: StepOptions | None = None, one_mesh: bool = False,
                       ways: int = 0) -> ModuleOp:
    """The model with a configuration on every layer, searched (or loaded from
    `strategy`, or the batch split with `data_parallel`, or with `stages` a pipeline
    plan) at full size, then scaled; `one_mesh` and `ways` as for `strategy_spec`."""
    if data_parallel:
        module = with_configs(module, build_problem(module, devices,
                                                    load_machine(machine)).data_parallel())
    run_passes(module, strategy_spec(devices, factor, machine, strategy, data_parallel,
                                     stages, options, one_mesh, ways))
    return module


RUN_COPIES_PER_PROCESS = 2
"""What a training run holds of each forward tensor, per copy of the model: its value and
its gradient (measured: `pase-run` of the Transformer on 2 workers peaks at 4.2 to 4.5
times the bytes of its forward tensors above its baseline, under the 6 this predicts)."""


def run_memory(module: ModuleOp, devices: int, float_type: str | None = None) -> int:
    """An upper bound of the bytes a `train` of `module` allocates: every forward tensor
    (params, inputs, activations) with its gradient, in each of the `devices` workers
    (at most whole, however sharded) and in the one-device reference.

        >>> run_memory(load_model("models/mlp.dnn")[0], devices=2) // 1024
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
    fitting, least, least_scale = _fitting_scale(module, devices, factor, limit, float_type)
    shown, limit_gib = over_gib(needed, limit, 3)
    if fitting is None:
        advice = (f"no --scale fits: the least memory a run takes is about {least:,} bytes "
                  f"(at --scale {least_scale:g}); give --memory-gib "
                  f"{over_gib(least, limit, 3)[0]} or more")
    else:
        advice = f"use --scale {fitting:g} or less, or raise --memory-gib"
    raise ToolError(f"training @{forward_graph(module).sym_name.data} on {devices} "
                     f"workers would take about {shown} GiB (each tensor and its "
                     f"gradient in every worker and the one-device reference), over "
                     f"--memory-gib {limit_gib}; {advice}")


def _fitting_scale(module: ModuleOp, devices: int, factor: float, limit: int,
                   float_type: str | None) -> tuple[float | None, int, float]:
    """The largest `factor / 2**k` whose run fits `limit` bytes (None when none does), and
    the least run memory met on the way with its scale. (Scaling is not monotone: a dim
    too small to keep its place returns to a floor.) Halving stops once three halvings
    in a row leave the memory as it was (every dim at its floor) or the model cannot
    shrink further."""
    smaller, least, least_scale = factor, run_memory(module, devices, float_type), factor
    previous, same = least, 0
    for _ in range(60):
        smaller /= 2
        try:
            needed = run_memory(scale_module(module, smaller / factor), devices, float_type)
        except ScaleError:
            break
        if needed <= limit:
            return smaller, needed, smaller
        if needed < least:
            least, least_scale = needed, smaller
        same = same + 1 if needed == previous else 0
        previous = needed
        if same == 3:
            break
    return None, least, least_scale


def onnx_inputs_fit(devices: int, limit: int, float_type: str | None = None
                    ) -> Callable[[Any], None]:
    """A check of a decoded ONNX model (`frontend.onnx.InputsCheck`) that refuses, before
    its import, a model whose graph inputs alone put `run_memory` over `limit` bytes: each
    input a node reads, at its declared size (a symbolic batch counted 1) and at least a
    byte an element (8 with `float_type` f64), with its gradient in every worker and the
    reference. Inputs over pase's limits of size and rank are left for the importer."""
    def check(model: Any) -> None:
        read = {name for node in model.graph.node for name in node.input}
        weights = {init.name for init in model.graph.initializer}
        shapes = [[dim.dim_value or 1 for dim in value.type.tensor_type.shape.dim]
                  for value in model.graph.input
                  if value.name in read and value.name not in weights]
        counts = [math.prod(shape) for shape in shapes]
        if any(count > MAX_ELEMENTS for count in counts) or \
                any(len(shape) > MAX_RANK for shape in shapes):
            return
        least = RUN_COPIES_PER_PROCESS * (devices + 1) * sum(counts) * (
            8 if float_type == "f64" else 1)
        if least > limit:
            shown, limit_gib = over_gib(least, limit, 3)
            raise ToolError(f"training on {devices} workers would take {shown} GiB or "
                             "more for the model's inputs alone (each "
                             "input and its gradient in every worker and the one-device "
                             f"reference), over --memory-gib {limit_gib}; use a "
                             "--scale below 1 or raise --memory-gib")
    return check


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
        named = [op for op in gradient_ops if isinstance(op, dnn.VjpOp | dnn.SgdOp | dnn.UpdateOp)]
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
