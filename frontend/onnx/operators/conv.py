"""Convolutions and pooling over NCHW tensors (and NCL ones, as height 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute

from pase.core.shapes import conv_output_size
from pase.dialect import dnn
from pase.frontend.onnx.operators.linear import contract
from pase.frontend.onnx.operators.shape import sizes_of
from pase.frontend.onnx.pads import pad_fill, pad_mode, pad_widths
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value

POOL_ATTRIBUTES = ("kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations",
                   "storage_order", "count_include_pad")


def window_properties(stride: int, padding: Sequence[int]) -> dict[str, Attribute]:
    return {"stride": IntAttr(stride), "padding": ArrayAttr(IntAttr(p) for p in padding)}


def window(graph: GraphState, node: Any, kernel: Sequence[int],
           pads: Sequence[int] | None = None) -> tuple[int, list[int]]:
    """The one stride and the [height, width] padding pase's 2-D windows take (`pads`:
    the node's, or what `even_pads` left of them)."""
    auto_pad = graph.attribute(node, "auto_pad", b"NOTSET")
    if auto_pad not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        raise graph.error(f"auto_pad={auto_pad.decode()} is not supported; export "
                          "with explicit pads")
    dilations = graph.attribute(node, "dilations", [1, 1])
    if any(d != 1 for d in dilations):
        raise graph.error(f"dilations={list(dilations)} is not supported (only 1)")
    strides = list(graph.attribute(node, "strides", [1, 1]))
    if len(set(strides)) != 1:
        raise graph.error(f"strides={strides} is not supported (pase has one stride "
                          "for height and width)")
    pads = list(graph.attribute(node, "pads", [0, 0, 0, 0]) if pads is None else pads)
    if len(pads) != 4 or pads[0] != pads[2] or pads[1] != pads[3]:
        raise graph.error(f"pads={pads} is not supported (only the same padding at both "
                          "ends of an axis)")
    if len(kernel) != 2:
        raise graph.error(f"a {len(kernel)}-D window is not supported (only 2-D)")
    return strides[0], pads[:2]


def even_pads(graph: GraphState, node: Any, x: Value) -> tuple[Value, list[int] | None]:
    """A window that pads zeros unevenly (onnxscript folds `F.pad(x, (0, 1, 0, 1))`
    before a stride-2 convolution, as TensorFlow's "same" padding, into the Conv's
    pads): x padded by the difference (`dnn.pad zeros`), and the even pads left for
    the window; else x and the node's pads (None: as given)."""
    pads = list(graph.attribute(node, "pads", [0, 0, 0, 0]))
    if len(pads) != 4 or len(x.axes) != 4 or (pads[0] == pads[2] and pads[1] == pads[3]):
        return x, None
    even = [min(pads[0], pads[2]), min(pads[1], pads[3])]
    for axis in (0, 1):
        x = pad_axis(graph, x, 2 + axis, pads[axis] - even[axis], pads[2 + axis] - even[axis],
                     "zeros", f"{node.output[0]}_pad{'hw'[axis]}")
    return x, even * 2


def pad_axis(graph: GraphState, x: Value, position: int, before: int, after: int,
             mode: str, name: str) -> Value:
    """x padded along the axis at `position` (a `dnn.pad` whose result has a new dim
    there), or x itself when nothing is added."""
    if not before and not after:
        return x
    old = graph.dims.find(graph.real_axis(x, position))
    new = graph.dims.new(graph.dims.size(old) + before + after, graph.dims.hints[old])
    layout = [new if d == old else d for d in graph.layout(x)]
    y = graph.build(dnn.PadOp, [x.value], name, layout,
                    {"kind": StringAttr(mode), "dim": StringAttr(graph.dims.placeholder(old)),
                     "before": IntAttr(before), "after": IntAttr(after)})
    return Value(tuple(new if p == position else a for p, a in enumerate(x.axes)), y)


def spatial_dims(graph: GraphState, sizes: Sequence[int], kernel: Sequence[int], stride: int,
                 padding: Sequence[int]) -> list[int]:
    """New dims for the output height and width of a window over `sizes` (NCHW)."""
    return [graph.dims.new(conv_output_size(sizes[2 + i], kernel[i], stride, padding[i]),
                           hint) for i, hint in enumerate(("h", "w"))]


