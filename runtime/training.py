"""Sharded training steps against the single-device reference, as `pase-run` runs them.

    report = train(module, devices=4, steps=2, seed=0)
    report.max_errors(), report.words_mismatches()

The graph (with `#pase.config` on every layer) goes through `pase-autodiff` and
`pase-lower-spmd` twice: as it is, on `devices` workers, and with every layer unsplit, on
one worker (the reference). Both run the same numpy kernels on the same seeded data;
the report holds the losses, the relative errors of loss, gradients and updated
parameters, and per layer and edge the words the devices moved next to what the cost
model predicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.placement import edge_tag
from pase.dialect import dist, dnn
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    LAYER_ATTR_NAME,
    LAYOUT_OF_ATTR_NAME,
    ConfigAttr,
)
from pase.passes.autodiff import AutodiffPass
from pase.passes.lower_spmd import LowerSpmdPass
from pase.passes.strategy.cost import blocks, layer_cost, redistribution_words
from pase.passes.strategy.problem import Problem, build_problem
from pase.runtime.communicator import DeviceComm
from pase.runtime.executor import DTYPES, DeviceResult, run_device
from pase.runtime.program import Program, program_from_ir
from pase.runtime.workers import run_workers


@dataclass
class WordsRow:
    """Words one layer or edge moved (the most any device received) and the prediction."""

    name: str
    kind: str
    measured: float
    predicted: float


@dataclass
class TrainingReport:
    graph: str
    devices: int
    element: str
    losses: list[float]
    reference_losses: list[float]
    loss_errors: list[float]
    gradient_error: float
    parameter_error: float
    words: list[WordsRow] = field(default_factory=list)
    noise: float = 0.0
    """The f32 reference's own normwise error against an f64 run (measured only when
    the f32 errors exceed 1e-4): f32 rounding alone, without any sharding."""
    diverged: bool = False
    """The 1-device run's losses, gradients or parameters are not finite (inf or nan):
    the training itself overflowed, e.g. with too large a learning rate."""

    def max_error(self) -> float:
        """The largest relative error (NaN, if any result was not finite)."""
        errors = [*self.loss_errors, self.gradient_error, self.parameter_error]
        return float("nan") if any(np.isnan(errors)) else max(errors)

    def passed(self) -> bool:
        return bool(self.max_error() <= self.tolerance())

    def tolerance(self) -> float:
        """1e-9 in f64; in f32 1e-4, or twice the reference's own f32 rounding error when
        that is larger (deep networks at small scale can lose more to f32 alone)."""
        return 1e-9 if self.element == "f64" else max(1e-4, 2 * self.noise)

    def words_mismatches(self, slack: float = 2.0) -> list[WordsRow]:
        """Rows whose measured words differ from the prediction by more than the rounding
        of uneven ring chunks (`slack` words per device and collective)."""
        return [row for row in self.words
                if abs(row.measured - row.predicted) > slack * self.devices
                + 1e-9 * row.predicted]


def _graph(module: ModuleOp) -> dnn.GraphOp:
    graphs = [op for op in module.walk() if isinstance(op, dnn.GraphOp)]
    if len(graphs) != 1:
        raise ValueError(f"pase-run runs one graph, the file has {len(graphs)}")
    return graphs[0]


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
    gradient_ops = [op for op in graph.body.block.ops
                    if isinstance(op, dnn.VjpOp | dnn.SgdOp)
                    or LAYER_ATTR_NAME in op.attributes or LAYOUT_OF_ATTR_NAME in op.attributes]
    if gradient_ops:
        named = [op for op in gradient_ops if isinstance(op, dnn.VjpOp | dnn.SgdOp)]
        kinds = ", ".join(sorted({op.name for op in named or gradient_ops}, reverse=True))
        raise at_op(gradient_ops[0], f"pase-run takes a forward graph, but "
                    f"@{graph.sym_name.data} already has gradient ops ({kinds}) from "
                    "pase-autodiff; give it the model before pase-autodiff", filename)
    if (problem := graph.loss_problem()) is not None:
        raise at_op(graph.body.block.ops.last, problem, filename)  # type: ignore[arg-type]
    return graph


def make_data(graph: dnn.GraphOp, seed: int,
              float_type: str | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs and parameters, named as in the graph, scaled to keep activations
    of order one: ids and labels within their table or class count."""
    rng = np.random.default_rng(seed)
    data: dict[str, np.ndarray] = {}
    for op in graph.body.block.ops:
        if not isinstance(op, dnn.InputOp | dnn.ParamOp):
            continue
        shape = op.output.type.shape
        name = op.output.name_hint or "v"
        uses = [(use.operation, use.index) for use in op.output.uses]
        dtype = DTYPES[shape.element]
        if shape.element in ("i32", "i64"):
            high = 2
            for user, index in uses:
                if isinstance(user, dnn.EmbeddingOp) and index == 0:
                    high = user.input_shapes[1].sizes[0]
                if isinstance(user, dnn.SoftmaxCrossEntropyOp) and index == 1:
                    over = user.dims_prop("over")[0]
                    high = user.input_shapes[0].size_of(over)
            data[name] = rng.integers(0, high, size=shape.sizes).astype(dtype)
            continue
        values = rng.standard_normal(shape.sizes)
        if isinstance(op, dnn.ParamOp):
            user, index = uses[0] if uses else (None, 0)
            if isinstance(user, dnn.LayerNormOp | dnn.BatchNormOp):
                values = (1.0 if index == 1 else 0.0) + 0.1 * values
            elif isinstance(user, dnn.Conv2dOp):
                values /= np.sqrt(prod(shape.sizes[1:]))
            elif len(shape.sizes) > 1:
                values /= np.sqrt(prod(shape.sizes[:-1]))
        data[name] = values.astype(DTYPES[float_type] if float_type else dtype)
    return data


