"""Min-fill on long chains: each step re-keys only the vertices it touches.

The first min-fill scanned every remaining vertex at every step, computing its fill from
scratch: a 20,000-layer relu chain took minutes in `pase-search{... order=minfill}`. The
order is the same as that scan's (kept here as the reference), found with a heap.
"""

from __future__ import annotations

import numpy as np
import pytest

from pase.passes.strategy import orders
from pase.passes.strategy.orders import elimination_order


def _reference_minfill(neighbours: list[set[int]]) -> list[int]:
    """The scan: the remaining vertex of least (fill, degree, id), recomputed every step."""
    current = [set(adjacent) for adjacent in neighbours]
    remaining = set(range(len(current)))
    order: list[int] = []
    while remaining:
        vertex = min(remaining, key=lambda candidate: orders._fill_key(current, candidate))
        order.append(vertex)
        remaining.remove(vertex)
        orders._eliminate(current, vertex)
    return order


def _random_neighbours(rng: np.random.Generator, size: int, density: float) -> list[set[int]]:
    neighbours: list[set[int]] = [set() for _ in range(size)]
    for first in range(size):
        for second in range(first + 1, size):
            if rng.random() < density:
                neighbours[first].add(second)
                neighbours[second].add(first)
    return neighbours


@pytest.mark.parametrize("seed", range(40))
def test_minfill_is_the_scan_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 30))
    neighbours = _random_neighbours(rng, size, float(rng.choice([0.05, 0.15, 0.3, 0.6])))
    assert elimination_order(neighbours, "minfill") == _reference_minfill(neighbours)


def test_minfill_of_a_chain_keys_each_vertex_a_bounded_number_of_times(
        monkeypatch: pytest.MonkeyPatch) -> None:
    length = 3000
    chain = [{vertex - 1, vertex + 1} & set(range(length)) for vertex in range(length)]
    calls = 0
    fill_key = orders._fill_key

    def counted(current: list[set[int]], vertex: int) -> tuple[int, int, int]:
        nonlocal calls
        calls += 1
        return fill_key(current, vertex)

    monkeypatch.setattr(orders, "_fill_key", counted)
    order = orders._made_order(chain, "minfill")  # (not the remembered orders)
    assert order[:4] == [0, 1, 2, 3]
    assert sorted(order) == list(range(length))
    # The scan computed n^2/2 keys (4.5 million here); re-keying the touched vertices,
    # at most 1 + 3 per step on a chain.
    assert calls <= 4 * length, calls