@importer("Conv", attributes=("group", "strides", "pads", "dilations", "kernel_shape",
                              "auto_pad"))
def conv(graph: GraphState, node: Any) -> list[Value]:
    """A 2-D convolution (and its bias add), grouped with `group`; the filter keeps its
    size-1 axes (1x1 windows, depthwise filters)."""
    group = int(graph.attribute(node, "group", 1))
    x = graph.tensor(node.input[0])
    if len(x.axes) == 4 and x.axes[2:] == (None, None):
        return pointwise_on_pooled(graph, node, x, group)
    if len(x.axes) == 3:  # Conv1d: a 2-D convolution of height 1
        x, pads = lifted_1d(graph, node, x)
        w = lifted_filter(graph, node.input[1])
    else:
        w = graph.tensor(node.input[1], hints=("c", "d", "kh", "kw"), keep=(0, 1, 2, 3))
        x, pads = even_pads(graph, node, x)
    if len(x.axes) != 4 or len(w.axes) != 4:
        raise graph.error("only 1-D and 2-D convolutions (rank-3 NCL and rank-4 NCHW "
                          "tensors) are supported")
    stride, padding = window(graph, node, [graph.dims.size(a) if a is not None else 1
                                           for a in w.axes[2:]], pads)
    in_channels = graph.real_axis(x, 1)
    if group == 1 and not graph.same(in_channels, graph.real_axis(w, 1)):
        raise graph.error("its input and filter channels are different dimensions")
    if group != 1 and graph.dims.size(in_channels) != group * graph.dims.size(
            graph.real_axis(w, 1)):
        raise graph.error(f"its {graph.dims.size(in_channels)} input channels are not "
                          f"group={group} times the filter's {graph.dims.size(w.axes[1] or 0)}")
    name = node.output[0]
    lifted = len(graph.tensor(node.input[0]).axes) == 3
    x_ssa = graph.ordered(x, f"{name}_input")
    w_ssa = graph.ordered(w, f"{name}_filter", "filter")
    spatial = spatial_dims(graph, dnn.shape_of(x_ssa).sizes, dnn.shape_of(w_ssa).sizes[2:],
                           stride, padding)
    has_bias = len(node.input) > 2 and node.input[2]
    result = [graph.real_axis(x, 0), graph.real_axis(w, 0), *spatial]
    y = graph.build(dnn.Conv2dOp, [x_ssa, w_ssa], f"{name}_conv" if has_bias else name,
                    [graph.dims.find(d) for d in result],
                    window_properties(stride, padding) | (
                        {"groups": IntAttr(group)} if group != 1 else {}))
    output = Value(tuple(result), y)
    if lifted:
        output = dropped_height(graph, output, name if not has_bias else f"{name}_1d")
    if not has_bias:
        return [output]
    bias = graph.tensor(node.input[2])
    # [co] broadcasts as [co, 1, 1] (or [co, 1])
    bias = Value((*bias.axes, *[None] * (len(output.axes) - 2)), bias.ssa)
    return [graph.elementwise(dnn.AddOp, output, bias, name)]


def lifted_1d(graph: GraphState, node: Any, x: Value) -> tuple[Value, list[int] | None]:
    """The input `[b, c, l]` of a 1-D window as `[b, c, 1, l]` (a dnn.reshape adding a
    height of 1), uneven zero pads added first (`dnn.pad`), and the window's pads as
    2-D ones: `[0, p, 0, p]`."""
    before, after = list(graph.attribute(node, "pads", [0, 0]))
    even = min(before, after)
    x = pad_axis(graph, x, 2, before - even, after - even, "zeros", f"{node.output[0]}_padl")
    ordered = graph.ordered(x, f"{node.output[0]}_input")
    height = graph.dims.new(1, "h")
    b, c, length = graph.layout(Value(x.axes, ordered))
    lifted = graph.build(dnn.ReshapeOp, [ordered], f"{node.output[0]}_2d",
                         [b, c, height, length])
    return Value((x.axes[0], x.axes[1], height, x.axes[2]), lifted), [0, even, 0, even]


def lifted_filter(graph: GraphState, name: str) -> Value:
    """A Conv1d's constant filter `[co, cig, k]` as the param `[co, cig, 1, k]`."""
    array = graph.constant(name, "a 1-D convolution's filter")
    if array.ndim != 3:
        raise graph.error(f"its filter has {array.ndim} axes (a 1-D convolution's has 3)")
    key = f"{name}_2d"
    if key not in graph.values:
        graph.values[key] = Value((), constant=array[:, :, None, :])
    return graph.tensor(key, hints=("c", "d", "kh", "kw"), keep=(0, 1, 2, 3))


