"""The `-t jax` program's collectives as the cost model charges them, read from the HLO
XLA's SPMD partitioner makes of the step (docs/cost-model.md, "ZeRO and bf16/fp16 in the
JAX program" and "ZeRO's collectives on tensor-parallel plans"): under bf16 every
collective of the step moves bf16 (the gradients reduced in bf16, the params gathered in
bf16), its kinds are ZeRO's (a reduce-scatter of the gradients from ZeRO 1, the gathers
again in the backward at 3), and its bytes are the cost model's, on a data-parallel plan
and on one that splits the model's dims too."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from pase.dialect.training_options import StepOptions, set_training
from pase.frontend import parse_file, parse_text
from pase.passes.strategy import build_problem
from pase.passes.strategy.options import SearchOptions, TrainingOptions
from pase.targets.jax import jax_program
from pase.tools.run.jax import collectives, partitioned, second_gathers, train_jax
from pase.tools.run.load import forward_graph, with_configs

ROOT = Path(__file__).resolve().parents[2]
DATA_PARALLEL = {"h": {"b": 4}, "a": {"b": 4}, "z": {"b": 4}, "l": {"b": 4}}
"""The mlp's layers, each with its batch split over the 4 devices: every collective is a
parameter's (and the loss's scalar sum)."""


TENSOR_PARALLEL = {"h": {"b": 2, "h": 2}, "a": {"b": 2, "h": 2}, "z": {"b": 2, "h": 2},
                   "l": {"b": 2}}
"""The mlp on a 2 x 2 mesh: the batch over m0, the hidden dim h over m1 (Megatron's MLP:
w1's columns and w2's rows split, z's partial sums all-reduced over m1), the loss's
batch over m1 (z moved there and its gradient back: two collective-permutes). Each param
is replicated over m0 only."""


def mlp_step_hlo(precision: str, zero: int, folder: Path,
                 configs: dict[str, dict[str, int]] = DATA_PARALLEL) -> tuple[str, StepOptions]:
    """The HLO of the mlp's step under Adam, `precision` and `zero` on 4 XLA CPU devices
    as XLA's SPMD partitioner leaves it (the CPU backend then widens bf16 collectives to
    f32)."""
    module = with_configs(parse_file(str(ROOT / "models" / "mlp.dnn")), configs)
    options = StepOptions(optimizer="adam", precision=precision, zero=zero)
    set_training(forward_graph(module), options)
    return partitioned(jax_program(module, 4), 4, folder)["jit_step"], options


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_the_steps_collectives_move_what_the_cost_model_charges(
        precision: str, zero: int, tmp_path: Path) -> None:
    hlo, _ = mlp_step_hlo(precision, zero, tmp_path)
    moved: dict[str, float] = defaultdict(float)
    types = set()
    gathers: dict[int, int] = defaultdict(int)
    for collective in collectives(hlo):
        if collective.elements == 1:
            continue  # the loss's sum over the batch's shards (a scalar, always f32)
        types.add(collective.bytes // collective.elements)
        moved[collective.kind] += collective.words() * collective.bytes / collective.elements
        if collective.kind == "all-gather":
            gathers[collective.elements] += 1
    assert types == {4 if precision == "fp32" else 2}
    charge = charged(precision, zero)
    # The cost model charges a ring all-reduce of the gradients at ZeRO 0, its
    # reduce-scatter and all-gather (as much) at 1 and 2, and at 3 a reduce-scatter, the
    # all-gather before the forward and another before the backward of each param the
    # backward reads; the program writes them out (pase.targets.jax_zero), so the HLO
    # moves exactly that.
    expected = {0: {"all-reduce": charge},
                1: {"reduce-scatter": charge / 2, "all-gather": charge / 2},
                2: {"reduce-scatter": charge / 2, "all-gather": charge / 2}}.get(zero)
    if expected is None:
        # ZeRO 3: w2 gathered again in the backward (dz/da reads it); w1 only before the
        # forward, since no backward product reads it (dx is not taken), and the model
        # charges no second gather of it.
        gradients = charged(precision, 1) / 2
        w2 = 3 / 4 * 1024 * 10 * (4 if precision == "fp32" else 2)
        assert charge == pytest.approx(2 * gradients + w2, rel=1e-12)
        expected = {"reduce-scatter": gradients, "all-gather": charge - gradients}
        assert gathers == {256 * 1024: 1, 1024 * 10: 2}
    assert moved == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("zero", "words"), [(1, 0.0), (3, 3 / 4 * 1024 * 10)])
def test_pase_run_predicts_zero3s_second_gather(zero: int, words: float) -> None:
    """pase-run's "pase predicts" line counts ZeRO 3's gathers before the backward: w2's
    (dz/da reads it), not w1's."""
    module = with_configs(parse_file(str(ROOT / "models" / "mlp.dnn")), DATA_PARALLEL)
    graph = forward_graph(module)
    set_training(graph, StepOptions(optimizer="adam", precision="bf16", zero=zero))
    problem = build_problem(graph, 4, pinned=DATA_PARALLEL)
    assert second_gathers(graph, problem, DATA_PARALLEL) == pytest.approx(words, rel=1e-12)


