"""Bounds of repeated blocks (`strategy/repeats.py`) bound every strategy, and the search that
prunes with them returns the plain DP's plan and cost, bit for bit."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, build_problem, repeats
from pase.passes.strategy.bound import _Diffusion, _Plan, solve_bounded
from pase.passes.strategy.capped import SWEEPS, ReducedCosts, close_gap
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.options import TrainingOptions
from pase.passes.strategy.orders import elimination_order
from pase.passes.strategy.prune import prune
from pase.passes.strategy.repeats import block_bounds, find_repeat
from tests.models.test_generate import generate
from tests.passes.strategy.test_bound import always_bound  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def parts_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts' bounds on every graph with repeated blocks, however small."""
    monkeypatch.setattr(repeats, "MIN_EDGE_ENTRIES", 0)


def stack(seed: int, blocks: int = 5) -> CostGraph:
    """A head vertex, `blocks` copies of a random 2-vertex block (shared tables, with
    ties), a tail tied back to the head: a GPT's shape in miniature."""
    rng = np.random.default_rng(seed)

    def table(*shape: int) -> np.ndarray:
        return rng.integers(0, 3, size=shape).astype(np.float64)

    inner, stream = table(2), table(2)
    into, across, out = table(2, 2), table(2, 2), table(2, 2)
    names = ["head", *(f"b{i}_{part}" for i in range(blocks) for part in ("x", "r")), "tail"]
    graph = CostGraph(names, [table(2), *[inner, stream] * blocks, table(2)])
    previous = 0
    for i in range(blocks):
        x, r = 1 + 2 * i, 2 + 2 * i
        graph.add_edge(previous, x, into)
        graph.add_edge(x, r, across)
        graph.add_edge(previous, r, out)
        previous = r
    graph.add_edge(previous, len(names) - 1, table(2, 2))
    graph.add_edge(0, len(names) - 1, table(2, 2))
    return graph


@pytest.mark.usefixtures("always_bound")
@pytest.mark.parametrize("seed", range(8))
def test_block_bounds_bound_every_strategy(seed: int) -> None:
    graph = stack(seed)
    plan = _Plan(graph, elimination_order(graph.neighbours(), "genseq"), True)
    bounds = block_bounds(graph, plan, min_edge_entries=0)
    assert bounds is not None
    best = [np.full(size, np.inf) for size in graph.sizes]
    for choice in itertools.product(*(range(size) for size in graph.sizes)):
        cost = graph.total_cost(choice)
        for vertex, config in enumerate(choice):
            best[vertex][config] = min(best[vertex][config], cost)
    for bound, least in zip(bounds.per_config, best, strict=True):
        assert (bound <= least + bounds.margin).all()
    assert bounds.upper == graph.total_cost(bounds.decoded)
    expected = solve_dp(graph)
    result = solve_bounded(graph)
    assert (result.choice, result.cost) == (expected.choice, expected.cost)