def layer_configs(graph: dnn.GraphOp) -> dict[str, dict[str, int]]:
    """Each layer's configuration, by the names the search uses (`layer_names`)."""
    return {name: (layer.config.splits if layer.config else {})
            for layer, name in graph.layer_names().items()}


def with_configs(module: ModuleOp, configs: dict[str, dict[str, int]] | None) -> ModuleOp:
    """A copy whose layers carry `configs` (None: every layer unsplit)."""
    copy = module.clone()
    graph = _graph(copy)
    for layer, name in graph.layer_names().items():
        config = {} if configs is None else configs[name]
        layer.attributes[CONFIG_ATTR_NAME] = ConfigAttr(config)
    graph.attributes.pop("pase.strategy", None)
    return copy


def lower(module: ModuleOp, devices: int, lr: float) -> Program:
    lowered = module.clone()
    ctx = Context()
    AutodiffPass(lr=lr).apply(ctx, lowered)
    LowerSpmdPass(devices=devices).apply(ctx, lowered)
    lowered.verify()
    return program_from_ir(lowered)


def _worker(comm: DeviceComm, program: Program, data: dict[str, np.ndarray],
            steps: int, float_type: str | None) -> DeviceResult:
    return run_device(comm, program, data, steps, float_type)


def execute(program: Program, data: dict[str, np.ndarray], steps: int, backend: str,
            timeout: float, float_type: str | None = None
            ) -> tuple[list[DeviceResult], dict[int, dict[str, dict[str, int]]]]:
    results = run_workers(partial(_worker, program=program, data=data, steps=steps,
                                  float_type=float_type),
                          program.devices, backend=backend, timeout=timeout)
    return list(results), results.counters()


def _assemble(results: list[DeviceResult], which: str, data: dict[str, np.ndarray]
              ) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for result in results:
        for name, (block, array) in getattr(result, which).items():
            target = arrays.setdefault(name, np.zeros_like(data[name]))
            target[tuple(slice(lo, hi) for lo, hi in block)] = array
    return arrays


def _relative_error(measured: np.ndarray, reference: np.ndarray) -> float:
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    difference = float(np.max(np.abs(measured.astype(np.float64) - reference))) \
        if reference.size else 0.0
    return difference / scale if scale > 0 else difference


