"""The memory the training options report (docs/cost-model.md, "The training step"):
a tied parameter counted once per device that holds a use (Megatron-LM's rule), the
largest segment's recomputed results in the total a memory cap compares, and the
breakdown summing to its total with a FLOP/s per device that is the model's FLOPs over
the step, for every optimizer/precision/recompute/zero combination."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from xdsl.context import Context

from pase.frontend import parse_text
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import (
    MEMORY_PARTS,
    PRESETS,
    MemoryCapError,
    SearchOptions,
    TrainingCost,
    TrainingOptions,
    build_problem,
    memory_breakdown,
    memory_parts,
    read_graph,
    solve,
    solve_capped,
    step_flops,
)
from tests.passes.strategy.test_training_cost import TINY

MACHINE = PRESETS["a100-80gb-dgx"]

TIED = """
graph @tied(b = 8, s = 4, v = 64, d = 16, h = 32) {
  %ids = input [b, s] : i32
  %labels = input [b, s] : i32
  %wte = param [v, d]
  %x = embedding %ids, %wte
  %w1 = param [d, h]
  %y = einsum %x, %w1 -> [b, s, h]
  %a = relu %y
  %w2 = param [h, d]
  %z = einsum %a, %w2 -> [b, s, d]
  %r = add %x, %z
  %logits = einsum %r, %wte -> [b, s, v]
  %loss = softmax_cross_entropy %logits, %labels over v
  return %loss
}
"""

PARAMETERS = 64 * 16 + 16 * 32 + 32 * 16
"""TIED's parameter elements, the table once."""


def test_a_tied_table_is_counted_once_on_the_device_that_holds_both_uses() -> None:
    layers = read_graph(parse_text(TIED)).layers
    model = TrainingCost(TrainingOptions(optimizer="adam"))
    unsplit = {layer.name: {} for layer in layers}
    whole = memory_breakdown(model, layers, unsplit)
    assert whole["parameters"] == whole["gradients"] == 4 * PARAMETERS
    assert whole["optimizer_state"] == 2 * 4 * PARAMETERS
    # Two stages, the uses on both: each keeps a copy (Megatron-LM's rule).
    cut = [layer.name for layer in layers].index("r")
    first, last = (memory_breakdown(model, part, unsplit) for part in (layers[:cut],
                                                                      layers[cut:]))
    assert first["parameters"] + last["parameters"] == 4 * (PARAMETERS + 64 * 16)
    assert last["parameters"] == 4 * 64 * 16


def _search(source: str, tmp_path: Path, name: str, **options: object) -> dict:
    out = tmp_path / f"{name}.json"
    PaseSearchPass(devices=4, machine="a100-80gb-dgx", export=str(out),
                   **options).apply(Context(), parse_text(source))  # type: ignore[arg-type]
    return json.loads(out.read_text())


def _stages(source: str, tmp_path: Path, name: str, **options: object) -> dict:
    out = tmp_path / f"{name}.json"
    PartitionStagesPass(devices=4, machine="a100-80gb-dgx", export=str(out),
                        **options).apply(Context(), parse_text(source))  # type: ignore[arg-type]
    return json.loads(out.read_text())


def test_both_passes_count_a_tied_table_once(tmp_path: Path) -> None:
    options = {"optimizer": "adam", "precision": "bf16"}
    searched = _search(TIED, tmp_path, "search", **options)
    one = _stages(TIED, tmp_path, "one", stages=1, microbatches=1, **options)
    assert one["pipeline"]["memory_parts"] == searched["memory_parts"]
    assert searched["memory"]["per_device"] == searched["memory_parts"]["total"]
    two = _stages(TIED, tmp_path, "two", stages=2, microbatches=1, **options)
    layers = read_graph(parse_text(TIED)).layers
    model = TrainingCost(TrainingOptions(**options))  # type: ignore[arg-type]
    assignment = {entry["name"]: entry["config"] for entry in two["layers"]}
    held = []
    for stage in two["stages"]:
        part = [layer for layer in layers if layer.name in stage["layers"]]
        held.append(memory_breakdown(model, part, assignment))
        assert stage["memory"] == pytest.approx(held[-1]["total"], rel=1e-12)
    # Each stage holding a use of the table keeps a copy: the two count it twice.
    assert [{"x", "logits"} & set(stage["layers"]) for stage in two["stages"]] == \
        [{"x"}, {"logits"}]
    assert held[1]["parameters"] >= 2 * 64 * 16 / 4


def test_the_recomputed_results_are_in_the_total_the_cap_compares() -> None:
    training = TrainingOptions(optimizer="adam", recompute="full")
    problem = build_problem(parse_text(TINY), 2, MACHINE,
                            options=SearchOptions(min_shard=1, training=training))
    free = solve(problem).assignment
    memory = memory_parts(problem, free)
    assert memory.recomputed > 0
    old = memory.total - memory.recomputed  # (what the cap compared before)
    cap = memory.total - memory.recomputed / 10
    assert old < cap < memory.total
    with pytest.raises(MemoryCapError):  # (below the least any strategy needs with it)
        solve_capped(problem, old, effort=None)
    capped = solve_capped(problem, cap, effort=None)  # (the old total fit: `free`)
    assert capped.assignment != free
    assert capped.memory == memory_parts(problem, capped.assignment).total <= cap
    assert capped.lower_bound <= capped.cost


def test_a_pipeline_cap_between_the_old_and_new_total_changes_or_refuses_the_plan(
        tmp_path: Path) -> None:
    options = {"optimizer": "adam", "recompute": "full", "min_shard": 1}
    free = _stages(TINY, tmp_path, "free", stages=2, microbatches=1, **options)
    parts = free["pipeline"]["memory_parts"]
    assert parts["recomputed"] > 0
    assert parts["total"] == free["pipeline"]["memory"]
    cap = (parts["total"] - parts["recomputed"] / 10) / (1 << 30)
    capped = _stages(TINY, tmp_path, "capped", stages=2, microbatches=1,
                     device_memory_gib=cap, **options)
    assert capped["pipeline"]["memory"] <= cap * (1 << 30)
    assert capped["layers"] != free["layers"]


COMBINATIONS = list(itertools.product(("sgd", "momentum", "adam"), ("fp32", "bf16", "fp16"),
                                      ("none", "full", "auto"), ("0", "1", "2", "3", "auto")))


@pytest.mark.parametrize(("optimizer", "precision", "recompute", "zero"), COMBINATIONS)
def test_the_breakdown_sums_to_its_total_and_the_flops_are_the_models(
        optimizer: str, precision: str, recompute: str, zero: str) -> None:
    training = TrainingOptions(optimizer=optimizer, precision=precision,
                               recompute=recompute, zero=zero)
    if training.is_default:
        return  # (the default step reports no breakdown)
    problem = build_problem(parse_text(TIED), 4, MACHINE,
                            options=SearchOptions(training=training))
    assignment = solve(problem).assignment
    memory = memory_parts(problem, assignment)
    assert memory.parts is not None
    assert sum(memory.parts[part] for part in MEMORY_PARTS) == \
        pytest.approx(memory.parts["total"], rel=1e-12)
    assert memory.total == pytest.approx(memory.parts["total"], rel=1e-12)
    step = problem.breakdown(assignment).total
    flops = step_flops(problem.layer_data)
    assert flops == step_flops(read_graph(parse_text(TIED)).layers)  # the model's work
    per_device = flops / step / 4
    assert 0 < per_device <= MACHINE.peak(precision)
