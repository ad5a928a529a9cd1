"""Bounds of repeated blocks (`strategy/repeats.py`) bound every strategy, and the search that
prunes with them returns the plain DP's plan and cost, bit for bit."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, build_problem, repeats
from pase.passes.strategy.bound import _Plan, solve_bounded
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
