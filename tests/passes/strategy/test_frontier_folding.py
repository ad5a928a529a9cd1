"""The frontier search with its layers of one kept configuration folded away
(`frontier._Folded`): the same least strategy as brute force and as the search unfolded."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pase.passes.strategy import frontier
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.frontier import frontier_search


def restricted_ring(seed: int, layers: int = 6
                    ) -> tuple[CostGraph, list[np.ndarray], list[np.ndarray],
                               dict[tuple[int, int], np.ndarray]]:
    """A ring with a chord, whole-byte memories, half its layers keeping one
    configuration and some pairs left out."""
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(2, 5)) for _ in range(layers)]
    graph = CostGraph([f"l{i}" for i in range(layers)],
                      [rng.uniform(0.0, 4.0, size) for size in sizes])
    for u, v in [*((i, i + 1) for i in range(layers - 1)), (0, layers - 1), (1, 4)]:
        graph.add_edge(u, v, rng.uniform(0.0, 2.0, (sizes[u], sizes[v])))
    memory = [rng.integers(1, 9, size).astype(np.float64) for size in sizes]
    keep = []
    for size in sizes:
        mask = np.zeros(size, dtype=bool)
        if rng.random() < 0.5:
            mask[int(rng.integers(size))] = True
        else:
            mask[rng.random(size) < 0.7] = True
            mask[int(rng.integers(size))] = True
        keep.append(mask)
    pairs = {(u, v): rng.random((int(keep[u].sum()), int(keep[v].sum()))) < 0.85
             for u, v in graph.edge_costs}
    return graph, memory, keep, pairs


def brute_force(graph: CostGraph, memory: list[np.ndarray], keep: list[np.ndarray],
                pairs: dict[tuple[int, int], np.ndarray], cap: float) -> float:
    best = math.inf
    kept = [np.flatnonzero(mask) for mask in keep]
    for choice in itertools.product(*(range(k.size) for k in kept)):
        whole = tuple(int(k[c]) for k, c in zip(kept, choice, strict=True))
        if all(pairs[(u, v)][choice[u], choice[v]] for u, v in graph.edge_costs) and \
                sum(float(m[c]) for m, c in zip(memory, whole, strict=True)) <= cap:
            best = min(best, graph.total_cost(whole))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_folded_layers_leave_the_least_strategy_that_fits(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    graph, memory, keep, pairs = restricted_ring(seed)
    cap = float(sum(float(m[k].min()) + float(m[k].max()) for m, k in zip(memory, keep,
                                                                          strict=True)) / 2)
    expected = brute_force(graph, memory, keep, pairs, cap)
    rate = 0.25
    unary = [cost + rate * weight for cost, weight in zip(graph.vertex_costs, memory,
                                                          strict=True)]
    folded = frontier_search(graph, memory, cap, 1e9, rate, unary, None, keep, pairs,
                             fold=True)
    assert folded.finished
    if math.isinf(expected):
        assert folded.choice is None
    else:
        assert folded.cost == expected
        assert folded.memory <= cap
        assert graph.total_cost(folded.choice) == folded.cost
    monkeypatch.setattr(frontier._Folded, "of", classmethod(lambda *_: None))
    whole = frontier_search(graph, memory, cap, 1e9, rate, unary, None, keep, pairs,
                             fold=True)
    assert whole.cost == folded.cost
    assert folded.points <= whole.points  # (the folded layers make no points)


def test_folded_layers_make_no_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    joins = [0]
    real = frontier._Search.join

    def counted(self: frontier._Search, *args: object) -> object:
        joins[0] += 1
        return real(self, *args)

    monkeypatch.setattr(frontier._Search, "join", counted)
    made = []
    for _ in range(2):
        joins[0] = 0
        for seed in range(12):
            graph, memory, keep, pairs = restricted_ring(seed)
            frontier_search(graph, memory, math.inf, 1e9, 0.0, None, None, keep, pairs,
                            fold=True)
        made.append(joins[0])
        monkeypatch.setattr(frontier._Folded, "of", classmethod(lambda *_: None))
    assert made[0] < made[1] / 2


def test_no_folding_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> None:
        raise AssertionError("folded without fold=True")

    monkeypatch.setattr(frontier._Folded, "of", classmethod(refused))
    graph, memory, keep, pairs = restricted_ring(0)
    assert frontier_search(graph, memory, math.inf, 1e9, 0.0, None, None, keep,
                           pairs).finished
