"""The llvmlite kernel reproduces numpy's DP bit for bit: the same sums, the same tie-breaks."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import SearchError, eliminate, solve_dp
from pase.passes.strategy.factors import Factor
from pase.passes.strategy.jit import compiler
from pase.passes.strategy.jit.eliminate import eliminate as compiled_eliminate
from pase.passes.strategy.jit.eliminate import minima, prepare

MODELS = sorted(Path(__file__).parents[4].joinpath("models").glob("*.dnn"))
# The largest dependent-set table of each random case, so that every case runs in milliseconds.
DEPENDENT_ENTRIES = 4096

requires_jit = pytest.mark.skipif(not compiler.jit_available(),
                                  reason=compiler.unavailable_reason())


def random_view(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """`values` as an array of the same contents laid out in one of several ways."""
    match int(rng.integers(6)):
        case 0:
            return values
        case 1:  # a transposed view of a table stored in another axis order
            permutation = rng.permutation(values.ndim)
            stored = np.ascontiguousarray(values.transpose(permutation))
            return stored.transpose(np.argsort(permutation))
        case 2:  # every other entry of a larger table
            wide = np.zeros((*values.shape[:-1], 2 * values.shape[-1]))
            wide[..., ::2] = values
            return wide[..., ::2]
        case 3:  # a reversed axis: negative strides
            axis = int(rng.integers(values.ndim))
            return np.flip(np.flip(values, axis).copy(), axis)
        case 4:
            return np.asfortranarray(values)
        case _:  # a broadcast view (stride 0) along the axes the values do not vary over
            constant_axes = tuple(axis for axis in range(values.ndim) if rng.random() < 0.5)
            base = values[tuple(slice(0, 1) if a in constant_axes else slice(None)
                                for a in range(values.ndim))]
            return np.broadcast_to(base, values.shape)


def random_factors(seed: int) -> tuple[list[Factor], int]:
    """1-6 factors mentioning `vertex`, over a dependent set of 0-4 axes, `K` up to 40."""
    rng = np.random.default_rng(seed)
    dependent_count = seed % 5
    axes = sorted(int(axis) for axis in rng.choice(8, size=dependent_count + 1, replace=False))
    vertex = axes[int(rng.integers(len(axes)))]
    dependent = [axis for axis in axes if axis != vertex]
    largest = max(1, int(DEPENDENT_ENTRIES ** (1 / max(dependent_count, 1))))
    sizes = {axis: int(rng.integers(1, largest + 1)) for axis in dependent}
    sizes[vertex] = int(rng.integers(1, 41))
    factor_axes = [
        sorted({vertex, *(axis for axis in dependent if rng.random() < 0.5)})
        for _ in range(int(rng.integers(1, 7)))
    ]
    factor_axes[-1] = sorted({*factor_axes[-1], *dependent})
    factors: list[Factor] = []
    for table_axes in factor_axes:
        shape = tuple(sizes[axis] for axis in table_axes)
        if seed % 2 == 0:  # few distinct values: ties everywhere, signed zeros, infinities
            values = rng.choice([-0.0, 0.0, 1.0, 2.0, np.inf], size=shape, p=[.3, .3, .2, .1, .1])
        else:
            values = rng.random(shape) * 10.0
        factors.append((tuple(table_axes), random_view(rng, values)))
    return factors, vertex


def assert_same_elimination(factors: list[Factor], vertex: int) -> None:
    expected_axes, expected_minimum, expected_argmin = eliminate(factors, vertex)
    axes, minimum, argmin = compiled_eliminate(factors, vertex)
    assert axes == expected_axes
    assert minimum.dtype == np.float64
    assert minimum.shape == expected_minimum.shape
    # Compared as bits: -0.0 and 0.0 must come out the same way numpy's argmin picks them.
    assert np.array_equal(minimum.view(np.uint64), expected_minimum.view(np.uint64))
    assert argmin.dtype == expected_argmin.dtype
    assert np.array_equal(argmin, expected_argmin)


def random_graph(seed: int) -> CostGraph:
    """A random graph of 4-10 vertices with 1-12 configurations each, integer costs half the
    time."""
    rng = np.random.default_rng(seed)
    vertex_count = int(rng.integers(4, 11))
    sizes = rng.integers(1, 13, size=vertex_count)

    def costs(*shape: int) -> np.ndarray:
        if seed % 2 == 0:
            return rng.integers(0, 3, size=shape).astype(np.float64)
        return rng.random(shape)

    graph = CostGraph([f"layer{v}" for v in range(vertex_count)], [costs(k) for k in sizes])
    for u, v in itertools.combinations(range(vertex_count), 2):
        if v == u + 1 or rng.random() < 0.3:
            graph.add_edge(u, v, costs(sizes[u], sizes[v]))
    return graph


@requires_jit
@pytest.mark.parametrize("seed", range(120))
def test_eliminate_matches_numpy(seed: int) -> None:
    assert_same_elimination(*random_factors(seed))


@requires_jit
@pytest.mark.parametrize("extent", [1, 7, 8, 9, 31, 32, 33, 40, 41, 75])
def test_eliminate_every_row_length(extent: int) -> None:
    """Rows shorter than a vector, exact vectors and groups, and ragged ends."""
    rng = np.random.default_rng(extent)
    factors: list[Factor] = [
        ((0,), rng.integers(0, 3, size=5).astype(np.float64)),
        ((0, 1), rng.integers(0, 3, size=(5, extent)).astype(np.float64)),
        ((1, 2), rng.random((extent, 3))),
    ]
    assert_same_elimination(factors, 0)
    assert_same_elimination(factors[1:], 1)


@requires_jit
@pytest.mark.parametrize("seed", range(20))
def test_a_prepared_elimination_runs_on_new_numbers(seed: int) -> None:
    views, vertex = random_factors(seed)
    rng = np.random.default_rng(seed)
    factors = [(axes, np.ascontiguousarray(table)) for axes, table in views]
    again = [(axes, rng.random(table.shape)) for axes, table in factors]
    dependent_set, run = prepare(factors, vertex)
    for step in (factors, again):
        expected_axes, minimum, argmin = eliminate(step, vertex)
        got_minimum, got_argmin = run([table for _, table in step])
        assert dependent_set == expected_axes
        assert got_minimum.tobytes() == minimum.tobytes()
        assert got_argmin.tolist() == argmin.tolist()


@requires_jit
def test_a_prepared_elimination_refuses_other_layouts() -> None:
    table = np.arange(6.0).reshape(2, 3)
    _, run = prepare([((0, 1), table)], 0)
    with pytest.raises(ValueError, match="shapes and strides"):
        run([np.ascontiguousarray(table.T).T])


@requires_jit
def test_eliminate_lowest_index_wins_ties() -> None:
    factors: list[Factor] = [((0, 1), np.array([[3.0, 1.0], [1.0, 1.0], [1.0, 0.0]]))]
    _, minimum, argmin = compiled_eliminate(factors, 0)
    assert minimum.tolist() == [1.0, 0.0]
    assert argmin.tolist() == [1, 2]


@requires_jit
@pytest.mark.parametrize("order", ["genseq", "bfs", "minfill"])
@pytest.mark.parametrize("seed", range(15))
def test_solve_dp_matches_numpy(seed: int, order: str) -> None:
    graph = random_graph(seed)
    expected = solve_dp(graph, order=order, jit="off")
    result = solve_dp(graph, order=order, jit="on")
    assert result == expected


@requires_jit
@pytest.mark.parametrize("devices", [2, 4, 8])
@pytest.mark.parametrize("model", MODELS, ids=[path.stem for path in MODELS])
def test_solve_dp_matches_numpy_on_models(model: Path, devices: int) -> None:
    graph = build_problem(parse_file(str(model)), devices=devices).cost_graph()
    expected = solve_dp(graph, jit="off")
    result = solve_dp(graph, jit="on")
    assert result.choice == expected.choice
    assert result.cost == expected.cost
    assert result.table_entries == expected.table_entries


def test_jit_on_without_llvm_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "jit_available", lambda: False)
    monkeypatch.setattr(compiler, "unavailable_reason", lambda: "no target for this host")
    graph = random_graph(0)
    with pytest.raises(SearchError, match="no target for this host"):
        solve_dp(graph, jit="on")
    assert solve_dp(graph, jit="auto") == solve_dp(graph, jit="off")


def test_unknown_jit_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="jit must be one of auto, on, off"):
        solve_dp(random_graph(0), jit="yes")


@requires_jit
@pytest.mark.parametrize("seed", range(40))
def test_minima_alone_equal_numpys(seed: int) -> None:
    """`minima` (the diffusion's row minima, no argmin) gives numpy's minima of the table
    plus the added vector, for tables of any shape (vectors' tails, single rows and
    columns) and layout, over either axis, with ties and infinities."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(size) for size in rng.choice([1, 2, 7, 8, 9, 31, 33, 70], size=2))
    values = rng.integers(-3, 4, size=shape).astype(np.float64)
    values[rng.random(shape) < 0.05] = np.inf
    # (A broadcast view repeats one row or column of `values`: compare with what it holds.)
    table = random_view(rng, values)
    for axis in (0, 1):
        added = rng.integers(-3, 4, size=shape[axis]).astype(np.float64)
        summed = np.array(table) + (added[None, :] if axis else added[:, None])
        expected = np.min(summed, axis=axis)
        np.testing.assert_array_equal(minima(table, added, axis), expected)