def dropped_height(graph: GraphState, y: Value, name: str) -> Value:
    """A lifted 1-D window's result `[b, c, 1, l]` as `[b, c, l]` (a dnn.reshape)."""
    b, c, _, length = (graph.dims.find(graph.real_axis(y, p)) for p in range(4))
    return Value((b, c, length), graph.build(dnn.ReshapeOp, [y.value], name, [b, c, length]))


def pointwise_on_pooled(graph: GraphState, node: Any, x: Value, group: int) -> list[Value]:
    """A 1x1 convolution of a pooled `[b, c, 1, 1]` tensor (squeeze-and-excitation:
    EfficientNet, RegNetY, MnasNet) is a linear layer: `[b, c]` times the filter `[co, c]`
    (its 1x1 axes dropped), then the bias; the result `[b, co, 1, 1]` keeps no axes for
    the 1s, so that it broadcasts over the feature map it scales."""
    w = graph.tensor(node.input[1], hints=("c", "d"))
    if len(w.axes) != 4 or w.axes[2:] != (None, None):
        raise graph.error("its input is pooled to 1x1 but its filter is not 1x1")
    window(graph, node, [1, 1])
    pads = list(graph.attribute(node, "pads", [0, 0, 0, 0]))
    if group != 1 or any(pads):
        raise graph.error("a grouped or padded convolution of a pooled [b, c, 1, 1] "
                          "tensor is not supported (only group=1 without pads)")
    name = node.output[0]
    has_bias = len(node.input) > 2 and node.input[2]
    rows = Value(x.axes[:2], x.ssa)
    filter_t = Value((w.axes[1], w.axes[0]), w.ssa)
    product = contract(graph, rows, filter_t, f"{name}_matmul" if has_bias else name)
    if has_bias:
        product = graph.elementwise(dnn.AddOp, product, graph.tensor(node.input[2]), name)
    return [Value((*product.axes, None, None), product.ssa)]


@importer("MaxPool", "AveragePool", attributes=POOL_ATTRIBUTES)
def pool(graph: GraphState, node: Any) -> list[Value]:
    kind = "max" if node.op_type == "MaxPool" else "avg"
    if graph.attribute(node, "storage_order", 0):
        raise graph.error("storage_order=1 is not supported")
    kernel = list(graph.attribute(node, "kernel_shape", []))
    x = graph.tensor(node.input[0])
    lifted = len(x.axes) == 3 and len(kernel) == 1
    if lifted:  # MaxPool1d, AvgPool1d: a 2-D window of height 1
        if graph.attribute(node, "pads", [0, 0])[0] != graph.attribute(node, "pads",
                                                                       [0, 0])[-1]:
            raise graph.error("uneven pads of a 1-D pooling are not supported")
        x, pads = lifted_1d(graph, node, x)
        kernel = [1, *kernel]
    elif len(x.axes) != 4:
        raise graph.error("only 1-D and 2-D pooling (rank-3 NCL and rank-4 NCHW tensors) "
                          "is supported")
    else:
        x, pads = even_pads(graph, node, x) if kind == "avg" and graph.attribute(
            node, "count_include_pad", 0) else (x, None)
    stride, padding = window(graph, node, kernel, pads)
    if graph.attribute(node, "ceil_mode", 0):
        x = ceil_mode_windows(graph, node, x, kind, kernel, stride, padding)
    if kind == "avg" and any(padding) and not graph.attribute(node, "count_include_pad", 0):
        raise graph.error("padded AveragePool with count_include_pad=0 is not supported")
    name = node.output[0]
    x_ssa = graph.ordered(x, f"{name}_input")
    spatial = spatial_dims(graph, dnn.shape_of(x_ssa).sizes, kernel, stride, padding)
    result = [graph.real_axis(x, 0), graph.real_axis(x, 1), *spatial]
    properties = {"kind": StringAttr(kind), "window": ArrayAttr(IntAttr(k) for k in kernel),
                  **window_properties(stride, padding)}
    y = graph.build(dnn.Pool2dOp, [x_ssa], f"{name}_2d" if lifted else name,
                    [graph.dims.find(d) for d in result], properties)
    return [dropped_height(graph, Value(tuple(result), y), name) if lifted
            else Value(tuple(result), y)]


