"""Sharded training equals the single-device run, and moves the words the cost model charges.

Every model in `models/` runs at P = 2, 4 and 8 with the strategy `pase-search` finds for
the full-size model and at P = 4 with the data-parallel baseline, then scaled down (as
`pase-run --scale` does); so does the mlp with losses other than softmax_cross_entropy (any layer
may compute the scalar loss), for two steps in f64. Random small graphs run with random
valid configurations per layer in f64, where sharding must agree to 1e-9. Training that
overflows shows in the report, without numpy warnings (pytest runs with `-W error`).

Scales keep the run short: ResNet-101 and Inception-v3 run in f64 because at these sizes
f32 rounding alone moves the one-device result by more than 1e-4 (batch norm over a handful
of elements); the LSTM of rnnlm loops over time steps in Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import prod
from pathlib import Path

import numpy as np
import pytest
from random_graphs import DIMS, LAYER_KINDS, RandomGraph
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.dialect import dnn
from pase.dialect.dnn.seeding import rate_scales
from pase.frontend import parse_file, parse_text
from pase.passes.scale import scale_module
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import SearchOptions, build_problem
from pase.tools.run.check import TrainingReport, make_data
from pase.tools.run.load import forward_graph, with_configs
from pase.tools.run.runtime import execute, lower, train

MODELS = Path(__file__).resolve().parents[2] / "models"
MODEL_NAMES = sorted(path.stem for path in MODELS.glob("*.dnn"))
SCE = "  %l  = softmax_cross_entropy %z, %t over c"

# The mlp with its last line replaced: losses computed by other layers.
LOSSES = {
    "reduce-mean": "  %l  = reduce mean %z over [b, c]",
    "reduce-twice": "  %s  = reduce sum %z over [c]\n  %l  = reduce mean %s over [b]",
    "reshaped": "  %s  = softmax_cross_entropy %z, %t over c\n  %l  = reshape %s -> []",
    "einsum": "  %u  = input [b, c]\n  %l  = einsum %z, %u -> []",
    "doubled": "  %s  = softmax_cross_entropy %z, %t over c\n  %l  = add %s, %s",
    "squared": "  %s  = softmax_cross_entropy %z, %t over c\n  %l  = mul %s, %s",
    "tanh": "  %s  = softmax_cross_entropy %z, %t over c\n  %l  = tanh %s",
}


def mlp_with(loss: str) -> str:
    source = (MODELS / "mlp.dnn").read_text()
    assert SCE in source
    return source.replace(SCE, loss)


@dataclass(frozen=True)
class Setting:
    """How a model runs here: its scale, floating-point type (None: the model's), SGD
    steps and device counts above 1."""

    scale: float = 0.125
    float_type: str | None = None
    steps: int = 1
    devices: tuple[int, ...] = (2, 4, 8)


SETTINGS = {
    # batch 8 stays 8 below 1/8 (at 1/8 it would be 1, and data parallelism a no-op)
    "gpt2_small": Setting(0.03125),
    "inception_v3": Setting(0.0625, "f64"),
    "resnet101": Setting(0.0625, "f64"),
    "rnnlm": Setting(0.0625),
    "transformer": Setting(0.0625),
} | {f"mlp.{loss}": Setting(1.0, "f64", steps=2, devices=(2, 4)) for loss in LOSSES}


@cache
def _parsed(model: str) -> ModuleOp:
    """A model of `models/`, or `mlp.LOSS`: the mlp whose loss is `LOSSES[LOSS]`."""
    if model.startswith("mlp."):
        return parse_text(mlp_with(LOSSES[model.removeprefix("mlp.")]), f"{model}.dnn")
    return parse_file(str(MODELS / f"{model}.dnn"))


def searched(module: ModuleOp, devices: int) -> ModuleOp:
    """The model with the strategy `pase-search` finds (as pase-run does)."""
    module = module.clone()
    PaseSearchPass(devices=devices).apply(Context(), module)
    return module


def data_parallel(module: ModuleOp, devices: int) -> ModuleOp:
    """The model with every layer's batch split over the devices."""
    return with_configs(module, build_problem(module, devices).data_parallel())


STRATEGIES = {"searched": searched, "data-parallel": data_parallel}


def split_factors(module: ModuleOp) -> list[int]:
    """Devices each layer uses."""
    graph = next(op for op in module.walk() if isinstance(op, dnn.GraphOp))
    return [prod(layer.config.splits.values()) if layer.config else 1
            for layer in graph.layers]


def assert_matches(report: TrainingReport) -> None:
    assert not report.diverged
    assert report.passed(), (report.max_error(), report.tolerance())
    assert report.words_mismatches() == []
    assert [row.name for row in report.words if row.kind == "unexpected"] == []


# Every model with the strategy pase-search finds at each device count, and with the
# data-parallel baseline at 4 devices (at 2 and 8 it runs the same code, the batch split
# by another factor). Each run trains the one-device reference too, so the one-device run
# of a model is there in each; the mlp runs on one device as a run of its own (a program
# without collectives): both strategies leave every layer unsplit there.
NAMES = [*MODEL_NAMES, *(f"mlp.{loss}" for loss in LOSSES)]
DATA_PARALLEL_DEVICES = 4
MATRIX = [("mlp", 1, "searched")] + [
    (model, devices, "searched") for model in NAMES
    for devices in SETTINGS.get(model, Setting()).devices] + [
    (model, DATA_PARALLEL_DEVICES, "data-parallel") for model in NAMES]


@pytest.mark.parametrize(("model", "devices", "strategy"), MATRIX,
                         ids=[f"{m}-P{p}-{s}" for m, p, s in MATRIX])
def test_models_train_sharded_as_on_one_device(model: str, devices: int, strategy: str) -> None:
    setting = SETTINGS.get(model, Setting())
    module = scale_module(STRATEGIES[strategy](_parsed(model), devices), setting.scale)
    if devices > 1:
        assert max(split_factors(module)) > 1, "the scaled strategy splits nothing"
    report = train(module, devices, steps=setting.steps, float_type=setting.float_type)
    assert (report.devices, report.element) == (devices, setting.float_type or "f32")
    assert len(report.losses) == setting.steps
    assert all(np.isfinite(report.losses))
    if setting.steps > 1:
        assert report.losses[1] != report.losses[0]  # the parameters were trained
    assert_matches(report)


def test_processes_backend() -> None:
    report = train(scale_module(data_parallel(_parsed("mlp"), 4), 0.125), 4,
                   backend="processes")
    assert_matches(report)
    assert max(row.measured for row in report.words) > 0


def test_the_loss_layer_is_split_in_these_runs() -> None:
    # Not vacuous: at P = 4 the loss layer runs sharded, leaving a partial sum.
    for name in ("mlp.reduce-mean", "mlp.einsum"):
        graph = forward_graph(data_parallel(_parsed(name), 4))
        assert graph.layers[-1].config is not None
        assert graph.layers[-1].config.splits == {"b": 4}


@pytest.mark.parametrize("loss", LOSSES)
def test_the_gradient_is_the_loss_gradient(loss: str) -> None:
    # Independent of sharding: one SGD step of size lr lowers the loss by lr·|g|² to
    # first order, so g must be the gradient of the loss itself (a cotangent of the loss
    # layer that is dropped or not 1 changes |g|² or the decrease). A param with a
    # selected dim steps at lr times its factor (seeding.rate_scales): its |g|² counts so.
    module = with_configs(_parsed(f"mlp.{loss}"), None)
    data = make_data(forward_graph(module), 0, "f64")
    (start,), _ = execute(lower(module, 1, 0.0), data, 1, "threads", 60.0, "f64")
    scales = {v.name_hint: s for v, s in rate_scales(forward_graph(module)).items()}
    squared_norm = sum(scales.get(name, 1) * float(np.sum(gradient ** 2))
                       for name, (_, gradient) in start.grads.items())
    assert squared_norm > 0
    lr = 1e-6 * max(1.0, abs(start.losses[0])) / squared_norm  # second order negligible
    (trained,), _ = execute(lower(module, 1, lr), data, 2, "threads", 60.0, "f64")
    assert trained.losses[0] == start.losses[0]
    decrease = trained.losses[0] - trained.losses[1]
    assert decrease == pytest.approx(lr * squared_norm, rel=1e-4)


def test_training_that_overflows_is_reported_without_warnings() -> None:
    module = data_parallel(_parsed("mlp.reduce-mean"), 2)
    report = train(module, 2, steps=2, lr=1e30)
    assert report.diverged
    assert np.isnan(report.losses[1]) or np.isinf(report.losses[1])
    assert not report.passed()
    assert not train(module, 2, steps=2).diverged


# --- random graphs with random configurations ---------------------------------------------



class TrainingGraph(RandomGraph):
    """A random graph that ends in a scalar loss every layer feeds."""

    def add_loss(self) -> str:
        """Project every value no layer reads to class scores and end in a scalar
        softmax_cross_entropy, so that every layer lies on the loss's path."""
        outputs = [(name, dims) for name, dims in self.values if name not in self.used]
        scores, biases = [], []
        for name, dims in outputs:
            if dims[0] == "b":  # [b, X] x [X, c] -> [b, c]
                weight = self.param((dims[1], "c"))
                scores.append(self.emit(f"einsum %{name}, %{weight} -> [b, c]", ("b", "c"),
                                        name))
            else:  # [X, Y] x [Y, c] -> [c], summing X: a bias of the scores
                weight = self.param((dims[1], "c"))
                biases.append(self.emit(f"einsum %{name}, %{weight} -> [c]", ("c",), name))
        if not scores:
            first, _ = self.values[0]
            weight = self.param(("d", "c"))
            scores.append(self.emit(f"einsum %{first}, %{weight} -> [b, c]", ("b", "c"),
                                    first))
        logits = scores[0]
        for other in scores[1:]:
            logits = self.emit(f"add %{logits}, %{other}", ("b", "c"), logits, other)
        for bias in biases:
            logits = self.emit(f"add %{logits}, %{bias}", ("b", "c"), logits, bias)
        self.lines.append("  %labels = input [b] : i32")
        return self.emit(f"softmax_cross_entropy %{logits}, %labels over c", (), logits)


def random_training_source(seed: int) -> str:
    """A random graph of 4-8 layers over small dims ending in a scalar loss, as `.dnn`."""
    rng = np.random.default_rng(seed)
    graph = TrainingGraph(rng)
    # Every value needs a gradient: the input goes through a bias before any other layer.
    graph.lines.append("  %x = input [b, d]")
    bias = graph.param(("d",))
    graph.emit(f"add %x, %{bias}", ("b", "d"), "x")
    chain = seed % 3 == 0
    target = int(rng.integers(4, 9))
    while graph.layers < target:
        kind = LAYER_KINDS[int(rng.integers(len(LAYER_KINDS)))]
        graph.add_layer(kind, chain)
    loss = graph.add_loss()
    header = ", ".join(f"{dim} = {size}" for dim, size in DIMS.items())
    body = "\n".join(graph.lines)
    return f"graph @random{seed}({header}) {{\n{body}\n  return %{loss}\n}}\n"


def random_configs(module: ModuleOp, devices: int,
                   rng: np.random.Generator) -> dict[str, dict[str, int]]:
    """A random valid configuration for every layer (any shard size)."""
    problem = build_problem(module, devices, options=SearchOptions(min_shard=1))
    return {name: problem.configs(name)[int(rng.integers(len(problem.configs(name))))]
            for name in problem.layers}


RANDOM_SEEDS = range(20)


def test_random_sources_cover_the_layer_kinds() -> None:
    sources = "".join(random_training_source(seed) for seed in RANDOM_SEEDS)
    for statement in ("einsum", "concat", "embedding", "layernorm", "softmax ", "add",
                      "reshape", "relu", "-> [c]"):
        assert statement in sources


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_graphs_with_random_configurations(seed: int) -> None:
    source = random_training_source(seed)
    module = parse_text(source)
    rng = np.random.default_rng(seed)
    for devices in (2, 4):
        configs = random_configs(module, devices, rng)
        report = train(with_configs(module, configs), devices, seed=seed, float_type="f64")
        assert report.max_error() < 1e-9, (devices, configs, source)
        assert report.words_mismatches() == [], (devices, configs, source)
        assert [row for row in report.words if row.kind == "unexpected"] == []


def test_random_configurations_split_layers() -> None:
    # The property above is not vacuous: most layers split, some over non-batch dims.
    rng = np.random.default_rng(0)
    splits = [config for seed in RANDOM_SEEDS
              for config in random_configs(parse_text(random_training_source(seed)), 4,
                                           rng).values()]
    assert sum(1 for config in splits if config) > len(splits) / 2
    assert any(set(config) - {"b"} for config in splits)


# --- small graphs, and bugs they once showed -------------------------------------------------

NO_GRADIENT = """
graph @no_gradient(b = 8, d = 16, c = 8) {
  %x = input [b, d]
  %y = NORM
  %w = param [d, c]
  %z = einsum %y, %w -> [b, c]
  %t = input [b] : i32
  %l = softmax_cross_entropy %z, %t over c
  return %l
}
"""

DEAD_BRANCH = """
graph @dead(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w1 = param [d, h]
  %w2 = param [d, h]
  %h = einsum %x, %w1 -> [b, h]
  %l = reduce mean %h over [b, h]
  %z = einsum %x, %w2 -> [b, h]
  %r = relu %z
  return %l, %r
}
"""

TWO_TENSORS = """
graph @m(b = 8, h = 6) {
  %x = input [b, h]
  %w = param [h]
  %h1 = mul %x, %w config {h = 2}
  %g = mul %h1, %w config {}
  %l = reduce mean %g over [b, h]
  return %l
}
"""

# (source, devices, strategy (None: the configurations written in it), words it moves)
SMALL_GRAPHS = {
    # %y reads input data only, so it has no backward: the runtime all-reduces its
    # statistics over the split dim forward only (softmax 2 AR(8, 4) = 24 words, layernorm
    # AR(16, 4) = 24, batchnorm AR(32, 4) = 48), and the model once charged them backward
    # too (36, 48 and 96).
    **{f"{norm.split()[0]}-without-backward": (NO_GRADIENT.replace("NORM", norm), 4, None,
                                               {"y": (words, words)})
       for norm, words in [("softmax %x over d config {d = 4}", 24),
                           ("layernorm %x over d config {d = 4}", 24),
                           ("batchnorm %x over [b] config {b = 4}", 48)]},
    # %z and %r never reach the loss: pase-autodiff gives them no backward pass, and the
    # cost model charges them none (data parallelism once predicted z's weight-gradient
    # all-reduce, which never runs).
    "dead-branch-P2": (DEAD_BRANCH, 2, "data-parallel", {}),
    "dead-branch-P4": (DEAD_BRANCH, 4, "data-parallel", {}),
    # (z - u)² with e in rows and q in columns: e moves into q's layout once, and its two
    # gradient contributions (one per operand of mul) are summed there and move back once,
    # as the cost model's single edge e -> q predicts.
    "value-read-twice": (mlp_with("  %u  = input [b, c]\n"
                                  "  %e  = sub %z, %u config {b = 4}\n"
                                  "  %q  = mul %e, %e config {c = 2}\n"
                                  "  %l  = reduce mean %q over [b, c]"),
                         4, "searched", {"e->q": (240, 240), "e<-q": (160, 160)}),
    # g reads h1's result and w, which lives in h1's layout (its first reader): two
    # transfers from h1 to g, tagged and predicted separately ("h1->g", "h1->g %w").
    "two-tensors-between-two-layers": (TWO_TENSORS, 2, None, {
        "h1->g": (24, 24), "h1->g %w": (3, 3), "h1<-g": (24, 24), "h1<-g %w": (3, 3)}),
}


@pytest.mark.parametrize("name", SMALL_GRAPHS)
def test_small_graphs_move_the_words_the_model_predicts(name: str) -> None:
    source, devices, strategy, expected = SMALL_GRAPHS[name]
    module = parse_text(source, f"{name}.dnn")
    if strategy is not None:
        module = STRATEGIES[strategy](module, devices)
    report = train(module, devices, float_type="f64")
    words = {row.name: (row.measured, row.predicted) for row in report.words}
    assert {tag: words[tag] for tag in expected} == expected
    assert_matches(report)


def test_layers_off_the_loss_path_have_no_backward_in_the_model_either() -> None:
    layers = {layer.name: layer for layer in build_problem(parse_text(DEAD_BRANCH), 2).layer_data}
    assert (layers["h"].backward, layers["z"].backward, layers["r"].backward) == (
        True, False, False)
    assert layers["z"].grads == (False, False)