@pytest.mark.usefixtures("always_bound")
def test_a_generated_gpt_gets_the_plain_dps_plan(tmp_path: Path) -> None:
    path = tmp_path / "gpt.dnn"
    generate().main(["--layers", "4", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", "128", "--batch", "8", "-o", str(path)])
    training = TrainingOptions(optimizer="adam", precision="bf16", recompute="full", zero="1")
    problem = build_problem(parse_file(str(path)), 8, "a100-80gb-dgx",
                            options=SearchOptions(training=training))
    graph, kept = prune(problem.cost_graph())
    sequence = elimination_order(graph.neighbours(), "genseq")
    plan = _Plan(graph, sequence, True)
    repeat = find_repeat(plan.roles)
    assert repeat is not None
    assert repeat.copies >= 3
    assert block_bounds(graph, plan, min_edge_entries=0) is not None
    expected = solve_dp(graph)
    result = solve_bounded(graph)
    plans = [json.dumps(problem.assignment([int(kept[v][c]) for v, c in enumerate(choice)]))
             for choice in (expected.choice, result.choice)]
    assert plans[0] == plans[1]
    assert result.cost == expected.cost


@pytest.mark.parametrize("seed", range(8))
def test_the_parts_moves_bound_the_graph_as_the_parts_do(seed: int) -> None:
    # The parts' moves put where their edges are (a copy's at the vertex it copies) are
    # a reparametrisation of the whole graph whose bound is at least the parts' own.
    graph = stack(seed)
    plan = _Plan(graph, elimination_order(graph.neighbours(), "genseq"), True)
    bounds = block_bounds(graph, plan, jit="off", min_edge_entries=0)
    moves = repeats.block_moves(graph, jit="off")
    assert bounds is not None
    assert moves is not None
    diffusion = _Diffusion(graph, "off")
    diffusion.warm(moves)
    assert diffusion.lower()[0] >= bounds.lower - bounds.margin
    for choice in itertools.islice(itertools.product(*(range(size) for size in graph.sizes)),
                                   0, None, 7):
        moved = sum(float(diffusion.unary[v][c]) for v, c in enumerate(choice)) + sum(
            float(graph.edge_costs[(u, v)][choice[u], choice[v]] - at_u[choice[u]]
                  - at_v[choice[v]])
            for (u, v), (at_u, at_v) in zip(graph.edge_costs, moves, strict=True))
        assert moved == pytest.approx(graph.total_cost(choice), abs=1e-9)


def test_a_graph_without_repeats_has_no_parts_moves() -> None:
    graph = CostGraph(["a", "b"], [np.array([1.0, 2.0]), np.array([0.0, 1.0])])
    graph.add_edge(0, 1, np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert repeats.block_moves(graph, jit="off") is None


@pytest.mark.parametrize("seed", range(6))
def test_reduced_costs_of_repeated_blocks_start_from_the_parts(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under a cap, the reduced costs of a stack of blocks start from the parts' moves
    # (each distinct part swept alone) and sweep the whole graph until it settles, at
    # most `SWEEPS` times; their bounds still never
    # exceed the least cost of the strategies that fit and take a configuration, and the
    # exact search finds the brute-force optimum.
    graph = stack(seed)
    rng = np.random.default_rng(100 + seed)
    inner = rng.integers(1, 4, size=2).astype(np.float64)
    memory = [rng.integers(1, 4, size=2).astype(np.float64), *[inner] * (len(graph.names) - 2),
              rng.integers(1, 4, size=2).astype(np.float64)]
    strategies = [(choice, graph.total_cost(choice),
                   sum(float(memory[v][c]) for v, c in enumerate(choice)))
                  for choice in itertools.product(*(range(size) for size in graph.sizes))]
    weights = sorted({weight for _, _, weight in strategies})
    sweeps = []
    real_sweep = _Diffusion.sweep

    def counted(self: _Diffusion) -> None:
        sweeps.append(len(self.graph.names))
        real_sweep(self)

    monkeypatch.setattr(_Diffusion, "sweep", counted)
    for cap in weights[:-1]:
        fitting = [(choice, cost) for choice, cost, weight in strategies if weight <= cap]
        best = min(cost for _, cost in fitting)
        for rate in (0.0, 0.25, 1.0):
            sweeps.clear()
            reduced = ReducedCosts(graph, memory, cap, rate, jit="off")
            whole = sweeps.count(len(graph.names))
            assert 0 < whole <= SWEEPS
            assert whole < len(sweeps)  # (the parts' sweeps first)
            assert reduced.lower <= best + 1e-9
            for choice, cost in fitting:
                for v, c in enumerate(choice):
                    assert reduced.per_config[v][c] <= cost + 1e-9
        least = min(strategies, key=lambda item: item[2])
        closed = close_gap(graph, memory, cap, 0.25, least, -math.inf)
        assert closed.best[1] == pytest.approx(best, abs=1e-12)
        assert not closed.stopped
