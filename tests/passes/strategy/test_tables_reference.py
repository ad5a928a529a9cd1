"""The vectorised table builders give, entry for entry (`==`), what the per-configuration
reference they replaced gives, on every bundled model at several device counts: the
block layouts of every edge's tensors, and so its redistribution matrix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem
from pase.passes.strategy.cost import Config, _unique_blocks
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.vertices import Layer, TensorUse

MODELS = Path(__file__).resolve().parents[3] / "models"
CASES = [(model.stem, devices) for model in sorted(MODELS.glob("*.dnn"))
         for devices in (4, 8, 32)] + [("inception_v3", 64), ("transformer", 64)]


def problem_of(model: str, devices: int) -> Problem:
    return build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)


def reference_unique_blocks(layer: Layer, configs: Sequence[Config], use: TensorUse,
                            devices: int) -> tuple[np.ndarray, np.ndarray]:
    """`_unique_blocks` as it was: every config's layout built and compared."""
    names = layer.space.names
    factors = np.array([[config.get(name, 1) for name in names] for config in configs],
                       dtype=np.int64).reshape(len(configs), len(names))
    strides = np.ones_like(factors)
    for j in range(len(names) - 2, -1, -1):
        strides[:, j] = strides[:, j + 1] * factors[:, j + 1]
    device = np.arange(devices, dtype=np.int64)[None, :]
    working = device < factors.prod(axis=1)[:, None]
    rank = len(use.sizes)
    layouts = np.zeros((len(configs), devices, rank + 1, 2), dtype=np.int64)
    layouts[:, :, rank, 1] = working
    for k, (dim, size) in enumerate(zip(use.dims, use.sizes, strict=True)):
        if dim is None or dim not in names:
            layouts[:, :, k, 1] = np.where(working, size, 0)
            continue
        j = names.index(dim)
        length = (size // factors[:, j])[:, None]
        lo = (device // strides[:, j:j + 1]) % factors[:, j:j + 1] * length
        layouts[:, :, k, 0] = np.where(working, lo, 0)
        layouts[:, :, k, 1] = np.where(working, lo + length, 0)
    seen: dict[bytes, int] = {}
    inverse = np.array([seen.setdefault(layout.tobytes(), len(seen)) for layout in layouts],
                       dtype=np.int64)
    first = np.zeros(len(seen), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(configs) - 1, -1, -1)
    return layouts[first], inverse


def _same(new: np.ndarray, old: np.ndarray) -> None:
    assert new.dtype == old.dtype
    assert new.shape == old.shape
    assert (new == old).all()


@pytest.mark.parametrize(("model", "devices"), CASES)
def test_unique_blocks_match_reference(model: str, devices: int) -> None:
    problem = problem_of(model, devices)
    for edge in problem.edges:
        for index, use in ((edge.producer, edge.held), (edge.consumer, edge.needed)):
            layer = problem.layer_data[index]
            configs = problem.configs(layer.name)
            new_layouts, new_index = _unique_blocks(layer, configs, use, devices)
            old_layouts, old_index = reference_unique_blocks(layer, configs, use, devices)
            _same(new_layouts, old_layouts)
            _same(new_index, old_index)
