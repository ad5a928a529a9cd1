"""The DP solves of one graph at many multipliers λ (a capped search's) share what does
not depend on λ: the elimination order, the bounds' plan, the reuse cache's keys.
Each is checked against the work made afresh: the same survivors, orders and results."""

from __future__ import annotations

import numpy as np
import pytest

from pase.passes.strategy import dp as dp_module
from pase.passes.strategy import orders
from pase.passes.strategy.bound import _Plan, _plan_of
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.memory import priced
from pase.passes.strategy.prune import prune


def _graph(seed: int) -> tuple[CostGraph, list[np.ndarray]]:
    """A random graph with costs that tie and dominate often, an isolated vertex or two
    (of different sizes), and memory per configuration."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(4, 9))
    sizes = rng.integers(1, 12, size=count)
    costs = [rng.integers(0, 5, size=int(k)).astype(np.float64) for k in sizes]
    graph = CostGraph([f"v{i}" for i in range(count)], costs)
    for v in range(3, count):  # (0 and 1 isolated)
        for u in rng.choice(np.arange(2, v), size=min(v - 2, int(rng.integers(1, 3))),
                            replace=False):
            graph.add_edge(int(u), v, rng.integers(0, 4, size=(sizes[u], sizes[v])).astype(
                np.float64))
    memory = [rng.integers(0, 4, size=int(k)).astype(np.float64) for k in sizes]
    return graph, memory


@pytest.mark.parametrize("seed", range(30))
def test_pruning_at_many_multipliers_is_pruning_afresh(seed: int) -> None:
    """Pruning and solving the graph priced at each λ in turn (the edge tables shared,
    so its order and plan are reused) give what a graph of fresh copies gives."""
    graph, memory = _graph(seed)
    for rate in (0.0, 0.3, 1.0, 0.3, 2.5):
        costs = priced(graph.vertex_costs, memory, rate)
        shared = CostGraph(graph.names, costs, dict(graph.edge_costs))
        fresh = CostGraph(graph.names, [cost.copy() for cost in costs],
                          {edge: table.copy() for edge, table in graph.edge_costs.items()})
        (pruned, kept), (alone, kept_alone) = prune(shared), prune(fresh)
        assert [k.tolist() for k in kept] == [k.tolist() for k in kept_alone]
        assert all(np.array_equal(a, b) for a, b in zip(pruned.vertex_costs,
                                                        alone.vertex_costs, strict=True))
        mine, theirs = solve_graph(shared), solve_graph(fresh)
        assert (mine.choice, mine.cost.hex()) == (theirs.choice, theirs.cost.hex())


def _adjacency(seed: int) -> list[set[int]]:
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 30))
    adjacency: list[set[int]] = [set() for _ in range(count)]
    for _ in range(int(rng.integers(0, 3 * count))):
        u, v = (int(x) for x in rng.integers(0, count, size=2))
        if u != v:
            adjacency[u].add(v)
            adjacency[v].add(u)
    return adjacency


@pytest.mark.parametrize("method", orders.ORDER_METHODS)
def test_remembered_orders_are_the_orders(method: str) -> None:
    """Every order and dependent set taken again is the one made afresh, and a caller
    changing what it got changes nothing for the next."""
    for seed in range(40):
        adjacency = _adjacency(seed)
        for _ in range(2):
            order = orders.elimination_order(adjacency, method)
            assert order == orders._made_order(adjacency, method)
            dependent = orders.dependent_sets(adjacency, order)
            assert dependent == orders._made_dependent_sets(adjacency, order)
            order.reverse()
            dependent.clear()
    with pytest.raises(ValueError, match="unknown elimination order"):
        orders.elimination_order([set()], "nope")


@pytest.mark.parametrize("seed", range(8))
def test_reuse_keys_give_the_same_steps(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated blocks whose tables are keyed by their bytes (small) or by a sample
    (others, some differing only off the sample) reuse exactly the steps that are the
    same, as keys of hashed samples alone (every table) find them: the same strategy,
    cost and reused steps, and the cost of the DP without reuse."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 5)) if seed % 2 else 40
    blocks = 5
    names, costs = [], []
    base = rng.integers(0, 3, size=size).astype(float)
    for number in range(2 * blocks):
        names.append(f"v{number}")
        costs.append(base)
    graph = CostGraph(names, costs)
    inner = rng.integers(0, 4, size=(size, size)).astype(float)
    odd = inner.copy()
    odd[0, 1] += 1.0  # (off a sample of every 3rd entry or more)
    link = rng.integers(0, 4, size=(size, size)).astype(float)
    for block in range(blocks):
        graph.add_edge(2 * block, 2 * block + 1, odd if block == 2 else inner)
        if block:
            graph.add_edge(2 * block - 1, 2 * block, link)
    monkeypatch.setattr(dp_module, "DIGEST_SAMPLE", max(1, size * size // 3))
    bytes_keyed = solve_dp(graph)
    plain = solve_dp(graph, reuse=False)
    monkeypatch.setattr(dp_module, "RAW_DIGEST_ENTRIES", 0)
    sampled = solve_dp(graph)
    assert (bytes_keyed.choice, bytes_keyed.cost.hex(), bytes_keyed.reused_steps) == \
        (sampled.choice, sampled.cost.hex(), sampled.reused_steps)
    assert (bytes_keyed.choice, bytes_keyed.cost.hex()) == (plain.choice, plain.cost.hex())


def _stack(rate: float, shared: bool) -> CostGraph:
    """Four repeated blocks priced at `rate`: their vectors and tables the same arrays
    (`shared`), or copies."""
    rng = np.random.default_rng(5)
    vector, weight = rng.random(6), rng.random(6)
    inner, link = rng.random((6, 6)), rng.random((6, 6))
    costs = priced([vector] * 8, [weight] * 8, rate)
    if not shared:
        costs = [cost.copy() for cost in costs]
    graph = CostGraph([f"v{i}" for i in range(8)], costs)
    for block in range(4):
        graph.add_edge(2 * block, 2 * block + 1, inner if shared else inner.copy())
        if block:
            graph.add_edge(2 * block - 1, 2 * block, link if shared else link.copy())
    return graph


def test_a_plan_is_made_once_for_a_graph_at_many_multipliers() -> None:
    """The bounds' plan of a graph priced at another λ is the one made before; a graph
    whose tables are shared otherwise (copies: no repeated steps) gets its own."""
    sequence = [0, 2, 4, 6, 1, 3, 5, 7]  # (blocks 1-3 alike: steps reused)
    first = _plan_of(_stack(0.5, True), sequence, True)
    again = _plan_of(_stack(2.0, True), sequence, True)
    assert again is first
    fresh = _Plan(_stack(2.0, True), sequence, True)
    assert (again.roles, again.steps) == (fresh.roles, fresh.steps)
    copies = _plan_of(_stack(2.0, False), sequence, True)
    alone = _Plan(_stack(2.0, False), sequence, True)
    assert copies is not first
    assert (copies.roles, copies.steps) == (alone.roles, alone.steps)
    assert len(copies.steps) > len(first.steps)
