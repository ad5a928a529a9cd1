"""`pase-scale`: shrink a model so it runs here in seconds (`pase-run --scale F`).

Every dimension is scaled by F: exactly where the result is whole (batch 128 at F = 1/8
is 16), else rounded up to keep the power-of-two factors (up to 8) the size had.
What shape rules tie together is recomputed instead of scaled: a conv or pool's output
height and width, a concatenation's size, a merged reshape dim, an LSTM's 2e and 4e,
a grouped conv's group count (the largest dividing its old count and its scaled
channels) and filter channels, a slice's start (as far in as it was).
Filter heights and widths keep their sizes; the input images shrink only as far as every
conv and pool stays valid, and a global pool's window follows its input. A layer's
`pase.config` stays, each factor shrunk to the largest divisor of the scaled dim that
divides it (for a pipeline, the scaled micro-batch size's divisor).

    pase-opt models/alexnet.dnn -p 'pase-scale{factor=0.125}'
    small = scale_module(parse_file("models/alexnet.dnn"), 0.125)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil, gcd, isfinite, prod

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.shapes import conv_output_size, reshape_groups
from pase.dialect import dnn
from pase.dialect.pase import CONFIG_ATTR_NAME, ConfigAttr, pipeline_of
from pase.passes.microbatch import batch_dim
from pase.passes.options import PasePass


@dataclass(frozen=True)
class ScalePass(PasePass):
    """Scale every dimension of every graph by `factor` (0 < factor <= 1)."""

    name = "pase-scale"

    factor: float = 1.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not (isfinite(self.factor) and 0 < self.factor <= 1):
            raise Diagnostic(f"pase-scale: factor must be in (0, 1], got {self.factor}")
        if self.factor == 1:
            return
        for graph in [g for g in op.ops if isinstance(g, dnn.GraphOp)]:
            try:
                scaled = _scale_graph(graph, self.factor)
            except ScaleError as error:
                raise at_op(graph, f"pase-scale cannot scale @{graph.sym_name.data} by "
                            f"{self.factor}: {error}") from None
            Rewriter.replace_op(graph, scaled)


class ScaleError(ValueError):
    """The model cannot be scaled consistently by that factor."""


def scaled_size(size: int, factor: float) -> int:
    """`size · factor` when that is a whole number (so sums and products of scaled dims
    still agree), else rounded up to keep the power-of-two factors (up to 8) of `size`."""
    exact = size * factor
    if exact >= 1 and abs(exact - round(exact)) < 1e-9:
        return round(exact)
    keep = gcd(size, 8)
    return max(keep, ceil(exact / keep) * keep)


def _spatial(graph: dnn.GraphOp) -> tuple[set[str], set[str]]:
    """(image dims that conv and pool outputs derive from, filter height/width dims)."""
    derived: set[str] = set()
    spatial: set[str] = set()
    kernels: set[str] = set()
    for op in graph.layers:
        if isinstance(op, dnn.Conv2dOp | dnn.Pool2dOp):
            spatial |= set(op.input_shapes[0].dims[2:])
            derived |= set(op.result_shape.dims[2:])
            if isinstance(op, dnn.Conv2dOp):
                kernels |= set(op.input_shapes[1].dims[2:])
    return spatial - derived, kernels


def _propagate(graph: dnn.GraphOp, factor: float, image: dict[str, int],
               kernels: set[str]) -> tuple[dict[str, int], dict[dnn.LayerOp, tuple[int, int]],
                                           dict[dnn.LayerOp, dict[str, Attribute]]]:
    """New sizes of every dim, new windows of global pools and other properties that
    follow the sizes (a grouped conv's groups, a slice's start); raises ScaleError."""
    old = graph.dims
    new: dict[str, int] = {}
    windows: dict[dnn.LayerOp, tuple[int, int]] = {}
    overrides: dict[dnn.LayerOp, dict[str, Attribute]] = {}
    # A grouped conv's filter channels (ci / groups) follow its scaled input channels.
    group_widths = {op.input_shapes[1].dims[1] for op in graph.layers
                    if isinstance(op, dnn.Conv2dOp) and op.count_prop("groups") > 1}

    def assign(dim: str, size: int) -> None:
        if new.setdefault(dim, size) != size:
            raise ScaleError(f"dimension '{dim}' would be both {new[dim]} and {size}")

    def free(dims: tuple[str, ...]) -> None:
        for dim in dims:
            if dim not in new:
                new[dim] = (old[dim] if dim in kernels else image[dim] if dim in image
                            else scaled_size(old[dim], factor))

    for op in graph.body.block.ops:
        if isinstance(op, dnn.InputOp | dnn.ParamOp):
            shape = op.output.type.shape
            if isinstance(op, dnn.ParamOp) and any(
                    isinstance(use.operation, dnn.LstmOp) and use.index == 1
                    for use in op.output.uses):
                continue  # the LSTM weight follows its input's width
            free(tuple(d for d in shape.dims if d not in group_widths))
        elif isinstance(op, dnn.Conv2dOp | dnn.Pool2dOp):
            x, y = op.input_shapes[0], op.result_shape
            if isinstance(op, dnn.Conv2dOp):
                w = op.input_shapes[1]
                if (count := op.count_prop("groups")) > 1:
                    free(tuple(d for d in w.dims if d not in group_widths))
                    overrides[op] = {"groups": IntAttr(_regroup(op, count, new, assign))}
                free(w.dims)
                window = (new[w.dims[2]], new[w.dims[3]])
            else:
                window = tuple(op.ints_prop("window"))  # type: ignore[assignment]
                if window == tuple(x.sizes[2:]) and y.sizes[2:] == (1, 1):
                    window = (new[x.dims[2]], new[x.dims[3]])
                    windows[op] = window
            padding = op.ints_prop("padding")
            assign(y.dims[0], new[x.dims[0]])
            assign(y.dims[1], new[op.input_shapes[-1].dims[0]] if isinstance(op, dnn.Conv2dOp)
                   else new[x.dims[1]])
            for axis in (0, 1):
                size = conv_output_size(new[x.dims[2 + axis]], window[axis],
                                        op.stride.data, padding[axis])
                if size < 1:
                    raise ScaleError(f"{_name(op)}: the input is too small")
                assign(y.dims[2 + axis], size)
        elif isinstance(op, dnn.ConcatOp):
            y = op.result_shape
            axis = [i for i in range(y.rank) if op.input_shapes[0].dims[i] != y.dims[i]][0]
            for index, dim in enumerate(y.dims):
                assign(dim, sum(new[s.dims[axis]] for s in op.input_shapes) if index == axis
                       else new[dim])
        elif isinstance(op, dnn.ReshapeOp):
            x, y = op.input_shapes[0], op.result_shape
            for inputs, outputs in reshape_groups(x, y):
                total = prod(new[x.dims[i]] for i in inputs)
                if len(outputs) == 1:
                    assign(y.dims[outputs[0]], total)
                else:
                    free(tuple(y.dims[j] for j in outputs[:-1]))
                    rest = prod(new[y.dims[j]] for j in outputs[:-1])
                    if total % rest:
                        raise ScaleError(f"{_name(op)}: cannot split {total} evenly")
                    assign(y.dims[outputs[-1]], total // rest)
        elif isinstance(op, dnn.SliceOp):
            overrides[op] = {"start": IntAttr(_reslice(op, new, free, assign))}
        elif isinstance(op, dnn.LstmOp):
            x, w = op.input_shapes
            assign(w.dims[0], old[w.dims[0]])
            assign(w.dims[1], 2 * new[x.dims[2]])
            assign(w.dims[2], 4 * new[x.dims[2]])
        elif isinstance(op, dnn.LayerOp):
            free(op.result_shape.dims)
    for dim, size in old.items():
        new.setdefault(dim, scaled_size(size, factor))
    return new, windows, overrides


def _regroup(op: dnn.Conv2dOp, count: int, new: dict[str, int],
             assign: Callable[[str, int], None]) -> int:
    """The scaled group count of a grouped conv, the largest that still divides its
    old count and its scaled input and output channels (a depthwise conv's follows its
    channels); assigns the filter's channels per group."""
    x, w = op.input_shapes
    channels = new[x.dims[1]]
    count = gcd(count, channels, new[w.dims[0]])
    if count == 1:
        raise ScaleError(f"{_name(op)}: its scaled channels form no groups")
    assign(w.dims[1], channels // count)
    return count


def _reslice(op: dnn.SliceOp, new: dict[str, int], free: Callable[[tuple[str, ...]], None],
             assign: Callable[[str, int], None]) -> int:
    """The scaled start of a slice, after assigning its result's dims: the slice keeps
    its size's scaling and starts as far in as it did, within the scaled dim."""
    x, y = op.input_shapes[0], op.result_shape
    axis = x.dims.index(op.dim.data)
    for k, dim in enumerate(y.dims):
        if k != axis:
            assign(dim, new[x.dims[k]])
    free((y.dims[axis],))
    whole, part = new[x.dims[axis]], new[y.dims[axis]]
    if part > whole:
        raise ScaleError(f"{_name(op)}: a slice of {part} does not fit in {whole}")
    return min(round(op.start.data * whole / x.sizes[axis]), whole - part)


def scale_module(module: ModuleOp, factor: float) -> ModuleOp:
    """A copy of `module` with every graph scaled by `factor` (0 < factor <= 1)."""
    if not 0 < factor <= 1:
        raise ScaleError(f"--scale must be in (0, 1], got {factor}")
    if factor == 1:
        return module.clone()
    return ModuleOp([_scale_graph(g, factor) for g in module.ops
                     if isinstance(g, dnn.GraphOp)])


def _scale_graph(graph: dnn.GraphOp, factor: float) -> dnn.GraphOp:
    images, kernels = _spatial(graph)
    old = graph.dims
    image = {d: scaled_size(old[d], factor) for d in images}
    while True:
        try:
            sizes, windows, overrides = _propagate(graph, factor, image, kernels)
            break
        except ScaleError:
            if not image or all(image[d] >= old[d] for d in image):
                raise
            image = {d: min(old[d], image[d] + 1) for d in image}
    pipeline = pipeline_of(graph)
    micro = pipeline.microbatches.data if pipeline is not None else 1
    batch = batch_dim(graph)
    if micro > 1 and batch is not None and sizes[batch] % micro:
        raise ScaleError(f"the batch {batch} = {sizes[batch]} it would have does not split "
                         f"into the pipeline's {micro} micro-batches; use a larger factor")
    mapping: dict[SSAValue, SSAValue] = {}
    block = Block()
    for op in graph.body.block.ops:
        results = [_retype(r.type, sizes) for r in op.results]
        properties: dict[str, Attribute] = dict(op.properties)
        if op in windows:
            properties["window"] = ArrayAttr(IntAttr(s) for s in windows[op])  # type: ignore[index]
        properties |= overrides.get(op, {})  # type: ignore[call-overload]
        new_op: Operation = type(op).create(
            operands=[mapping[v] for v in op.operands], result_types=results,
            properties=properties, attributes=dict(op.attributes))
        new_op.location = op.location  # errors in later passes point at the source
        for old_result, new_result in zip(op.results, new_op.results, strict=True):
            new_result.name_hint = old_result.name_hint
            mapping[old_result] = new_result
        block.add_op(new_op)
        if isinstance(new_op, dnn.LayerOp) and new_op.config is not None:
            # Keep the strategy: each factor shrinks to the largest divisor of the
            # scaled dim (a pipeline's: of one micro-batch) that divides it.
            space = {dim.name: dim.size // (micro if dim.name == batch else 1)
                     for dim in new_op.iteration_space().dims}
            new_op.attributes[CONFIG_ATTR_NAME] = ConfigAttr(
                {d: gcd(f, space[d]) for d, f in new_op.config.splits.items()})
    scaled = dnn.GraphOp.create(
        properties={**graph.properties, "dim_sizes": ArrayAttr(
            IntAttr(sizes[d]) for d in old)},
        attributes=dict(graph.attributes), regions=[Region(block)])
    scaled.location = graph.location
    scaled.verify()
    return scaled


def _retype(attr: Attribute, sizes: dict[str, int]) -> Attribute:
    if not isinstance(attr, dnn.TensorType):
        return attr
    shape = attr.shape
    return dnn.TensorType(shape.dims, [sizes[d] for d in shape.dims], attr.element_type)


def _name(op: dnn.LayerOp) -> str:
    graph = op.parent_op()
    assert isinstance(graph, dnn.GraphOp)
    return graph.layer_names()[op]
