"""The compiled diffusion sweep (`diffusion_kernel.py`) gives numpy's sweep's very floats:
the same moves, moved vertex costs and bounds, bit for bit, on graphs with tables that are
views (transposed, sliced, shared between edges), vertices without edges and ties; moves
handed out before a sweep keep their values; and it is not used where a table is not
finite (numpy's minima propagate NaN, the kernel's would not)."""

from __future__ import annotations

import numpy as np
import pytest

from pase.passes.strategy import bound
from pase.passes.strategy.bound import _Diffusion
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.jit.compiler import jit_available

pytestmark = pytest.mark.skipif(not jit_available(), reason="llvmlite cannot compile here")


@pytest.fixture(autouse=True)
def kernel_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel from the first sweep (not after `SWEEP_KERNEL_AFTER` numpy ones)."""
    monkeypatch.setattr(bound, "SWEEP_KERNEL_AFTER", 0)


def graph_of(seed: int) -> CostGraph:
    """A random graph of 2 to 12 vertices, some tables views of others, small integer
    costs (ties) scaled by irrational-ish factors (rounding)."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(2, 13))
    sizes = [int(rng.integers(1, 9)) for _ in range(count)]
    costs = [rng.integers(0, 4, size).astype(np.float64) * 0.3 for size in sizes]
    graph = CostGraph([f"v{v}" for v in range(count)], costs)
    shared: dict[tuple[int, int], np.ndarray] = {}
    for u in range(count):
        for v in range(u + 1, count):
            if rng.random() > 0.35 or (u == 0 and v == count - 1 and count > 3):
                continue
            shape = (sizes[u], sizes[v])
            kind = int(rng.integers(0, 3))
            if kind == 0 and shape in shared:
                table = shared[shape]
            elif kind == 1:
                table = (rng.integers(0, 5, shape[::-1]) / 7.0).T  # a transposed view
            else:
                table = (rng.integers(0, 5, (shape[0] + 1, shape[1] * 2)) / 3.0)[1:, ::2]
            shared[shape] = table
            graph.add_edge(u, v, table)
    return graph


def state(diffusion: _Diffusion) -> list[bytes]:
    return [array.tobytes() for pair in diffusion.moves for array in pair] + \
        [cost.tobytes() for cost in diffusion.unary]


@pytest.mark.parametrize("seed", range(40))
def test_the_kernel_sweeps_numpys_floats(seed: int) -> None:
    graph = graph_of(seed)
    numpy_sweeps, kernel_sweeps = _Diffusion(graph, "off"), _Diffusion(graph, "auto")
    assert numpy_sweeps.sweeper is None
    assert kernel_sweeps.sweeper is not None
    for _ in range(6):
        numpy_sweeps.sweep()
        before = [(at_u.copy(), at_v.copy()) for at_u, at_v in kernel_sweeps.moves]
        held = kernel_sweeps.moves
        kernel_sweeps.sweep()
        assert all(np.array_equal(a, b) for pair, kept in zip(held, before, strict=True)
                   for a, b in zip(pair, kept, strict=True))
        assert state(kernel_sweeps) == state(numpy_sweeps)
        assert kernel_sweeps.lower()[0] == numpy_sweeps.lower()[0]
    lower, per_config, decoded = kernel_sweeps.bounds()
    assert (lower, decoded) == numpy_sweeps.bounds()[::2]
    assert [b.tobytes() for b in per_config] == \
        [b.tobytes() for b in numpy_sweeps.bounds()[1]]


def test_a_warm_start_is_swept_alike() -> None:
    graph = graph_of(3)
    start = _Diffusion(graph, "off")
    start.sweep()
    numpy_sweeps, kernel_sweeps = _Diffusion(graph, "off"), _Diffusion(graph, "auto")
    numpy_sweeps.warm(start.moves)
    kernel_sweeps.warm(start.moves)
    for _ in range(3):
        numpy_sweeps.sweep()
        kernel_sweeps.sweep()
    assert state(kernel_sweeps) == state(numpy_sweeps)


def test_infinite_tables_are_swept_by_numpy() -> None:
    graph = CostGraph(["a", "b"], [np.array([1.0, np.inf]), np.array([0.0, 5.0])])
    graph.add_edge(0, 1, np.array([[0.0, 1.0], [0.0, 0.0]]))
    assert _Diffusion(graph, "auto").sweeper is None


def test_the_kernel_comes_after_enough_numpy_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process sweeps in numpy until it has made `SWEEP_KERNEL_AFTER` row minima (four
    per edge a sweep), so that a search that sweeps little never compiles the kernel."""
    graph = graph_of(5)
    monkeypatch.setattr(bound, "_numpy_sweeps", [0])
    monkeypatch.setattr(bound, "SWEEP_KERNEL_AFTER", 8 * len(graph.edge_costs))
    first = _Diffusion(graph, "auto")
    assert first.sweeper is None
    first.sweep()
    assert _Diffusion(graph, "auto").sweeper is None
    first.sweep()
    assert _Diffusion(graph, "auto").sweeper is not None
