"""Shape rules of the dnn layers, as pure functions (`pase.core.shapes`)."""

from __future__ import annotations

import pytest

from pase.core import shapes
from pase.core.shapes import NamedShape, ShapeError


def s(spec: str, element: str = "f32") -> NamedShape:
    """`s("b=4, d=8")` is the shape [b, d] of sizes (4, 8)."""
    pairs = [p.split("=") for p in spec.replace(" ", "").split(",") if p]
    return NamedShape(tuple(d for d, _ in pairs), tuple(int(n) for _, n in pairs), element)


def test_named_shape():
    shape = s("b=4, d=8")
    assert shape.rank == 2
    assert shape.num_elements == 32
    assert shape.size_of("d") == 8
    assert str(shape) == "[b, d]"
    assert s("").num_elements == 1
    assert str(s("")) == "[]"


def test_shape_of_takes_sizes_from_the_table():
    assert shapes.shape_over(["d", "b"], {"b": 4, "d": 8}, "i64") == NamedShape(
        ("d", "b"), (8, 4), "i64")
    with pytest.raises(ShapeError, match="unknown dimension 'q'; declare it in the graph header"):
        shapes.shape_over(["q"], {"b": 4})
    with pytest.raises(ShapeError, match=r"dimension 'b' appears twice in \[b, b\]"):
        shapes.shape_over(["b", "b"], {"b": 4})
    with pytest.raises(ShapeError, match="unknown element type 'f16'; expected one of "
                                         "f32, f64, i32, i64"):
        shapes.shape_over(["b"], {"b": 4}, "f16")


def test_einsum():
    x, w = s("b=4, d=8"), s("d=8, h=2")
    assert shapes.einsum_shape([x, w], ("h", "b")) == s("h=2, b=4")
    assert shapes.einsum_shape([x], ()) == s("")
    assert shapes.einsum_shape([s("b=4", "f64")], ("b",)).element == "f64"
    with pytest.raises(ShapeError, match="dimension 'd' is 8 in one operand but 3 in another"):
        shapes.einsum_shape([x, s("d=3")], ("b",))
    with pytest.raises(ShapeError, match="einsum takes 1 to 3 operands, got 0"):
        shapes.einsum_shape([], ("b",))
    with pytest.raises(ShapeError, match="einsum result dimension 'q' does not appear"):
        shapes.einsum_shape([x], ("q",))
    with pytest.raises(ShapeError, match=r"dimension 'b' appears twice in \[b, b\]"):
        shapes.einsum_shape([x], ("b", "b"))
    with pytest.raises(ShapeError, match="einsum mixes element types f32 and f64"):
        shapes.einsum_shape([x, s("d=8", "f64")], ("b",))


@pytest.mark.parametrize(("size", "kernel", "stride", "padding", "expected"), [
    (32, 3, 1, 1, 32), (32, 3, 1, 0, 30), (224, 7, 2, 3, 112), (7, 2, 2, 0, 3), (5, 5, 1, 0, 1),
])
def test_conv_output_size(size: int, kernel: int, stride: int, padding: int, expected: int):
    assert shapes.conv_output_size(size, kernel, stride, padding) == expected


def test_conv2d():
    x, w = s("b=2, ci=3, h=9, w=9"), s("co=8, ci=3, r=3, s=3")
    assert shapes.conv2d_shape(x, w, 2, (1, 1), s("b=2, co=8, ho=5, wo=5")) == s(
        "b=2, co=8, ho=5, wo=5")
    # padding per spatial dim: a 1x7 filter that keeps the width
    assert shapes.conv2d_shape(x, s("co=8, ci=3, r=1, s=7"), 1, (0, 3),
                               s("b=2, co=8, ho=9, wo=9")).sizes == (2, 8, 9, 9)
    with pytest.raises(ShapeError, match="output dimension 'wo' must be 3 .*but it is 5"):
        shapes.conv2d_shape(x, w, 3, (0, 0), s("b=2, co=8, ho=3, wo=5"))
    with pytest.raises(ShapeError, match="conv2d takes floating-point tensors, got i32"):
        shapes.conv2d_shape(s("b=2, ci=3, h=9, w=9", "i32"), w, 1, (0, 0),
                            s("b=2, co=8, ho=7, wo=7"))


