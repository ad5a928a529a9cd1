"""Pruning by bounds keeps the optimum, bit for bit: the DP on the configurations the bounds
cannot rule out returns the choice and cost of the DP on all of them, the bounds bound, and
the plan predicts the DP's steps."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, bound, build_problem, solve
from pase.passes.strategy.bound import _Diffusion, _Plan, solve_bounded
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.orders import ORDER_METHODS, elimination_order
from tests.passes.strategy.test_dp import random_graph

MODELS = Path(__file__).resolve().parents[3] / "models"


@pytest.fixture
def always_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounds on every graph, however small, and a first round too small to succeed, so
    that the rounds that grow the threshold run as well."""
    monkeypatch.setattr(bound, "MIN_DP_ENTRIES", 0)
    monkeypatch.setattr(bound, "SWEEP_ENTRIES", 0)
    monkeypatch.setattr(bound, "SWEEPS_WORTH", 0)
    monkeypatch.setattr(bound, "FIRST_ROUND_ENTRIES", 1)


@pytest.mark.parametrize("seed", range(60))
def test_bounded_dp_is_the_dp_bit_for_bit(seed: int, always_bound: None) -> None:
    graph = random_graph(seed)
    for method in ORDER_METHODS:
        expected = solve_dp(graph, order=method)
        result = solve_bounded(graph, order=method)
        assert (result.choice, result.cost) == (expected.choice, expected.cost)
    assert result.cost == pytest.approx(solve_exhaustive(graph).cost, rel=1e-9, abs=1e-12)


def tied_graph(seed: int) -> CostGraph:
    """A cycle-rich graph of 0/1 costs: many strategies share the optimum."""
    rng = np.random.default_rng(seed)
    count = 7
    sizes = rng.integers(2, 5, size=count)
    graph = CostGraph([f"v{v}" for v in range(count)],
                      [rng.integers(0, 2, size=k).astype(np.float64) for k in sizes])
    for u, v in itertools.combinations(range(count), 2):
        if v == u + 1 or rng.random() < 0.3:
            graph.add_edge(u, v, rng.integers(0, 2, size=(sizes[u], sizes[v])).astype(float))
    return graph


@pytest.mark.parametrize("seed", range(20))
def test_ties_go_where_the_dp_sends_them(seed: int, always_bound: None) -> None:
    graph = tied_graph(seed)
    expected = solve_dp(graph)
    result = solve_bounded(graph)
    assert (result.choice, result.cost) == (expected.choice, expected.cost)


@pytest.mark.parametrize("seed", range(30))
def test_bounds_bound_every_strategy(seed: int) -> None:
    graph = random_graph(seed)
    if not graph.edge_costs:
        return
    diffusion = _Diffusion(graph, jit="off")
    for _ in range(3):
        diffusion.sweep()
    lower, per_config, decoded = diffusion.bounds()
    best = [np.full(size, np.inf) for size in graph.sizes]
    for choice in itertools.product(*(range(size) for size in graph.sizes)):
        cost = graph.total_cost(choice)
        for vertex, config in enumerate(choice):
            best[vertex][config] = min(best[vertex][config], cost)
    optimum = min(float(costs.min()) for costs in best)
    assert lower <= optimum + 1e-9
    for bounds, least in zip(per_config, best, strict=True):
        assert (bounds <= least + 1e-9).all()
    assert graph.total_cost(decoded) >= optimum - 1e-9


def test_diffusion_never_lowers_the_bound() -> None:
    graph = random_graph(6)
    diffusion = _Diffusion(graph, jit="off")
    lowers = []
    for _ in range(5):
        diffusion.sweep()
        lowers.append(diffusion.bounds()[0])
    assert all(later >= earlier - 1e-12 for earlier, later in itertools.pairwise(lowers))


def test_infinite_costs_go_to_the_plain_dp(always_bound: None) -> None:
    graph = CostGraph(["a", "b"], [np.array([1.0, np.inf, 2.0]), np.array([0.0, 5.0])])
    graph.add_edge(0, 1, np.array([[0.0, 1.0], [0.0, 0.0], [3.0, 0.0]]))
    assert solve_bounded(graph) == solve_dp(graph)


def test_the_plan_counts_repeated_steps_once() -> None:
    # Two identical chains a-b-c, x-y-z sharing their tables, and p-q-r whose last edge
    # is theirs: r's step is c's, the others are new.
    vector, edge = np.array([1.0, 0.0]), np.array([[0.0, 2.0], [1.0, 0.0]])
    other = np.array([[5.0, 2.0], [3.0, 4.0]])
    graph = CostGraph(list("abcxyzpqr"), [vector] * 9)
    for u, v, table in ((0, 1, edge), (1, 2, edge), (3, 4, edge), (4, 5, edge),
                        (6, 7, other), (7, 8, edge)):
        graph.add_edge(u, v, table)
    sequence = elimination_order(graph.neighbours(), "genseq")
    assert len(_Plan(graph, sequence, reuse=False).steps) == 9
    reused = _Plan(graph, sequence, reuse=True)
    assert len(reused.steps) == 5
    assert reused.entries(np.array(graph.sizes, dtype=np.float64)) == 4 + 4 + 2 + 4 + 2
    assert reused.roles[0] == reused.roles[3] != reused.roles[6]
    assert reused.roles[2] == reused.roles[8]
    assert solve_dp(graph, sequence).reused_steps == 4


