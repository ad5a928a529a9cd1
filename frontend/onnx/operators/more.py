"""The ops real exports add (issue 31): Clip, Pow, Sqrt, Neg, Slice, Split, Where."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntAttr, StringAttr, f64

from pase.dialect import dnn
from pase.frontend.onnx.operators.norm import norm_epsilon
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value

FLOAT_LIMIT = 3.4e38
"""Clip's bound when the node gives none (float32's largest is 3.4028e38)."""


def scalar(graph: GraphState, name: str, what: str) -> float:
    """A constant of one element, as a float."""
    array = graph.constant(name, what)
    if array.size != 1:
        raise graph.error(f"{what} must be one number, got shape {list(array.shape)}")
    return float(array.reshape(()))


@importer("Clip")
def clip(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.clip` (ReLU6 is Clip 0 6); a bound left out is float32's largest."""
    x = graph.tensor(node.input[0])
    low = scalar(graph, node.input[1], "the minimum") if len(node.input) > 1 and \
        node.input[1] else -FLOAT_LIMIT
    high = scalar(graph, node.input[2], "the maximum") if len(node.input) > 2 and \
        node.input[2] else FLOAT_LIMIT
    y = graph.build(dnn.ClipOp, [x.value], node.output[0], None,
                    {"min": FloatAttr(low, f64), "max": FloatAttr(high, f64)})
    return [Value(x.axes, y)]