def ceil_mode_windows(graph: GraphState, node: Any, x: Value, kind: str,
                      kernel: Sequence[int], stride: int, padding: Sequence[int]) -> Value:
    """The input of a pooling with `ceil_mode=1` (GoogLeNet's and SqueezeNet's
    `MaxPool2d(ceil_mode=True)`), padded at the end of each axis where rounding up adds a
    window, so that pase's window (rounding down) has them all.

    Along an axis of n with padding p, rounding up gives `⌈(n + 2p − k) / s⌉ + 1` windows,
    less the last if it would start past the input and its left padding (PyTorch's rule,
    which ONNX's follows): each window starts inside the input (at most at n − 1). The
    last one reaches past the right padding by `extra`; a max over it is the max of the
    input entries it holds, which include the axis's last entry, so the input padded by
    `extra` copies of its edge (`dnn.pad edge`) gives every window's max and the same
    gradient (a copy's passes back to the entry). An average's divisor counts only the
    entries inside the padded input, which a pad cannot give: one error."""
    sizes = sizes_of(graph, x)[2:]
    for axis, (n, k, pad) in enumerate(zip(sizes, kernel, padding, strict=True)):
        windows = -(-(n + 2 * pad - k) // stride) + 1
        if (windows - 1) * stride >= n + pad:
            windows -= 1
        extra = (windows - 1) * stride + k - n - 2 * pad
        if extra <= 0:
            continue
        if kind != "max":
            raise graph.error(
                f"ceil_mode=1 of an AveragePool is supported only where it gives the sizes "
                f"ceil_mode=0 does; here a {n}-wide axis, window {k}, stride {stride}, "
                f"padding {pad} gives one more window, whose average counts only the "
                "entries inside the input (export at an input size where the stride "
                "divides size + 2·padding − window)")
        x = pad_axis(graph, x, 2 + axis, 0, extra, "edge",
                     f"{node.output[0]}_ceil{'hw'[axis]}")
    return x


@importer("GlobalAveragePool")
def global_average_pool(graph: GraphState, node: Any) -> list[Value]:
    """A mean over height and width (over the length of a rank-3 NCL tensor)."""
    x = graph.tensor(node.input[0])
    if len(x.axes) not in (3, 4):
        raise graph.error("only rank-3 NCL and rank-4 NCHW tensors are supported")
    return [graph.reduce_over(x, list(range(2, len(x.axes))), "mean", True, node.output[0])]


PAD_MODES = {"constant": "zeros", "edge": "edge", "reflect": "reflect"}
"""ONNX's Pad modes pase reads, as `dnn.pad`'s (`constant` with the value 0 only)."""


@importer("Pad", attributes=("mode",))
def pad(graph: GraphState, node: Any) -> list[Value]:
    """A Pad that `pads.fold_zero_pads` did not fold into a window (pads the two ends of
    an axis differently, reflects, repeats the edge, or is read by other ops): one
    `dnn.pad` per padded axis, its result a new dim."""
    mode = pad_mode(graph.onnx, node)
    if mode not in PAD_MODES:
        raise graph.error(f"Pad mode '{mode}' is not supported (only constant, reflect "
                          "and edge)")
    fill = pad_fill(node, graph.constant_of)
    if fill != 0.0:
        what = "not a constant" if fill is None else f"{fill:g}"
        raise graph.error(f"a Pad whose value is {what} is not supported (only zeros)")
    x = graph.tensor(node.input[0])
    widths = pad_widths(node, len(x.axes), graph.constant_of)
    if widths is None:
        raise graph.error("its pads (and axes) must be constants of the input's rank")
    if (widths < 0).any():
        raise graph.error(f"negative pads {widths.T.reshape(-1).tolist()} (cropping) are "
                          "not supported")
    padded = [axis for axis in range(len(x.axes)) if widths[axis].any()]
    for count, position in enumerate(padded):
        name = node.output[0] if count == len(padded) - 1 else f"{node.output[0]}_{count}"
        x = pad_axis(graph, x, position, int(widths[position, 0]), int(widths[position, 1]),
                     PAD_MODES[mode], name)
    return [x]