def test_pool2d():
    x = s("b=2, c=3, h=8, w=8")
    assert shapes.pool2d_shape(x, (2, 2), 2, (0, 0), s("b=2, c=3, ho=4, wo=4")) == s(
        "b=2, c=3, ho=4, wo=4")
    # padding of exactly half the window is allowed
    assert shapes.pool2d_shape(x, (2, 2), 2, (1, 1), s("b=2, c=3, ho=5, wo=5")).sizes == (
        2, 3, 5, 5)
    with pytest.raises(ShapeError, match=r"padding \[2, 0\] must be at most half the window"):
        shapes.pool2d_shape(x, (3, 3), 1, (2, 0), s("b=2, c=3, ho=10, wo=6"))
    with pytest.raises(ShapeError, match="pool2d padding must not be negative, got"):
        shapes.pool2d_shape(x, (2, 2), 2, (-1, 0), s("b=2, c=3, ho=3, wo=4"))


def test_unary_keeps_the_shape():
    assert shapes.unary_shape("relu", s("b=4, d=8", "f64")) == s("b=4, d=8", "f64")
    with pytest.raises(ShapeError, match="gelu takes floating-point tensors, got i64"):
        shapes.unary_shape("gelu", s("b=4", "i64"))


@pytest.mark.parametrize(("lhs", "rhs", "expected"), [
    ("b=4, d=8", "d=8", "b=4, d=8"),          # bias onto activations
    ("d=8", "b=4, d=8", "b=4, d=8"),          # the larger operand's dims, either side
    ("b=4, d=8", "d=8, b=4", "b=4, d=8"),     # same set: lhs's order
    ("d=8, b=4", "b=4, d=8", "d=8, b=4"),
    ("b=4", "b=4", "b=4"),
    ("", "b=4", "b=4"),                       # a scalar broadcasts everywhere
])
def test_binary_broadcasts_by_containment(lhs: str, rhs: str, expected: str):
    assert shapes.binary_shape("add", s(lhs), s(rhs)) == s(expected)


def test_binary_errors():
    with pytest.raises(ShapeError, match=r"\[b, c\] has \[c\] and \[b, cx\] has \[cx\]"):
        shapes.binary_shape("add", s("b=4, c=8"), s("b=4, cx=8"))
    with pytest.raises(ShapeError, match="mul mixes element types f32 and f64"):
        shapes.binary_shape("mul", s("b=4"), s("b=4", "f64"))


def test_softmax_and_norms():
    x = s("b=4, c=3, h=2")
    assert shapes.softmax_shape(x, ["h", "c"]) == x
    assert shapes.norm_shape("layernorm", x, [s("h=2"), s("h=2")], ["h"]) == x
    assert shapes.norm_shape("layernorm", x, [], ["c", "h"]) == x
    # layernorm's scale over the normalized dims in any order; batchnorm's over the rest
    assert shapes.norm_shape("layernorm", x, [s("h=2, c=3"), s("c=3, h=2")], ["c", "h"]) == x
    assert shapes.norm_shape("batchnorm", x, [s("c=3"), s("c=3")], ["b", "h"]) == x
    with pytest.raises(ShapeError, match=r"batchnorm scale must range over \[c\], got \[h\]"):
        shapes.norm_shape("batchnorm", x, [s("h=2"), s("c=3")], ["b", "h"])
    with pytest.raises(ShapeError, match="layernorm takes 1 operand, or 3 with scale and "
                                         "bias, got 2"):
        shapes.norm_shape("layernorm", x, [s("h=2")], ["h"])
    with pytest.raises(ShapeError, match="softmax needs at least one dimension after 'over'"):
        shapes.softmax_shape(x, [])


def test_reduce():
    x = s("b=4, s=3, d=8")
    assert shapes.reduce_shape("sum", x, ["s"]) == s("b=4, d=8")
    assert shapes.reduce_shape("mean", x, ["d", "b"]) == s("s=3")
    assert shapes.reduce_shape("sum", x, ["b", "s", "d"]) == s("")
    with pytest.raises(ShapeError, match="unknown reduction 'max'; expected sum or mean"):
        shapes.reduce_shape("max", x, ["s"])


def test_embedding():
    table = s("v=100, e=8")
    assert shapes.embedding_shape(s("b=4, s=3", "i32"), table) == s("b=4, s=3, e=8")
    # ids of any shape, a table of several feature dims
    assert shapes.embedding_shape(s("", "i64"), table) == s("e=8")
    assert shapes.embedding_shape(s("b=4", "i64"), s("v=100, h=2, k=4", "f64")) == s(
        "b=4, h=2, k=4", "f64")
    with pytest.raises(ShapeError, match="embedding ids must be integers"):
        shapes.embedding_shape(s("b=4"), table)


def test_lstm():
    x = s("b=4, s=3, e=8")
    assert shapes.lstm_shape(x, s("l=2, k=16, n=32")) == x
    with pytest.raises(ShapeError, match=r"must be \[layers, 2\*hidden, 4\*hidden\] = "
                                         r"\[2, 16, 32\], got \[2, 8, 32\]"):
        shapes.lstm_shape(x, s("l=2, k=8, n=32"))