@importer("Pow")
def power(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.pow` by a constant exponent."""
    x = graph.tensor(node.input[0])
    exponent = scalar(graph, node.input[1], "the exponent")
    y = graph.build(dnn.PowOp, [x.value], node.output[0], None,
                    {"exponent": FloatAttr(exponent, f64)})
    return [Value(x.axes, y)]


@importer("Sqrt", "Neg")
def sqrt_or_neg(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    op_class = dnn.SqrtOp if node.op_type == "Sqrt" else dnn.NegOp
    return [Value(x.axes, graph.build(op_class, [x.value], node.output[0]))]


def slice_axis(graph: GraphState, x: Value, position: int, start: int, size: int,
               name: str) -> Value:
    """`x`'s entries start .. start + size - 1 along the axis at `position`: `x` itself
    when that is all of it, else a `dnn.slice` whose result has a new dim there."""
    axis = graph.real_axis(x, position)
    if start == 0 and size == graph.dims.size(axis):
        return x
    old = graph.dims.find(axis)
    hint = graph.dims.hints[old]
    new = graph.dims.new(size, hint)
    layout = [new if d == old else d for d in graph.layout(x)]
    y = graph.build(dnn.SliceOp, [x.value], name, layout,
                    {"dim": StringAttr(graph.dims.placeholder(old)), "start": IntAttr(start)})
    axes = list(x.axes)
    axes[position] = new
    return Value(tuple(axes), y)


def drop_axis(graph: GraphState, x: Value, position: int, name: str) -> Value:
    """`x` without its size-1 axis at `position` (a `dnn.reshape`)."""
    axis = graph.real_axis(x, position)
    layout = [d for d in graph.layout(x) if d != graph.dims.find(axis)]
    y = graph.build(dnn.ReshapeOp, [x.value], name, layout)
    return Value(tuple(a for p, a in enumerate(x.axes) if p != position), y)


def every_other(graph: GraphState, x: Value, position: int, begin: int, step: int,
                count: int, name: str) -> Value:
    """`count` entries every `step` from `begin` along the axis at `position` (Swin's
    PatchMerging, `x[..., 0::2, 0::2, :]`): the axis split into [n / step, step] (a
    `dnn.reshape`), the one entry `begin % step` of the second sliced out and dropped,
    then the `count` from `begin // step` of the first. The axis's size must be a
    multiple of the step."""
    sizes = [graph.dims.size(a) if a is not None else 1 for a in x.axes]
    size = sizes[position]
    if size % step:
        raise graph.error(f"a slice with step {step} of an axis of size {size} is "
                          "supported when the size is a multiple of the step")
    from pase.frontend.onnx.operators.shape import reshape_to

    split = reshape_to(graph, x, [*sizes[:position], size // step, step,
                                  *sizes[position + 1:]], f"{name}_rows")
    picked = slice_axis(graph, split, position + 1, begin % step, 1, f"{name}_pick")
    picked = drop_axis(graph, picked, position + 1, f"{name}_picked")
    return slice_axis(graph, picked, position, begin // step, count, name)


@importer("Slice")
def slice_(graph: GraphState, node: Any) -> list[Value]:
    """Slices along axes of their own, each a `dnn.slice`; a positive step other than 1
    is a reshape and slices (`every_other`)."""
    x = graph.tensor(node.input[0])
    starts = graph.constant(node.input[1], "the starts")
    ends = graph.constant(node.input[2], "the ends")
    axes = graph.constant(node.input[3], "the axes") if len(node.input) > 3 and \
        node.input[3] else np.arange(len(starts))
    steps = graph.constant(node.input[4], "the steps") if len(node.input) > 4 and \
        node.input[4] else np.ones(len(starts), dtype=np.int64)
    if np.any(steps < 1):
        raise graph.error(f"steps={steps.tolist()} are not supported (only positive)")
    for i, (start, end, axis, step) in enumerate(zip(starts, ends, axes, steps, strict=True)):
        position = graph.axis(int(axis), len(x.axes))
        axis_dim = x.axes[position]
        size = graph.dims.size(axis_dim) if axis_dim is not None else 1
        begin, stop = (int(np.clip(v + size if v < 0 else v, 0, size)) for v in (start, end))
        if stop <= begin:
            raise graph.error(f"the slice {int(start)}:{int(end)} of axis {position} is empty")
        if x.axes[position] is None:
            continue  # a size-1 axis sliced whole
        name = node.output[0] if i == len(starts) - 1 else f"{node.output[0]}_{i}"
        count = -(-(stop - begin) // int(step))
        x = slice_axis(graph, x, position, begin, count, name) if step == 1 or count == 1 \
            else every_other(graph, x, position, begin, int(step), count, name)
    return [x]


@importer("Split", attributes=("axis", "num_outputs"), outputs=64)
def split(graph: GraphState, node: Any) -> list[Value]:
    """One `dnn.slice` per output."""
    x = graph.tensor(node.input[0])
    position = graph.axis(graph.attribute(node, "axis", 0), len(x.axes))
    total = graph.dims.size(graph.real_axis(x, position))
    if len(node.input) > 1 and node.input[1]:
        sizes = [int(s) for s in graph.constant(node.input[1], "the split sizes")]
    else:
        count = graph.attribute(node, "num_outputs", len(node.output))
        part = -(-total // count)
        sizes = [min(part, total - i * part) for i in range(count)]
    if sum(sizes) != total or any(s < 1 for s in sizes):
        raise graph.error(f"split sizes {sizes} do not add up to the axis's {total}")
    results, start = [], 0
    for size, name in zip(sizes, node.output, strict=True):
        results.append(slice_axis(graph, x, position, start, size, name))
        start += size
    return results


def square_of(mask: np.ndarray) -> np.ndarray | None:
    """The [q, k] matrix of a mask over its last two axes (of one size) that is the same
    for every index of its leading axes (batch, heads: broadcast or exported expanded)."""
    if mask.ndim < 2 or mask.shape[-1] != mask.shape[-2]:
        return None
    rows = mask.reshape(-1, *mask.shape[-2:])
    return rows[0] if bool((rows == rows[:1]).all()) else None


def is_causal(mask: np.ndarray) -> bool:
    """Whether a boolean [..., q, k] mask keeps exactly k <= q, the same for every index
    of its leading axes."""
    square = square_of(mask)
    return square is not None and bool(
        np.array_equal(square, np.tril(np.ones_like(square, dtype=bool))))


ADDITIVE_MASK_LIMIT = -1e4
"""The entries of an additive attention mask that hide a score: at most -10,000 (Hugging
Face writes the float type's lowest, -3.4e38; older code -10,000; SDPA -inf)."""


def additive_mask(graph: GraphState, node: Any) -> list[Value] | None:
    """`Add(scores, m)` with a constant m as exporters fold an attention mask (the dynamo
    exporter writes SDPA's boolean mask as `Where(mask, 0, lowest)` and folds it into a
    [b, 1, q, k] float constant; the older exporter writes `is_causal=True` as a [q, k]
    constant of 0 and -inf): when every entry of m is 0 or one value at most
    `ADDITIVE_MASK_LIMIT` and its last two axes are square, the same for every batch and
    head, m is not a parameter but a mask: causal, `dnn.mask causal` over the scores' last
    two axes; all 0 (nothing hidden), the scores themselves. None: not such a mask."""
    names = [name for name in node.input if graph.constant_of(name) is not None]
    if len(names) != 1 or len(node.input) != 2:
        return None
    mask = graph.constant(names[0], "the mask")
    scores_name = node.input[1] if node.input[0] == names[0] else node.input[0]
    if is_window_mask(mask):
        fixed = constant_input(graph, names[0], mask)
        return [graph.elementwise(dnn.AddOp, graph.tensor(scores_name), fixed, node.output[0])]
    if not np.issubdtype(mask.dtype, np.floating) or mask.ndim < 2 or \
            square_of(mask) is None or mask.shape[-1] < 2:
        return None
    hidden = mask != 0
    if mask.ndim == 2 and not hidden.any():
        return None  # a [q, k] of zeros may be a parameter's start, not a mask
    fills = np.unique(mask[hidden])
    if fills.size > 1 or (fills.size and fills[0] > ADDITIVE_MASK_LIMIT):
        return None
    scores = graph.tensor(scores_name)
    if len(scores.axes) < 2 or not hidden.any():
        return [scores] if not hidden.any() else None
    if not is_causal(~hidden):
        raise graph.error("an additive attention mask (0 or "
                          f"{float(fills[0]):.3g}) is supported when it is causal "
                          "(lower-triangular over the last two axes) or hides nothing")
    return [causal_mask(graph, scores, float(fills[0]), node.output[0])]


def is_window_mask(mask: np.ndarray) -> bool:
    """Whether a float constant is an additive mask that differs between the indices of
    its leading axes (Swin's shifted windows: 0 within a window's own region, -100
    across): square last two axes, every entry 0 or one negative value, both there."""
    if not np.issubdtype(mask.dtype, np.floating) or mask.ndim < 3 or \
            mask.shape[-1] != mask.shape[-2] or mask.shape[-1] < 2:
        return False
    values = np.unique(mask)
    return values.size == 2 and values[1] == 0 and values[0] < 0 and square_of(mask) is None


def constant_input(graph: GraphState, name: str, array: np.ndarray,
                   hints: tuple[str, ...] = ()) -> Value:
    """A constant the model adds but does not train, as a `dnn.input` of its own whose
    value is the importer's (like a param's: `Imported.initial_values`, which pase-run
    feeds it); its axes of size 1 are dropped, the others' dims named by `hints` (else
    `d`). One input per constant."""
    value = graph.values[name]
    if value.ssa is not None:
        return value
    axes = tuple(None if size == 1 else graph.dims.new(size, hints[i] if i < len(hints) else "d")
                 for i, size in enumerate(array.shape))
    real = [a for a in axes if a is not None]
    fixed = dnn.InputOp(graph.tensor_type(real, "f32" if array.dtype == np.float32 else "f64"))
    fixed.output.name_hint = graph.value_name(name)
    graph.dims.record(real)
    graph.inputs.append(fixed)
    graph.initial[fixed.output] = array.reshape([graph.dims.size(a) for a in real])
    value.axes, value.ssa = axes, fixed.output
    return value


def causal_mask(graph: GraphState, x: Value, fill: float, name: str) -> Value:
    """`dnn.mask causal` over x's last two axes, `fill` where the key is after the query."""
    q, k = graph.real_axis(x, len(x.axes) - 2), graph.real_axis(x, len(x.axes) - 1)
    y = graph.build(dnn.MaskOp, [x.value], name, None,
                    {"kind": StringAttr("causal"), "over": graph.dim_array([q, k]),
                     "fill": FloatAttr(max(fill, -FLOAT_LIMIT), f64)})
    return Value(x.axes, y)


@importer("Where")
def where(graph: GraphState, node: Any) -> list[Value]:
    """A constant causal mask: `Where(tril, scores, fill)` or `Where(not tril, fill,
    scores)` becomes `dnn.mask causal` over the scores' last two axes."""
    condition = graph.constant(node.input[0], "the condition").astype(bool)
    if condition.all() or not condition.any():
        return [graph.tensor(node.input[1 if condition.all() else 2])]
    if is_causal(condition):
        scores, fill = node.input[1], node.input[2]
    elif is_causal(~condition):
        scores, fill = node.input[2], node.input[1]
    else:
        raise graph.error("Where is supported with a constant causal mask (lower-triangular "
                          "over the last two axes) only")
    x = graph.tensor(scores)
    return [causal_mask(graph, x, scalar(graph, fill, "the masked value"), node.output[0])]


@importer("Cast", attributes=("to", "saturate", "round_mode"))
def cast(graph: GraphState, node: Any) -> list[Value]:
    """A Cast to the element type the tensor has (T5 casts its float norm to float): the
    tensor itself. Casts of constants are folded before import; any other is an error."""
    x = graph.tensor(node.input[0])
    target = graph.onnx.helper.tensor_dtype_to_np_dtype(graph.attribute(node, "to"))
    element = dnn.shape_of(x.value).element
    if {"f32": np.float32, "f64": np.float64}.get(element) != target:
        raise graph.error(f"a Cast of a {element} tensor to {target} is not supported (pase "
                          "keeps one element type per tensor)")
    return [x]


@importer("RMSNormalization", attributes=("axis", "epsilon", "stash_type"))
def rms_norm(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.rmsnorm` over the axes from `axis` on, with the node's epsilon (patterns.py
    makes this node of the decomposed norms both exporters write)."""
    x = graph.tensor(node.input[0])
    position = graph.axis(graph.attribute(node, "axis", -1), len(x.axes))
    over = [graph.real_axis(x, p) for p in range(position, len(x.axes))]
    operands = [x.value]
    if len(node.input) > 1 and node.input[1]:
        scale = graph.tensor(node.input[1])
        graph.broadcast(x.axes[position:], scale.axes)
        operands.append(scale.value)
    y = graph.build(dnn.RmsNormOp, operands, node.output[0], None,
                    {"over": graph.dim_array(over)} | norm_epsilon(graph, node))
    return [Value(x.axes, y)]
