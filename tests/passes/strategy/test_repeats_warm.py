"""The parts' diffusion of repeated blocks started from the moves the same parts ended
with last time (`bound.Warm`): the bounds stay valid, the bounded DP returns the plain
DP's plan bit for bit, and a part started where it converged takes one sweep."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pase.passes.strategy import bound, repeats
from pase.passes.strategy.bound import (
    Origin,
    _Diffusion,
    _Plan,
    _restrict,
    diffusion_bounds,
    solve_bounded,
)
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import solve_dp
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.orders import elimination_order
from pase.passes.strategy.repeats import block_bounds
from tests.passes.strategy.test_bound import always_bound  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def parts_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts' bounds on every graph with repeated blocks, however small, and no
    moves kept from other tests."""
    monkeypatch.setattr(repeats, "MIN_EDGE_ENTRIES", 0)
    warm = bound.Warm()
    monkeypatch.setattr(repeats, "WARM", warm)
    monkeypatch.setattr(bound, "WARM", warm)


def stack(seed: int, blocks: int = 5, size: int = 3) -> CostGraph:
    """A head vertex, `blocks` copies of a random 2-vertex block (shared tables), a tail
    tied back to the head (test_repeats.py's, with `size` configurations a vertex)."""
    rng = np.random.default_rng(seed)

    def table(*shape: int) -> np.ndarray:
        return rng.integers(0, 6, size=shape).astype(np.float64)

    inner, stream = table(size), table(size)
    into, across, out = table(size, size), table(size, size), table(size, size)
    names = ["head", *(f"b{i}_{part}" for i in range(blocks) for part in ("x", "r")), "tail"]
    graph = CostGraph(names, [table(size), *[inner, stream] * blocks, table(size)])
    previous = 0
    for i in range(blocks):
        x, r = 1 + 2 * i, 2 + 2 * i
        graph.add_edge(previous, x, into)
        graph.add_edge(x, r, across)
        graph.add_edge(previous, r, out)
        previous = r
    graph.add_edge(previous, len(names) - 1, table(size, size))
    graph.add_edge(0, len(names) - 1, table(size, size))
    return graph


def priced(graph: CostGraph, memory: dict[int, np.ndarray], rate: float) -> CostGraph:
    """`graph` with vertex costs c_v + rate m_v, shared vectors kept shared (as
    `memory.priced` keeps them: the blocks stay repeated), the same edge tables."""
    made: dict[int, np.ndarray] = {}
    costs = [made.setdefault(id(cost), cost + rate * memory[id(cost)])
             for cost in graph.vertex_costs]
    return CostGraph(graph.names, costs, dict(graph.edge_costs))


