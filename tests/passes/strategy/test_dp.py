"""The DP equals exhaustive search on random graphs, under every elimination order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import SearchError, SearchMemoryError, eliminate, solve_dp
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.orders import ORDER_METHODS, dependent_sets, elimination_order

SHAPES = ("chain", "diamond", "skip", "multi_input", "tree", "disconnected", "dense")


def random_edges(shape: str, vertex_count: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """The edges of a small DNN-like graph of the given shape, as (producer, consumer) pairs."""
    chain = [(vertex, vertex + 1) for vertex in range(vertex_count - 1)]
    match shape:
        case "chain":
            return chain
        case "diamond":
            middle = range(1, vertex_count - 1)
            return [(0, vertex) for vertex in middle] + [(v, vertex_count - 1) for v in middle]
        case "skip":
            skips = [(vertex, vertex + 2) for vertex in range(0, vertex_count - 2, 2)]
            return chain + skips
        case "multi_input":
            return chain + [(0, vertex_count - 1), (1, vertex_count - 2)]
        case "tree":
            return [(int(rng.integers(vertex)), vertex) for vertex in range(1, vertex_count)]
        case "disconnected":
            half = vertex_count // 2
            return [(v, v + 1) for v in range(half - 1)] + [
                (v, v + 1) for v in range(half, vertex_count - 1)
            ]
        case _:
            pairs = itertools.combinations(range(vertex_count), 2)
            return chain + [pair for pair in pairs if rng.random() < 0.4]


def random_graph(seed: int) -> CostGraph:
    """A random graph with 4-9 vertices, 1-6 configurations each, some integer costs for ties."""
    rng = np.random.default_rng(seed)
    shape = SHAPES[seed % len(SHAPES)]
    vertex_count = int(rng.integers(4, 10))
    sizes = rng.integers(1, 7, size=vertex_count)
    integer_costs = seed % 3 == 0

    def costs(*shape: int) -> np.ndarray:
        if integer_costs:
            return rng.integers(0, 4, size=shape).astype(np.float64)
        return rng.random(shape) * 10.0

    graph = CostGraph([f"layer{v}" for v in range(vertex_count)], [costs(k) for k in sizes])
    for producer, consumer in random_edges(shape, vertex_count, rng):
        graph.add_edge(producer, consumer, costs(sizes[producer], sizes[consumer]))
    return graph


@pytest.mark.parametrize("seed", range(60))
def test_dp_matches_exhaustive(seed: int) -> None:
    graph = random_graph(seed)
    expected = solve_exhaustive(graph)
    assert graph.total_cost(expected.choice) == pytest.approx(expected.cost, rel=1e-9)
    for method in ORDER_METHODS:
        result = solve_dp(graph, order=method)
        assert sorted(result.order) == list(range(len(graph.names)))
        assert result.cost == pytest.approx(expected.cost, rel=1e-9, abs=1e-12)
        assert graph.total_cost(result.choice) == pytest.approx(result.cost, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_explicit_order_matches(seed: int) -> None:
    graph = random_graph(seed)
    order = list(np.random.default_rng(seed).permutation(len(graph.names)))
    result = solve_dp(graph, order=order)
    assert result.order == tuple(order)
    assert result.cost == pytest.approx(solve_exhaustive(graph).cost, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("chunk_entries", [1, 5, 7, 64, 1 << 17])
def test_eliminate_in_chunks_matches_one_pass(chunk_entries: int) -> None:
    rng = np.random.default_rng(chunk_entries)
    sizes = {0: 3, 2: 1, 4: 5, 5: 4, 7: 6}
    factor_axes = [(4,), (0, 4), (2, 4), (4, 5, 7), (0, 2, 4, 7), (4, 7)]
    factors = [
        (axes, rng.integers(0, 3, size=[sizes[axis] for axis in axes]).astype(np.float64))
        for axes in factor_axes
    ]
    axes, minimum, argmin = eliminate(factors, 4, chunk_entries=chunk_entries)
    assert axes == (0, 2, 5, 7)
    assert argmin.dtype == np.uint8
    combined = np.zeros([sizes[axis] for axis in (0, 2, 4, 5, 7)])
    for factor, table in factors:
        index = tuple(slice(None) if axis in factor else None for axis in (0, 2, 4, 5, 7))
        combined = combined + table[index]
    np.testing.assert_array_equal(minimum, combined.min(axis=2))
    np.testing.assert_array_equal(argmin, combined.argmin(axis=2))


@pytest.mark.parametrize("seed", range(6))
def test_a_step_in_one_chunk_is_the_chunked_steps_bits(seed: int) -> None:
    """`eliminate`'s one-chunk path (`_eliminate_whole`) and its chunked path give the
    same minimum (bit for bit), argmin (ties to the lowest index) and shapes, down to a
    step with no dependent set."""
    rng = np.random.default_rng(seed)
    sizes = {0: 3, 1: 7, 2: 5, 3: 1}
    for factor_axes, vertex in ((((2,), (0, 2), (1, 2), (0, 1, 2)), 2), (((1,), (1,)), 1),
                                (((0, 3), (3,)), 3)):
        factors = [(axes, np.round(rng.normal(size=[sizes[a] for a in axes]), 1) / 3)
                   for axes in factor_axes]
        whole, chunked = eliminate(factors, vertex), eliminate(factors, vertex, chunk_entries=1)
        assert whole[0] == chunked[0]
        assert whole[1].shape == chunked[1].shape
        assert whole[1].tobytes() == chunked[1].tobytes()
        assert whole[2].dtype == chunked[2].dtype
        assert whole[2].tobytes() == chunked[2].tobytes()


def uniform_graph(edges: list[tuple[int, int]], vertex_count: int, size: int = 3) -> CostGraph:
    rng = np.random.default_rng(vertex_count)
    graph = CostGraph([f"v{v}" for v in range(vertex_count)], [rng.random(size)] * vertex_count)
    for u, v in edges:
        graph.add_edge(u, v, rng.random((size, size)))
    return graph


def test_genseq_dependent_sets_on_chain_tree_and_cycle() -> None:
    chain = uniform_graph([(v, v + 1) for v in range(7)], 8)
    tree = uniform_graph([(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6), (6, 7)], 8)
    cycle = uniform_graph([(v, (v + 1) % 6) for v in range(6)], 6)
    assert solve_dp(chain).max_dependent_set == 1
    assert solve_dp(tree).max_dependent_set == 1
    assert solve_dp(cycle).max_dependent_set == 2


def test_dependent_sets_follow_fill_edges() -> None:
    star = [{1, 2, 3}, {0}, {0}, {0}]
    # Degree first; among the leaves left after 1 and 2, 3 has absorbed nothing, 0 both.
    assert elimination_order(star, "genseq") == [1, 2, 3, 0]
    assert elimination_order(star, "bfs") == [0, 1, 2, 3]
    assert [len(dependent) for dependent in dependent_sets(star, [0, 1, 2, 3])] == [3, 2, 1, 0]
    assert max(len(dependent) for dependent in dependent_sets(star, [1, 2, 3, 0])) == 1


def test_genseq_breaks_degree_ties_by_what_a_vertex_has_absorbed() -> None:
    # Once 0 is gone, 1, 2 and 3 all have degree 2; 1 and 3 shared a factor with 0, 2 did
    # not, so 2 goes next (the lowest id would have picked 1).
    cycle = [{1, 3}, {0, 2}, {1, 3}, {0, 2}]
    assert elimination_order(cycle, "genseq") == [0, 2, 1, 3]


def test_bfs_visits_each_component_from_its_smallest_vertex() -> None:
    neighbours = [{2}, {3}, {0, 4}, {1}, {2}]
    assert elimination_order(neighbours, "bfs") == [0, 2, 4, 1, 3]


def test_minfill_avoids_fill_edges() -> None:
    # Vertex 0 has the smallest degree but eliminating it joins 1 and 2; vertex 5's neighbours
    # are already a clique, so eliminating it adds no edge.
    neighbours = [{1, 2}, {0, 3}, {0, 4}, {1, 4, 5, 6}, {2, 3, 5, 6}, {3, 4, 6}, {3, 4, 5}]
    assert elimination_order(neighbours, "genseq")[0] == 0
    assert elimination_order(neighbours, "minfill")[0] == 5


def test_orders_are_permutations() -> None:
    neighbours = random_graph(6).neighbours()
    for method in ORDER_METHODS:
        assert sorted(elimination_order(neighbours, method)) == list(range(len(neighbours)))


def test_unknown_order_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="genseq, bfs, minfill"):
        elimination_order([set()], "random")


def test_parallel_edges_are_summed() -> None:
    graph = CostGraph(["a", "b"], [np.zeros(2), np.zeros(3)])
    first = np.arange(6.0).reshape(2, 3)
    second = np.ones((3, 2))
    graph.add_edge(0, 1, first)
    graph.add_edge(1, 0, second)
    np.testing.assert_array_equal(graph.edge_costs[(0, 1)], first + second.T)
    assert graph.total_cost([1, 2]) == 6.0
    assert solve_dp(graph).cost == solve_exhaustive(graph).cost == 1.0


def test_memory_budget_names_the_vertex() -> None:
    graph = uniform_graph([(0, 1), (1, 2), (0, 2)], 3, size=4)
    with pytest.raises(SearchMemoryError, match="'v0'.*dependent set.*'v1', 'v2'.*order=genseq"):
        solve_dp(graph, order="bfs", memory_budget=100)
    with pytest.raises(SearchMemoryError, match="64 entries.*larger min-shard"):
        solve_dp(graph, memory_budget=100)
    # A permutation resolved from genseq (the bounds' restricted DP) does not suggest
    # order=genseq again (DenseNet-121's refusal did).
    with pytest.raises(SearchMemoryError) as raised:
        solve_dp(graph, order=[0, 1, 2], memory_budget=100, order_name="genseq")
    assert "order=genseq" not in str(raised.value)
    assert str(raised.value).endswith("use a smaller configuration space (for example a "
                                      "larger min-shard)")
    assert issubclass(SearchMemoryError, SearchError)


def test_exhaustive_refuses_above_the_limit() -> None:
    graph = uniform_graph([(0, 1), (1, 2)], 3, size=5)
    with pytest.raises(SearchError, match="125 strategies.*method=dp"):
        solve_exhaustive(graph, limit=100)
    assert solve_exhaustive(graph, limit=125).table_entries == 125


def test_exhaustive_breaks_ties_lexicographically() -> None:
    graph = CostGraph(["a", "b", "c"], [np.zeros(3), np.zeros(2), np.zeros(4)])
    graph.add_edge(0, 2, np.ones((3, 4)) - np.eye(3, 4))
    assert solve_exhaustive(graph).choice == (0, 0, 0)


def test_the_budget_counts_the_graph_and_resident_tables_throughout() -> None:
    # The graph's tables stay alive (the graph holds them), so eliminating a vertex frees
    # none of them; tables held elsewhere (`resident_bytes`) count too.
    graph = uniform_graph([(0, 1), (1, 2)], 3, size=4)
    result = solve_dp(graph)
    held = sum(graph.buffers().values())
    assert result.peak_table_bytes > held
    assert solve_dp(graph, memory_budget=result.peak_table_bytes).cost == result.cost
    with pytest.raises(SearchMemoryError):
        solve_dp(graph, memory_budget=result.peak_table_bytes - 1)
    with pytest.raises(SearchMemoryError):
        solve_dp(graph, memory_budget=result.peak_table_bytes, resident_bytes=1)
