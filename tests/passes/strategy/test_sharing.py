"""Repeated blocks share their work, never their answers: the configuration lists, cost
tables, costs of an assignment and pruned tables of identical layers are computed once,
and the optimum is bit for bit the one of computing everything for every layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem, solve
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.orders import _eliminate, elimination_order
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.prune import prune

MODELS = Path(__file__).resolve().parents[3] / "models"
CASES = [("transformer", 4), ("gpt2_small", 4), ("gpt2_small", 8), ("resnet101", 4)]


def problem_of(model: str, devices: int) -> Problem:
    return build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)


def unshared_graph(problem: Problem) -> CostGraph:
    """Every vertex vector and edge matrix computed for its own layer, nothing shared."""
    vertex_costs = [np.array([problem._vertex(i, dict(config)) for config in configs],
                             dtype=np.float64)
                    for i, configs in enumerate(problem.config_lists)]
    graph = CostGraph(problem.layers, vertex_costs)
    for edge in problem.edges:
        graph.add_edge(edge.producer, edge.consumer, problem._edge(
            edge, [dict(c) for c in problem.config_lists[edge.producer]],
            [dict(c) for c in problem.config_lists[edge.consumer]]))
    return graph


def unshared_total(problem: Problem, assignment: dict[str, dict[str, int]]) -> float:
    """`Problem.cost` without its per-call memo, summed in the same order."""
    configs = problem._complete(assignment)
    compute = communication = redistribution = 0.0
    for layer, config in zip(problem.layer_data, configs, strict=True):
        cost = problem._layer_cost(layer, config)
        compute += cost.compute
        communication += cost.communication
    for edge in problem.edges:
        redistribution += float(problem._edge(edge, [configs[edge.producer]],
                                              [configs[edge.consumer]])[0, 0])
    return compute + communication + redistribution


@pytest.mark.parametrize(("model", "devices"), CASES)
def test_shared_tables_are_the_tables_of_each_layer(model: str, devices: int) -> None:
    problem = problem_of(model, devices)
    shared = problem.cost_graph()
    alone = unshared_graph(problem)
    assert len(shared.buffers()) < len(alone.buffers()) // 2
    for mine, theirs in zip(shared.vertex_costs, alone.vertex_costs, strict=True):
        assert mine.tobytes() == theirs.tobytes()
    assert shared.edge_costs.keys() == alone.edge_costs.keys()
    for edge, matrix in shared.edge_costs.items():
        assert matrix.tobytes() == alone.edge_costs[edge].tobytes()


@pytest.mark.parametrize(("model", "devices"), CASES)
def test_sharing_keeps_the_optimum_bit_for_bit(model: str, devices: int) -> None:
    problem = problem_of(model, devices)
    solution = solve(problem)
    assert solution.stats is not None
    alone, kept = prune(unshared_graph(problem))
    expected = solve_dp(alone, reuse=False)
    assert solution.cost.hex() == expected.cost.hex()
    assert solution.stats.choice == tuple(int(kept[v][c]) for v, c in enumerate(expected.choice))
    for assignment in (solution.assignment, problem.data_parallel()):
        assert problem.cost(assignment).hex() == unshared_total(problem, assignment).hex()


def test_identical_layers_share_one_configuration_list() -> None:
    problem = problem_of("gpt2_small", 8)
    ups = [i for i, name in enumerate(problem.layers) if name.endswith("_mlp_up")]
    assert len(ups) == 12
    assert all(problem.config_lists[i] is problem.config_lists[ups[0]] for i in ups)
    # Each layer still hands out configurations of its own.
    first, second = problem.configs(problem.layers[ups[0]]), problem.configs(problem.layers[ups[1]])
    first[0]["b"] = 99
    assert second[0] != first[0]


def lowest_id_order(neighbours: list[set[int]]) -> list[int]:
    """Minimum degree with ties to the lowest id: genseq before it looked at what a vertex
    had absorbed."""
    current = [set(adjacent) for adjacent in neighbours]
    remaining = set(range(len(current)))
    order = []
    while remaining:
        vertex = min(remaining, key=lambda candidate: (len(current[candidate]), candidate))
        order.append(vertex)
        remaining.remove(vertex)
        _eliminate(current, vertex)
    return order


@pytest.mark.parametrize(("model", "devices"), [*CASES, ("inception_v3", 8)])
def test_genseq_finds_the_optimum_of_the_lowest_id_tie_break(model: str, devices: int) -> None:
    """Breaking degree ties by what a vertex has absorbed changes the order, not the optimum:
    the same minimum, up to the rounding of sums in another order, by a strategy of the same
    cost; dependent sets are no larger."""
    graph, _ = prune(problem_of(model, devices).cost_graph())
    order = elimination_order(graph.neighbours(), "genseq")
    assert order != lowest_id_order(graph.neighbours())
    mine = solve_dp(graph, order)
    theirs = solve_dp(graph, lowest_id_order(graph.neighbours()))
    assert mine.cost == pytest.approx(theirs.cost, rel=1e-12)
    assert graph.total_cost(mine.choice) == pytest.approx(graph.total_cost(theirs.choice),
                                                          rel=1e-12)
    assert mine.max_dependent_set <= theirs.max_dependent_set
