"""Reusing repeated eliminations (`solve_dp(reuse=True)`) changes nothing but the work done."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.orders import ORDER_METHODS
from pase.passes.strategy.prune import prune

MODELS = Path(__file__).resolve().parents[3] / "models"


def repeated_blocks(seed: int, small: bool = False) -> CostGraph:
    """A chain of random DAG blocks, most of them one block's tables repeated.

    Each block is a small random DAG joined to the previous block's last vertex; some
    blocks draw fresh tables, and some repeat the block's tables with one entry or a zero's
    sign changed, so that reuse has near misses to refuse. A `small` graph has at most
    3**12 strategies, for exhaustive search.
    """
    rng = np.random.default_rng(seed)
    block_size = int(rng.integers(2, 5))
    blocks = int(rng.integers(2, 4 if small else 6))
    sizes = [int(size) for size in rng.integers(1, 4 if small else 5, size=block_size)]
    integer = seed % 2 == 0

    def costs(*shape: int) -> np.ndarray:
        if integer:
            return rng.integers(0, 3, size=shape).astype(np.float64)
        return rng.random(shape) * 10.0

    edges = [(u, v) for v in range(1, block_size) for u in range(v)
             if u == v - 1 or rng.random() < 0.4]
    template = ([costs(size) for size in sizes],
                {(u, v): costs(sizes[u], sizes[v]) for u, v in edges},
                costs(sizes[-1], sizes[0]))
    vertex_costs: list[np.ndarray] = []
    edge_costs: dict[tuple[int, int], np.ndarray] = {}
    for block in range(blocks):
        own, inner, link = template
        kind = rng.random()
        if kind < 0.2:
            own = [costs(size) for size in sizes]
            inner = {edge: costs(*table.shape) for edge, table in inner.items()}
        elif kind < 0.35:
            own = [table.copy() for table in own]
            own[-1].flat[0] = -0.0 if own[-1].flat[0] == 0.0 else own[-1].flat[0] + 1.0
        base = block * block_size
        vertex_costs += own
        for (u, v), table in inner.items():
            edge_costs[(base + u, base + v)] = table
        if block:
            edge_costs[(base - 1, base)] = link
    graph = CostGraph([f"v{vertex}" for vertex in range(len(vertex_costs))], vertex_costs)
    for (u, v), table in edge_costs.items():
        graph.add_edge(u, v, table)
    return graph


def assert_same(graph: CostGraph, order: str = "genseq") -> int:
    """Reuse on and off agree bit for bit; returns how many steps were reused."""
    off = solve_dp(graph, order=order, reuse=False)
    on = solve_dp(graph, order=order, reuse=True)
    assert on.cost.hex() == off.cost.hex()
    assert on.choice == off.choice
    assert (on.order, on.table_entries, on.max_dependent_set) == (
        off.order, off.table_entries, off.max_dependent_set)
    # Shared tables are charged once, and a reused step allocates nothing.
    assert on.peak_table_bytes <= off.peak_table_bytes
    assert off.reused_steps == 0
    return on.reused_steps


@pytest.mark.parametrize("seed", range(40))
def test_reuse_matches_no_reuse_on_repeated_random_blocks(seed: int) -> None:
    graph = repeated_blocks(seed)
    for order in ORDER_METHODS:
        assert_same(graph, order)


def test_repeated_random_blocks_are_reused() -> None:
    assert sum(solve_dp(repeated_blocks(seed)).reused_steps for seed in range(40)) > 0


@pytest.mark.parametrize("seed", range(20))
def test_dp_with_reuse_equals_exhaustive(seed: int) -> None:
    graph = repeated_blocks(seed, small=True)
    expected = solve_exhaustive(graph)
    result = solve_dp(graph)
    assert result.cost == pytest.approx(expected.cost, rel=1e-9, abs=1e-12)
    assert graph.total_cost(result.choice) == pytest.approx(result.cost, rel=1e-9, abs=1e-12)


def test_a_sign_of_zero_is_not_reused() -> None:
    # The two blocks' tables are == equal but not bit-equal: -0.0 + -0.0 is -0.0.
    zero, negative = np.array([0.0, 1.0]), np.array([-0.0, 1.0])
    graph = CostGraph(["a", "b"], [zero, negative])
    assert solve_dp(graph).reused_steps == 0
    twins = CostGraph(["a", "b"], [zero, zero.copy()])
    assert solve_dp(twins).reused_steps == 1


@pytest.mark.parametrize(("model", "devices"), [("transformer", 8), ("gpt2_small", 8)])
def test_reuse_matches_no_reuse_on_models(model: str, devices: int) -> None:
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)
    graph, _ = prune(problem.cost_graph())
    assert assert_same(graph) > len(graph.names) // 3
