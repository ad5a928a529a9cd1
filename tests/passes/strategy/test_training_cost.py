"""The training step's terms (`training_cost.py`, docs/cost-model.md "The training
step"), each against a value computed by hand on a tiny graph, and the per-layer
choices of recompute=auto / zero=auto through the DP against exhaustive search."""

from __future__ import annotations

import pytest

from pase.frontend import parse_text
from pase.passes.strategy import (
    PRESETS,
    Config,
    Problem,
    SearchOptions,
    TrainingConfig,
    TrainingOptions,
    build_problem,
    cost_model,
    solve,
    solve_capped,
    strategy_memory,
)
from pase.passes.strategy.cost import hierarchical_bandwidth
from pase.passes.strategy.cost_models import PASE_COST
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.memory import memory_vectors
from pase.passes.strategy.pipeline.segments import segments
from pase.passes.strategy.training_cost import TrainingCost, mark_checkpoints, memory_breakdown


def least_memory(problem: Problem) -> dict[str, Config]:
    """Each layer's configuration of least additive memory, and of those the least
    recomputed: a strategy that fits wherever the least any strategy needs does, nearly."""
    model = problem.model
    assert isinstance(model, TrainingCost)
    chosen = {}
    for layer, configs, weights in zip(problem.layer_data, problem.config_lists,
                                       memory_vectors(problem), strict=True):
        again = [model.memory_breakdown(layer, config)["recomputed"] for config in configs]
        chosen[layer.name] = configs[min(range(len(configs)),
                                         key=lambda i: (weights[i], again[i]))]
    return chosen


TINY = """
graph @tiny(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  %a = relu %y
  %v = param [h, d]
  %z = einsum %a, %v -> [b, d]
  %r = add %x, %z
  %u = param [d, h]
  %y2 = einsum %r, %u -> [b, h]
  %a2 = relu %y2
  %v2 = param [h, d]
  %z2 = einsum %a2, %v2 -> [b, d]
  %r2 = add %r, %z2
  return %r2
}
"""
MACHINE = PRESETS["a100-80gb-dgx"]
W = 16 * 32  # elements of %w


@pytest.fixture(scope="module")
def einsum():
    return read_graph(parse_text(TINY)).layers[0]


def model(**options: object) -> TrainingCost:
    return TrainingCost(TrainingOptions(**options))  # type: ignore[arg-type]


def test_defaults_are_todays_model():
    assert cost_model("", TrainingOptions()) is PASE_COST
    with pytest.raises(ValueError, match="need pase's own cost model"):
        cost_model("pase", TrainingOptions(optimizer="adam"))


@pytest.mark.parametrize(("config", "expected"), [
    ({"h": 4}, 2 * 4 * W / 4),                     # Adam: 2 fp32 words per element of the block
    (TrainingConfig({"b": 4}, zero=1), 2 * 4 * W / 4),   # the block is whole; ZeRO-1 shards by b
    ({"b": 4}, 2 * 4 * W),
])
def test_adam_state(einsum, config, expected):
    adam = model(optimizer="adam").memory_breakdown(einsum, config)
    assert adam["optimizer_state"] == expected
    sgd = model(zero="1").memory_breakdown(einsum, config)
    assert adam["parameters"] - sgd["parameters"] == 0.0


@pytest.mark.parametrize(("zero", "parameters", "gradients", "state"), [
    (0, 4 * W, 4 * W, 4 * W), (1, 4 * W, 4 * W, W), (2, 4 * W, W, W), (3, W, W, W)])
def test_zero_stages_shard_over_the_batch_factor(einsum, zero, parameters, gradients, state):
    parts = model(optimizer="momentum").memory_breakdown(
        einsum, TrainingConfig({"b": 4}, zero=zero))
    assert (parts["parameters"], parts["gradients"], parts["optimizer_state"]) == \
        (parameters, gradients, state)


def test_bf16_precision(einsum):
    costs = model(precision="bf16", optimizer="adam").layer_costs(einsum, [{"b": 2}], MACHINE)
    update = (8 + 2 + 16 + 2) * W / MACHINE.hbm_bandwidth    # 28 bytes per element
    # Memory-bound (the roofline): forward x, w, y blocks; backward dy, dw, x; 2 bytes each.
    moved = 2 * (8 * 16 / 2 + W + 8 * 32 / 2)
    assert 2 * 8 * 16 * 32 / 2 / 312e12 < moved / MACHINE.hbm_bandwidth
    assert costs.compute[0] == 2 * moved / MACHINE.hbm_bandwidth + update
    # The weight gradient's all-reduce over b = 2 in 2 bytes, at NVLink speed.
    assert costs.communication[0] == W * 2 / 300e9
    parts = model(precision="bf16", optimizer="adam").memory_breakdown(einsum, {"b": 2})
    assert parts == {"parameters": 2 * W, "gradients": 2 * W, "optimizer_state": 12 * W,
                     "activations": 8 * 32 / 2 * 2, "recomputed": 0.0}
    with pytest.raises(ValueError, match="machine 'v100-nvlink' has no bf16 peak"):
        model(precision="bf16").layer_costs(einsum, [{}], PRESETS["v100-nvlink"])


