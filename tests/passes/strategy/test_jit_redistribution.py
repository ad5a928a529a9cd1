"""The compiled redistribution volumes equal numpy's exactly, and both equal a naive loop
over devices."""

from __future__ import annotations

import itertools
from math import prod
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.cost import _blocks, blocks, redistribution_words


def naive(held: np.ndarray, needed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The definition: per pair, the worst device's missing words, each way."""
    forward = np.zeros((held.shape[0], needed.shape[0]))
    backward = np.zeros_like(forward)
    for i, j, device in itertools.product(range(held.shape[0]), range(needed.shape[0]),
                                          range(held.shape[1])):
        have, need = held[i, device], needed[j, device]
        overlap = prod(max(0, int(min(h[1], n[1]) - max(h[0], n[0])))
                       for h, n in zip(have, need, strict=True))
        forward[i, j] = max(forward[i, j], prod(int(hi - lo) for lo, hi in need) - overlap)
        backward[i, j] = max(backward[i, j], prod(int(hi - lo) for lo, hi in have) - overlap)
    return forward, backward


def canonical_layouts(rng: np.random.Generator, count: int, sizes: tuple[int, ...],
                      devices: int) -> np.ndarray:
    """`count` random layouts from `blocks`' canonical placement: a random grid of at
    most `devices` devices, each tensor dim on its own grid axis or whole."""
    layouts = []
    for _ in range(count):
        factors: list[int] = []
        dim_axes = []
        for size in sizes:
            room = devices // prod(factors)
            choices = [f for f in range(2, room + 1) if size % f == 0]
            if choices and rng.random() < 0.6:
                dim_axes.append(len(factors))
                factors.append(int(rng.choice(choices)))
            else:
                dim_axes.append(-1)
        if prod(factors) * 2 <= devices and rng.random() < 0.5:
            factors.append(2)                       # an axis the tensor is replicated on
        order = rng.permutation(len(factors))       # grid axes in any order
        position = {int(old): new for new, old in enumerate(order)}
        layouts.append(_blocks(tuple(factors[int(i)] for i in order),
                               tuple(position[a] if a >= 0 else -1 for a in dim_axes),
                               sizes, devices))
    return np.stack(layouts)


@pytest.mark.parametrize("seed", range(20))
def test_canonical_layouts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices, rank = int(rng.integers(1, 17)), int(rng.integers(0, 4))
    sizes = tuple(int(rng.choice([1, 2, 3, 4, 6, 8, 12])) for _ in range(rank))
    held = canonical_layouts(rng, int(rng.integers(1, 10)), sizes, devices)
    needed = canonical_layouts(rng, int(rng.integers(1, 10)), sizes, devices)
    expected = naive(held, needed)
    for method in (redistribution_words(held, needed),
                   redistribution_words(held, needed, compiled=True)):
        for ours, theirs in zip(method, expected, strict=True):
            assert np.array_equal(ours, theirs)


def test_model_edges() -> None:
    model = Path(__file__).resolve().parents[3] / "models" / "inception_v3.dnn"
    problem = build_problem(parse_file(str(model)), 8)
    for edge in problem.edges[:40]:
        producer = problem.layer_data[edge.producer]
        consumer = problem.layer_data[edge.consumer]
        held = np.stack([blocks(producer, c, edge.held, 8)
                         for c in problem.config_lists[edge.producer]])
        needed = np.stack([blocks(consumer, c, edge.needed, 8)
                           for c in problem.config_lists[edge.consumer]])
        expected = redistribution_words(held, needed)
        compiled = redistribution_words(held, needed, compiled=True)
        for ours, theirs in zip(compiled, expected, strict=True):
            assert np.array_equal(ours, theirs)
