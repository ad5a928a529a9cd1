"""Losses other than softmax_cross_entropy: any layer may compute the scalar loss.

The gradient of the loss is 1 wherever it is produced, sharded or not; a graph whose first
returned value is not a floating-point scalar computed by a layer is rejected with a
diagnostic at its `return`. Training that overflows shows in the report, without numpy
warnings (pytest runs with `-W error`, so a warning would fail these tests).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.frontend import Diagnostic, parse_file, parse_text
from pase.passes.autodiff import AutodiffPass
from pase.passes.search import PaseSearchPass
from pase.passes.strategy.problem import build_problem
from pase.tools.run_check import make_data, normwise_error
from pase.tools.run_pipeline import execute, forward_graph, lower, train, with_configs

MLP = Path(__file__).resolve().parents[2] / "models" / "mlp.dnn"
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
    source = MLP.read_text()
    assert SCE in source
    return source.replace(SCE, loss)


@cache
def _parsed(name: str) -> ModuleOp:
    return parse_text(mlp_with(LOSSES[name]), f"{name}.dnn")


def searched(name: str, devices: int) -> ModuleOp:
    module = _parsed(name).clone()
    PaseSearchPass(devices=devices).apply(Context(), module)
    return module


def data_parallel(name: str, devices: int) -> ModuleOp:
    module = _parsed(name)
    return with_configs(module, build_problem(module, devices).data_parallel())


# On one device both strategies leave every layer unsplit.
CASES = [(name, devices, strategy) for name in LOSSES for devices in (1, 2, 4)
         for strategy in ("searched", "data-parallel") if devices > 1 or strategy == "searched"]


@pytest.mark.parametrize(("name", "devices", "strategy"), CASES,
                         ids=[f"{n}-P{p}-{s}" for n, p, s in CASES])
def test_any_layer_may_compute_the_loss(name: str, devices: int, strategy: str) -> None:
    module = (searched if strategy == "searched" else data_parallel)(name, devices)
    report = train(module, devices, steps=2, float_type="f64")
    assert all(np.isfinite(report.losses))
    assert report.losses[1] != report.losses[0]  # the parameters were trained
    assert report.max_error() < 1e-9
    assert report.words_mismatches() == []
    assert [row.name for row in report.words if row.kind == "unexpected"] == []
    assert not report.diverged


def test_the_loss_layer_is_split_in_these_runs() -> None:
    # Not vacuous: at P = 4 the loss layer runs sharded, leaving a partial sum.
    for name in ("reduce-mean", "einsum"):
        graph = forward_graph(data_parallel(name, 4))
        assert graph.layers[-1].config is not None
        assert graph.layers[-1].config.splits == {"b": 4}


@pytest.mark.parametrize("name", LOSSES)
def test_the_gradient_is_the_loss_gradient(name: str) -> None:
    # Independent of sharding: one SGD step of size lr lowers the loss by lr·|g|² to
    # first order, so g must be the gradient of the loss itself (a cotangent of the loss
    # layer that is dropped or not 1 changes |g|² or the decrease).
    module = with_configs(_parsed(name), None)
    data = make_data(forward_graph(module), 0, "f64")
    (start,), _ = execute(lower(module, 1, 0.0), data, 1, "threads", 60.0, "f64")
    squared_norm = sum(float(np.sum(gradient ** 2)) for _, gradient in start.grads.values())
    assert squared_norm > 0
    lr = 1e-6 * max(1.0, abs(start.losses[0])) / squared_norm  # second order negligible
    (trained,), _ = execute(lower(module, 1, lr), data, 2, "threads", 60.0, "f64")
    assert trained.losses[0] == start.losses[0]
    decrease = trained.losses[0] - trained.losses[1]
    assert decrease == pytest.approx(lr * squared_norm, rel=1e-4)


# --- what is not a loss --------------------------------------------------------------------


@pytest.mark.parametrize(("loss", "message"), [
    ("  %l  = relu %z", "the loss %l (the first value @mlp returns) must be a scalar, but it "
     "is [b, c]; reduce it in the model, e.g. `%loss = reduce mean %l over [b, c]`, and "
     "return that"),
    ("  %l  = param []", "the loss %l (the first value @mlp returns) must be computed by a "
     "layer, but it is the param itself; nothing would be trained"),
    ("  %l  = input []", "the loss %l (the first value @mlp returns) must be computed by a "
     "layer, but it is the input itself; nothing would be trained"),
])
def test_what_is_not_a_loss_is_an_error_at_the_return(loss: str, message: str) -> None:
    module = parse_text(mlp_with(loss), "model.dnn")
    with pytest.raises(Diagnostic) as caught:
        forward_graph(module)
    assert (caught.value.message, caught.value.filename) == (message, "model.dnn")
    assert (caught.value.line, caught.value.column) == (11, 3)  # `return %l`
    with pytest.raises(Diagnostic, match="the loss %l"):
        train(module, 2)


def test_a_graph_with_its_backward_pass_is_not_a_forward_graph() -> None:
    module = parse_file(str(MLP))
    AutodiffPass().apply(Context(), module)
    with pytest.raises(Diagnostic) as caught:
        forward_graph(module, "ad.mlir")
    assert caught.value.message == (
        "pase-run takes a forward graph, but @mlp already has gradient ops (dnn.vjp, "
        "dnn.sgd) from pase-autodiff; give it the model before pase-autodiff")


# --- overflow --------------------------------------------------------------------------------


def test_training_that_overflows_is_reported_without_warnings() -> None:
    module = data_parallel("reduce-mean", 2)
    report = train(module, 2, steps=2, lr=1e30)
    assert report.diverged
    assert np.isnan(report.losses[1]) or np.isinf(report.losses[1])
    assert not report.passed()
    assert not train(module, 2, steps=2).diverged


def test_a_nan_in_any_tensor_makes_the_normwise_error_nan() -> None:
    finite = np.ones(3)
    broken = np.array([1.0, np.nan, 1.0])
    for order in (["a", "b"], ["b", "a"]):
        measured = dict(zip(order, [finite, broken], strict=True))
        reference = dict(zip(order, [finite, finite], strict=True))
        assert np.isnan(normwise_error(measured, reference))
        assert np.isnan(normwise_error(reference, measured))


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


@pytest.mark.parametrize("devices", [2, 4])
def test_layers_off_the_loss_path_have_no_backward_in_the_model_either(devices: int) -> None:
    # %z and %r never reach the loss: pase-autodiff gives them no backward pass, and the cost
    # model charges them none (before, data parallelism predicted z's weight-gradient
    # all-reduce, which never runs).
    module = parse_text(DEAD_BRANCH, "dead.dnn")
    problem = build_problem(module, devices)
    layers = {layer.name: layer for layer in problem.layer_data}
    assert (layers["h"].backward, layers["z"].backward, layers["r"].backward) == (
        True, False, False)
    assert layers["z"].grads == (False, False)
    report = train(with_configs(module, problem.data_parallel()), devices, steps=1,
                   float_type="f64")
    assert report.words_mismatches() == []
    assert report.max_error() < 1e-9


def test_a_value_read_twice_by_a_layer_moves_once_each_way() -> None:
    # (z - u)² with e in rows and q in columns: e moves into q's layout once, and its two
    # gradient contributions (one per operand of mul) are summed there and move back once,
    # as the cost model's single edge e -> q predicts.
    source = mlp_with("  %u  = input [b, c]\n"
                      "  %e  = sub %z, %u config {b = 4}\n"
                      "  %q  = mul %e, %e config {c = 2}\n"
                      "  %l  = reduce mean %q over [b, c]")
    module = parse_text(source, "mse.dnn")
    PaseSearchPass(devices=4).apply(Context(), module)
    report = train(module, 4, steps=1, float_type="f64")
    words = {row.name: (row.measured, row.predicted) for row in report.words}
    assert words["e->q"][0] == words["e->q"][1] > 0
    assert words["e<-q"][0] == words["e<-q"][1] > 0
    assert report.words_mismatches() == []
    assert report.max_error() < 1e-9


def test_two_tensors_between_the_same_layers_are_counted_apart() -> None:
    # g reads h1's result and w, which lives in h1's layout (its first reader): two
    # transfers from h1 to g, tagged and predicted separately ("h1->g", "h1->g %w").
    source = """
    graph @m(b = 8, h = 6) {
      %x = input [b, h]
      %w = param [h]
      %h1 = mul %x, %w config {h = 2}
      %g = mul %h1, %w config {}
      %l = reduce mean %g over [b, h]
      return %l
    }
    """
    report = train(parse_text(source, "m.dnn"), 2, steps=1, float_type="f64")
    words = {row.name: (row.measured, row.predicted) for row in report.words}
    assert words["h1->g"] == (24, 24)
    assert words["h1->g %w"] == (3, 3)
    assert words["h1<-g"] == (24, 24)
    assert words["h1<-g %w"] == (3, 3)
    assert report.words_mismatches() == []