def test_recompute_adds_the_forward_and_drops_the_result(einsum):
    base = model().layer_costs(einsum, [{"h": 4}], MACHINE)
    costs = model(recompute="full").layer_costs(einsum, [{"h": 4}], MACHINE)
    assert costs.compute[0] == pytest.approx(base.compute[0] + base.forward_compute[0],
                                             rel=1e-12)
    assert costs.backward[0] == pytest.approx(base.backward[0] + base.forward[0], rel=1e-12)
    parts = model(recompute="full").memory_breakdown(einsum, {"h": 4})
    assert (parts["activations"], parts["recomputed"]) == (0.0, 8 * 32 / 4 * 4)


def test_checkpoints_end_the_recomputed_runs():
    graph = read_graph(parse_text(TINY))
    layers = mark_checkpoints(graph.layers, segments(graph.layers, graph.edges))
    assert [layer.checkpoint for layer in layers] == [False, False, False, True] * 2
    parts = memory_breakdown(model(recompute="full"), layers,
                             {layer.name: {} for layer in layers})
    # y, a and z are recomputed from x in r's backward: their results, 8·32 + 8·32 + 8·16
    # words, held again at once (then y2, a2, z2 from r); r's and r2's results kept.
    assert (parts["activations"], parts["recomputed"]) == (2 * 8 * 16 * 4,
                                                           (256 + 256 + 128) * 4)


def test_zero3_adds_one_all_gather_where_the_backward_reads_the_param(einsum):
    """z = a·v passes a gradient to a, which reads v: v is gathered again. y = x·w, whose
    input takes none, reads w in its backward only when recomputed."""
    second = read_graph(parse_text(TINY)).layers[2]
    assert second.name == "z"
    gather = 7 / 8 * W * 4 / 300e9
    for layer, recompute, extra in ((second, False, gather), (einsum, False, 0.0),
                                    (einsum, True, gather)):
        zero0, zero3 = (model(zero="auto").layer_costs(
            layer, [TrainingConfig({"b": 8}, recompute, zero)], MACHINE) for zero in (0, 3))
        assert zero3.communication[0] == pytest.approx(zero0.communication[0] + extra,
                                                       rel=1e-12)
        # (the forward's gather of every param: docs/cost-model.md, "ZeRO 3 in a pipeline")
        assert zero3.forward_communication[0] == pytest.approx(
            zero0.forward_communication[0] + gather, rel=1e-12)


def test_zero3_gathers_each_param_in_every_microbatch(einsum):
    """The program holds only a ZeRO 3 param's shard between micro-batches, so it gathers
    it before every micro-batch's forward: once a step there is only the gradients'
    reduce-scatter, the rest of the ring all-reduce (its all-gather) is per micro-batch.
    y = x·w, whose backward does not read w: at M micro-batches M gathers and one
    reduce-scatter (the mlp's stage 0 of `tests/targets/test_jax_pipeline_collectives.py`:
    3,072 words at M = 2 where the per-step share was charged 2,048)."""
    second = read_graph(parse_text(TINY)).layers[2]
    gather = 7 / 8 * W
    for layer, reads in ((einsum, 0), (second, 1)):
        zero3 = model(zero="auto").layer_costs(
            layer, [TrainingConfig({"b": 8}, False, 3)], MACHINE)
        assert zero3.param_words[0] == pytest.approx(gather, rel=1e-12)  # the reduce-scatter
        for micro in (1, 2, 4):
            per_step = micro * (zero3.words[0] - zero3.param_words[0]) + zero3.param_words[0]
            assert per_step == pytest.approx((micro * (1 + reads) + 1) * gather, rel=1e-12)


def test_hierarchical_all_reduce_on_four_nodes():
    within, across = 7 / 8 / (31 / 32), 3 / 4 / 8 / (31 / 32)
    assert hierarchical_bandwidth((32,), (True,), MACHINE) == \
        1 / (within / 300e9 + across / 25e9)
    # One device per node (the group strides over nodes): each its own adapter.
    assert hierarchical_bandwidth((4, 8), (True, False), MACHINE) == 25e9


def test_data_parallel_pins_the_batch_factor():
    problem = build_problem(parse_text(TINY), 8, MACHINE,
                            options=SearchOptions(training=TrainingOptions(data_parallel=2)))
    assert all(config.get("b") == 2 for name in problem.layers
               for config in problem.configs(name))


@pytest.mark.parametrize("cap_share", [None, 0.1])
def test_auto_choices_through_the_dp_equal_exhaustive(cap_share):
    training = TrainingOptions(optimizer="adam", recompute="auto", zero="auto")
    problems = {method: build_problem(parse_text(TINY), 2, MACHINE, options=SearchOptions(
        method=method, min_shard=1, training=training)) for method in ("dp", "exhaustive")}
    assert len(problems["dp"].configs("y")) == 2 * 4 * len(
        build_problem(parse_text(TINY), 2, MACHINE,
                      options=SearchOptions(min_shard=1)).configs("y"))
    if cap_share is None:
        found = {m: solve(p, SearchOptions(method=m)) for m, p in problems.items()}
        assert found["dp"].cost == pytest.approx(found["exhaustive"].cost, rel=1e-12)
        return
    free = strategy_memory(problems["dp"], solve(problems["dp"]).assignment)
    least = strategy_memory(problems["dp"], least_memory(problems["dp"]))
    cap = least + cap_share * (free - least)
    capped = {m: solve_capped(p, cap, method=m, effort=None) for m, p in problems.items()}
    assert capped["dp"].cost == pytest.approx(capped["exhaustive"].cost, rel=1e-9)
    assert capped["dp"].memory <= cap
    chosen = capped["dp"].assignment.values()
    assert any(c.recompute for c in chosen)  # the cap made the choice matter

