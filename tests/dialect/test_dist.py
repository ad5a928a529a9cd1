"""The dist dialect from Python: `!dist.tensor`'s accessors and its rules on a grid (lit's
`dist-invalid-parse.mlir` shows the rules that need no grid)."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ArrayAttr, FlatSymbolRefAttr, IntAttr, StringAttr
from xdsl.utils.exceptions import VerifyException

from pase.dialect.dist import TensorType, local_shape
from pase.dialect.dnn import ELEMENT_TYPES


def raw_tensor(dims: list[str], sizes: list[int], local: list[int], split: list[list[int]],
               partial: list[int] | None = None) -> TensorType:
    """A TensorType built from its parameters, as the generic parser builds it."""
    return TensorType.new((ArrayAttr(StringAttr(d) for d in dims),
                           ArrayAttr(IntAttr(s) for s in sizes),
                           ArrayAttr(IntAttr(s) for s in local), ELEMENT_TYPES["f32"],
                           FlatSymbolRefAttr("g"),
                           ArrayAttr(ArrayAttr(IntAttr(a) for a in axes) for axes in split),
                           ArrayAttr(IntAttr(a) for a in partial or [])))


def test_accessors():
    tensor = TensorType(["b", "h"], [8, 4], [2, 4], "f32", "g", [[0, 1], []], [2])
    assert tensor.dim_names == ("b", "h")
    assert tensor.global_shape == (8, 4)
    assert tensor.local_shape == (2, 4)
    assert tensor.axes == ((0, 1), ())
    assert tensor.partial_axes == (2,)
    assert tensor.with_partial(()).partial_axes == ()
    tensor.verify_on_grid((2, 2, 3))


@pytest.mark.parametrize(("local", "split", "partial", "grid", "message"), [
    ([15, 10], [[0], []], [], (4,), "'b' of size 64 is split 4 ways along grid axis 0 of @g, "
     "so its local size is 16, not 15"),
    ([16, 10], [[1], []], [], (4,), "'b' is split along grid axis 1, but @g has 1 axis"),
    ([16, 10], [[0], []], [1], (4,), "partial sums over grid axis 1, but @g has 1 axis"),
    ([10, 10], [[0], []], [], (6,), "'b' of size 64 does not split evenly 6 ways"),
    ([16, 10], [[0, 1], []], [], (2, 4), "split 8 ways along grid axes 0, 1 of @g, so its "
     "local size is 8, not 16"),
])
def test_tensor_on_grid(local: list[int], split: list[list[int]], partial: list[int],
                        grid: tuple[int, ...], message: str):
    tensor = raw_tensor(["b", "c"], [64, 10], local, split, partial)
    with pytest.raises(VerifyException, match=message):
        tensor.verify_on_grid(grid)


@pytest.mark.parametrize("split", [[[]], [[0]], [[1]], [[0, 1]], [[1, 0]]])
def test_local_shape_satisfies_the_grid_rule(split: list[list[int]]):
    grid = (2, 4)
    local = local_shape([64], split, grid)
    TensorType(["b"], [64], local, "f32", "g", split).verify_on_grid(grid)
