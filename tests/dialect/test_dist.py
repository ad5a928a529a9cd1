"""The dist dialect from Python: `!dist.tensor`'s accessors, and local shapes that satisfy the
grid rule (lit's `dist-invalid.mlir` and `dist-invalid-parse.mlir` show every rule's message)."""

from __future__ import annotations

import pytest

from pase.dialect.dist import TensorType, local_shape


def test_accessors():
    tensor = TensorType(["b", "h"], [8, 4], [2, 4], "f32", "g", [[0, 1], []], [2])
    assert tensor.dim_names == ("b", "h")
    assert tensor.global_shape == (8, 4)
    assert tensor.local_shape == (2, 4)
    assert tensor.axes == ((0, 1), ())
    assert tensor.partial_axes == (2,)
    assert tensor.with_partial(()).partial_axes == ()
    tensor.verify_on_grid((2, 2, 3))


@pytest.mark.parametrize("split", [[[]], [[0]], [[1]], [[0, 1]], [[1, 0]]])
def test_local_shape_satisfies_the_grid_rule(split: list[list[int]]):
    grid = (2, 4)
    local = local_shape([64], split, grid)
    TensorType(["b"], [64], local, "f32", "g", split).verify_on_grid(grid)
