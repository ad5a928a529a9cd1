"""`Problem.from_layers` and `Problem.subproblem`: problems from plain data, and a problem
restricted to a range of its layers on fewer devices (a pipeline stage)."""

from __future__ import annotations

import math
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import (
    PinError,
    Problem,
    SearchOptions,
    build_problem,
    layer_cost,
    read_graph,
    solve,
)
from pase.passes.strategy.machines import PRESETS

MODELS = Path(__file__).resolve().parents[3] / "models"


def model(name: str, devices: int, machine: str = "pase-default",
          pinned: dict[str, dict[str, int]] | None = None, **options: Any) -> Problem:
    return build_problem(parse_file(str(MODELS / f"{name}.dnn")), devices, machine, pinned,
                         SearchOptions(**options))


def test_from_layers_builds_what_build_problem_builds() -> None:
    module = parse_file(str(MODELS / "alexnet.dnn"))
    data = read_graph(module)
    built = Problem.from_layers(data.layers, data.edges, 8, PRESETS["v100-nvlink"],
                                batch=data.batch, min_shard=2, graph=data.name)
    expected = build_problem(module, 8, "v100-nvlink", options=SearchOptions(min_shard=2))
    assert built.config_lists == expected.config_lists
    assert (built.graph, built.layers, built.edges) == (expected.graph, expected.layers,
                                                        expected.edges)
    assert solve(built).cost == solve(expected).cost


def test_from_layers_takes_a_preset_name_and_no_file() -> None:
    data = read_graph(parse_file(str(MODELS / "mlp.dnn")))
    problem = Problem.from_layers(data.layers, data.edges, 4, "a100-nvlink")
    assert problem.machine == PRESETS["a100-nvlink"]
    with pytest.raises(ValueError, match="unknown machine 'cluster.toml'; presets are "):
        Problem.from_layers(data.layers, data.edges, 4, "cluster.toml")


@pytest.mark.parametrize(("name", "devices", "min_shard"), [
    ("mlp", 8, 4), ("mlp", 16, 1), ("alexnet", 8, 4), ("rnnlm", 4, 4), ("transformer", 8, 4),
    ("transformer", 4, 2), ("inception_v3", 4, 4),
])
def test_the_subproblem_of_all_layers_is_the_problem(name: str, devices: int,
                                                     min_shard: int) -> None:
    problem = model(name, devices, min_shard=min_shard)
    whole = problem.subproblem(problem.layers, devices)
    assert whole.config_lists == problem.config_lists
    assert whole.edges == problem.edges
    expected, found = solve(problem), solve(whole)
    assert found.assignment == expected.assignment
    assert found.cost == expected.cost


def stage_cost(stage: Problem, assignment: dict[str, dict[str, int]]) -> float:
    """The stage's layers' costs plus the redistribution of its internal edges, by hand."""
    costs = []
    for layer in stage.layer_data:
        cost = layer_cost(layer, assignment[layer.name], stage.machine)
        costs += [cost.compute, cost.communication]
    for edge in stage.edges:
        producer, consumer = stage.layer_data[edge.producer], stage.layer_data[edge.consumer]
        costs.append(float(stage.model.edge_costs(
            edge, producer, [assignment[producer.name]], consumer,
            [assignment[consumer.name]], stage.devices, stage.machine)[0, 0]))
    return math.fsum(costs)


@pytest.mark.parametrize(("name", "first", "last"), [("transformer", 0, 6),
                                                     ("transformer", 5, 14),
                                                     ("alexnet", 3, 12), ("mlp", 1, 3)])
def test_a_stage_costs_its_layers_and_its_internal_edges(name: str, first: int,
                                                         last: int) -> None:
    problem = model(name, 8)
    names = problem.layers[first:last]
    stage = problem.subproblem(names, 4)
    assert stage.layers == names
    inside = {(problem.layers[e.producer], problem.layers[e.consumer], e.carried)
              for e in problem.edges
              if problem.layers[e.producer] in names and problem.layers[e.consumer] in names}
    assert {(stage.layers[e.producer], stage.layers[e.consumer], e.carried)
            for e in stage.edges} == inside
    for assignment in (stage.data_parallel(), solve(stage).assignment):
        assert stage.cost(assignment) == pytest.approx(stage_cost(stage, assignment),
                                                       rel=1e-12)


@pytest.mark.parametrize(("name", "devices"), [("alexnet", 16), ("transformer", 8),
                                               ("inception_v3", 8)])
def test_a_stage_on_half_the_devices_uses_at_most_half(name: str, devices: int) -> None:
    problem = model(name, devices)
    half = len(problem.layers) // 2
    for names in (problem.layers[:half], problem.layers[half:]):
        stage = problem.subproblem(names, devices // 2)
        assert stage.devices == devices // 2
        for configs in stage.config_lists:
            assert configs
            assert all(prod(config.values()) <= devices // 2 for config in configs)
        assignment = solve(stage).assignment
        assert all(prod(config.values()) <= devices // 2 for config in assignment.values())


def test_a_stage_keeps_pins_machine_min_shard_and_compat() -> None:
    problem = model("mlp", 8, machine="h100-nvlink", min_shard=2, pinned={"a": {"b": 2}},
                    compat="pase")
    stage = problem.subproblem(["h", "a"], 4)
    assert stage.configs("a") == [{"b": 2}]
    assert stage.pins == {"a": {"b": 2}}
    assert (stage.machine, stage.min_shard, stage.compat, stage.graph, stage.batch_dim) == (
        problem.machine, 2, "pase", "mlp", problem.batch_dim)
    assert "z" not in stage.layers
    with pytest.raises(PinError, match="layer 'a' is pinned to 2 devices but only 1 are"):
        problem.subproblem(["a"], 1)


def test_a_stage_of_unknown_layers_is_an_error() -> None:
    problem = model("mlp", 8)
    with pytest.raises(ValueError, match=r"no layer 'nope', 'q' in graph @mlp"):
        problem.subproblem(["h", "q", "nope"], 4)


def test_a_stage_needs_devices() -> None:
    problem = model("mlp", 8)
    with pytest.raises(ValueError, match="devices"):
        problem.subproblem(["h"], 0)
    assert np.isfinite(solve(problem.subproblem([], 4)).cost)
