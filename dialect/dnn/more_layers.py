"""`layers` continued: the layer ops real PyTorch exports need (issue 31).

clip (ReLU6), the elementwise div, sqrt, neg and pow, slice (ONNX Slice, Split and
constant-index Gather), pad (ONNX Pad), gru (ONNX GRU), broadcast (ONNX Expand: ViT's
class token), the causal mask (GPT-2's Where with a lower-triangular mask), the padding
mask of an `attention_mask` input and rmsnorm (T5's norm). Like every layer op
class they answer `shape_rule` from `pase.core.shapes` and `space_rule`; `layers.LAYER_OPS`
lists them with the others.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, StringAttr
from xdsl.irdl import irdl_op_definition, prop_def

from pase.core import shapes
from pase.core.shapes import NamedShape, ShapeError
from pase.core.space import Collective, IterationSpace, IterDim
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
from pase.dialect.dnn.layers import (
    BinaryOp,
    UnaryOp,
    _identity_space,
    _OverOp,
    _row_statistics,
    recurrent_space,
)


@irdl_op_definition
class ClipOp(UnaryOp):
    """`%y = dnn.clip %x min 0.0 max 6.0 : (...) -> ...`: x clamped into [min, max]
    (ReLU6 is clip 0 6); the gradient passes where min < x < max."""

    name = "dnn.clip"

    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)

    CLAUSES: ClassVar[Clauses] = (("min", "min", "float"), ("max", "max", "float"))
    FLOPS: ClassVar[Flops] = (1.0, 1.0)

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.clip_shape(x, layer.float_prop("min"), layer.float_prop("max"))


@irdl_op_definition
class SliceOp(LayerOp):
    """`%y = dnn.slice %x along d from 16 : (...) -> ...`: x's entries 16 .. 16 + n - 1
    along `d`; the result has x's dims with `d` replaced in place by a new dim of size n.

    Iteration space: the result's dims. Every dim but the new one splits (with the same
    dim of x); the new one does not, so x stays whole along `d` and a device's block of
    x holds its slice. The backward scatters the gradient into zeros of x's shape.
    """

    name = "dnn.slice"

    dim = prop_def(StringAttr)
    start = prop_def(IntAttr)

    CLAUSES: ClassVar[Clauses] = (("along", "dim", "dim"), ("from", "start", "index"))
    SCALE_TIE: ClassVar[ScaleTie] = "slice"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.slice_shape(x, layer.dim_prop("dim"), layer.int_prop("start"),
                                  layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        (x,) = layer.input_shapes
        y = layer.result_shape
        new = y.dims[x.dims.index(layer.dim_prop("dim"))]
        dims = tuple(IterDim(d, s, splittable=d != new)
                     for d, s in zip(y.dims, y.sizes, strict=True))
        operand = tuple(None if d == layer.dim_prop("dim") else d for d in x.dims)
        return IterationSpace(dims, (operand,), y.dims, 0.0, 0.0)


@irdl_op_definition
class PadOp(LayerOp):
    """`%y = dnn.pad zeros %x along h before 1 after 2 : (...) -> ...`: x with entries
    added before and after along `h`: zeros, x's edge entry repeated (`edge`) or x
    reflected about its edge entry (`reflect`, as ONNX, numpy and PyTorch's
    `ReflectionPad` do); the result has x's dims with `h` replaced in place by a new dim
    of size n + before + after. ONNX's Pad, one op per padded axis.

    Iteration space: the result's dims. Every dim but the new one splits (with the same
    dim of x); the new one does not, so x stays whole along `h`. The backward adds each
    entry's gradient to the entry of x it copies (the zeros get none).
    """

    name = "dnn.pad"

    kind = prop_def(StringAttr)
    dim = prop_def(StringAttr)
    before = prop_def(IntAttr)
    after = prop_def(IntAttr)

    KIND: ClassVar[Kind] = ("kind", ("zeros", "edge", "reflect"))
    CLAUSES: ClassVar[Clauses] = (("along", "dim", "dim"), ("before", "before", "index"),
                                  ("after", "after", "index"))
    SCALE_TIE: ClassVar[ScaleTie] = "pad"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.pad_shape(x, layer.dim_prop("dim"), layer.int_prop("before"),
                                layer.int_prop("after"), layer.kind_prop(),
                                layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return SliceOp.space_rule(layer)


@irdl_op_definition
class GruOp(LayerOp):
    """A multi-layer GRU as one layer, like `dnn.lstm`: `%y = dnn.gru %x, %w : ...`, or
    `%y = dnn.gru %x, %w, %b_in, %b_hid : ...` with the input and recurrent biases.

    x [b, s, e], w [l, k, n] with k = 2·e (input and recurrent weights stacked) and
    n = 3·e (gates r, z, n per hidden unit, unit-major: column 3·u + gate); each bias
    is [l, n] with the weight's dims. The reset gate multiplies the recurrent product
    after its bias, as PyTorch's nn.GRU (ONNX's `linear_before_reset=1`;
    runtime/kernels/gru.py). Iteration space (l, s, b, n, k) as the LSTM's: `n` counts
    the e hidden units (a split gives each device whole units with their three gates);
    layer, sequence and `k` are not split. Every step gathers the hidden state over the
    unit split, and backward all-reduces the gradient of [input, hidden] over it.
    """

    name = "dnn.gru"
    SCALE_KEEP: ClassVar[tuple[OperandDim, ...]] = ((1, 0),)
    SCALE_MULTIPLES: ClassVar[tuple[Multiple, ...]] = (
        ((1, 1), 2, (0, 2)), ((1, 2), 3, (0, 2)), ((2, 1), 3, (0, 2)), ((3, 1), 3, (0, 2)))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        inputs = layer.input_shapes
        if len(inputs) < 2:
            raise ShapeError(f"gru takes 2 operands, or 4 with the input and recurrent "
                             f"biases, got {len(inputs)}")
        return shapes.gru_shape(*inputs)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return recurrent_space(layer, gates=3)


@irdl_op_definition
class BroadcastOp(LayerOp):
    """`%y = dnn.broadcast %x : (...) -> ...`: x repeated along the result's dims that x
    does not have (ViT's class token `[e]` as `[b, one, e]`); the gradient sums over them.

    Iteration space: the result's dims, all splittable; x follows its own dims, so a
    split of a new dim leaves x's gradient a partial sum, all-reduced like a bias's.
    """

    name = "dnn.broadcast"

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        (x,) = layer.operand_shapes(1)
        return shapes.broadcast_shape(x, layer.result_shape)

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return _identity_space(layer.result_shape, layer.input_shapes, 0.0, 1.0)


@irdl_op_definition
class MaskOp(LayerOp):
    """An attention mask: x where kept, `fill` elsewhere; the gradient is 0 where the
    fill is.

    - `%y = dnn.mask causal %x over [q, k] fill -1.0e9 : (...) -> ...`: x where k <= q
      (q and k: two dims of x of one size, by global position).
    - `%y = dnn.mask padding %x, %keep over [b, k] fill -1.0e9 : (...) -> ...`: x where
      `keep` (a tensor over exactly the dims `over` of x, of any element type: a padding
      mask given as a model input, Hugging Face's `attention_mask` [batch, keys]) is not
      0, broadcast over x's other dims. keep gets no gradient (it is data).

    Iteration space: x's dims, all of which split; keep follows its own dims (a split of
    the batch or key dim splits it with the scores). The causal kernel finds its block's
    positions from the block's offsets.
    """

    name = "dnn.mask"

    kind = prop_def(StringAttr)
    over = prop_def(ArrayAttr[StringAttr])
    fill = prop_def(FloatAttr)

    KIND: ClassVar[Kind] = ("kind", ("causal", "padding"))
    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"), ("fill", "fill", "float"))

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        if layer.kind_prop() != "padding":
            (x,) = layer.operand_shapes(1)
            return shapes.mask_shape(x, layer.dims_prop("over"))
        x, keep = layer.operand_shapes(2, " (scores, keep)")
        return padding_mask_shape(x, keep, layer.dims_prop("over"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        return _identity_space(layer.result_shape, layer.input_shapes, 1.0, 1.0)


def padding_mask_shape(x: NamedShape, keep: NamedShape, over: tuple[str, ...]) -> NamedShape:
    """`mask padding`: x (float) masked where `keep`, over exactly the dims `over` of x
    with x's sizes, is 0."""
    if x.element not in shapes.FLOAT_TYPES:
        raise shapes.ShapeError(f"mask takes floating-point tensors, got {x.element}")
    if tuple(keep.dims) != tuple(over):
        raise shapes.ShapeError(f"mask padding's keep must have the dims over "
                                f"[{', '.join(over)}], got [{', '.join(keep.dims)}]")
    for dim in over:
        if dim not in x.dims:
            raise shapes.ShapeError(f"mask padding is over '{dim}', which {x} does not have")
        if x.size_of(dim) != keep.size_of(dim):
            raise shapes.ShapeError(f"mask padding's keep has '{dim}' of size "
                                    f"{keep.size_of(dim)}, the scores {x.size_of(dim)}")
    return x


@irdl_op_definition
class DivOp(BinaryOp):
    """`%y = dnn.div %a, %b : (...) -> ...`, broadcasting by name as mul."""

    name = "dnn.div"
    FLOPS: ClassVar[Flops] = (1.0, 4.0)


@irdl_op_definition
class SqrtOp(UnaryOp):
    """`%y = dnn.sqrt %x : (...) -> ...`"""

    name = "dnn.sqrt"
    FLOPS: ClassVar[Flops] = (1.0, 2.0)


@irdl_op_definition
class NegOp(UnaryOp):
    """`%y = dnn.neg %x : (...) -> ...`"""

    name = "dnn.neg"


@irdl_op_definition
class PowOp(UnaryOp):
    """`%y = dnn.pow %x exponent 2.0 : (...) -> ...`: x to a constant power."""

    name = "dnn.pow"

    exponent = prop_def(FloatAttr)

    CLAUSES: ClassVar[Clauses] = (("exponent", "exponent", "float"),)
    FLOPS: ClassVar[Flops] = (2.0, 3.0)


@irdl_op_definition
class RmsNormOp(EpsilonLayer, _OverOp):
    """`%y = dnn.rmsnorm %x, %scale over [d] : (...) -> ...` (T5's norm):
    `x / √(mean_d(x²) + ε) · scale`, the scale over `d` and optional; its `epsilon` ε as
    layernorm's (`pase.dialect.dnn.epsilon`, default 1e-5). A split `d` all-reduces Σ x²
    forward and Σ g·x̂ backward (one word per row each)."""

    name = "dnn.rmsnorm"
    SCALE_OPERANDS: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        inputs = layer.input_shapes
        if not inputs:
            raise shapes.ShapeError("rmsnorm takes 1 operand, or 2 with a scale, got 0")
        check_epsilon(layer)
        return shapes.rms_norm_shape(inputs[0], inputs[1:], layer.dims_prop("over"))

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        statistics = _row_statistics(layer.input_shapes[0], layer.dims_prop("over"),
                                     Collective("all_reduce", 1),
                                     Collective("all_reduce", 1, backward=True))
        return _identity_space(layer.result_shape, layer.input_shapes, 4.0, 6.0,
                               statistics=statistics)
