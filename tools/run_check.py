"""What `pase-run --check` compares: seeded data, normwise errors, words measured vs predicted.

    data = make_data(graph, seed=0)
    report = TrainingReport(...)          # built by `run_pipeline.train`
    report.passed(), report.words_mismatches(), check_problems(report)

Errors are normwise: the largest difference over all gradients (or parameters) relative
to the largest value among them. The tolerance is 1e-9 in f64; in f32 it is 1e-4, or
twice the f32 rounding error of the 1-device run itself when a deep model loses more
than that to f32 alone (`tolerance`, `needs_rounding_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from math import prod

import numpy as np

from pase.core.placement import edge_tag
from pase.dialect import dnn
from pase.dialect.pase import pipeline_of, stage_of
from pase.passes.strategy import (
    Machine,
    Problem,
    blocks,
    carries_param,
    edges_at,
    layer_cost,
    local_elements,
    microbatch_layers,
    read_graph,
    redistribution_words,
)
from pase.runtime.executor import DTYPES, DeviceResult
from pase.runtime.program import Program

F32_TOLERANCE = 1e-4
F64_TOLERANCE = 1e-9

DIVERGED = ("the training diverged: the 1-device run's losses, gradients or parameters "
            "are not finite (inf or nan); try a smaller --lr")


@dataclass
class WordsRow:
    """Words one layer or edge moved (the most any device received) and the prediction."""

    name: str
    kind: str
    measured: float
    predicted: float


def tolerance(element: str, noise: float = 0.0) -> float:
    """The largest relative error a sharded run may have against the 1-device run.

        >>> tolerance("f64"), tolerance("f32"), tolerance("f32", noise=3e-4)
        (1e-09, 0.0001, 0.0006)

    `noise` is the 1-device f32 run's own error against an f64 run: f32 rounding alone,
    which deep networks at small scale can push past 1e-4."""
    return F64_TOLERANCE if element == "f64" else max(F32_TOLERANCE, 2 * noise)


def needs_rounding_reference(element: str, errors: list[float], diverged: bool) -> bool:
    """Whether to measure the f32 run's own rounding (an extra f64 run): only when the
    errors exceed the f32 tolerance of 1e-4 (a NaN error counts as exceeding it).

        >>> needs_rounding_reference("f32", [2e-4, 1e-6], False)
        True
        >>> needs_rounding_reference("f32", [5e-5], False), needs_rounding_reference(
        ...     "f64", [1.0], False), needs_rounding_reference("f32", [1.0], True)
        (False, False, False)
    """
    return element == "f32" and not diverged and not float(np.max(errors)) <= F32_TOLERANCE


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
    spans: list[list[tuple[int, float, float]]] = field(default_factory=list)
    """Per device, when it ran each op of the sharded program in the first step
    (`DeviceResult.spans`; only when `train(record=True)`)."""
    program: Program | None = None
    """The sharded program that ran (with `spans`)."""

    def max_error(self) -> float:
        """The largest relative error (NaN, if any result was not finite)."""
        errors = [*self.loss_errors, self.gradient_error, self.parameter_error]
        return float("nan") if any(np.isnan(errors)) else max(errors)

    def passed(self) -> bool:
        return bool(self.max_error() <= self.tolerance())

    def tolerance(self) -> float:
        """`tolerance(self.element, self.noise)`."""
        return tolerance(self.element, self.noise)

    def words_mismatches(self, slack: float = 2.0) -> list[WordsRow]:
        """Rows whose measured words differ from the prediction by more than the rounding
        of uneven ring chunks (`slack` words per device and collective)."""
        return [row for row in self.words
                if abs(row.measured - row.predicted) > slack * self.devices
                + 1e-9 * row.predicted]


def check_problems(report: TrainingReport) -> list[str]:
    """Why `pase-run --check` fails, one sentence per problem (empty: the check passes)."""
    problems = []
    if report.diverged:
        problems.append(DIVERGED)
    elif not report.passed():
        problems.append(f"relative error {report.max_error():.2e} exceeds "
                        f"{report.tolerance():.0e}")
    for row in report.words_mismatches():
        problems.append(f"{row.name}: measured {row.measured:.0f} words, predicted "
                        f"{row.predicted:.1f}")
    return problems


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


def assemble(results: list[DeviceResult], which: str, data: dict[str, np.ndarray]
             ) -> dict[str, np.ndarray]:
    """The whole tensors (`which` = "params" or "grads") from the devices' blocks."""
    arrays: dict[str, np.ndarray] = {}
    for result in results:
        for name, (block, array) in getattr(result, which).items():
            target = arrays.setdefault(name, np.zeros_like(data[name]))
            target[tuple(slice(lo, hi) for lo, hi in block)] = array
    return arrays


