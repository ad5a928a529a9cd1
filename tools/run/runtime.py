"""pase's runtime as a pase-run backend: pase-autodiff and pase-lower-spmd, then the
`dist.program` on P workers (threads or processes), counting the words each receives.

    report = train(strategy_and_scale(load_model("models/mlp.dnn")[0], 4, 0.125), 4)

The words measured are joined, per layer and edge tag, with the cost model's prediction
(`pase.passes.strategy.predicted_words`, or `predicted_pipeline_words` for a pipelined
plan), which `pase-run --check` compares.
"""

from __future__ import annotations

from collections import Counter
from functools import partial

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from pase.dialect import dnn
from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.dialect.pase import pipeline_of, stage_of
from pase.dialect.training_options import (
    StepOptions,
    TrainingOptionError,
    recomputed,
    training_of,
)
from pase.formats.machine_toml import load_machine
from pase.passes.strategy import (
    Words,
    build_problem,
    predicted_pipeline_words,
    predicted_words,
    read_graph,
)
from pase.runtime.executor import DeviceResult, run_device, with_optimizer_states
from pase.runtime.program import Program, program_from_ir
from pase.runtime.workers import run_workers
from pase.tools.errors import ToolError
from pase.tools.run.check import TrainingReport, assemble, words_rows
from pase.tools.run.harness import Trained, check_training
from pase.tools.run.load import (
    forward_graph,
    layer_configs,
    lowering_spec,
    run_passes,
    with_configs,
)


def lower(module: ModuleOp, devices: int, lr: float) -> Program:
    """`module` through pase-autodiff and pase-lower-spmd, as a runtime `Program`."""
    lowered = module.clone()
    run_passes(lowered, lowering_spec(devices, lr))
    lowered.verify()
    return program_from_ir(lowered)


def execute(program: Program, data: dict[str, np.ndarray], steps: int, backend: str,
            timeout: float, float_type: str | None = None, record: bool = False,
            precision: str = "fp32", recompute: frozenset[str] = frozenset()
            ) -> tuple[list[DeviceResult], dict[int, dict[str, dict[str, int]]]]:
    """Run `program` for `steps` steps on its devices; their results and word counters."""
    results = run_workers(partial(run_device, program=program, data=data, steps=steps,
                                  float_type=float_type, record=record,
                                  precision=precision, recompute=recompute),
                          program.devices, backend=backend, timeout=timeout)
    return list(results), results.counters()


def predictions(graph: dnn.GraphOp, devices: int) -> Words:
    """The cost model's words of `graph`'s plan: one step on `devices`, or a pipeline's
    (`pase.stage` on every layer, `pase.pipeline`) with its stages and micro-batches."""
    configs = layer_configs(graph)
    pipeline = pipeline_of(graph)
    if pipeline is None or (pipeline.stages.data == 1 and pipeline.microbatches.data == 1):
        return predicted_words(build_problem(graph, devices, pinned=configs), configs)
    stages: dict[str, tuple[int, int]] = {}
    for layer, name in graph.layer_names().items():
        stage = stage_of(layer)
        assert stage is not None  # pase-partition-stages put one on every layer
        stages[name] = (stage.index.data, stage.devices.data)
    data = read_graph(graph)
    assert data.batch is not None
    return predicted_pipeline_words(data.layers, data.edges, data.batch, configs, stages,
                                    pipeline.microbatches.data,
                                    load_machine(pipeline.machine.data))


def ring_all_reduces(program: Program, graph: dnn.GraphOp) -> Counter[str]:
    """Per tag, the ring all-reduces one step of `program` runs: its `all_reduce` steps,
    and those the kernels of layers with statistics run themselves (a split batch norm's
    mean and variance, forward and backward: `IterationSpace.statistics`). Each may move
    up to `check.RING_SLACK` words more than the cost model's average."""
    statistics = {layer.name: layer.space.statistics for layer in read_graph(graph).layers
                  if layer.space.statistics is not None}
    rings: Counter[str] = Counter()
    for step in program.steps:
        if step.kind == "all_reduce":
            rings[step.tag] += 1
        elif step.kind == "layer" and step.tag in statistics:
            backward = step.kernel == "dnn.vjp"
            # A collective among the rows (a cross-entropy's count of labels) runs over
            # the devices the result is partial over; the others over `step.axes`.
            rings[step.tag] += sum(collective.count for collective
                                   in statistics[step.tag].collectives
                                   if collective.kind == "all_reduce"
                                   and collective.backward == backward
                                   and (step.axes if collective.among is None
                                        else step.result_types[0].partial))
    return rings


def runtime_options(graph: dnn.GraphOp) -> StepOptions:
    """The graph's `pase.training` if pase's runtime runs it: any optimizer, precision and
    recomputation; ZeRO is refused, one error, never dropped silently."""
    try:
        options = training_of(graph)
    except TrainingOptionError as error:
        raise ToolError(str(error)) from None
    if options.zero != 0:
        raise ToolError(f"pase's runtime keeps each optimizer state whole on every replica "
                         f"of its parameter (ZeRO stage 0); zero={options.zero} runs with "
                         "--engine jax")
    return options


class RuntimeBackend:
    """pase's runtime on `devices` workers of `backend` (threads or processes); `record`
    keeps when each device ran each op of the first step (for `pase-run --timeline`),
    `words` joins the words measured with the prediction."""

    def __init__(self, devices: int, backend: str = "threads", timeout: float = 120.0,
                 record: bool = False, words: bool = True):
        self.devices = devices
        self.backend = backend
        self.timeout = timeout
        self.record = record
        self.words = words
        self._programs: dict[tuple[int, float], Program] = {}

    def train(self, module: ModuleOp, data: dict[str, np.ndarray], steps: int, lr: float,
              float_type: str | None) -> Trained:
        options = runtime_options(forward_graph(module))
        key = (id(module), lr)
        if key not in self._programs:  # (the f64 rerun of the reference lowers it once)
            graph = forward_graph(module)
            self._programs[key] = lower(with_configs(module, layer_configs(graph)),
                                        self.devices, lr)
        program = self._programs[key]
        data = with_optimizer_states(program, data, float_type)
        graph = forward_graph(module)
        recomputed_layers = frozenset(name for layer, name in graph.layer_names().items()
                                      if recomputed(layer, options))
        results, counters = execute(program, data, steps, self.backend, self.timeout,
                                    float_type, self.record, options.precision,
                                    recomputed_layers)
        losses = next((r.losses for r in results if r.holds_loss), results[0].losses)
        trained = Trained(losses, assemble(results, "grads", data),
                          assemble(results, "params", data))
        if self.words:
            graph = forward_graph(module)
            trained.words = words_rows(predictions(graph, self.devices), counters, steps,
                                       ring_all_reduces(program, graph))
        if self.record:
            trained.spans = [r.spans for r in results]
            trained.program = program
        return trained


def train(module: ModuleOp, devices: int, steps: int = 1, seed: int = 0, lr: float = LEARNING_RATE,
          backend: str = "threads", timeout: float = 120.0,
          float_type: str | None = None,
          initial: dict[str, np.ndarray] | None = None,
          record: bool = False) -> TrainingReport:
    """`check_training` of `module` sharded (its configurations) on `devices` workers of
    pase's runtime against one device; `record` keeps the first step's spans
    (`report.spans`, `report.program`) for `pase-run --timeline`."""
    sharded = RuntimeBackend(devices, backend, timeout, record)
    reference = RuntimeBackend(1, backend, timeout, words=False)
    report, _ = check_training(module, sharded, reference, steps, seed, lr, float_type,
                               initial)
    return report
