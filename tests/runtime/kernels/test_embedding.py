"""embedding: finite differences, vocabulary / id / feature splits (f32: test_table)."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.embedding import embedding_backward, embedding_forward

VOCAB, FEATURES = 8, 4


def make(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    ids = rng.integers(0, VOCAB, size=(4, 3), dtype=np.int64)
    ids[0, :2] = 5  # a repeated id accumulates
    return ids, rng.standard_normal((VOCAB, FEATURES))


def test_forward_gathers_rows(rng: np.random.Generator) -> None:
    ids, table = make(rng)
    np.testing.assert_array_equal(embedding_forward(ids.astype(np.int32), table), table[ids])


def test_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    ids, table = make(rng)
    weights = rng.standard_normal((*ids.shape, FEATURES))
    kit.assert_gradients(lambda table: embedding_forward(ids, table), [table], weights,
                         [embedding_backward(weights, ids, table.shape)])


def test_multi_feature_table(rng: np.random.Generator) -> None:
    ids = rng.integers(0, VOCAB, size=(5,))
    table = rng.standard_normal((VOCAB, 2, 3))
    y = embedding_forward(ids, table)
    assert y.shape == (5, 2, 3)
    grad = embedding_backward(np.ones_like(y), ids, table.shape)
    np.testing.assert_array_equal(grad[:, 0, 0], np.bincount(ids, minlength=VOCAB))


# The axis of the output gradient, the ids and the table a split runs along.
SPLITS = {"vocabulary": (None, None, 0), "ids": (0, 0, None), "features": (2, None, 1)}


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("parts", [2, 4])
def test_sharded_equals_unsharded(split: str, parts: int, rng: np.random.Generator,
                                  kit) -> None:
    """Ids outside a vocabulary block give zeros, so a vocabulary split leaves partial
    outputs, and an id split partial table gradients. The table's global row ids split with
    its rows: the first is the block's vocabulary offset."""
    ids, table = make(rng)
    grad_output = rng.standard_normal((*ids.shape, FEATURES))

    def step(grad_output: np.ndarray, ids: np.ndarray, table: np.ndarray,
             row_ids: np.ndarray) -> list[np.ndarray | None]:
        offset = int(row_ids[0])
        return [embedding_forward(ids, table, offset), None,
                embedding_backward(grad_output, ids, table.shape, offset), None]

    axes = SPLITS[split]
    kit.assert_sharded(step, [grad_output, ids, table, np.arange(VOCAB)],
                       [*axes, 0 if split == "vocabulary" else None], parts)
