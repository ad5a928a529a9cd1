"""Shape rules of the `dnn` layers, as pure functions over named shapes.

One rule per layer kind computes the result shape from the operand shapes and the
layer's parameters, or raises `ShapeError` with a sentence a user can act on. The
frontend calls these rules to infer result types (and reports the error at the
statement), and the `dnn` verifiers call the same rules to check hand-written IR,
so `.dnn` source and `.mlir` input obey exactly the same invariants.

Example:
    >>> x = NamedShape(("b", "d"), (64, 256))
    >>> w = NamedShape(("d", "h"), (256, 1024))
    >>> einsum_shape([x, w], ("b", "h"))
    NamedShape(dims=('b', 'h'), sizes=(64, 1024), element='f32')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod


@dataclass(frozen=True)
class Element:
    """An element type: its name in `.dnn` and IR, its size, its numpy dtype."""

    name: str
    bytes: int
    numpy: str
    floating: bool


ELEMENTS: dict[str, Element] = {e.name: e for e in (
    Element("f32", 4, "float32", True), Element("f64", 8, "float64", True),
    Element("i32", 4, "int32", False), Element("i64", 8, "int64", False))}
"""Every element type pase knows: the one table the frontend, the dialects, the cost
model and the runtime read."""
FLOAT_TYPES = tuple(name for name, e in ELEMENTS.items() if e.floating)
INT_TYPES = tuple(name for name, e in ELEMENTS.items() if not e.floating)
ELEMENT_TYPES = tuple(ELEMENTS)


class ShapeError(Exception):
    """A layer whose operands, parameters or declared result do not fit together."""


MAX_ELEMENTS = 1 << 53
"""The most elements a tensor may have (and so the largest dim size): up to 2^53, element
counts, block volumes and costs are exact in int64 and float64."""

MAX_RANK = 32
"""The most dimensions a tensor may have: numpy's arrays have at most 64, and its gathers
(the runtime's cross-entropy) index with at most 63 arrays, so a 64-dim tensor passed the
compiler and failed inside pase-run. Real models' tensors have at most 6 or so."""


@dataclass(frozen=True)
class NamedShape:
    """A tensor type: named dims in layout order, their sizes, an element type.

    A shape of more than `MAX_ELEMENTS` elements or `MAX_RANK` dims raises `ShapeError`.
    """

    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    element: str = "f32"

    def __post_init__(self) -> None:
        if len(self.dims) > MAX_RANK:
            raise ShapeError(f"a tensor of {len(self.dims)} dimensions has too many; pase "
                             f"handles at most {MAX_RANK}")
        if prod(self.sizes) > MAX_ELEMENTS:
            raise ShapeError(f"a tensor over {self} would have {prod(self.sizes):,} elements; "
                             f"pase handles at most 2^53 per tensor")

    def size_of(self, dim: str) -> int:
        return self.sizes[self.dims.index(dim)]

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        return prod(self.sizes)

    def __str__(self) -> str:
        return "[" + ", ".join(self.dims) + "]"


def _fmt(dims: Sequence[str]) -> str:
    return "[" + ", ".join(dims) + "]"


def shape_over(dims: Sequence[str], dim_sizes: dict[str, int], element: str = "f32") -> NamedShape:
    """The shape of a tensor over `dims`, sizes taken from a graph's dimension table."""
    for index, dim in enumerate(dims):
        if dim not in dim_sizes:
            raise ShapeError(f"unknown dimension '{dim}'; declare it in the graph header")
        if dim in dims[:index]:
            raise ShapeError(f"dimension '{dim}' appears twice in {_fmt(dims)}")
    if element not in ELEMENT_TYPES:
        raise ShapeError(f"unknown element type '{element}'; expected one of "
                         + ", ".join(ELEMENT_TYPES))
    return NamedShape(tuple(dims), tuple(dim_sizes[d] for d in dims), element)


def check_unique(dims: Sequence[str]) -> None:
    for i, dim in enumerate(dims):
        if dim in dims[:i]:
            raise ShapeError(f"dimension '{dim}' appears twice in {_fmt(dims)}")


def _common_sizes(shapes: Sequence[NamedShape]) -> dict[str, int]:
    """Sizes of all dims of `shapes`; a dim must have one size everywhere."""
    sizes: dict[str, int] = {}
    for shape in shapes:
        for dim, size in zip(shape.dims, shape.sizes, strict=True):
            if sizes.setdefault(dim, size) != size:
                raise ShapeError(f"dimension '{dim}' is {sizes[dim]} in one operand "
                                 f"but {size} in another")
    return sizes


def _float_element(op: str, shapes: Sequence[NamedShape]) -> str:
    elements = {s.element for s in shapes}
    for element in elements:
        if element not in FLOAT_TYPES:
            raise ShapeError(f"{op} takes floating-point tensors, got {element}")
    if len(elements) > 1:
        raise ShapeError(f"{op} mixes element types " + " and ".join(sorted(elements)))
    return shapes[0].element


def _expect_count(op: str, shapes: Sequence[NamedShape], *allowed: int) -> None:
    if len(shapes) not in allowed:
        want = (f"{allowed[0]} to {allowed[-1]}" if len(allowed) > 2
                else " or ".join(str(n) for n in allowed))
        raise ShapeError(f"{op} takes {want} operand{'s' if allowed != (1,) else ''}, "
                         f"got {len(shapes)}")


def _expect_rank(op: str, what: str, shape: NamedShape, rank: int) -> None:
    if shape.rank != rank:
        raise ShapeError(f"{op} expects a rank-{rank} {what}, got {shape} (rank {shape.rank})")


def _dims_in(op: str, dims: Sequence[str], shape: NamedShape) -> None:
    if not dims:
        raise ShapeError(f"{op} needs at least one dimension after 'over'")
    check_unique(dims)
    for dim in dims:
        if dim not in shape.dims:
            raise ShapeError(f"{op} over '{dim}', which is not a dimension of {shape}")


def einsum_shape(inputs: Sequence[NamedShape], result: Sequence[str]) -> NamedShape:
    """Named-dim contraction: dims shared by inputs and absent from `result` are summed."""
    _expect_count("einsum", inputs, 1, 2, 3)
    element = _float_element("einsum", inputs)
    sizes = _common_sizes(inputs)
    check_unique(result)
    for dim in result:
        if dim not in sizes:
            raise ShapeError(f"einsum result dimension '{dim}' does not appear in any input")
    return NamedShape(tuple(result), tuple(sizes[d] for d in result), element)


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


Pair = tuple[int, int]


def _check_window(op: str, stride: int, padding: Pair) -> None:
    if stride < 1:
        raise ShapeError(f"{op} stride must be at least 1, got {stride}")
    if min(padding) < 0:
        raise ShapeError(f"{op} padding must not be negative, got {list(padding)}")


def _spatial_result(op: str, x: NamedShape, kernel: Pair, stride: int, padding: Pair,
                    result: NamedShape) -> None:
    for axis, (name, size) in enumerate(zip(result.dims[2:], result.sizes[2:], strict=True)):
        expected = conv_output_size(x.sizes[2 + axis], kernel[axis], stride, padding[axis])
        if expected < 1:
            raise ShapeError(f"{op} window {kernel[axis]} is larger than the padded input "
                             f"dimension '{x.dims[2 + axis]}' ({x.sizes[2 + axis]})")
        if size != expected:
            raise ShapeError(f"{op} output dimension '{name}' must be {expected} "
                             f"(input {x.sizes[2 + axis]}, window {kernel[axis]}, "
                             f"stride {stride}, padding {padding[axis]}), but it is {size}")


def conv2d_shape(x: NamedShape, w: NamedShape, stride: int, padding: Pair,
                 result: NamedShape, groups: int = 1) -> NamedShape:
    """NCHW convolution: x [b, ci, h, w], filter [co, cig, r, s] -> [b, co, ho, wo].

    With `groups` G the channels form G groups: ci = G·cig, co divisible by G, and output
    channel o reads the input channels of its group, o // (co / G). Ungrouped (G = 1) the
    filter's second dim is the input's channel dim itself; grouped it is a dim of its own
    (depthwise: G = ci = co and cig = 1).
    """
    _float_element("conv2d", [x, w])
    _expect_rank("conv2d", "input [batch, channels, height, width]", x, 4)
    _expect_rank("conv2d", "filter [out-channels, in-channels, height, width]", w, 4)
    _expect_rank("conv2d", "result [batch, out-channels, height, width]", result, 4)
    _check_window("conv2d", stride, padding)
    if groups < 1:
        raise ShapeError(f"conv2d groups must be at least 1, got {groups}")
    if groups == 1 and w.dims[1] != x.dims[1]:
        raise ShapeError(f"conv2d filter {w} must have the input channel dimension "
                         f"'{x.dims[1]}' second, got '{w.dims[1]}'")
    if groups > 1 and x.sizes[1] != groups * w.sizes[1]:
        raise ShapeError(f"conv2d with {groups} groups needs {groups} times the filter's "
                         f"'{w.dims[1]}' ({w.sizes[1]}) input channels, but '{x.dims[1]}' "
                         f"is {x.sizes[1]}")
    if w.sizes[0] % groups:
        raise ShapeError(f"conv2d output channels '{w.dims[0]}' ({w.sizes[0]}) must divide "
                         f"into the {groups} groups")
    if result.dims[0] != x.dims[0]:
        raise ShapeError(f"conv2d result must keep the batch dimension '{x.dims[0]}' first, "
                         f"got '{result.dims[0]}'")
    if result.dims[1] != w.dims[0]:
        raise ShapeError(f"conv2d result must have the filter's output channel dimension "
                         f"'{w.dims[0]}' second, got '{result.dims[1]}'")
    check_unique(result.dims + w.dims[2:])
    if groups > 1:
        check_unique((x.dims[0], w.dims[1], *result.dims[1:], *w.dims[2:]))
    _spatial_result("conv2d", x, (w.sizes[2], w.sizes[3]), stride, padding, result)
    return NamedShape(result.dims, result.sizes, x.element)


def pool2d_shape(x: NamedShape, window: Pair, stride: int, padding: Pair,
                 result: NamedShape) -> NamedShape:
    """NCHW pooling: x [b, c, h, w] -> [b, c, ho, wo]."""
    _float_element("pool2d", [x])
    _expect_rank("pool2d", "input [batch, channels, height, width]", x, 4)
    _expect_rank("pool2d", "result [batch, channels, height, width]", result, 4)
    _check_window("pool2d", stride, padding)
    if min(window) < 1:
        raise ShapeError(f"pool2d window must be positive, got {list(window)}")
    if 2 * padding[0] > window[0] or 2 * padding[1] > window[1]:
        raise ShapeError(f"pool2d padding {list(padding)} must be at most half the window "
                         f"{list(window)}")
    if result.dims[:2] != x.dims[:2]:
        raise ShapeError(f"pool2d result must keep the batch and channel dimensions "
                         f"{_fmt(x.dims[:2])}, got {_fmt(result.dims[:2])}")
    _spatial_result("pool2d", x, window, stride, padding, result)
    return NamedShape(result.dims, result.sizes, x.element)


def unary_shape(op: str, x: NamedShape) -> NamedShape:
    _float_element(op, [x])
    return x


def binary_shape(op: str, lhs: NamedShape, rhs: NamedShape) -> NamedShape:
    """Broadcasting by name: the dims of one operand must all be dims of the other, and
    the result has the larger operand's dims (lhs's when both have the same set).

    Requiring containment catches a mistyped name in a residual add, which would
    otherwise broadcast into a much larger tensor.
    """
    element = _float_element(op, [lhs, rhs])
    if set(rhs.dims) <= set(lhs.dims):
        return NamedShape(lhs.dims, lhs.sizes, element)
    if set(lhs.dims) <= set(rhs.dims):
        return NamedShape(rhs.dims, rhs.sizes, element)
    only_lhs = [d for d in lhs.dims if d not in rhs.dims]
    only_rhs = [d for d in rhs.dims if d not in lhs.dims]
    raise ShapeError(f"{op} broadcasts by name, so the dims of one operand must all be dims of "
                     f"the other; {lhs} has {_fmt(only_lhs)} and {rhs} has {_fmt(only_rhs)}")


def softmax_shape(x: NamedShape, over: Sequence[str]) -> NamedShape:
    _float_element("softmax", [x])
    _dims_in("softmax", over, x)
    return x


def norm_shape(op: str, x: NamedShape, affine: Sequence[NamedShape],
               over: Sequence[str]) -> NamedShape:
    """layernorm / batchnorm: normalize x over `over`; optional scale and bias.

    layernorm's scale and bias range over the normalized dims, batchnorm's over the
    others (the channels), as in the usual definitions.
    """
    _float_element(op, [x, *affine])
    _dims_in(op, over, x)
    if len(affine) not in (0, 2):
        raise ShapeError(f"{op} takes 1 operand, or 3 with scale and bias, got "
                         f"{1 + len(affine)}")
    if op == "layernorm":
        param_dims = tuple(d for d in x.dims if d in over)
    else:
        param_dims = tuple(d for d in x.dims if d not in over)
    for which, param in zip(("scale", "bias"), affine, strict=False):
        if sorted(param.dims) != sorted(param_dims):
            raise ShapeError(f"{op} {which} must range over {_fmt(param_dims)}, got {param}")
    return x


def reduce_shape(kind: str, x: NamedShape, over: Sequence[str]) -> NamedShape:
    if kind not in ("sum", "mean"):
        raise ShapeError(f"unknown reduction '{kind}'; expected sum or mean")
    _float_element("reduce", [x])
    _dims_in("reduce", over, x)
    keep = [i for i, d in enumerate(x.dims) if d not in over]
    return NamedShape(tuple(x.dims[i] for i in keep), tuple(x.sizes[i] for i in keep), x.element)


def embedding_shape(ids: NamedShape, table: NamedShape) -> NamedShape:
    """ids [...] (integers) and table [vocab, features...] -> [..., features...]."""
    if ids.element not in INT_TYPES:
        raise ShapeError(f"embedding ids must be integers (i32 or i64), got {ids.element}")
    if table.element not in FLOAT_TYPES:
        raise ShapeError(f"embedding table must be floating-point, got {table.element}")
    if table.rank < 2:
        raise ShapeError(f"embedding table must be [vocab, features...], got {table}")
    dims = ids.dims + table.dims[1:]
    check_unique(dims + table.dims[:1])
    return NamedShape(dims, ids.sizes + table.sizes[1:], table.element)


def _recurrent_shape(op: str, gates: int, x: NamedShape, w: NamedShape,
                     biases: Sequence[NamedShape], paired_biases: bool = False) -> NamedShape:
    """The shape rule the LSTM and the GRU share: x [batch, seq, hidden], weights [layers,
    2·hidden, gates·hidden] and biases [layers, gates·hidden] with the weight's dims ->
    x's shape. `paired_biases`: none or two (the GRU's input and recurrent biases).

    >>> x = NamedShape(("b", "s", "e"), (2, 3, 4))
    >>> _recurrent_shape("gru", 3, x, NamedShape(("l", "k", "n"), (1, 8, 12)), ()) == x
    True
    """
    _float_element(op, [x, w, *biases])
    _expect_rank(op, "input [batch, seq, hidden]", x, 3)
    _expect_rank(op, f"weight [layers, 2*hidden, {gates}*hidden]", w, 3)
    hidden = x.sizes[2]
    if w.sizes[1] != 2 * hidden or w.sizes[2] != gates * hidden:
        raise ShapeError(f"{op} weight {w} must be [layers, 2*hidden, {gates}*hidden] = "
                         f"[{w.sizes[0]}, {2 * hidden}, {gates * hidden}], got "
                         f"[{', '.join(str(s) for s in w.sizes)}]")
    if paired_biases and len(biases) not in (0, 2):
        raise ShapeError(f"{op} takes 2 operands, or 4 with the input and recurrent "
                         f"biases, got {2 + len(biases)}")
    wanted = NamedShape((w.dims[0], w.dims[2]), (w.sizes[0], w.sizes[2]), w.element)
    for b in biases:
        if (b.dims, b.sizes) != (wanted.dims, wanted.sizes):
            raise ShapeError(f"{op} bias {b} must be [layers, {gates}*hidden] with the "
                             f"weight's dims: {wanted}")
    check_unique(x.dims + w.dims)
    return x


def lstm_shape(x: NamedShape, w: NamedShape, *bias: NamedShape) -> NamedShape:
    """Multi-layer LSTM as one layer: x [batch, seq, hidden], weights [layers, 2·hidden,
    4·hidden] (input and recurrent weights stacked, four gates), and optionally a bias
    [layers, 4·hidden] with the weight's dims -> [batch, seq, hidden]."""
    return _recurrent_shape("lstm", 4, x, w, bias)


def gru_shape(x: NamedShape, w: NamedShape, *biases: NamedShape) -> NamedShape:
    """Multi-layer GRU as one layer: x [batch, seq, hidden], weights [layers, 2·hidden,
    3·hidden] (input and recurrent weights stacked, three gates), and optionally the input
    and recurrent biases, each [layers, 3·hidden] with the weight's dims -> [batch, seq,
    hidden]."""
    return _recurrent_shape("gru", 3, x, w, biases, paired_biases=True)


def concat_axis(inputs: Sequence[NamedShape], result: NamedShape) -> int:
    """The one position where every input's dim differs from the result's dim."""
    _expect_count("concat", inputs, *range(2, 65))
    _float_element("concat", inputs)
    for shape in inputs:
        if shape.rank != result.rank:
            raise ShapeError(f"concat operand {shape} has rank {shape.rank}, "
                             f"the result {result} has rank {result.rank}")
    axes = {i for shape in inputs for i in range(result.rank) if shape.dims[i] != result.dims[i]}
    if len(axes) != 1:
        raise ShapeError(f"concat operands must differ from the result {result} in exactly "
                         f"one dimension (the concatenated one), got "
                         + ", ".join(str(s) for s in inputs))
    (axis,) = axes
    for shape in inputs:
        if shape.dims[axis] == result.dims[axis]:
            raise ShapeError(f"concat operand {shape} must not reuse the result dimension "
                             f"'{result.dims[axis]}'")
    total = sum(shape.sizes[axis] for shape in inputs)
    if total != result.sizes[axis]:
        raise ShapeError(f"concat result dimension '{result.dims[axis]}' must be {total} "
                         f"(the sum of the operands'), but it is {result.sizes[axis]}")
    return axis


def concat_shape(inputs: Sequence[NamedShape], result: NamedShape) -> NamedShape:
    concat_axis(inputs, result)
    return NamedShape(result.dims, result.sizes, inputs[0].element)


def reshape_groups(x: NamedShape, result: NamedShape) -> list[tuple[range, range]]:
    """Pair contiguous groups of input and result dims with equal products.

    A reshape merges consecutive dims, splits a dim into consecutive dims, or renames a
    dim (a one-to-one group of equal sizes). Returns the (input dims, result dims)
    index ranges of each group.
    """
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < x.rank or j < result.rank:
        if i == x.rank or j == result.rank:
            # Only size-1 dims may remain on one side: they join the last group.
            rest_x, rest_y = x.sizes[i:], result.sizes[j:]
            if not groups or any(s != 1 for s in rest_x + rest_y):
                break
            last_x, last_y = groups.pop()
            groups.append((range(last_x.start, x.rank), range(last_y.start, result.rank)))
            i, j = x.rank, result.rank
            continue
        i0, j0 = i, j
        left, right = x.sizes[i], result.sizes[j]
        i, j = i + 1, j + 1
        while left != right:
            if left < right and i < x.rank:
                left *= x.sizes[i]
                i += 1
            elif right < left and j < result.rank:
                right *= result.sizes[j]
                j += 1
            else:
                break
        if left != right or (i - i0 > 1 and j - j0 > 1):
            break
        groups.append((range(i0, i), range(j0, j)))
    else:
        return groups
    raise ShapeError(f"reshape cannot turn {x} {list(x.sizes)} into {result} "
                     f"{list(result.sizes)}: it merges or splits consecutive dimensions only")


def reshape_shape(x: NamedShape, result: NamedShape) -> NamedShape:
    if x.num_elements != result.num_elements:
        raise ShapeError(f"reshape of {x} ({x.num_elements} elements) into {result} "
                         f"({result.num_elements} elements) changes the element count")
    reshape_groups(x, result)
    return NamedShape(result.dims, result.sizes, x.element)


def cross_entropy_shape(logits: NamedShape, labels: NamedShape, over: str) -> NamedShape:
    """Mean softmax cross-entropy over all positions: a scalar."""
    _float_element("softmax_cross_entropy", [logits])
    _dims_in("softmax_cross_entropy", [over], logits)
    if labels.element not in INT_TYPES:
        raise ShapeError(f"softmax_cross_entropy labels must be integers (i32 or i64), "
                         f"got {labels.element}")
    expected = tuple(d for d in logits.dims if d != over)
    if labels.dims != expected:
        raise ShapeError(f"softmax_cross_entropy labels must be {_fmt(expected)} "
                         f"(the logits without '{over}'), got {labels}")
    return NamedShape((), (), logits.element)


def clip_shape(x: NamedShape, low: float, high: float) -> NamedShape:
    """Elementwise clamp of x into [low, high]."""
    _float_element("clip", [x])
    if not low <= high:
        raise ShapeError(f"clip min {low} must be at most its max {high}")
    return x


def broadcast_shape(x: NamedShape, result: NamedShape) -> NamedShape:
    """x repeated along new dims: the result has x's dims, in x's order and sizes, and
    dims x does not have anywhere among them (ONNX Expand, ViT's class token [e] as
    [b, one, e])."""
    _float_element("broadcast", [x])
    kept = [d for d in result.dims if d in x.dims]
    if kept != list(x.dims):
        raise ShapeError(f"broadcast result {result} must hold every dimension of {x} in "
                         "its order")
    for dim, size in zip(x.dims, x.sizes, strict=True):
        if result.size_of(dim) != size:
            raise ShapeError(f"broadcast result {result} gives '{dim}' size "
                             f"{result.size_of(dim)}, not {x}'s {size}")
    if result.rank == x.rank:
        raise ShapeError(f"broadcast result {result} adds no dimension to {x}")
    check_unique(result.dims)
    return NamedShape(result.dims, result.sizes, x.element)


def _replaced_dim(op: str, x: NamedShape, dim: str, result: NamedShape) -> tuple[int, str]:
    """Checks that `result` is x with `dim` replaced, in place, by a dim x does not have
    (what slice and pad make); returns the axis and the new dim's name.

    >>> x = NamedShape(("b", "s"), (2, 8))
    >>> _replaced_dim("slice", x, "s", NamedShape(("b", "t"), (2, 4)))
    (1, 't')
    """
    if dim not in x.dims:
        raise ShapeError(f"{op} along '{dim}', which is not a dimension of {x}")
    axis = x.dims.index(dim)
    if result.rank != x.rank or any(r != d for k, (r, d) in enumerate(
            zip(result.dims, x.dims, strict=True)) if k != axis):
        raise ShapeError(f"{op} result {result} must be {x} with '{dim}' replaced by a new "
                         f"dimension")
    new = result.dims[axis]
    if new in x.dims:
        raise ShapeError(f"{op} result must replace '{dim}' by a dimension {x} does not "
                         f"have, got '{new}'")
    return axis, new


def slice_shape(x: NamedShape, dim: str, start: int, result: NamedShape) -> NamedShape:
    """x's entries start .. start + n - 1 along `dim`: the result has x's dims with `dim`
    replaced, in place, by a new dim of size n (the result's). Integer tensors too (a
    language model's shifted labels)."""
    axis, new = _replaced_dim("slice", x, dim, result)
    if start < 0 or start + result.sizes[axis] > x.sizes[axis]:
        raise ShapeError(f"slice from {start} of {result.sizes[axis]} entries ('{new}') "
                         f"runs past '{dim}' ({x.sizes[axis]})")
    return NamedShape(result.dims, result.sizes, x.element)


def pad_shape(x: NamedShape, dim: str, before: int, after: int, mode: str,
              result: NamedShape) -> NamedShape:
    """x with `before` entries added before and `after` after along `dim` (zeros, x's edge
    repeated, or x reflected about its edge): the result has x's dims with `dim`
    replaced, in place, by a new dim of size n + before + after (the result's)."""
    _float_element("pad", [x])
    axis, new = _replaced_dim("pad", x, dim, result)
    size = x.sizes[axis]
    if result.sizes[axis] != size + before + after:
        raise ShapeError(f"pad of '{dim}' ({size}) by {before} before and {after} after "
                         f"gives {size + before + after} entries, not '{new}' "
                         f"({result.sizes[axis]})")
    if mode == "reflect" and max(before, after) >= size:
        raise ShapeError(f"pad reflect of '{dim}' ({size}) by {max(before, after)} needs "
                         f"fewer entries than the dim has")
    return NamedShape(result.dims, result.sizes, x.element)


def mask_shape(x: NamedShape, over: Sequence[str]) -> NamedShape:
    """A causal mask over [q, k]: two dims of x of one size."""
    _float_element("mask", [x])
    _dims_in("mask", over, x)
    if len(over) != 2:
        raise ShapeError(f"mask causal is over two dimensions [query, key], got {_fmt(over)}")
    if x.size_of(over[0]) != x.size_of(over[1]):
        raise ShapeError(f"mask causal needs '{over[0]}' ({x.size_of(over[0])}) and "
                         f"'{over[1]}' ({x.size_of(over[1])}) of one size")
    return x


def rms_norm_shape(x: NamedShape, scale: Sequence[NamedShape], over: Sequence[str]) -> NamedShape:
    """rmsnorm: x over its root mean square over `over`, times an optional scale over
    `over`."""
    _float_element("rmsnorm", [x, *scale])
    _dims_in("rmsnorm", over, x)
    if len(scale) > 1:
        raise ShapeError(f"rmsnorm takes 1 operand, or 2 with a scale, got {1 + len(scale)}")
    for param in scale:
        if sorted(param.dims) != sorted(over):
            raise ShapeError(f"rmsnorm scale must range over {_fmt(over)}, got {param}")
    return x
