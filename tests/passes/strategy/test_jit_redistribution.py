"""The compiled redistribution volumes equal numpy's exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.cost import blocks, redistribution_words
from pase.passes.strategy.jit_redistribution import redistribution_words_jit


@pytest.mark.parametrize("seed", range(20))
def test_random_layouts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    count_a, count_b = rng.integers(1, 12, size=2)
    devices, rank = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    held_lo = rng.integers(0, 6, size=(count_a, devices, rank))
    needed_lo = rng.integers(0, 6, size=(count_b, devices, rank))
    held = np.stack([held_lo, held_lo + rng.integers(0, 5, size=held_lo.shape)], axis=-1)
    needed = np.stack([needed_lo, needed_lo + rng.integers(0, 5, size=needed_lo.shape)], -1)
    expected = redistribution_words(held, needed)
    compiled = redistribution_words_jit(held, needed)
    for ours, theirs in zip(compiled, expected, strict=True):
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
