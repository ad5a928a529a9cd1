"""The compiled redistribution volumes equal numpy's exactly on the models' edges (test_cost
compares both with a naive loop over devices on random layouts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.cost import blocks, redistribution_words


def test_model_edges() -> None:
    model = Path(__file__).resolve().parents[4] / "models" / "inception_v3.dnn"
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