def relative_error(measured: np.ndarray, reference: np.ndarray) -> float:
    """max |measured − reference| relative to max |reference| (the difference itself
    when the reference is all zeros)."""
    return normwise_error({"": measured}, {"": reference})


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


def predicted_pipeline_words(graph: dnn.GraphOp, configs: dict[str, dict[str, int]],
                             machine: Machine) -> dict[tuple[str, str], float]:
    """`predicted_words` of a pipelined step (pase-partition-stages' `pase.stage` on every
    layer, M micro-batches in `pase.pipeline`): per micro-batch each layer's collectives
    and each edge's redistribution, on micro-batch shapes; once per step a layer's
    parameter-gradient all-reduce and the moves of a shared parameter and its gradient.
    Between stages the groups are disjoint: each consumer device receives its whole
    block, and each producer device its whole gradient block."""
    pipeline = pipeline_of(graph)
    assert pipeline is not None
    micro = pipeline.microbatches.data
    data = read_graph(graph)
    assert data.batch is not None
    layers = microbatch_layers(data.layers, data.batch, micro)
    stage = {name: stage_of(op) for op, name in graph.layer_names().items()}
    words: dict[tuple[str, str], float] = {}
    for layer in layers:
        cost = layer_cost(layer, configs[layer.name], machine)
        words[("layer", layer.name)] = micro * (cost.words - cost.param_words) \
            + cost.param_words
    for edge in edges_at(data.edges, layers, data.batch, micro):
        producer, consumer = layers[edge.producer], layers[edge.consumer]
        up, down = stage[producer.name], stage[consumer.name]
        assert up is not None
        assert down is not None
        if up.index == down.index:
            held = blocks(producer, configs[producer.name], edge.held, up.devices.data)[None]
            needed = blocks(consumer, configs[consumer.name], edge.needed,
                            up.devices.data)[None]
            forward, backward = (float(w[0, 0]) for w in redistribution_words(held, needed))
        else:
            forward = local_elements(edge.needed, configs[consumer.name])
            backward = local_elements(edge.held, configs[producer.name])
        times = 1 if carries_param(edge) else micro
        tag = partial(edge_tag, producer.name, consumer.name, carried=edge.carried)
        words[("edge", tag(backward=False))] = times * forward
        if edge.backward:
            words[("edge", tag(backward=True))] = times * backward
    return words


def words_rows(predicted: dict[tuple[str, str], float],
               counters: dict[int, dict[str, dict[str, int]]], steps: int) -> list[WordsRow]:
    """Per layer and edge, the most words any device received per step next to the
    prediction; a tag the cost model does not predict is an "unexpected" row."""
    measured: dict[str, float] = {}
    for tags in counters.values():
        for tag, count in tags.items():
            measured[tag] = max(measured.get(tag, 0.0), float(count["received"]))
    rows = [WordsRow(name, kind, measured.pop(name, 0.0) / steps, words)
            for (kind, name), words in predicted.items()]
    return rows + [WordsRow(tag, "unexpected", words / steps, 0.0)
                   for tag, words in sorted(measured.items())]