@pytest.mark.parametrize(("model", "devices"), [("transformer", 8), ("gpt2_small", 8),
                                                ("inception_v3", 8), ("resnet101", 4)])
def test_bundled_models_keep_their_optimum(model: str, devices: int,
                                           always_bound: None) -> None:
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)
    plain = solve(problem, SearchOptions(bounding=False))
    bounded = solve(problem)
    assert bounded.assignment == plain.assignment
    assert bounded.cost == plain.cost
    assert bounded.stats is not None
    assert plain.stats is not None
    assert bounded.stats.choice == plain.stats.choice


@pytest.mark.parametrize("seed", range(20))
def test_every_round_runs_a_dp(seed: int, always_bound: None,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A threshold that leaves some vertex nothing still runs a DP (each vertex keeping its
    # least bound too: `_floored`), whose strategy lowers the next round's upper; the
    # result is the whole DP's all the same.
    graph = random_graph(seed)
    rounds: list[str] = []
    choose, run, floor = bound._threshold, bound.solve_dp, bound._floored

    def threshold(*arguments: object) -> float:
        rounds.append("threshold")
        return choose(*arguments)  # type: ignore[arg-type]

    def floored(*arguments: object) -> list[np.ndarray]:
        rounds.append("floored")
        return floor(*arguments)  # type: ignore[arg-type]

    def dp(restricted: CostGraph, *arguments: object, **named: object) -> object:
        assert min(restricted.sizes) >= 1
        rounds.append("dp")
        return run(restricted, *arguments, **named)  # type: ignore[arg-type]

    monkeypatch.setattr(bound, "_threshold", threshold)
    monkeypatch.setattr(bound, "_floored", floored)
    monkeypatch.setattr(bound, "solve_dp", dp)
    # (Limits of 1 entry: no floored DP fits FINAL_REACH times one; here none is skipped.)
    monkeypatch.setattr(bound, "FINAL_REACH", math.inf, raising=False)
    result = solve_bounded(graph)
    expected = run(graph)
    assert (result.choice, result.cost) == (expected.choice, expected.cost)
    # Every threshold found is followed by its round's DP, but a second floored round's
    # (a floored round never proves its optimum: the first one's strategy is enough).
    ran = 0  # floored rounds whose DP ran
    for event, after in zip(rounds, [*rounds[1:], "end"], strict=True):
        if event == "threshold":
            assert after in ("dp", "floored")
        elif event == "floored":
            assert (after == "dp") == (ran == 0)
            ran += after == "dp"
    assert not rounds or rounds[-1] == "dp"


@pytest.mark.parametrize("seed", range(16, 24))
def test_one_floored_round_runs(seed: int, always_bound: None,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The first two thresholds are forced below every bound (floored): the first round's
    # DP runs, the second is skipped (a floored round never proves its optimum), and the
    # result is the whole DP's all the same. Seed 20's second round fits FINAL_REACH.
    events: list[str] = []
    choose, run, floor = bound._threshold, bound.solve_dp, bound._floored

    def threshold(bounds: bound.Bounds, *arguments: object) -> float:
        events.append("threshold")
        if events.count("threshold") <= 2:
            return bounds.lower - 1.0
        return choose(bounds, *arguments)  # type: ignore[arg-type]

    def floored(*arguments: object) -> list[np.ndarray]:
        events.append("floored")
        return floor(*arguments)  # type: ignore[arg-type]

    def dp(restricted: CostGraph, *arguments: object, **named: object) -> object:
        events.append("dp")
        return run(restricted, *arguments, **named)  # type: ignore[arg-type]

    monkeypatch.setattr(bound, "FIRST_ROUND_ENTRIES", 4)
    monkeypatch.setattr(bound, "_threshold", threshold)
    monkeypatch.setattr(bound, "_floored", floored)
    monkeypatch.setattr(bound, "solve_dp", dp)
    graph = random_graph(seed)
    result = solve_bounded(graph)
    expected = run(graph)
    assert (result.choice, result.cost) == (expected.choice, expected.cost)
    if seed == 20:  # (the second floored round skipped, then the DP at the upper bound)
        assert events == ["threshold", "floored", "dp", "threshold", "floored", "dp"]


def test_floored_keeps_each_vertex_least_bound() -> None:
    bounds = bound.Bounds(0.0, [np.array([3.0, 1.0, 2.0]), np.array([0.5, 4.0]),
                                np.array([2.0, 1.5, 1.0])], 5.0, (1, 0, 2), 1, 0.0)
    roles = [0, 1, 0]
    assert [mask.tolist() for mask in bound._kept(bounds, 0.8, roles)] == [
        [False, False, False], [True, False], [False, False, False]]
    # Vertices 0 and 2 share a role: each keeps its own least, and the role the union.
    assert [mask.tolist() for mask in bound._floored(bounds, 0.8, roles)] == [
        [False, True, True], [True, False], [False, True, True]]
    assert [mask.tolist() for mask in bound._floored(bounds, 1.5, roles)] == [
        [False, True, True], [True, False], [False, True, True]]
