"""The stage solver minimises what the pipelined step charges a stage, M (F + B) + AR.

Two matmuls; the second's weight (d x h) is smaller than the batch's activations
(b x h) but larger than one micro-batch's (b/M x h). Per micro-batch, splitting d (a
partial-sum all-reduce of b/M x h) costs less than all-reducing the weight's gradient,
so the old objective (one micro-batch's F + B + AR) split d; over the step's M
micro-batches that moves b x h, more than the weight, which data parallelism
all-reduces once. With one stage the step is exactly M (F + B) + AR, so the solver's
plan must be the best of all the stage's configurations, found by brute force over
them, each evaluated by the step formula (`evaluate_plan`).
"""

from __future__ import annotations

import itertools

import pytest

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import (
    Partitioner,
    PlanSpec,
    SearchOptions,
    StageSolver,
    evaluate_plan,
    stage_solver,
)
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import preset

SOURCE = """graph @two(b = 256, e = 64, d = 128, h = 64) {
  %x = input [b, e]
  %v = param [e, d]
  %a = einsum %x, %v -> [b, d]
  %w = param [d, h]
  %y = einsum %a, %w -> [b, h]
  return %y
}
"""
DEVICES, MICROBATCHES = 4, 4


def test_stage_objective_charges_the_allreduce_once_per_step() -> None:
    graph = read_graph(parse_text(SOURCE))
    machine = preset("v100-nvlink")
    assert graph.batch is not None
    solver = stage_solver(machine, graph.batch, min_shard=1)
    partitioner = Partitioner(graph.layers, graph.edges, graph.batch, DEVICES, machine, [],
                              solver)
    searched = partitioner.best(1, MICROBATCHES, "1f1b")
    assert searched is not None
    names = [layer.name for layer in graph.layers]

    def step(assignment: dict[str, dict[str, int]]) -> float:
        spec = PlanSpec((0,), MICROBATCHES, "1f1b", assignment)
        return evaluate_plan(graph.layers, graph.edges, graph.batch, DEVICES, machine,
                             spec).step

    part = partitioner.table.cut(0, len(names), MICROBATCHES)
    every = itertools.product(*solver.problem(part, DEVICES).config_lists)
    brute = min(step({name: dict(config) for name, config in zip(names, configs,
                                                                  strict=True)})
                for configs in every)
    assert searched.step == pytest.approx(brute, rel=1e-12)
    # One micro-batch's F + B + AR (M = 1's objective on the micro-batch's shapes).
    old = solver.solve(part, DEVICES)
    assert old is not None
    assert step(old.assignment) > 1.2 * searched.step


def test_shared_stage_costs_change_no_plan() -> None:
    """The stage problems' shared cost vectors (`StageCache`) give the plans and stage
    solves that pricing each problem's layers afresh gives, bit for bit."""
    graph = read_graph(parse_file("models/mlp.dnn"))
    machine = preset("v100-nvlink")
    assert graph.batch is not None
    plans = []
    for share in (True, False):
        solver = StageSolver(machine, graph.batch, SearchOptions(min_shard=1), share=share)
        partitioner = Partitioner(graph.layers, graph.edges, graph.batch, 8, machine,
                                  [1, 2, 3], solver)
        plan, _ = partitioner.search([1, 2, 4], [1, 2, 4], "1f1b")
        assert plan is not None
        plans.append((plan.step, [(stage.start, stage.stop, stage.assignment)
                                  for stage in plan.stages]))
    assert plans[0] == plans[1]
