"""`pase-scale`: shrink a model so it runs here in seconds (`pase-run --scale F`).

Every dimension is scaled by F: exactly where the result is whole (batch 128 at F = 1/8
is 16), else rounded up to keep the power-of-two factors (up to 8) the size had.
What shape rules tie together is recomputed instead of scaled: a conv or pool's output
height and width, a concatenation's size, a merged reshape dim, an LSTM's 2e and 4e
(a GRU's 2e and 3e), a pad's padded size.
Filter heights and widths keep their sizes; the input images shrink only as far as every
conv and pool stays valid, and a global pool's window follows its input. A layer's
`pase.config` stays, each factor shrunk to the largest divisor of the scaled dim that
divides it (for a pipeline, the scaled micro-batch size's divisor).
Which dims a layer's shape rule ties is data on its op class (`SCALE_TIE`, `SCALE_KEEP`,
`SCALE_MULTIPLES` in dialect/dnn/layer_op.py), not a list of op classes here.

    pase-opt models/alexnet.dnn -p 'pase-scale{factor=0.125}'
    small = scale_module(parse_file("models/alexnet.dnn"), 0.125)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, gcd, isfinite, lcm, prod

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.shapes import conv_output_size, reshape_groups
from pase.dialect import dnn
from pase.dialect.dnn.microbatch import batch_dim
from pase.dialect.pase import CONFIG_ATTR_NAME, ConfigAttr, pipeline_of
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
    """(image dims that windowed layers' outputs derive from, dims that keep their size)."""
    derived: set[str] = set()
    spatial: set[str] = set()
    kept: set[str] = set()
    for op in graph.layers:
        if op.SCALE_TIE == "window":
            spatial |= set(op.input_shapes[0].dims[2:])
            derived |= set(op.result_shape.dims[2:])
        kept |= {op.input_shapes[operand].dims[axis] for operand, axis in op.SCALE_KEEP}
    return spatial - derived, kept


def _sized_by_a_layer(value: SSAValue) -> bool:
    """Whether a layer sizes this value's dims from its other operands' (an LSTM's weight)."""
    return any(isinstance(use.operation, dnn.LayerOp) and any(
        target == use.index for (target, _), _, _ in use.operation.SCALE_MULTIPLES)
        for use in value.uses)


class _Propagation:
    """New sizes of every dim of a graph, in program order: each layer's `SCALE_*` data
    (dialect/dnn/layer_op.py) says which dims its shape rule ties, and those are recomputed;
    every other dim is scaled where it first appears. Raises ScaleError."""

    def __init__(self, graph: dnn.GraphOp, factor: float, image: dict[str, int],
                 kept: set[str], consistent: bool = False):
        self.old = graph.dims
        self.factor, self.image, self.kept = factor, image, kept
        self.consistent = consistent
        """The second try, for a model the sizes above make inconsistent (Swin): a dim
        scales only where the result is whole, a split that undoes a merge gives back
        the merged parts' new sizes (a dim that kept its size, its parts'), a slice's
        ends move in proportion to its input's scaling, and an input's or param's dims
        are sized at its first use, after the layers before it (Swin's constant mask
        takes its windows' sizes)."""
        self.new: dict[str, int] = {}
        self.windows: dict[dnn.LayerOp, tuple[int, int]] = {}
        """New windows of global pools (a window that covers its whole input)."""
        self.overrides: dict[dnn.LayerOp, dict[str, Attribute]] = {}
        """Other properties that follow the sizes: a grouped conv's groups, a slice's start."""
        self.merged: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        """Each dim a reshape merged: its parts' old sizes and new sizes."""
        # A grouped conv's filter channels (ci / groups) follow its scaled input channels.
        grouped = [op for op in graph.layers
                   if "groups" in op.properties and op.count_prop("groups") > 1]
        self.group_widths = {op.input_shapes[1].dims[1] for op in grouped}
        self.group_channels: dict[str, list[int]] = {}
        """The group counts of the grouped convs whose input or output channels each dim
        is (`grouped_size`)."""
        for op in grouped:
            for dim in (op.input_shapes[0].dims[1], op.input_shapes[1].dims[0]):
                self.group_channels.setdefault(dim, []).append(op.count_prop("groups"))
        for op in graph.body.block.ops:
            if isinstance(op, dnn.InputOp | dnn.ParamOp):
                if not consistent:
                    self.free_operand(op.output)
            elif isinstance(op, dnn.LayerOp):
                if consistent:  # at the first use: dims the layers before sized stay
                    for operand in op.operands:
                        self.free_operand(operand)
                self.layer(op)
        for dim, size in self.old.items():
            self.new.setdefault(dim, self.scaled(size))

    def free_operand(self, value: SSAValue) -> None:
        """Size the dims of an input or param (unless a layer sizes them from others)."""
        if isinstance(value.owner, dnn.InputOp | dnn.ParamOp) and not _sized_by_a_layer(value):
            assert isinstance(value.type, dnn.TensorType)
            self.free(tuple(d for d in value.type.shape.dims if d not in self.group_widths))

    def assign(self, dim: str, size: int) -> None:
        if self.new.setdefault(dim, size) != size:
            raise ScaleError(f"dimension '{dim}' would be both {self.new[dim]} and {size}")

    def free(self, dims: tuple[str, ...]) -> None:
        """Size the dims not sized yet: kept, an input image's, or scaled."""
        for dim in dims:
            if dim not in self.new:
                self.new[dim] = (self.old[dim] if dim in self.kept else self.image[dim]
                                 if dim in self.image else self.grouped_size(
                                     dim, self.scaled(self.old[dim])))

    def grouped_size(self, dim: str, size: int) -> int:
        """`size`, or where it would leave a grouped conv whose channels `dim` is no
        groups (its count shares no factor with it: 8 channels in 8 groups scaled by 1/8),
        the least multiple of the smallest prime factor of each count at least `size`
        (2 channels in 2 groups); the old size is such a multiple."""
        counts = self.group_channels.get(dim, [])
        if all(gcd(count, size) > 1 for count in counts):
            return size
        step = lcm(*(_smallest_prime_factor(count) for count in counts))
        return min(self.old[dim], ceil(size / step) * step)

    def scaled(self, size: int) -> int:
        """A free dim's new size: `scaled_size`; on the consistent try, `size · factor`
        where that is whole, else `size` (Swin's 3 heads, 7-wide windows)."""
        if not self.consistent:
            return scaled_size(size, self.factor)
        exact = size * self.factor
        return round(exact) if exact >= 1 and abs(exact - round(exact)) < 1e-9 else size

    def layer(self, op: dnn.LayerOp) -> None:
        inputs = op.input_shapes
        for operand, axis in op.SCALE_KEEP:
            dim = inputs[operand].dims[axis]
            self.assign(dim, self.old[dim])
        for (operand, axis), multiple, (source, source_axis) in op.SCALE_MULTIPLES:
            if operand >= len(inputs):  # an optional operand left out (the LSTM's bias)
                continue
            self.assign(inputs[operand].dims[axis],
                        multiple * self.new[inputs[source].dims[source_axis]])
        if op.SCALE_TIE == "window":
            self.window(op)
        elif op.SCALE_TIE == "concat":
            self.concat(op)
        elif op.SCALE_TIE == "regroup":
            self.regroup(op)
        elif op.SCALE_TIE == "slice":
            self.slice(op)
        elif op.SCALE_TIE == "pad":
            self.pad(op)
        self.free(op.result_shape.dims)

    def window(self, op: dnn.LayerOp) -> None:
        """Height and width of an NCHW sliding window's result, from the input's; a global
        pool's window (its whole input, to 1x1) follows the input."""
        x, y = op.input_shapes[0], op.result_shape
        new = self.new
        if "window" in op.properties:
            window = op.ints_prop("window")
            if window == tuple(x.sizes[2:]) and y.sizes[2:] == (1, 1):
                window = self.windows[op] = (new[x.dims[2]], new[x.dims[3]])
        else:
            w = op.input_shapes[1]
            if "groups" in op.properties and (count := op.count_prop("groups")) > 1:
                self.free(tuple(d for d in w.dims if d not in self.group_widths))
                self.overrides[op] = {"groups": IntAttr(self.groups(op, count))}
            self.free(w.dims)
            window = (new[w.dims[2]], new[w.dims[3]])
        stride = op.properties["stride"]
        assert isinstance(stride, IntAttr)
        padding = op.ints_prop("padding")
        for axis in (0, 1):
            size = conv_output_size(new[x.dims[2 + axis]], window[axis], stride.data,
                                    padding[axis])
            if size < 1:
                raise ScaleError(f"{_name(op)}: the input is too small")
            self.assign(y.dims[2 + axis], size)

    def groups(self, op: dnn.LayerOp, count: int) -> int:
        """The scaled group count of a grouped conv, the largest that still divides its
        old count and its scaled input and output channels (a depthwise conv's follows its
        channels); assigns the filter's channels per group."""
        x, w = op.input_shapes
        channels = self.new[x.dims[1]]
        count = gcd(count, channels, self.new[w.dims[0]])
        if count == 1:
            raise ScaleError(f"{_name(op)}: its scaled channels form no groups")
        self.assign(w.dims[1], channels // count)
        return count

    def pad(self, op: dnn.LayerOp) -> None:
        """A pad adds as many entries as it did to its scaled dim."""
        layer = op.signature()
        x, y = layer.input_shapes[0], layer.result_shape
        axis = x.dims.index(layer.dim_prop("dim"))
        added = layer.int_prop("before") + layer.int_prop("after")
        if layer.kind_prop() == "reflect" and self.new[x.dims[axis]] <= max(
                layer.int_prop("before"), layer.int_prop("after")):
            raise ScaleError(f"{_name(op)}: its scaled input is too small to reflect")
        for k, result_dim in enumerate(y.dims):
            self.assign(result_dim, self.new[x.dims[k]] + (added if k == axis else 0))

    def slice(self, op: dnn.LayerOp) -> None:
        """A slice keeps its size's scaling and starts as far in as it did, within the
        scaled dim (its `start` property follows). On the consistent try its ends move
        in proportion to its input, rounded up: complementary slices (a roll) tile it."""
        x, y = op.input_shapes[0], op.result_shape
        dim, start = op.properties["dim"], op.properties["start"]
        assert isinstance(dim, StringAttr)
        assert isinstance(start, IntAttr)
        axis = x.dims.index(dim.data)
        for k, result_dim in enumerate(y.dims):
            if k != axis:
                self.assign(result_dim, self.new[x.dims[k]])
        ratio = self.new[x.dims[axis]] / x.sizes[axis]
        begin = round(start.data * self.new[x.dims[axis]] / x.sizes[axis])
        if self.consistent:
            begin = ceil(start.data * ratio - 1e-9)
            end = ceil((start.data + y.sizes[axis]) * ratio - 1e-9)
            if y.sizes[axis] > 1 and y.dims[axis] not in self.new:
                self.assign(y.dims[axis], max(1, end - begin))
        self.free((y.dims[axis],))
        whole, part = self.new[x.dims[axis]], self.new[y.dims[axis]]
        if part > whole:
            raise ScaleError(f"{_name(op)}: a slice of {part} does not fit in {whole}")
        self.overrides[op] = {"start": IntAttr(min(begin, whole - part))}

    def concat(self, op: dnn.LayerOp) -> None:
        """The joined dim is the operands' sum."""
        y = op.result_shape
        axis = [i for i in range(y.rank) if op.input_shapes[0].dims[i] != y.dims[i]][0]
        self.assign(y.dims[axis], sum(self.new[s.dims[axis]] for s in op.input_shapes))

    def regroup(self, op: dnn.LayerOp) -> None:
        """A merged dim is the product of its group; a split group scales all its dims but
        the last, which keeps the group's product. A split that undoes a merge (the same
        old sizes; Swin's window partition and reverse) gives its dims the merged ones' new
        sizes, so that merging them again gives the dim they were split from."""
        x, y = op.input_shapes[0], op.result_shape
        new = self.new
        for inputs, outputs in reshape_groups(x, y):
            total = prod(new[x.dims[i]] for i in inputs)
            if len(outputs) == 1:
                self.assign(y.dims[outputs[0]], total)
                if len(inputs) > 1:
                    self.merged[y.dims[outputs[0]]] = (tuple(x.sizes[i] for i in inputs),
                                                       tuple(new[x.dims[i]] for i in inputs))
                elif x.dims[inputs[0]] in self.merged:  # the same dim renamed
                    self.merged[y.dims[outputs[0]]] = self.merged[x.dims[inputs[0]]]
                continue
            undone = self.merged.get(x.dims[inputs[0]]) \
                if len(inputs) == 1 and self.consistent else None
            parts = tuple(y.sizes[j] for j in outputs)
            if undone is not None and undone[0] == parts:
                for j, size in zip(outputs, undone[1], strict=True):
                    self.assign(y.dims[j], size)
            elif self.consistent and total == prod(parts):  # a dim that kept its size
                for j, size in zip(outputs, parts, strict=True):
                    self.assign(y.dims[j], size)
            else:
                self.free(tuple(y.dims[j] for j in outputs[:-1]))
                rest = prod(new[y.dims[j]] for j in outputs[:-1])
                if total % rest:
                    raise ScaleError(f"{_name(op)}: cannot split {total} evenly")
                self.assign(y.dims[outputs[-1]], total // rest)


def scale_module(module: ModuleOp, factor: float) -> ModuleOp:
    """A copy of `module` with every graph scaled by `factor` (0 < factor <= 1)."""
    if not 0 < factor <= 1:
        raise ScaleError(f"--scale must be in (0, 1], got {factor}")
    if factor == 1:
        return module.clone()
    return ModuleOp([_scale_graph(g, factor) for g in module.ops
                     if isinstance(g, dnn.GraphOp)])


def _scale_graph(graph: dnn.GraphOp, factor: float) -> dnn.GraphOp:
    images, kept = _spatial(graph)
    old = graph.dims
    try:
        propagation = _propagate(graph, factor, images, kept, False)
    except ScaleError:
        propagation = _propagate(graph, factor, images, kept, True)
    sizes, windows = propagation.new, propagation.windows
    overrides = propagation.overrides
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
        properties.update(overrides.get(op, {}))  # type: ignore[arg-type]
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


def _smallest_prime_factor(count: int) -> int:
    """The smallest prime that divides `count` (at least 2)."""
    factor = 2
    while factor * factor <= count:
        if count % factor == 0:
            return factor
        factor += 1
    return count


def _propagate(graph: dnn.GraphOp, factor: float, images: set[str], kept: set[str],
               consistent: bool) -> _Propagation:
    """The new sizes, the input images as small as every conv and pool allows."""
    old = graph.dims
    image = {d: scaled_size(old[d], factor) for d in images}
    while True:
        try:
            return _Propagation(graph, factor, image, kept, consistent)
        except ScaleError:
            if not image or all(image[d] >= old[d] for d in image):
                raise
            image = {d: min(old[d], image[d] + 1) for d in image}


def _retype(attr: Attribute, sizes: dict[str, int]) -> Attribute:
    if not isinstance(attr, dnn.TensorType):
        return attr
    shape = attr.shape
    return dnn.TensorType(shape.dims, [sizes[d] for d in shape.dims], attr.element_type)


def _name(op: dnn.LayerOp) -> str:
    graph = op.parent_op()
    assert isinstance(graph, dnn.GraphOp)
    return graph.layer_names()[op]