def least_costs(graph: CostGraph) -> list[np.ndarray]:
    """Per vertex and configuration, the least cost of the strategies that take it (every
    strategy's cost, on an array with an axis per vertex; integer costs, so exact)."""
    count = len(graph.names)

    def spread(table: np.ndarray, *axes: int) -> np.ndarray:
        shape = [1] * count
        for axis, size in zip(axes, table.shape, strict=True):
            shape[axis] = size
        return table.reshape(shape)

    total = np.zeros(graph.sizes)
    for vertex, cost in enumerate(graph.vertex_costs):
        total = total + spread(cost, vertex)
    for (u, v), table in graph.edge_costs.items():
        total = total + spread(table, u, v)
    return [total.min(axis=tuple(axis for axis in range(count) if axis != vertex))
            for vertex in range(count)]


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Calls of `_Diffusion.<name>`, each noted by the size of its graph."""
    calls: list[int] = []
    real = getattr(_Diffusion, name)

    def counted(self: _Diffusion, *args: object) -> object:
        calls.append(len(self.graph.names))
        return real(self, *args)

    monkeypatch.setattr(_Diffusion, name, counted)
    return calls


def restricted(graph: CostGraph, rng: np.random.Generator) -> tuple[CostGraph, Origin]:
    """`graph` on some of its configurations (as pruning leaves it: vertices with the
    same cost vector keep the same ones), and where they come from."""
    masks: dict[int, np.ndarray] = {}
    for cost in graph.vertex_costs:
        if id(cost) not in masks:
            mask = rng.random(cost.size) < 0.7
            mask[rng.integers(cost.size)] = True
            masks[id(cost)] = mask
    part, kept, _ = _restrict(graph, [masks[id(cost)] for cost in graph.vertex_costs],
                              MemoryBudget(1 << 30))
    return part, Origin(kept, graph.sizes)


@pytest.mark.usefixtures("always_bound")
@pytest.mark.parametrize("seed", range(8))
def test_each_multiplier_starts_from_the_last_ones_moves(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # LARAC's graphs: the same edges, vertex costs c + λ m, each on the configurations
    # its pruning kept (other ones each time). From the second λ on the parts start from
    # the last moves, mapped by original configuration; their bounds still bound every
    # strategy, and the bounded DP is the plain DP's, bit for bit.
    graph = stack(seed)
    rng = np.random.default_rng(200 + seed)
    memory = {id(cost): rng.integers(0, 4, size=cost.size).astype(np.float64)
              for cost in graph.vertex_costs}
    starts = counting(monkeypatch, "warm")
    for number, rate in enumerate((0.0, 0.5, 1.5, 4.0)):
        pruned, origin = restricted(priced(graph, memory, rate), rng)
        plan = _Plan(pruned, elimination_order(pruned.neighbours(), "genseq"), True)
        before = len(starts)
        bounds = block_bounds(pruned, plan, jit="off", min_edge_entries=0, origin=origin)
        assert bounds is not None
        assert (len(starts) > before) == (number > 0)
        for at_most, least in zip(bounds.per_config, least_costs(pruned), strict=True):
            assert (at_most <= least + bounds.margin).all()
        expected = solve_dp(pruned)
        result = solve_bounded(pruned, jit="off", origin=origin)
        assert (result.choice, result.cost) == (expected.choice, expected.cost)


@pytest.mark.usefixtures("always_bound")
@pytest.mark.parametrize("seed", range(4))
def test_solve_graph_passes_the_original_configurations(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = stack(seed)
    rng = np.random.default_rng(300 + seed)
    memory = {id(cost): rng.integers(0, 4, size=cost.size).astype(np.float64)
              for cost in graph.vertex_costs}
    starts = counting(monkeypatch, "warm")
    for rate in (0.25, 1.0):
        once = priced(graph, memory, rate)
        result = solve_graph(once, jit="off")
        expected = solve_graph(once, jit="off", bounding=False)
        assert (result.choice, result.cost) == (expected.choice, expected.cost)
    assert starts


@pytest.mark.parametrize("seed", range(8))
def test_a_part_started_where_it_converged_takes_one_sweep(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    part = stack(seed, blocks=2)
    converged = _Diffusion(part, "off")
    for _ in range(300):
        converged.sweep()
    sweeps = counting(monkeypatch, "sweep")
    diffusion, done = repeats._swept(part, "off", converged.moves)
    assert len(sweeps) == 1
    assert done is not None
    lower, per_config, decoded = done
    assert lower >= converged.lower()[0] - 1e-12
    assert (lower, decoded) == diffusion.bounds()[::2]
    for choice in itertools.product(*(range(size) for size in part.sizes)):
        cost = part.total_cost(choice)
        assert all(per_config[v][c] <= cost + 1e-9 for v, c in enumerate(choice))


@pytest.mark.usefixtures("always_bound")
@pytest.mark.parametrize("seed", range(8))
def test_a_whole_graphs_diffusion_starts_from_its_last_moves(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A graph without repeated blocks is diffused whole (`diffusion_bounds`), from the
    # moves it ended with at the last λ: valid bounds, the plain DP's plan.
    rng = np.random.default_rng(400 + seed)
    names = [f"v{i}" for i in range(9)]
    graph = CostGraph(names, [rng.integers(0, 6, size=3).astype(np.float64) for _ in names])
    for u, v in [*((i, i + 1) for i in range(8)), (0, 4), (2, 7), (3, 8)]:
        graph.add_edge(u, v, rng.integers(0, 6, size=(3, 3)).astype(np.float64))
    memory = {id(cost): rng.integers(0, 4, size=3).astype(np.float64)
              for cost in graph.vertex_costs}
    starts = counting(monkeypatch, "warm")
    for number, rate in enumerate((0.0, 0.5, 1.5, 4.0)):
        pruned, origin = restricted(priced(graph, memory, rate), rng)
        plan = _Plan(pruned, elimination_order(pruned.neighbours(), "genseq"), True)
        before = len(starts)
        bounds = diffusion_bounds(pruned, plan, jit="off", origin=origin)
        assert bounds is not None
        assert len(starts) - before == (number > 0)
        for at_most, least in zip(bounds.per_config, least_costs(pruned), strict=True):
            assert (at_most <= least + bounds.margin).all()
        expected = solve_dp(pruned)
        result = solve_bounded(pruned, jit="off", origin=origin)
        assert (result.choice, result.cost) == (expected.choice, expected.cost)


def test_the_moves_kept_stay_within_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each graph's moves take 2 x 2 x 8 bytes here (one edge, sizes 2 before pruning):
    # at 64 bytes kept, the third graph's push out the first's, the latest are kept.
    monkeypatch.setattr(bound, "WARM_BYTES", 64)
    warm = bound.Warm()
    origin = Origin([np.array([0, 1]), np.array([1])], [2, 2])
    for name in ("a", "b", "c"):
        key = warm.key([name, "z"], [0, 1], [(0, 1)], origin)
        warm.keep(key, [0, 1], [(0, 1)], origin, [(np.array([1.0, 2.0]), np.array([3.0]))])
    assert [key[0][0] for key in warm.moves] == ["b", "c"]
    assert warm.bytes == 64
    start = warm.start(warm.key(["c", "z"], [0, 1], [(0, 1)], origin), [0, 1], [(0, 1)],
                       origin)
    assert start is not None
    assert [move.tolist() for move in start[0]] == [[1.0, 2.0], [3.0]]
    # Kept again on other configurations: the ones not kept now keep their last moves.
    other = Origin([np.array([1]), np.array([0])], [2, 2])
    key = warm.key(["c", "z"], [0, 1], [(0, 1)], other)
    warm.keep(key, [0, 1], [(0, 1)], other, [(np.array([5.0]), np.array([7.0]))])
    assert [move.tolist() for move in warm.moves[key][0]] == [[1.0, 5.0], [7.0, 3.0]]
    assert warm.bytes == 64
