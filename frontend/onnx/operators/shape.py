"""Layout ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Expand; and Gather
(an embedding lookup)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pase.core.shapes import NamedShape, ShapeError, reshape_groups
from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


@importer("Transpose", attributes=("perm",))
def transpose(graph: GraphState, node: Any) -> list[Value]:
    """Only a relabelling: named tensors have no axis order."""
    x = graph.tensor(node.input[0])
    perm = graph.attribute(node, "perm") or list(range(len(x.axes)))[::-1]
    return [Value(tuple(x.axes[p] for p in perm), x.ssa)]


@importer("Squeeze")
def squeeze(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    if len(node.input) > 1 and node.input[1]:
        positions = {graph.axis(int(a), len(x.axes))
                     for a in graph.constant(node.input[1], "the axes")}
    else:
        positions = {p for p, a in enumerate(x.axes) if a is None}
    if any(x.axes[p] is not None for p in positions):
        raise graph.error("it squeezes an axis of size 1 that is a dimension of its own "
                          "in pase; reshape it instead")
    return [Value(tuple(a for p, a in enumerate(x.axes) if p not in positions), x.ssa)]


@importer("Unsqueeze")
def unsqueeze(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    inserted = graph.constant(node.input[1], "the axes")
    rank = len(x.axes) + len(inserted)
    positions = {graph.axis(int(a), rank) for a in inserted}
    rest = iter(x.axes)
    return [Value(tuple(None if p in positions else next(rest) for p in range(rank)), x.ssa)]


def sizes_of(graph: GraphState, x: Value) -> list[int]:
    return [graph.dims.size(a) if a is not None else 1 for a in x.axes]


@importer("Reshape", attributes=("allowzero",))
def reshape(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    target = [int(s) for s in graph.constant(node.input[1], "the target shape")]
    sizes = sizes_of(graph, x)
    if not graph.attribute(node, "allowzero", 0):
        target = [sizes[i] if s == 0 else s for i, s in enumerate(target)]
    if target.count(-1) == 1:
        known = math.prod(s for s in target if s != -1)
        target[target.index(-1)] = math.prod(sizes) // max(known, 1)
    if math.prod(target) != math.prod(sizes) or any(s < 1 for s in target):
        raise graph.error(f"cannot reshape {sizes} into {target}")
    return [reshape_to(graph, x, target, node.output[0])]


def refinement(sizes: Sequence[int], target: Sequence[int]) -> list[int] | None:
    """The sizes both `sizes` and `target` are merges of (their row-major boundaries
    together), or None if there are none: a reshape that splits and merges at once is a
    split into these, then a merge.

    >>> refinement([5, 8, 32], [5, 16, 16])     # nn.MultiheadAttention's view
    [5, 8, 2, 16]
    >>> refinement([6, 4], [4, 6]) is None
    True
    """
    bounds = sorted({*np.cumprod(sizes).tolist(), *np.cumprod(target).tolist()})
    parts = [bounds[0], *(b // a for a, b in zip(bounds, bounds[1:], strict=False))]
    if any(b % a for a, b in zip(bounds, bounds[1:], strict=False)):
        return None
    return [int(p) for p in parts]


@importer("Flatten", attributes=("axis",))
def flatten(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    position = graph.axis(graph.attribute(node, "axis", 1), len(x.axes) + 1)
    sizes = sizes_of(graph, x)
    target = [math.prod(sizes[:position]), math.prod(sizes[position:])]
    return [reshape_to(graph, x, target, node.output[0])]


def reshape_to(graph: GraphState, x: Value, target: Sequence[int], name: str) -> Value:
    """`x` as `target`: only a relabelling when the sizes other than 1 stay as they are
    (no layer), else a dnn.reshape merging or splitting consecutive axes."""
    real = [a for a in x.axes if a is not None]
    sizes = [graph.dims.size(a) for a in real]
    kept = kept_positions(sizes, target)
    if sizes == [target[j] for j in kept]:
        axes: list[int | None] = [None] * len(target)
        for axis, j in zip(real, kept, strict=True):
            axes[j] = axis
        return Value(tuple(axes), x.ssa)
    finer = refinement(sizes, [target[j] for j in kept])
    if finer is not None and without_ones(finer) != without_ones(sizes) \
            and finer != [target[j] for j in kept]:
        x = reshape_to(graph, x, finer, f"{name}_split")
        return reshape_to(graph, x, target, name)
    return split_or_merge(graph, x, real, target, kept, name)


def without_ones(sizes: Sequence[int]) -> list[int]:
    """The sizes other than 1: a refinement that only drops an axis of size 1 splits
    nothing (GPT-J's `[1, s, 1, r/2, 2]` to `[1, s, 1, r]`, which it reached forever).

    >>> without_ones([1, 16, 1, 4, 2])
    [16, 4, 2]
    """
    return [s for s in sizes if s != 1]


def kept_positions(sizes: Sequence[int], target: Sequence[int]) -> list[int]:
    """The positions of `target` the input's real axes (of `sizes`, in order) go to: each
    size other than 1, and for each real axis of size 1 (a batch of 1) one of the target's
    1s, the one after as much of the row-major prefix as in the input (else the first free
    one). With too few 1s in the target, only the sizes other than 1: the axes of size 1
    then merge into their neighbours (a dnn.reshape).

    >>> kept_positions([1, 32], [1, 32])         # a batch of 1, flattened
    [0, 1]
    >>> kept_positions([1, 16, 32], [1, 16, 2, 16])
    [0, 1, 2, 3]
    >>> kept_positions([64, 16], [1, 64, 1, 16])
    [1, 3]
    >>> kept_positions([1, 16, 32], [16, 32])    # merged with the sequence: a reshape
    [0, 1]
    """
    kept = [j for j, s in enumerate(target) if s != 1]
    if 1 not in sizes:
        return kept
    ones = [j for j, s in enumerate(target) if s == 1]
    prefixes = np.cumprod([1, *target]).tolist()
    chosen: list[int] = []
    for i, size in enumerate(sizes):
        if size != 1:
            continue
        free = [j for j in ones if j not in chosen]
        if not free:
            return kept
        prefix = math.prod(sizes[:i])
        chosen.append(next((j for j in free if prefixes[j] == prefix), free[0]))
    return sorted(kept + chosen)


def split_or_merge(graph: GraphState, x: Value, real: list[int], target: Sequence[int],
                   kept: list[int], name: str) -> Value:
    """A dnn.reshape of `x`'s axes `real` (sizes other than 1) into `target`'s `kept`."""
    sizes = [graph.dims.size(a) for a in real]
    source = NamedShape(tuple(f"i{i}" for i in range(len(real))), tuple(sizes))
    result = NamedShape(tuple(f"o{j}" for j in kept), tuple(target[j] for j in kept))
    try:
        groups = reshape_groups(source, result)
    except ShapeError as error:
        raise graph.error(str(error).replace(str(source), "its input").replace(
            str(result), "the target")) from None
    dims: list[int] = []
    for in_range, out_range in groups:
        if len(in_range) == 1 and len(out_range) == 1:
            dims.append(real[in_range[0]])
            continue
        hint = graph.dims.hints[graph.dims.find(real[in_range[0]])] \
            if len(in_range) == 1 else "d"
        dims.extend(graph.dims.new(result.sizes[j], hint) for j in out_range)
    ssa = graph.build(dnn.ReshapeOp, [graph.ordered(Value(tuple(real), x.ssa), name)], name,
                      [graph.dims.find(d) for d in dims])
    new_axes: list[int | None] = [None] * len(target)
    for dim, j in zip(dims, kept, strict=True):
        new_axes[j] = dim
    return Value(tuple(new_axes), ssa)


@importer("Expand")
def expand(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.broadcast` (ViT's class token `[1, 1, d]` expanded to `[b, 1, d]`)."""
    x = graph.tensor(node.input[0])
    shape = [int(s) for s in graph.constant(node.input[1], "the shape")]
    return [expand_to(graph, x, shape, node.output[0])]


def expand_to(graph: GraphState, x: Value, shape: list[int], name: str) -> Value:
    """`x` broadcast to `shape` (ONNX's rules, right-aligned): each axis x lacks (or has
    of size 1) and `shape` makes longer becomes a dim of the `dnn.broadcast`'s result, and
    so does every other size-1 axis x lacks (a concatenation along it needs it); `x`
    itself if nothing grows."""
    rank = max(len(shape), len(x.axes))
    have = [None] * (rank - len(x.axes)) + list(x.axes)
    target = [1] * (rank - len(shape)) + shape
    for axis, size in zip(have, target, strict=True):
        if axis is not None and size not in (1, graph.dims.size(axis)):
            raise graph.error(f"it expands an axis of size {graph.dims.size(axis)} to {size}")
    if all(size == 1 for axis, size in zip(have, target, strict=True) if axis is None):
        return Value(tuple(have), x.ssa)
    axes = [axis if axis is not None else graph.dims.new(size, "b" if p == 0 else "d")
            for p, (axis, size) in enumerate(zip(have, target, strict=True))]
    real = Value(tuple(a for a in x.axes if a is not None), x.ssa)
    y = graph.build(dnn.BroadcastOp, [graph.ordered(real, name)], name,
                    [graph.dims.find(a) for a in axes])
    return Value(tuple(axes), y)


def expanded_constant(graph: GraphState, name: str) -> Value | None:
    """A float constant whose entries are equal along its first axis (of size > 1) as the
    broadcast of its first entry: the dynamo exporter folds `Expand(class_token)` into
    such a `[b, 1, d]` constant, which is one trainable token, not b of them."""
    value = graph.values.get(name)
    array = None if value is None else value.constant
    if array is None or array.ndim < 2 or array.shape[0] < 2 or \
            not np.issubdtype(array.dtype, np.floating) or not np.all(array == array[:1]):
        return None
    row = f"{name}_row"
    graph.values[row] = Value((), constant=array[:1])
    return expand_to(graph, graph.tensor(row), list(array.shape), name)


@importer("Concat", attributes=("axis",))
def concat(graph: GraphState, node: Any) -> list[Value]:
    values = [expanded_constant(graph, name) or graph.tensor(name) for name in node.input]
    rank = len(values[0].axes)
    if len(values) < 2 or any(len(v.axes) != rank for v in values):
        raise graph.error("Concat takes two or more tensors of one rank")
    position = graph.axis(graph.attribute(node, "axis", 0), rank)
    if all(v.axes[position] is None and v.ssa is not None for v in values):
        values = [unit_axis(graph, v, position, f"{node.output[0]}_unit{i}")
                  for i, v in enumerate(values)]
    for p in range(rank):
        if p == position:
            continue
        column = [v.axes[p] for v in values]
        if any(a is None for a in column):
            raise graph.error(f"axis {p} has size 1 in an operand, which pase does not "
                              "support in Concat")
        first = column[0]
        assert first is not None
        for axis in column[1:]:
            assert axis is not None
            if not graph.same(first, axis):
                raise graph.error("its operands' axes cannot be one dimension")
    return [join(graph, values, position, node.output[0])]


def unit_axis(graph: GraphState, x: Value, position: int, name: str) -> Value:
    """`x` with its size-1 axis at `position` a dim of its own (a `dnn.reshape`): the
    operands of `torch.stack` (Unsqueeze, then Concat along the new axis, as GPT-J's
    rotate_every_two), joined along it."""
    dim = graph.dims.new(1, "d")
    real = [a for a in x.axes if a is not None]
    before = sum(1 for a in x.axes[:position] if a is not None)
    ordered = graph.ordered(Value(tuple(real), x.ssa), name)
    layout = [graph.dims.find(a) for a in real]
    y = graph.build(dnn.ReshapeOp, [ordered], name, [*layout[:before], dim, *layout[before:]])
    return Value(tuple(dim if p == position else a for p, a in enumerate(x.axes)), y)


def join(graph: GraphState, values: Sequence[Value], position: int, name: str) -> Value:
    """`values` (their other axes one dim each) concatenated along the axis at
    `position`, a new dim (a `dnn.concat`)."""
    joined = [graph.real_axis(v, position) for v in values]
    dim = graph.dims.new(sum(graph.dims.size(a) for a in joined),
                         graph.dims.hints[graph.dims.find(joined[0])])
    axes = list(values[0].axes)
    axes[position] = dim
    operands = [graph.ordered(v, f"{name}_in{i}") for i, v in enumerate(values)]
    y = graph.build(dnn.ConcatOp, operands, name,
                    [graph.dims.find(a) for a in axes if a is not None])
    return Value(tuple(axes), y)


@importer("Gather", attributes=("axis",))
def gather(graph: GraphState, node: Any) -> list[Value]:
    """An embedding lookup (rows of an initializer table by computed ids), or a slice by
    constant indices: a run of consecutive ones (position ids) or one index repeated."""
    ids = graph.values.get(node.input[1])
    if ids is not None and ids.ssa is None:
        return [constant_gather(graph, node)]
    if graph.attribute(node, "axis", 0) != 0:
        raise graph.error(f"axis={graph.attribute(node, 'axis')} is not supported (an "
                          "embedding lookup gathers rows, axis 0)")
    data = graph.values.get(node.input[0])
    if data is not None and data.ssa is not None and not isinstance(
            data.ssa.owner, dnn.ParamOp):
        raise graph.error("Gather is supported on an embedding table (an initializer), "
                          f"not on the computed '{node.input[0]}'")
    table = graph.tensor(node.input[0], hints=("v", "d", "d"))
    ids = graph.tensor(node.input[1])
    if len(table.axes) < 2:
        raise graph.error("the embedding table must be [vocabulary, features...]")
    name = node.output[0]
    table_ssa = graph.ordered(table, f"{name}_table")
    y = graph.build(dnn.EmbeddingOp, [ids.value, table_ssa], name)
    return [Value((*ids.axes, *table.axes[1:]), y)]


def constant_gather(graph: GraphState, node: Any) -> Value:
    """Gather by constant indices as a `dnn.slice`: consecutive indices give a new dim
    (position ids: the first rows of a table); one index repeated (BERT's token types,
    ViT's class token) gives no axis (size 1, broadcast); every index once in order, as an
    array of several axes, is a reshape."""
    from pase.frontend.onnx.operators.more import drop_axis, slice_axis

    indices = graph.constant(node.input[1], "the indices").astype(np.int64)
    data = graph.tensor(node.input[0], hints=("v", "d", "d"))
    position = graph.axis(graph.attribute(node, "axis", 0), len(data.axes))
    size = graph.dims.size(graph.real_axis(data, position))
    flat = np.where(indices < 0, indices + size, indices).reshape(-1)
    name = node.output[0]
    if flat.size and np.all(flat == flat[0]):
        row = slice_axis(graph, data, position, int(flat[0]), 1, f"{name}_row")
        row = drop_axis(graph, row, position, name)
        return Value((*row.axes[:position], *(None,) * indices.ndim, *row.axes[position:]),
                     row.ssa)
    long_axes = [s for s in indices.shape if s != 1]
    if len(long_axes) > 1 and np.array_equal(flat, np.arange(size)):
        # every index once, in order: a reshape (the dynamo exporter's as_strided copy,
        # ConvNeXt's classifier)
        sizes = sizes_of(graph, data)
        target = [*sizes[:position], *indices.shape, *sizes[position + 1:]]
        return reshape_to(graph, data, target, name)
    if len(long_axes) != 1 or not np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        return constant_ids_lookup(graph, node, data, position,
                                   flat.reshape(indices.shape))
    part = slice_axis(graph, data, position, int(flat[0]), flat.size, name)
    new = part.axes[position]
    axes = tuple(new if s != 1 else None for s in indices.shape)
    return Value((*part.axes[:position], *axes, *part.axes[position + 1:]), part.ssa)


def constant_ids_lookup(graph: GraphState, node: Any, table: Value, position: int,
                        indices: np.ndarray) -> Value:
    """Rows of an initializer table by a constant index matrix of any pattern (T5's
    relative-position buckets, [q, k] into a [buckets, heads] table) as a `dnn.embedding`
    whose ids are a `dnn.input` of its own, its value the importer's (like a param's:
    `Imported.initial_values`, which pase-run feeds it). Its axes of size 1 are dropped."""
    if position != 0 or table.ssa is None or not isinstance(table.ssa.owner, dnn.ParamOp):
        raise graph.error("Gather with constant indices is supported for consecutive indices "
                          "(a slice), one index repeated, or rows (axis 0) of an initializer "
                          "table, not for these")
    if len(table.axes) < 2 or table.axes[0] is None:
        raise graph.error("the embedding table must be [vocabulary, features...]")
    name = node.output[0]
    ids_axes = tuple(None if size == 1 else graph.dims.new(size, "d")
                     for size in indices.shape)
    real = [a for a in ids_axes if a is not None]
    ids = dnn.InputOp(graph.tensor_type(real, "i64"))
    ids.output.name_hint = graph.value_name(f"{name}_ids")
    graph.dims.record(real)
    graph.inputs.append(ids)
    graph.initial[ids.output] = indices.reshape([graph.dims.size(a) for a in real])
    table_ssa = graph.ordered(table, f"{name}_table")
    y = graph.build(dnn.EmbeddingOp, [ids.output, table_ssa], name)
    return Value((*ids_axes, *table.axes[1:]), y)
