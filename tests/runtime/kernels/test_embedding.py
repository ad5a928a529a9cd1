"""embedding: finite differences, vocabulary / id / feature splits, f32."""

from __future__ import annotations

import numpy as np
import pytest

from pase.runtime.kernels.embedding import embedding_backward, embedding_forward

VOCAB, FEATURES = 8, 4


def make(rng: np.random.Generator, dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
    ids = rng.integers(0, VOCAB, size=(4, 3), dtype=np.int64)
    ids[0, :2] = 5  # a repeated id accumulates
    return ids, rng.standard_normal((VOCAB, FEATURES)).astype(dtype)


def test_forward_gathers_rows(rng: np.random.Generator) -> None:
    ids, table = make(rng)
    np.testing.assert_array_equal(embedding_forward(ids.astype(np.int32), table), table[ids])


def test_backward_matches_finite_differences(rng: np.random.Generator, kit) -> None:
    ids, table = make(rng)
    weights = rng.standard_normal((*ids.shape, FEATURES))
    kit.assert_gradient(embedding_backward(weights, ids, table.shape), kit.numeric_gradient(
        lambda v: float(np.sum(weights * embedding_forward(ids, v))), table.copy()))


def test_multi_feature_table(rng: np.random.Generator) -> None:
    ids = rng.integers(0, VOCAB, size=(5,))
    table = rng.standard_normal((VOCAB, 2, 3))
    y = embedding_forward(ids, table)
    assert y.shape == (5, 2, 3)
    grad = embedding_backward(np.ones_like(y), ids, table.shape)
    np.testing.assert_array_equal(grad[:, 0, 0], np.bincount(ids, minlength=VOCAB))


@pytest.mark.parametrize("parts", [2, 4])
def test_vocabulary_split(parts: int, rng: np.random.Generator, kit) -> None:
    """Ids outside a block give zeros: the outputs are partial sums; the table gradient
    blocks concatenate."""
    ids, table = make(rng)
    grad_output = rng.standard_normal((*ids.shape, FEATURES))
    rows = VOCAB // parts
    blocks = kit.split(table, 0, parts)
    outputs = [embedding_forward(ids, block, device * rows) for device, block in
               enumerate(blocks)]
    grads = [embedding_backward(grad_output, ids, block.shape, device * rows)
             for device, block in enumerate(blocks)]
    kit.assert_exact(kit.assemble(outputs, None), embedding_forward(ids, table))
    kit.assert_exact(kit.assemble(grads, 0), embedding_backward(grad_output, ids, table.shape))


@pytest.mark.parametrize(("axis", "parts"), [(0, 2), (0, 4)])
def test_id_split(axis: int, parts: int, rng: np.random.Generator, kit) -> None:
    """Ids split (the batch): outputs concatenate, table gradients are partial sums."""
    ids, table = make(rng)
    grad_output = rng.standard_normal((*ids.shape, FEATURES))
    id_blocks, g_blocks = kit.split(ids, axis, parts), kit.split(grad_output, axis, parts)
    kit.assert_exact(kit.assemble([embedding_forward(b, table) for b in id_blocks], axis),
                     embedding_forward(ids, table))
    kit.assert_exact(kit.assemble([embedding_backward(g, b, table.shape) for g, b in zip(
        g_blocks, id_blocks, strict=True)], None), embedding_backward(grad_output, ids,
                                                                      table.shape))


def test_feature_split(rng: np.random.Generator, kit) -> None:
    ids, table = make(rng)
    grad_output = rng.standard_normal((*ids.shape, FEATURES))
    t_blocks, g_blocks = kit.split(table, 1, 2), kit.split(grad_output, 2, 2)
    kit.assert_exact(kit.assemble([embedding_forward(ids, t) for t in t_blocks], 2),
                     embedding_forward(ids, table))
    kit.assert_exact(kit.assemble([embedding_backward(g, ids, t.shape) for g, t in zip(
        g_blocks, t_blocks, strict=True)], 1), embedding_backward(grad_output, ids, table.shape))


def test_float32(rng: np.random.Generator) -> None:
    ids, table = make(rng, np.float32)
    y = embedding_forward(ids, table, 0)
    assert y.dtype == embedding_backward(np.ones_like(y), ids, table.shape).dtype == np.float32