def test_concat_axis():
    a, b = s("b=2, c1=3, h=4"), s("b=2, c2=5, h=4")
    assert shapes.concat_axis([a, b], s("b=2, c=8, h=4")) == 1
    assert shapes.concat_axis([s("x=1, h=4"), s("y=2, h=4"), s("z=3, h=4")],
                              s("n=6, h=4")) == 0
    assert shapes.concat_axis([s("h=4, x=1"), s("h=4, y=1")], s("h=4, n=2")) == 1
    assert shapes.concat_shape([a, b], s("b=2, c=8, h=4")) == s("b=2, c=8, h=4")


@pytest.mark.parametrize(("inputs", "result", "message"), [
    (["b=2, c=8"], "b=2, c=8", "concat takes 2 to 64 operands, got 1"),
    (["b=2, x=1"] * 65, "b=2, n=65", "concat takes 2 to 64 operands, got 65"),
    (["b=2, c1=3", "b=2, c2=5, h=1"], "b=2, c=8", r"concat operand \[b, c2, h\] has rank 3"),
    (["b=2, c1=3", "bx=2, c2=5"], "b=2, c=8", "in exactly one dimension"),
    (["b=2, c=8", "b=2, c=8"], "b=2, c=8", "in exactly one dimension"),
    # operands that differ in another dim than each other
    (["bx=2, c=4", "b=2, cx=4"], "b=2, c=8", "in exactly one dimension"),
    (["b=2, c1=3", "b=2, c=5"], "b=2, c=8", "must not reuse the result dimension 'c'"),
    (["b=2, c1=3", "b=2, c2=5"], "b=2, c=9", r"'c' must be 8 \(the sum of the operands'\)"),
])
def test_concat_axis_errors(inputs: list[str], result: str, message: str):
    with pytest.raises(ShapeError, match=message):
        shapes.concat_axis([s(i) for i in inputs], s(result))


@pytest.mark.parametrize(("source", "result", "groups"), [
    ("b=2, d=3", "b=2, d=3", [((0,), (0,)), ((1,), (1,))]),                      # identity
    ("b=2, s=3, e=4", "b=2, n=12", [((0,), (0,)), ((1, 2), (1,))]),              # merge
    ("b=2, n=12", "b=2, s=3, e=4", [((0,), (0,)), ((1,), (1, 2))]),              # split
    ("b=2, s=3", "b=2, t=3", [((0,), (0,)), ((1,), (1,))]),                      # rename
    ("a=2, b=3, c=4", "n=24", [((0, 1, 2), (0,))]),                              # flatten
    ("", "", []),                                                                # scalar
    ("b=2, d=3, o=1", "b=2, d=3", [((0,), (0,)), ((1, 2), (1,))]),    # trailing 1 absorbed
    ("b=2, d=3", "b=2, d=3, o=1, p=1", [((0,), (0,)), ((1,), (1, 2, 3))]),
    ("o=1, b=2", "b=2", [((0, 1), (0,))]),                            # leading 1 merged
])
def test_reshape_groups(source: str, result: str,
                        groups: list[tuple[tuple[int, ...], tuple[int, ...]]]):
    found = shapes.reshape_groups(s(source), s(result))
    assert [(tuple(i), tuple(j)) for i, j in found] == groups
    assert shapes.reshape_shape(s(source), s(result)) == s(result)


@pytest.mark.parametrize(("source", "result", "message"), [
    ("a=2, b=3", "c=3, d=2", "merges or splits consecutive dimensions only"),
    ("a=4, b=6", "c=6, d=4", "merges or splits consecutive dimensions only"),  # 4*6=6*4
    ("a=2, b=3", "n=6, m=2", "changes the element count"),
    ("b=2", "", "changes the element count"),
    ("", "o=1", "merges or splits consecutive dimensions only"),
])
def test_reshape_errors(source: str, result: str, message: str):
    with pytest.raises(ShapeError, match=message):
        shapes.reshape_shape(s(source), s(result))


def test_cross_entropy():
    logits, labels = s("b=4, s=3, c=10", "f64"), s("b=4, s=3", "i32")
    assert shapes.cross_entropy_shape(logits, labels, "c") == s("", "f64")
    with pytest.raises(ShapeError, match=r"labels must be \[b, s\] \(the logits without "
                                         r"'c'\), got \[s, b\]"):
        shapes.cross_entropy_shape(logits, s("s=3, b=4", "i32"), "c")
    with pytest.raises(ShapeError, match="labels must be integers"):
        shapes.cross_entropy_shape(logits, s("b=4, s=3"), "c")