def normwise_error(measured: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> float:
    """max |measured − reference| over all the tensors, relative to max |reference| over
    all of them: the normwise (infinity-norm) relative error of the whole gradient or
    parameter vector. Per tensor, a gradient that is tiny next to the others would
    measure f32 rounding noise rather than the sharding."""
    if not reference:
        return 0.0
    # np.max, not max(): a NaN in any tensor must make the error NaN, whatever the order.
    difference = float(np.max([np.max(np.abs(measured[n].astype(np.float64) - reference[n]))
                               if reference[n].size else 0.0 for n in reference]))
    scale = float(np.max([np.max(np.abs(reference[n])) if reference[n].size else 0.0
                          for n in reference]))
    return difference / scale if scale > 0 else difference


def predicted_words(problem: Problem, configs: dict[str, dict[str, int]]
                    ) -> dict[tuple[str, str], float]:
    """The cost model's words per device: per layer ("layer", name) and per edge
    ("edge", "u->v" forward / "u<-v" backward)."""
    words: dict[tuple[str, str], float] = {}
    for layer in problem.layer_data:
        words[("layer", layer.name)] = layer_cost(layer, configs[layer.name],
                                                  problem.machine).words
    for edge in problem.edges:
        producer, consumer = problem.layer_data[edge.producer], problem.layer_data[edge.consumer]
        held = blocks(producer, configs[producer.name], edge.held, problem.devices)[None]
        needed = blocks(consumer, configs[consumer.name], edge.needed, problem.devices)[None]
        forward, backward = redistribution_words(held, needed)
        tag = partial(edge_tag, producer.name, consumer.name, carried=edge.carried)
        words[("edge", tag(backward=False))] = float(forward[0, 0])
        if edge.backward:
            words[("edge", tag(backward=True))] = float(backward[0, 0])
    return words


def train(module: ModuleOp, devices: int, steps: int = 1, seed: int = 0, lr: float = 0.01,
          backend: str = "threads", timeout: float = 120.0,
          float_type: str | None = None) -> TrainingReport:
    """Run `steps` SGD steps sharded (the configurations in `module`) and unsharded;
    `float_type="f64"` runs an f32 model in double precision. Training that overflows
    (too large an `lr`) shows as losses and errors that are not finite, and
    `report.diverged`; it raises no numpy warnings."""
    graph = forward_graph(module)
    # Workers silence floating-point warnings themselves (run_device); inf and nan
    # reach the report, which says the training diverged.
    with np.errstate(all="ignore"):
        return _train(module, graph, devices, steps, seed, lr, backend, timeout, float_type)


def _train(module: ModuleOp, graph: dnn.GraphOp, devices: int, steps: int, seed: int,
           lr: float, backend: str, timeout: float, float_type: str | None) -> TrainingReport:
    configs = layer_configs(graph)
    element = float_type or next((op.output.type.shape.element for op in graph.body.block.ops
                                  if isinstance(op, dnn.ParamOp)), "f32")
    data = make_data(graph, seed, float_type)
    sharded = lower(with_configs(module, configs), devices, lr)
    reference = lower(with_configs(module, None), 1, lr)
    results, counters = execute(sharded, data, steps, backend, timeout, float_type)
    expected, _ = execute(reference, data, steps, backend, timeout, float_type)
    losses, reference_losses = results[0].losses, expected[0].losses
    loss_errors = [_relative_error(np.asarray(a), np.asarray(b))
                   for a, b in zip(losses, reference_losses, strict=True)]
    params, reference_params = _assemble(results, "params", data), _assemble(expected,
                                                                             "params", data)
    grads, reference_grads = _assemble(results, "grads", data), _assemble(expected, "grads",
                                                                          data)
    parameter_error = normwise_error(params, reference_params)
    gradient_error = normwise_error(grads, reference_grads)
    diverged = not all(np.all(np.isfinite(array)) for array in [
        np.asarray(reference_losses), *reference_grads.values(), *reference_params.values()])
    noise = 0.0
    errors = [*loss_errors, gradient_error, parameter_error]
    if element == "f32" and not diverged and not float(np.max(errors)) <= 1e-4:
        exact_data = make_data(graph, seed, "f64")
        exact, _ = execute(reference, exact_data, steps, backend, timeout, "f64")
        noise = max(max(_relative_error(np.asarray(a), np.asarray(b))
                        for a, b in zip(reference_losses, exact[0].losses, strict=True)),
                    normwise_error(reference_grads, _assemble(exact, "grads", exact_data)),
                    normwise_error(reference_params, _assemble(exact, "params", exact_data)))
    problem = build_problem(graph, devices, pinned=configs)
    predicted = predicted_words(problem, configs)
    measured: dict[str, float] = {}
    for tags in counters.values():
        for tag, count in tags.items():
            measured[tag] = max(measured.get(tag, 0.0), float(count["received"]))
    rows = []
    for (kind, name), words in predicted.items():
        rows.append(WordsRow(name, kind, measured.pop(name, 0.0) / steps, words))
    for tag, words in sorted(measured.items()):
        rows.append(WordsRow(tag, "unexpected", words / steps, 0.0))
    return TrainingReport(graph.sym_name.data, devices, element, losses, reference_losses,
                          loss_errors, gradient_error, parameter_error, rows, noise, diverged)
