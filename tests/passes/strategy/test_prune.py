"""Exact pruning: dropping dominated and duplicate configurations never changes the optimum."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, build_problem, solve
from pase.passes.strategy import prune as pruning
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.prune import FIRST_COLUMNS, _plain_survivors, _survivors, prune

MODELS = Path(__file__).resolve().parents[3] / "models"


def random_graph(seed: int) -> CostGraph:
    """A random graph whose costs repeat and dominate each other often."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(3, 8))
    sizes = rng.integers(1, 6, size=count)
    costs = [rng.integers(0, 4, size=int(k)).astype(np.float64) for k in sizes]
    graph = CostGraph([f"v{i}" for i in range(count)], costs)
    for v in range(1, count):
        for u in rng.choice(v, size=min(v, int(rng.integers(1, 3))), replace=False):
            graph.add_edge(int(u), v, rng.integers(0, 3, size=(sizes[u], sizes[v])).astype(
                np.float64))
    return graph


@pytest.mark.parametrize("seed", range(60))
def test_pruning_keeps_the_optimum(seed: int) -> None:
    graph = random_graph(seed)
    pruned, kept = prune(graph)
    full = solve_exhaustive(graph)
    reduced = solve_exhaustive(pruned)
    assert reduced.cost == pytest.approx(full.cost, rel=1e-12, abs=1e-12)
    choice = [int(kept[v][c]) for v, c in enumerate(reduced.choice)]
    assert graph.total_cost(choice) == pytest.approx(full.cost, rel=1e-12, abs=1e-12)
    for v, indices in enumerate(kept):
        assert list(indices) == sorted(set(indices.tolist()))
        assert 1 <= len(indices) <= graph.sizes[v]


def test_pruning_removes_dominated_and_duplicate_rows() -> None:
    graph = CostGraph(["a", "b"], [np.array([1.0, 2.0, 1.0, 0.5]), np.array([0.0, 0.0])])
    graph.add_edge(0, 1, np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [5.0, 5.0]]))
    pruned, kept = prune(graph)
    # 1 is dominated by 0 (worse layer cost, same edges), 2 duplicates 0; 3 is cheaper here
    # but dearer on the edge, so it stays.
    assert kept[0].tolist() == [0, 3]
    assert pruned.vertex_costs[0].tolist() == [1.0, 0.5]


@pytest.mark.parametrize("model", ["alexnet", "rnnlm", "inception_v3", "transformer"])
@pytest.mark.parametrize("devices", [2, 8])
def test_models_keep_their_optimum(model: str, devices: int) -> None:
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)
    with_pruning = solve(problem, SearchOptions(pruning=True))
    without = solve(problem, SearchOptions(pruning=False))
    assert with_pruning.cost == pytest.approx(without.cost, rel=1e-12)
    assert problem.cost(with_pruning.assignment) == pytest.approx(without.cost, rel=1e-9)
    graph, _ = prune(problem.cost_graph())
    assert sum(graph.sizes) <= sum(problem.cost_graph().sizes)
    assert solve_dp(graph).cost == pytest.approx(without.cost, rel=1e-12)


def unshared(graph: CostGraph) -> CostGraph:
    """The same graph with every table a copy of its own: nothing for pruning to share."""
    copy = CostGraph(list(graph.names), [cost.copy() for cost in graph.vertex_costs])
    for (u, v), matrix in graph.edge_costs.items():
        copy.add_edge(u, v, matrix.copy())
    return copy


def buffers(graph: CostGraph) -> int:
    return len(graph.buffers())


@pytest.mark.parametrize(("model", "devices"), [
    ("transformer", 4), ("transformer", 8), ("gpt2_small", 8), ("inception_v3", 4),
])
def test_shared_tables_prune_as_copies_do(model: str, devices: int) -> None:
    """Identical layers of repeated blocks are pruned once and share their pruned tables;
    the result is bit for bit that of pruning every table on its own, and so is the DP's."""
    graph = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices).cost_graph()
    shared, shared_kept = prune(graph)
    alone, alone_kept = prune(unshared(graph))
    for mine, theirs in zip(shared_kept, alone_kept, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    for mine, theirs in zip(shared.vertex_costs, alone.vertex_costs, strict=True):
        assert mine.tobytes() == theirs.tobytes()
    assert shared.edge_costs.keys() == alone.edge_costs.keys()
    for edge, matrix in shared.edge_costs.items():
        assert matrix.tobytes() == alone.edge_costs[edge].tobytes()
    assert buffers(shared) <= buffers(graph) + len(graph.names) // 4
    assert buffers(shared) < buffers(alone)
    mine_dp, theirs_dp = solve_dp(shared), solve_dp(alone)
    assert mine_dp.cost.hex() == theirs_dp.cost.hex()
    assert mine_dp.choice == theirs_dp.choice


@pytest.mark.parametrize("seed", range(6))
def test_survivors_match_the_plain_test(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged comparisons and hashed duplicates keep exactly the plain test's rows
    (main's `_survivors`, which small row sets still take),
    with signed zeros (different bytes), NaN (never dominated or dominating) and inf, and
    rows wider than the first columns compared."""
    monkeypatch.setattr(pruning, "STAGED_ENTRIES", 0)  # (every row set staged)
    rng = np.random.default_rng(seed)
    for _ in range(300):
        count, width = int(rng.integers(1, 50)), int(rng.integers(1, 3 * FIRST_COLUMNS))
        rows = rng.integers(0, int(rng.integers(1, 4)), size=(count, width)).astype(float)
        for value, share in ((-0.0, 0.1), (np.nan, 0.03), (np.inf, 0.03)):
            rows[rng.random(rows.shape) < share * (seed % 2)] = value
        assert _survivors(rows).tolist() == _plain_survivors(rows).tolist()
