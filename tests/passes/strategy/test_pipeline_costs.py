"""The pieces of a pipeline's cost add up to pase's cost of the same strategy."""

from __future__ import annotations

import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem, layer_cost, solve
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import preset
from pase.passes.strategy.pipeline.microbatch import (
    activation_bytes,
    microbatch_layers,
    parameter_bytes,
)
from pase.passes.strategy.pipeline.stages import stage_cost
from pase.passes.strategy.pipeline.transfers import boundary_seconds
from pase.passes.strategy.problem import Problem


@pytest.mark.parametrize(("model", "devices"), [("mlp", 8), ("alexnet", 4),
                                                 ("transformer", 4), ("rnnlm", 4)])
def test_one_stage_one_microbatch_costs_what_pase_search_charges(model: str,
                                                                  devices: int) -> None:
    module = parse_file(f"models/{model}.dnn")
    problem = build_problem(module, devices, machine="v100-nvlink")
    solution = solve(problem)
    graph = read_graph(module)
    cost = stage_cost(graph.layers, graph.edges, solution.assignment, devices,
                      problem.machine)
    assert cost.forward + cost.backward + cost.allreduce == pytest.approx(solution.cost,
                                                                          rel=1e-12)
    assert cost.forward > 0
    assert cost.backward > 0


def test_microbatches_divide_the_batch_and_keep_the_rest() -> None:
    graph = read_graph(parse_file("models/mlp.dnn"))
    same = microbatch_layers(graph.layers, "b", 1)
    assert same == graph.layers
    quarter = microbatch_layers(graph.layers, "b", 4)
    assert [layer.result.sizes for layer in quarter] == \
        [(16, 1024), (16, 1024), (16, 10), ()]
    machine = preset("pase-default")
    whole = Problem.from_layers(graph.layers, graph.edges, 4, machine, batch="b")
    part = Problem.from_layers(quarter, graph.edges, 4, machine, batch="b")
    data_parallel = whole.data_parallel()
    # Compute scales with the batch; the weight-gradient all-reduce does not.
    assert layer_cost(quarter[0], {"b": 4}, machine).compute == \
        pytest.approx(layer_cost(graph.layers[0], {"b": 4}, machine).compute / 4)
    full = stage_cost(graph.layers, graph.edges, data_parallel, 4, machine)
    small = stage_cost(quarter, graph.edges, part.data_parallel(), 4, machine)
    assert small.forward < full.forward / 3
    assert small.allreduce == pytest.approx(full.allreduce)
    with pytest.raises(ValueError, match="batch b = 64 does not split into 3"):
        microbatch_layers(graph.layers, "b", 3)


def test_a_boundary_moves_whole_blocks() -> None:
    graph = read_graph(parse_file("models/mlp.dnn"))
    machine = preset("v100-nvlink")
    edge = graph.edges[0]                       # h [b=64, h=1024] -> a
    forward, backward = boundary_seconds(edge, {"b": 2}, {"h": 4}, 0, 4, machine)
    assert forward == pytest.approx(64 * 1024 / 4 * 4 / machine.intra_node_bandwidth)
    assert backward == pytest.approx(64 * 1024 / 2 * 4 / machine.intra_node_bandwidth)
    far, _ = boundary_seconds(edge, {"b": 2}, {"h": 4}, 0, machine.devices_per_node,
                              machine)
    assert far == pytest.approx(64 * 1024 / 4 * 4 / machine.inter_node_bandwidth)


def test_memory_per_device() -> None:
    graph = read_graph(parse_file("models/mlp.dnn"))
    unsplit = {layer.name: {} for layer in graph.layers}
    # w1 256×1024 and w2 1024×10, each with its gradient, 4 bytes an element.
    assert parameter_bytes(graph.layers, unsplit) == 2 * 4 * (256 * 1024 + 1024 * 10)
    assert activation_bytes(graph.layers, unsplit) == 4 * (64 * 1024 * 2 + 64 * 10 + 1)
    halves = {layer.name: {"b": 2} for layer in graph.layers[:3]} | {"l": {}}
    assert activation_bytes(graph.layers, halves) == 4 * (32 * 1024 * 2 + 32 * 10 + 1)
