"""`Graph`: a `.dnn` graph under construction, as models/generate.py writes its models
(the dimension table, the statements, each checked by the compiler's own shape rule).


"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pase.core import shapes
from pase.core.shapes import NamedShape

# A kernel size or a padding: one number for height and width, or (height, width).
Kernel = int | tuple[int, int]
Padding = int | tuple[int, int]

# Header groups: dimensions are declared grouped, each group with a comment.
BATCH = "batch"
SPATIAL = "height and width"
CHANNELS = "channels"
FILTER = "filter height and width"
CLASSES = "features and classes"


def check_value_name(name: str) -> None:
    """Raise unless every `_`-separated part of `name` has a letter (see the module
    docstring): `layer1_0` and `m5b_5x5_1` are rejected, `layer1_b0` and `m5b_5x5_c1`
    are not."""
    bare = [part for part in name.split("_") if re.fullmatch(r"[0-9]+", part)]
    if bare:
        raise ValueError(f"%{name}: part '{bare[0]}' is a bare number; tag the index with "
                         f"a letter (block b<n>, conv c<n>), since xDSL drops a trailing "
                         f"'_<number>' from a name when printing")


class Graph:
    """A `.dnn` graph under construction: its dimension table and its statements.

    Each statement method checks its operands' shapes, records the result's dims and
    returns the value's name, so models are written as ordinary Python data flow:

        >>> g = Graph("tiny", ["a tiny model"])
        >>> x = g.input("x", [g.dim("b", 4, BATCH), g.dim("d", 8, CLASSES)])
        >>> g.relu("y", x)
        'y'
    """

    def __init__(self, name: str, description: Sequence[str]):
        self.name = name
        self.description = list(description)
        self.dims: dict[str, int] = {}
        self.groups: dict[str, list[str]] = {}
        self.shapes: dict[str, tuple[str, ...]] = {}
        self.integer: set[str] = set()
        self.body: list[str] = []
        self.layers = 0

    # -- dimensions --

    def dim(self, name: str, size: int, group: str) -> str:
        """Declare (or reuse) a dimension; one name has one size in the whole graph."""
        if name in self.dims:
            if self.dims[name] != size:
                raise ValueError(f"dimension '{name}' is {self.dims[name]}, not {size}")
            return name
        self.dims[name] = size
        self.groups.setdefault(group, []).append(name)
        return name

    def spatial(self, size: int) -> tuple[str, str]:
        return self.dim(f"h{size}", size, SPATIAL), self.dim(f"w{size}", size, SPATIAL)

    def filter(self, kernel: Kernel) -> tuple[str, str]:
        """The filter's height and width dims `r<height>, s<width>` (a 1x7 filter is
        `r1, s7`)."""
        height, width = _pair(kernel)
        return self.dim(f"r{height}", height, FILTER), self.dim(f"s{width}", width, FILTER)

    def channels(self, size: int, avoid: str = "") -> str:
        """The channel dim `c<size>`, or `c<size>x` when the input already uses `c<size>`
        (a filter's in and out channels need different names)."""
        name = f"c{size}" if avoid != f"c{size}" else f"c{size}x"
        return self.dim(name, size, CHANNELS)

    def size(self, dim: str) -> int:
        return self.dims[dim]

    def shape(self, value: str) -> tuple[str, ...]:
        return self.shapes[value]

    def named(self, value: str) -> NamedShape:
        """The value's shape as the compiler's shape rules take it."""
        dims = self.shape(value)
        element = "i32" if value in self.integer else "f32"
        return NamedShape(dims, tuple(self.size(d) for d in dims), element)

    def named_dims(self, dims: Sequence[str]) -> NamedShape:
        return NamedShape(tuple(dims), tuple(self.size(d) for d in dims))

    # -- statements --

    def comment(self, text: str) -> None:
        self.body.append(f"  // {text}" if text else "")

    def blank(self) -> None:
        if self.body and self.body[-1]:
            self.body.append("")

    def _define(self, value: str, text: str, dims: Sequence[str], layer: bool) -> str:
        check_value_name(value)
        if value in self.shapes:
            raise ValueError(f"%{value} is defined twice")
        for dim in dims:
            if dim not in self.dims:
                raise ValueError(f"%{value}: dimension '{dim}' is not declared")
        if len(set(dims)) != len(dims):
            raise ValueError(f"%{value}: a dimension repeats in {list(dims)}")
        self.shapes[value] = tuple(dims)
        self.body.append(f"  %{value} = {text}")
        self.layers += layer
        return value

    def input(self, value: str, dims: Sequence[str], element: str = "f32") -> str:
        suffix = "" if element == "f32" else f" : {element}"
        if element != "f32":
            self.integer.add(value)
        return self._define(value, f"input {_dims(dims)}{suffix}", dims, layer=False)

    def param(self, value: str, dims: Sequence[str]) -> str:
        return self._define(value, f"param {_dims(dims)}", dims, layer=False)

    def layer(self, value: str, text: str, dims: Sequence[str]) -> str:
        return self._define(value, text, dims, layer=True)

    def einsum(self, value: str, operands: Sequence[str], result: Sequence[str]) -> str:
        shape = shapes.einsum_shape([self.named(o) for o in operands], result)
        return self.layer(value, f"einsum {_values(operands)} -> {_dims(result)}",
                          shape.dims)

    def conv2d(self, value: str, x: str, w: str, stride: int = 1,
               padding: Padding = 0) -> str:
        batch, _, height, width = self.shape(x)
        out_channels, _, r, s = self.shape(w)
        pad_h, pad_w = _pair(padding)
        out_h = shapes.conv_output_size(self.size(height), self.size(r), stride, pad_h)
        out_w = shapes.conv_output_size(self.size(width), self.size(s), stride, pad_w)
        if out_w != out_h:
            raise ValueError(f"%{value}: only square feature maps are generated")
        result = shapes.conv2d_shape(
            self.named(x), self.named(w), stride, (pad_h, pad_w),
            self.named_dims([batch, out_channels, *self.spatial(out_h)])).dims
        text = f"conv2d %{x}, %{w}{_window_clauses(stride, padding)} -> {_dims(result)}"
        return self.layer(value, text, result)

    def pool2d(self, value: str, kind: str, x: str, window: int, stride: int = 1,
               padding: int = 0) -> str:
        batch, channels, height, _ = self.shape(x)
        out = shapes.conv_output_size(self.size(height), window, stride, padding)
        result = shapes.pool2d_shape(self.named(x), (window, window), stride,
                                     (padding, padding),
                                     self.named_dims([batch, channels, *self.spatial(out)])).dims
        text = (f"pool2d {kind} %{x} window [{window}, {window}]"
                f"{_window_clauses(stride, padding)} -> {_dims(result)}")
        return self.layer(value, text, result)

    def unary(self, value: str, op: str, x: str) -> str:
        return self.layer(value, f"{op} %{x}", shapes.unary_shape(op, self.named(x)).dims)

    def relu(self, value: str, x: str) -> str:
        return self.unary(value, "relu", x)

    def add(self, value: str, lhs: str, rhs: str) -> str:
        """Elementwise add; as in the language, the dims of one operand must all be dims
        of the other, and the result has the larger operand's dims."""
        dims = shapes.binary_shape("add", self.named(lhs), self.named(rhs)).dims
        return self.layer(value, f"add %{lhs}, %{rhs}", dims)

    def binary(self, value: str, op: str, lhs: str, rhs: str) -> str:
        """Elementwise `op` (add, sub, mul) with broadcasting by name."""
        dims = shapes.binary_shape(op, self.named(lhs), self.named(rhs)).dims
        return self.layer(value, f"{op} %{lhs}, %{rhs}", dims)

    def softmax(self, value: str, x: str, over: str) -> str:
        dims = shapes.softmax_shape(self.named(x), [over]).dims
        return self.layer(value, f"softmax %{x} over {over}", dims)

    def norm(self, value: str, op: str, x: str, over: Sequence[str],
             affine: tuple[str, str] | None = None) -> str:
        operands = [x, *affine] if affine else [x]
        over_text = over[0] if len(over) == 1 else _dims(over)
        dims = shapes.norm_shape(op, self.named(x), [self.named(a) for a in affine or ()],
                                 over).dims
        return self.layer(value, f"{op} {_values(operands)} over {over_text}", dims)

    def reshape(self, value: str, x: str, result: Sequence[str]) -> str:
        dims = shapes.reshape_shape(self.named(x), self.named_dims(result)).dims
        return self.layer(value, f"reshape %{x} -> {_dims(result)}", dims)

    def concat(self, value: str, operands: Sequence[str], axis: int) -> str:
        """Concatenate along dim position `axis`; the result's dim there is
        `c<total>` (the operands' sizes summed)."""
        first = self.shape(operands[0])
        total = sum(self.size(self.shape(operand)[axis]) for operand in operands)
        joined = self.channels(total)
        result = shapes.concat_shape([self.named(o) for o in operands], self.named_dims(
            [*first[:axis], joined, *first[axis + 1:]])).dims
        return self.layer(value, f"concat {_values(operands)} -> {_dims(result)}", result)

    def embedding(self, value: str, ids: str, table: str) -> str:
        dims = shapes.embedding_shape(self.named(ids), self.named(table)).dims
        return self.layer(value, f"embedding %{ids}, %{table}", dims)

    def cross_entropy(self, value: str, logits: str, labels: str, over: str) -> str:
        shapes.cross_entropy_shape(self.named(logits), self.named(labels), over)
        text = f"softmax_cross_entropy %{logits}, %{labels} over {over}"
        return self.layer(value, text, ())

    def ret(self, value: str) -> None:
        self.body.append(f"  return %{value}")

    # -- output --

    def header(self) -> list[str]:
        """`graph @name(` and the dimension table: one comment line per group, then its
        dims (channels and filter sizes sorted by size, the rest in order of first use)."""
        lines: list[str] = []
        groups = list(self.groups.items())
        for index, (group, names) in enumerate(groups):
            if group in (CHANNELS, FILTER):
                names = sorted(names, key=lambda name: (self.dims[name], name))
            lines.append(f"  // {group}")
            rows: list[list[str]] = [[]]
            for entry in (f"{name} = {self.dims[name]}" for name in names):
                if rows[-1] and len(", ".join([*rows[-1], entry])) > 90:
                    rows.append([])
                rows[-1].append(entry)
            last_group = index == len(groups) - 1
            for row_index, row in enumerate(rows):
                last = last_group and row_index == len(rows) - 1
                lines.append("  " + ", ".join(row) + ("" if last else ","))
        return [f"graph @{self.name}(", *lines, ") {"]

    def render(self) -> str:
        generated = "// Generated by models/generate.py; edit that script, not this file."
        top = [f"// {line}" if line else "//" for line in self.description]
        body = self.body[:-1] if self.body and not self.body[-1] else self.body
        return "\n".join([generated, "//", *top, "", *self.header(), *body, "}", ""])


def _dims(dims: Sequence[str]) -> str:
    return "[" + ", ".join(dims) + "]"


def _values(values: Sequence[str]) -> str:
    return ", ".join(f"%{v}" for v in values)


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    """A kernel size or padding for (height, width); one number is both."""
    return (value, value) if isinstance(value, int) else value


def _window_clauses(stride: int, padding: Padding) -> str:
    pad_h, pad_w = _pair(padding)
    if pad_h == pad_w:
        pad = f" padding {pad_h}" if pad_h != 0 else ""
    else:
        pad = f" padding [{pad_h}, {pad_w}]"
    return (f" stride {stride}" if stride != 1 else "") + pad