def charged(precision: str, zero: int,
            configs: dict[str, dict[str, int]] = DATA_PARALLEL) -> float:
    """The cost model's bytes per device of the collectives of the step's layers with a
    parameter (their gradients' and ZeRO's, and their own all-reduces)."""
    module = with_configs(parse_file(str(ROOT / "models" / "mlp.dnn")), configs)
    training = TrainingOptions(optimizer="adam", precision=precision, zero=str(zero))
    problem = build_problem(forward_graph(module), 4, machine="a100-nvlink",
                            pinned=configs, options=SearchOptions(training=training))
    total = 0.0
    for layer, configs in zip(problem.layer_data, problem.config_lists, strict=True):
        if any(layer.params):
            costs = problem.model.layer_costs(layer, configs, problem.machine)
            total += float(costs.words[0]) * training.element_bytes
    return total


def moved_by_kind(hlo: str) -> tuple[dict[str, float], set[int]]:
    """Bytes received per device by kind (the loss's scalar sum left out), and the
    element sizes the collectives move."""
    moved: dict[str, float] = defaultdict(float)
    for collective in collectives(hlo):
        if collective.elements > 1:
            moved[collective.kind] += (collective.words() * collective.bytes
                                       / collective.elements)
    return moved, {c.bytes // c.elements for c in collectives(hlo) if c.elements > 1}


@pytest.mark.parametrize(("precision", "zero"), [("bf16", 1), ("fp32", 2), ("bf16", 3)])
def test_a_tensor_parallel_plan_reduce_scatters_its_gradients_as_charged(
        precision: str, zero: int, tmp_path: Path) -> None:
    # Left to the layouts, XLA's partitioner reduced the gradients with an all-reduce and
    # sliced the shard (1.5x the model's bytes at ZeRO 1 and 2); the program reduces
    # them itself now (pase.targets.jax_reduced): a reduce-scatter over m0 of each
    # device's partial product, in the precision's type.
    hlo, _ = mlp_step_hlo(precision, zero, tmp_path, TENSOR_PARALLEL)
    moved, types = moved_by_kind(hlo)
    width = 4 if precision == "fp32" else 2
    assert types == {width}
    words = 256 * 512 + 512 * 10  # w1's and w2's blocks on a device (h split 2 ways)
    z = 32 * 10  # z's partial sums [b/2, c], all-reduced over m1 in the forward
    gathered = words if zero < 3 else words + 512 * 10  # at 3 w2 again in the backward
    assert moved == pytest.approx({"reduce-scatter": words / 2 * width,
                                   "all-gather": gathered / 2 * width,
                                   "all-reduce": z * width,
                                   "collective-permute": 2 * z * width}, rel=1e-12)
    layers = sum(moved.values()) - moved["collective-permute"]
    assert layers == pytest.approx(charged(precision, zero, TENSOR_PARALLEL), rel=1e-12)


LM = """
graph @lm(b = 8, s = 4, v = 16, d = 8, h = 16) {
  %ids = input [b, s] : i32
  %labels = input [b, s] : i32
  %table = param [v, d]
  %e = embedding %ids, %table
  %g = param [d]
  %beta = param [d]
  %n = layernorm %e, %g, %beta over d
  %w1 = param [d, h]
  %u = einsum %n, %w1 -> [b, s, h]
  %a = relu %u
  %w2 = param [h, v]
  %z = einsum %a, %w2 -> [b, s, v]
  %l = softmax_cross_entropy %z, %labels over v
  return %l
}
"""
LM_PLAN = {"e": {"b": 2, "d": 2}, "n": {"b": 2, "s": 2}, "u": {"b": 2, "h": 2},
           "a": {"b": 2, "h": 2}, "z": {"b": 2, "h": 2}, "l": {"b": 2, "s": 2}}
"""A 2 x 2 mesh: the embedding's table split by its columns d over m1 (replicated over
the batch's m0), the norm over the batch and the sequence (its scale and bias
replicated on all four devices), the einsums Megatron's MLP."""


def lm_module(precision: str, zero: int) -> ModuleOp:
    module = with_configs(parse_text(LM), LM_PLAN)
    set_training(forward_graph(module), StepOptions(optimizer="adam", precision=precision,
                                                    zero=zero))
    return module


def test_norms_and_embeddings_reduce_scatter_their_gradients(tmp_path: Path) -> None:
    # Left to the layouts, the norm's scale and bias and the embedding's table were
    # all-reduced whole and sliced; their layers now take their own backward on each
    # device's blocks and psum_scatter it (pase.targets.jax_reduced.REDUCED_LAYER).
    hlo = partitioned(jax_program(lm_module("bf16", 1), 4), 4, tmp_path)["jit_step"]
    found = collectives(hlo)
    scattered = sorted((c.group, c.elements) for c in found if c.kind == "reduce-scatter")
    # g and beta [8] over all 4 devices; the table's [16, 4] block, w1's [8, 8] and
    # w2's [8, 16] over m0
    assert scattered == [(2, 32), (2, 32), (2, 64), (4, 2), (4, 2)]
    assert {c.bytes // c.elements for c in found if c.elements > 1} == {2}
    # All-reduced: the loss's scalar sums and two activations' partial sums, z's [4, 4, 16]
    # in the forward and n's gradient [4, 4, 8] (Megatron's MLP); no param's gradient.
    assert sorted(c.elements for c in found if c.kind == "all-reduce") == [1, 1, 128, 256]


def test_a_reduced_norm_and_embedding_learn_as_one_device() -> None:
    report = train_jax(lm_module("bf16", 3), 4, steps=3)
    training = report.training
    assert training.passed(), (training.max_error(), training.tolerance())
    assert training.losses[2] < training.losses[0]
