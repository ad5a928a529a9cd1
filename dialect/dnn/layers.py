"""The layer ops of the `dnn` dialect, one per layer kind of the `.dnn` language.

Each op class answers `shape_rule(layer)` (its shape rule, from `pase.core.shapes`) and
`space_rule(layer)`, over a `LayerSignature` (so a frontend asks before the op exists):
its iteration dims, FLOPs, and distribution facts (partial-sum
dims, the statistics its kernel exchanges, gradients its kernel completes), which the
cost model, `pase-lower-spmd` and the runtime read instead of the op's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def

from pase.core import shapes
from pase.core.shapes import NamedShape, ShapeError
from pase.core.space import Collective, IterationSpace, IterDim, Statistics
from pase.dialect.dnn.epsilon import EpsilonLayer, check_epsilon
from pase.dialect.dnn.layer_op import (
    Clauses,
    Flops,
    Kind,
    LayerOp,
    LayerSignature,
    Multiple,
    OperandDim,
    ScaleTie,
)


def _pair(values: tuple[int, ...]) -> tuple[int, int]:
    if len(values) != 2:
        raise ShapeError(f"padding must be one int or [height, width], got {list(values)}")
    return values[0], values[1]


def _identity_space(shape: NamedShape, operands: Sequence[NamedShape], forward: float,
                    backward: float, reduced: Sequence[str] = (),
                    fixed: Sequence[str] = (),
                    statistics: Statistics | None = None) -> IterationSpace:
    """The space of a layer that iterates over its input's dims (elementwise-like); a
    split `reduced` dim leaves the result a partial sum."""
    dims = tuple(IterDim(d, s, splittable=d not in fixed, reduction=d in reduced)
                 for d, s in zip(shape.dims, shape.sizes, strict=True))
    names = {d.name for d in dims}
    return IterationSpace(
        dims=dims,
        operands=tuple(tuple(d if d in names else None for d in o.dims) for o in operands),
        result=tuple(d for d in shape.dims if d not in reduced),
        flops_forward=forward, flops_backward=backward,
        partial=tuple(d for d in shape.dims if d in reduced), statistics=statistics)


def _row_statistics(x: NamedShape, over: Sequence[str],
                    *collectives: Collective) -> Statistics:
    """Statistics over `over` per row of x (the rows: x's other dims)."""
    return Statistics(tuple(over), tuple(d for d in x.dims if d not in over), collectives)


@irdl_op_definition
class EinsumOp(LayerOp):
    """Contraction over named dims; dims absent from the result are summed.

    Example: `%h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>,
    !dnn.tensor<[d = 256, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>`
    """

    name = "dnn.einsum"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        return shapes.einsum_shape(layer.input_shapes, layer.result_shape.dims)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        result = layer.result_shape
        sizes: dict[str, int] = dict(zip(result.dims, result.sizes, strict=True))
        for shape in layer.input_shapes:
            for dim, size in zip(shape.dims, shape.sizes, strict=True):
                sizes.setdefault(dim, size)
        dims = tuple(IterDim(d, s, reduction=d not in result.dims) for d, s in sizes.items())
        # One multiply-add per point forward; two backward (one per operand gradient).
        return IterationSpace(dims, tuple(s.dims for s in layer.input_shapes), result.dims,
                              flops_forward=2.0, flops_backward=4.0,
                              partial=tuple(d.name for d in dims if d.reduction))


@irdl_op_definition
class Conv2dOp(LayerOp):
    """NCHW convolution: `%y = dnn.conv2d %x, %w stride 1 padding 1 : (...) -> ...`.

    `padding [0, 3]` pads height and width differently (a 1x7 filter keeping the width).
    `groups G` (left out when 1) groups the channels: x [b, ci, h, w], filter
    [co, cig, r, s] with ci = G·cig; output channel o reads the cig input channels of
    group o // (co / G). Depthwise: G = ci = co, cig = 1.

    Iteration space (b, co, cig, ho, wo, r, s), where cig is the filter's input-channel
    dim (ci itself when ungrouped). Height and width never split (PaSE switches them
    off: they would need halo exchanges). Batch always splits. Ungrouped, both channel
    dims split (a split ci leaves the result a partial sum). Grouped, cig does not split
    (a block of it is no block of ci), and co always does: when each group has one
    output channel (co = G, as depthwise), a block of co reads exactly the same block of
    ci, so x's channels split with co; otherwise a block of co may start inside a group,
    so x's channels are not split (each device holds them all, and its input gradient
    is a partial sum over co).
    """

    name = "dnn.conv2d"

    stride = prop_def(IntAttr)
    padding = prop_def(ArrayAttr[IntAttr])
    groups = opt_prop_def(IntAttr)

    CLAUSES: ClassVar[Clauses] = (("stride", "stride", "int"), ("padding", "padding", "pair"),
                                  ("groups", "groups", "count"))
    SCALE_TIE: ClassVar[ScaleTie] = "window"
    SCALE_KEEP: ClassVar[tuple[OperandDim, ...]] = ((1, 2), (1, 3))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        x, w = layer.operand_shapes(2, " (input, filter)")
        return shapes.conv2d_shape(x, w, layer.int_prop("stride"),
                                   _pair(layer.ints_prop("padding")), layer.result_shape,
                                   layer.count_prop("groups"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        x, w = layer.input_shapes
        y = layer.result_shape
        groups = layer.count_prop("groups")
        dims = (IterDim(y.dims[0], y.sizes[0]), IterDim(y.dims[1], y.sizes[1]),
                IterDim(w.dims[1], w.sizes[1], splittable=groups == 1, reduction=True),
                IterDim(y.dims[2], y.sizes[2], splittable=False),
                IterDim(y.dims[3], y.sizes[3], splittable=False),
                IterDim(w.dims[2], w.sizes[2], splittable=False, reduction=True),
                IterDim(w.dims[3], w.sizes[3], splittable=False, reduction=True))
        channels = (w.dims[1] if groups == 1 else y.dims[1] if y.sizes[1] == groups
                    else None)
        return IterationSpace(dims, ((x.dims[0], channels, None, None), w.dims), y.dims,
                              flops_forward=2.0, flops_backward=4.0,
                              partial=tuple(d.name for d in dims if d.reduction))


@irdl_op_definition
class Pool2dOp(LayerOp):
    """NCHW pooling: `%y = dnn.pool2d max %x window [3, 3] stride 2 padding 0 : ...`."""

    name = "dnn.pool2d"

    kind = prop_def(StringAttr)
    window = prop_def(ArrayAttr[IntAttr])
    stride = prop_def(IntAttr)
    padding = prop_def(ArrayAttr[IntAttr])

    KIND: ClassVar[Kind] = ("kind", ("max", "avg"))
    CLAUSES: ClassVar[Clauses] = (("window", "window", "ints"), ("stride", "stride", "int"),
               ("padding", "padding", "pair"))
    SCALE_TIE: ClassVar[ScaleTie] = "window"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        window = layer.ints_prop("window")
        if len(window) != 2:
            raise ShapeError(f"pool2d window must be [height, width], got {list(window)}")
        return shapes.pool2d_shape(x, (window[0], window[1]), layer.int_prop("stride"),
                                   _pair(layer.ints_prop("padding")), layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        (x,) = layer.input_shapes
        y = layer.result_shape
        kh, kw = layer.ints_prop("window")
        dims = (IterDim(y.dims[0], y.sizes[0]), IterDim(y.dims[1], y.sizes[1]),
                IterDim(y.dims[2], y.sizes[2], splittable=False),
                IterDim(y.dims[3], y.sizes[3], splittable=False))
        return IterationSpace(dims, ((x.dims[0], x.dims[1], None, None),), y.dims,
                              flops_forward=float(kh * kw), flops_backward=float(kh * kw))


class _ElementwiseOp(LayerOp):
    """An elementwise layer: it iterates over its result's dims, at `FLOPS` per element."""

    FLOPS: ClassVar[Flops] = (1.0, 1.0)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return _identity_space(layer.result_shape, layer.input_shapes, *cls.FLOPS)


class UnaryOp(_ElementwiseOp):
    """Elementwise function of one tensor."""

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.unary_shape(layer.short_name, x)


class BinaryOp(_ElementwiseOp):
    """Elementwise function of two tensors, broadcasting by dimension name."""

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        lhs, rhs = layer.operand_shapes(2)
        return shapes.binary_shape(layer.short_name, lhs, rhs)


@irdl_op_definition
class ReluOp(UnaryOp):
    """`%a = dnn.relu %h : (!dnn.tensor<[b = 64, h = 1024], f32>) -> ...`"""

    name = "dnn.relu"


@irdl_op_definition
class GeluOp(UnaryOp):
    """`%a = dnn.gelu %h : (...) -> ...` (tanh approximation)"""

    name = "dnn.gelu"
    FLOPS: ClassVar[Flops] = (8.0, 12.0)


@irdl_op_definition
class TanhOp(UnaryOp):
    """`%a = dnn.tanh %h : (...) -> ...`"""

    name = "dnn.tanh"
    FLOPS: ClassVar[Flops] = (4.0, 3.0)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """`%a = dnn.sigmoid %h : (...) -> ...`"""

    name = "dnn.sigmoid"
    FLOPS: ClassVar[Flops] = (4.0, 3.0)


@irdl_op_definition
class ExpOp(UnaryOp):
    """`%a = dnn.exp %h : (...) -> ...`"""

    name = "dnn.exp"
    FLOPS: ClassVar[Flops] = (2.0, 1.0)


@irdl_op_definition
class AddOp(BinaryOp):
    """`%y = dnn.add %a, %bias : (..., !dnn.tensor<[h = 1024], f32>) -> ...`"""

    name = "dnn.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """`%y = dnn.sub %a, %b : (...) -> ...`"""

    name = "dnn.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """`%y = dnn.mul %a, %b : (...) -> ...`"""

    name = "dnn.mul"
    FLOPS: ClassVar[Flops] = (1.0, 2.0)


class _OverOp(LayerOp):
    """A layer over some dims of its first operand, which its `over [dims]` clause names."""

    over = prop_def(ArrayAttr[StringAttr])

    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"),)


@irdl_op_definition
class SoftmaxOp(_OverOp):
    """`%p = dnn.softmax %s over [t] : (...) -> ...`; a split `t` all-reduces statistics."""

    name = "dnn.softmax"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.softmax_shape(x, layer.dims_prop("over"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        # The row maximum and Σ exp forward, Σ dy·y backward (docs/cost-model.md, rule 3).
        over = layer.dims_prop("over")
        statistics = _row_statistics(layer.input_shapes[0], over,
                                     Collective("all_reduce", 1, count=2),
                                     Collective("all_reduce", 1, backward=True))
        return _identity_space(layer.result_shape, layer.input_shapes, 5.0, 4.0,
                               statistics=statistics)


class NormOp(EpsilonLayer, _OverOp):
    """Normalization over `over` dims with optional scale and bias operands, and its
    `epsilon` (`pase.dialect.dnn.epsilon`)."""

    SCALE_OPERANDS: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        inputs = layer.input_shapes
        if not inputs:
            raise ShapeError(f"{layer.short_name} takes 1 operand, or 3 with scale and bias, "
                             "got 0")
        check_epsilon(layer)
        return shapes.norm_shape(layer.short_name, inputs[0], inputs[1:], layer.dims_prop("over"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        # [Σ x, Σ x²] forward, [Σ g, Σ g·x̂] backward, in one all-reduce each.
        statistics = _row_statistics(layer.input_shapes[0], layer.dims_prop("over"),
                                     Collective("all_reduce", 2),
                                     Collective("all_reduce", 2, backward=True))
        # PaSE: 16 FLOPs per element, forward and backward together.
        return _identity_space(layer.result_shape, layer.input_shapes, 8.0, 8.0,
                               statistics=statistics)


@irdl_op_definition
class LayerNormOp(NormOp):
    """`%y = dnn.layernorm %x, %g, %beta over [d] : (...) -> ...`"""

    name = "dnn.layernorm"


@irdl_op_definition
class BatchNormOp(NormOp):
    """`%y = dnn.batchnorm %x, %g, %beta over [b, h, w] : (...) -> ...` (training mode)"""

    name = "dnn.batchnorm"


@irdl_op_definition
class ReduceOp(_OverOp):
    """`%y = dnn.reduce sum %x over [s] : (...) -> ...` (sum or mean)."""

    name = "dnn.reduce"

    kind = prop_def(StringAttr)

    KIND: ClassVar[Kind] = ("kind", ("sum", "mean"))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.reduce_shape(layer.kind_prop(), x, layer.dims_prop("over"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return _identity_space(layer.input_shapes[0], layer.input_shapes, 1.0, 1.0,
                               reduced=layer.dims_prop("over"))


@irdl_op_definition
class EmbeddingOp(LayerOp):
    """Table lookup: `%e = dnn.embedding %ids, %table : (...) -> ...`.

    ids [b, s] (integers), table [v, d] -> [b, s, d]. The vocabulary dim `v` is an
    iteration dim, so the table may be split over it (as PaSE does for RNNLM).
    """

    name = "dnn.embedding"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        return shapes.embedding_shape(*layer.operand_shapes(2, " (ids, table)"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        ids, table = layer.input_shapes
        y = layer.result_shape
        vocab = table.sizes[0]
        dims = tuple(IterDim(d, s) for d, s in zip(ids.dims, ids.sizes, strict=True))
        dims += (IterDim(table.dims[0], vocab, reduction=True),)
        dims += tuple(IterDim(d, s) for d, s in zip(table.dims[1:], table.sizes[1:],
                                                   strict=True))
        # A gather copies one row per id: ids·features FLOPs over ids·vocab·features points.
        return IterationSpace(dims, (ids.dims, table.dims), y.dims,
                              flops_forward=1.0 / vocab, flops_backward=1.0 / vocab,
                              partial=(table.dims[0],))


@irdl_op_definition
class LstmOp(LayerOp):
    """A multi-layer LSTM as one layer (as in PaSE): `%y = dnn.lstm %x, %w : ...`, or
    `%y = dnn.lstm %x, %w, %bias : ...` with a gate bias.

    x [b, s, e], w [l, k, n] with k = 2·e (input and recurrent weights stacked) and
    n = 4·e (four gates per hidden unit, unit-major: column 4·u + gate); the bias, if
    given, is [l, n] with the weight's dims (added to every step's gates). Iteration
    space (l, s, b, n, k) as in PaSE, where the `n` dim counts the e hidden units, so a
    split of `n` gives each device whole units with all four gates. Layer and sequence
    are not split (the recurrence runs through them), nor is `k`: its partial sums
    would need an all-reduce inside every time step on top of the all-gather of the
    hidden state.
    """

    name = "dnn.lstm"
    SCALE_KEEP: ClassVar[tuple[OperandDim, ...]] = ((1, 0),)
    SCALE_MULTIPLES: ClassVar[tuple[Multiple, ...]] = (
        ((1, 1), 2, (0, 2)), ((1, 2), 4, (0, 2)), ((2, 1), 4, (0, 2)))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        inputs = layer.input_shapes
        if len(inputs) not in (2, 3):
            raise ShapeError(f"lstm takes 2 or 3 operands (input, weight, optional bias), "
                             f"got {len(inputs)}")
        return shapes.lstm_shape(*inputs)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return recurrent_space(layer, gates=4)


def recurrent_space(layer: LayerSignature, gates: int) -> IterationSpace:
    """The iteration space of a recurrent layer (`dnn.lstm`, 4 gates; `dnn.gru`, 3):
    operands x [b, s, e], w [l, k, n] and any biases [l, n]; dims (l, s, b, n, k), where
    `n` counts the e hidden units and only `b` and `n` split."""
    x, w = layer.input_shapes[:2]
    biases = ((w.dims[0], w.dims[2]),) * (len(layer.input_shapes) - 2)
    dims = (IterDim(w.dims[0], w.sizes[0], splittable=False),
            IterDim(x.dims[1], x.sizes[1], splittable=False),
            IterDim(x.dims[0], x.sizes[0]),
            IterDim(w.dims[2], x.sizes[2]),
            IterDim(w.dims[1], w.sizes[1], splittable=False, reduction=True))
    # Every step gathers the hidden state (e words per batch row) over the unit
    # split, and backward all-reduces the gradient of [input, hidden] over it; that
    # completes the input gradient, so the caller must not all-reduce it again.
    steps = w.sizes[0] * x.sizes[1]
    statistics = Statistics((w.dims[2],), (x.dims[0],), (
        Collective("all_gather", x.sizes[2], count=steps),
        Collective("all_reduce", 2 * x.sizes[2], count=steps, backward=True)))
    # Per point of (l, s, b, units, k): one multiply-add per gate.
    return IterationSpace(dims, ((x.dims[0], x.dims[1], None), w.dims, *biases),
                          (x.dims[0], x.dims[1], None),
                          flops_forward=2.0 * gates, flops_backward=4.0 * gates,
                          statistics=statistics, kernel_reduced_grads=(0,))


@irdl_op_definition
class ConcatOp(LayerOp):
    """`%y = dnn.concat %a, %b : (...) -> ...`: joins along the one dim where the
    operands' names differ from the result's; that dim is not split."""

    name = "dnn.concat"
    SCALE_TIE: ClassVar[ScaleTie] = "concat"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        return shapes.concat_shape(layer.input_shapes, layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        y = layer.result_shape
        axis = shapes.concat_axis(layer.input_shapes, y)
        return _identity_space(y, layer.input_shapes, 0.0, 0.0, fixed=(y.dims[axis],))


@irdl_op_definition
class ReshapeOp(LayerOp):
    """`%y = dnn.reshape %x : (...) -> ...`: merge, split or rename consecutive dims.

    Dims that pass through unchanged or are renamed one-to-one can be split; merged
    or split groups cannot.
    """

    name = "dnn.reshape"
    SCALE_TIE: ClassVar[ScaleTie] = "regroup"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.reshape_shape(x, layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        (x,) = layer.input_shapes
        y = layer.result_shape
        operand: list[str | None] = [None] * x.rank
        splittable: set[str] = set()
        for in_range, out_range in shapes.reshape_groups(x, y):
            if len(in_range) == 1 and len(out_range) == 1:
                operand[in_range[0]] = y.dims[out_range[0]]
                splittable.add(y.dims[out_range[0]])
        dims = tuple(IterDim(d, s, splittable=d in splittable)
                     for d, s in zip(y.dims, y.sizes, strict=True))
        return IterationSpace(dims, (tuple(operand),), y.dims, 0.0, 0.0)


@irdl_op_definition
class SoftmaxCrossEntropyOp(_OverOp):
    """Mean softmax cross-entropy loss: `%l = dnn.softmax_cross_entropy %z, %t over [c]`.

    With `ignore -100` (PyTorch's `ignore_index`), a label equal to -100 marks a row
    that adds nothing to the loss nor to the gradient, and the mean is over the rows
    whose labels are not ignored, counted over the whole batch (the devices that split
    the rows all-reduce the count); a batch whose labels are all ignored has loss 0 and
    gradient 0 (PyTorch: NaN). Without it, every row counts.
    """

    name = "dnn.softmax_cross_entropy"

    ignore_index = opt_prop_def(IntAttr)

    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"), ("ignore", "ignore_index", "signed"))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        over = layer.dims_prop("over")
        logits, labels = layer.operand_shapes(2, " (logits, labels)")
        if len(over) != 1:
            raise ShapeError(f"softmax_cross_entropy is over one class dimension, "
                             f"got [{', '.join(over)}]")
        return shapes.cross_entropy_shape(logits, labels, over[0])

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        logits, labels = layer.input_shapes
        over = layer.dims_prop("over")
        # The row maximum, then [Σ exp(z − max), target logit]; the backward reuses them.
        # Each device sums the loss of its rows: a partial sum over the row dims.
        counted = () if "ignore_index" not in layer.properties else (Collective(
            "all_reduce", 1, among=tuple(d for d in logits.dims if d not in over),
            per_row=False),)
        statistics = _row_statistics(logits, over, Collective("all_reduce", 1),
                                     Collective("all_reduce", 2), *counted)
        return IterationSpace(
            tuple(IterDim(d, s, reduction=True)
                  for d, s in zip(logits.dims, logits.sizes, strict=True)),
            (logits.dims, labels.dims), (), flops_forward=5.0, flops_backward=2.0,
            partial=tuple(d for d in logits.dims if d not in over), statistics=statistics)


# The ops of `more_layers` build on the classes above, so they are imported after them
# (the package imports this module before that one).
from pase.dialect.dnn.more_layers import (  # noqa: E402
    BroadcastOp,
    ClipOp,
    DivOp,
    GruOp,
    MaskOp,
    NegOp,
    PadOp,
    PowOp,
    RmsNormOp,
    SliceOp,
    SqrtOp,
)

LAYER_OPS: tuple[type[LayerOp], ...] = (
    EinsumOp, Conv2dOp, Pool2dOp, ReluOp, GeluOp, TanhOp, SigmoidOp, ExpOp, AddOp, SubOp,
    MulOp, SoftmaxOp, LayerNormOp, BatchNormOp, ReduceOp, EmbeddingOp, LstmOp, ConcatOp,
    ReshapeOp, SoftmaxCrossEntropyOp, ClipOp, SliceOp, MaskOp, DivOp, SqrtOp, NegOp, PowOp,
    RmsNormOp, BroadcastOp, PadOp, GruOp,
)
