"""The bookkeeping of an import: ONNX values, the dims their axes are, and the `dnn` ops
built so far. Per-op importers (`pase.frontend.onnx.operators`) read and extend it.

An ONNX value is a `Value`: per ONNX axis the dim id it is (None: an axis of size 1 that
the dnn tensor does not have, as `keepdims` and `Unsqueeze` make), and its dnn value, or
the constant data of an initializer or Constant not yet used as a tensor.

    x = graph.tensor(node.input[0])           # a Value with its dnn SSA value
    y = graph.build(dnn.ReluOp, [x.value], node.output[0])
    return [Value(x.axes, y)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import ShapeError
from pase.dialect import dnn
from pase.frontend.onnx.dims import DimTable

ELEMENTS = {1: "f32", 6: "i32", 7: "i64", 11: "f64"}
"""ONNX TensorProto element types pase has (FLOAT, INT32, INT64, DOUBLE)."""

FLOAT_CONSTANTS = {np.dtype("float32"): "f32", np.dtype("float64"): "f64"}
"""The numpy types of constants that can become `dnn.param`s."""


def first_line(error: Exception) -> str:
    """The error's message on one line (ONNX's checker spreads a sentence over several)."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return (text[:300] + " ...") if len(text) > 300 else text or type(error).__name__


def identifier(text: str) -> str:
    """`text` as a `.dnn` name: `/fc1/Gemm_output_0` -> `fc1_Gemm`, `onnx::Add_7` ->
    `onnx_Add7` (no `_<number>` suffix, which xDSL's printer reserves)."""
    text = re.sub(r"_output_[0-9]+(?=_|$)", "", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    while re.search(r"_[0-9]+$", text):  # `val_21_2` (a copy's name) -> `val212`
        text = re.sub(r"_([0-9]+)$", r"\1", text)
    if text and text[0].isdigit():
        text = "v" + text
    return text


def node_label(node: Any) -> str:
    """How a diagnostic names a node: its name, else its first output."""
    return node.name or (node.output[0] if node.output else node.op_type)


@dataclass
class Value:
    """An ONNX value: the dim of each ONNX axis (None: a size-1 axis the dnn tensor lacks),
    and its dnn value or its constant data."""

    axes: tuple[int | None, ...]
    ssa: SSAValue | None = None
    constant: np.ndarray | None = None

    @property
    def value(self) -> SSAValue:
        """The dnn value (`GraphState.tensor` makes one of a constant)."""
        assert self.ssa is not None
        return self.ssa


@dataclass
class GraphState:
    """Everything an import has built: dims, values by ONNX name, the dnn ops, the initial
    values of the params, and the node being imported (for diagnostics)."""

    onnx: Any
    filename: str
    dims: DimTable = field(default_factory=DimTable)
    values: dict[str, Value] = field(default_factory=dict)
    inputs: list[Operation] = field(default_factory=list)
    body: list[Operation] = field(default_factory=list)
    initial: dict[SSAValue, np.ndarray] = field(default_factory=dict)
    used_names: set[str] = field(default_factory=set)
    node: Any = None

    # -- errors, names, attributes --

    def error(self, message: str) -> Diagnostic:
        """A diagnostic at the current node (or the file)."""
        if self.node is None:
            return Diagnostic(message, self.filename)
        return Diagnostic(f"node '{node_label(self.node)}' ({self.node.op_type}): {message}",
                          self.filename)

    def value_name(self, onnx_name: str) -> str:
        """A fresh `.dnn` name for a value named `onnx_name` in the model."""
        base = identifier(onnx_name) or "v"
        name, count = base, 1
        while name in self.used_names:
            count += 1
            name = f"{base}_v{count}"
        self.used_names.add(name)
        return name

    def attribute(self, node: Any, name: str, default: Any = None) -> Any:
        for attribute in node.attribute:
            if attribute.name == name:
                return self.onnx.helper.get_attribute_value(attribute)
        return default

    def axis(self, axis: int, rank: int) -> int:
        """An ONNX axis attribute (negative from the end) as a position."""
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return axis % rank

    # -- constants and tensors --

    def constant_of(self, name: str) -> np.ndarray | None:
        value = self.values.get(name)
        return None if value is None else value.constant

    def constant(self, name: str, what: str) -> np.ndarray:
        """The constant data of `name`, or an error saying `what` must be constant."""
        array = self.constant_of(name) if name else None
        if array is None:
            raise self.error(f"{what} must be a constant (an initializer or a Constant node) "
                             f"for pase to know the shapes, but '{name}' is not")
        return array

    def tensor(self, name: str, hints: Sequence[str] = (), keep: Sequence[int] = ()
               ) -> Value:
        """The value `name` as a dnn tensor; a float constant becomes a param (its dims
        named by `hints`, else `d`), its value the param's initial value; a constant of
        one element gets a param per use (the layers an exporter's shared scalar would tie
        are not tied). Axes of size 1 are dropped except at the positions `keep` (a 1x1
        convolution's window)."""
        if not name:
            raise self.error("an optional input is missing")
        value = self.values.get(name)
        if value is None:
            raise self.error(f"input '{name}' is not an output of a node pase reads (an "
                             "output it does not compute, e.g. a Dropout mask) nor a graph "
                             "input")
        if value.ssa is not None:
            return value
        assert value.constant is not None
        array = value.constant
        element = FLOAT_CONSTANTS.get(array.dtype)
        if element is None:
            raise self.error(f"the constant '{name}' ({array.dtype}) is used as a tensor; "
                             "pase's layers take float32 or float64 constants")
        axes = tuple(None if size == 1 and i not in keep else
                     self.dims.new(size, hints[i] if i < len(hints) and hints[i] else "d")
                     for i, size in enumerate(array.shape))
        real = [a for a in axes if a is not None]
        param = dnn.ParamOp(self.tensor_type(real, element))
        param.output.name_hint = self.value_name(name)
        self.dims.record(real)
        self.body.append(param)
        self.initial[param.output] = array.reshape([self.dims.size(a) for a in real])
        if array.size == 1:  # a factor, not a weight: each use its own (exporters share
            return Value(axes, param.output)  # one 0.5 among all layers' GELUs)
        value.axes, value.ssa = axes, param.output
        return value

    # -- types and layouts --

    def tensor_type(self, dims: Sequence[int], element: str) -> dnn.TensorType:
        return dnn.TensorType([self.dims.placeholder(d) for d in dims],
                              [self.dims.size(d) for d in dims], dnn.ELEMENT_TYPES[element])

    def current_type(self, ssa: SSAValue) -> dnn.TensorType:
        shape = dnn.shape_of(ssa)
        return self.tensor_type([int(d[1:]) for d in shape.dims], shape.element)

    def layout(self, value: Value) -> list[int]:
        """The dims of the dnn tensor in its layout order, as root ids."""
        assert value.ssa is not None
        return [self.dims.find(int(d[1:])) for d in dnn.shape_of(value.ssa).dims]

    def dim_array(self, dims: Sequence[int | None]) -> ArrayAttr[StringAttr]:
        return ArrayAttr(StringAttr(self.dims.placeholder(d)) for d in dims if d is not None)

    def real_axis(self, value: Value, position: int) -> int:
        axis = value.axes[position]
        if axis is None:
            raise self.error(f"axis {position} has size 1 and no dimension of its own in "
                             "pase (it comes from keepdims or Unsqueeze)")
        return axis

    # -- dims --

    def same(self, first: int, second: int) -> bool:
        """Make two axes one dim; False if one tensor holds both (they stay apart)."""
        if self.dims.size(first) != self.dims.size(second):
            raise self.error(f"axes of sizes {self.dims.size(first)} and "
                             f"{self.dims.size(second)} must be equal")
        return self.dims.unify(first, second)

    def fresh_like(self, dim: int, hint: str | None = None) -> int:
        old_hint = self.dims.hints[self.dims.find(dim)]
        renamed = {"s": "t", "t": "r"}.get(old_hint, old_hint)
        return self.dims.new(self.dims.size(dim), hint or renamed)

    def broadcast(self, first: Sequence[int | None],
                  second: Sequence[int | None]) -> tuple[int | None, ...]:
        """ONNX broadcasting, right-aligned: the axes both have become one dim."""
        rank = max(len(first), len(second))
        a = [None] * (rank - len(first)) + list(first)
        b = [None] * (rank - len(second)) + list(second)
        axes: list[int | None] = []
        for x, y in zip(a, b, strict=True):
            if x is not None and y is not None and not self.same(x, y):
                raise self.error(
                    f"it broadcasts together two axes of size {self.dims.size(x)} that are "
                    "different dimensions of one tensor (one operand holds both); if a "
                    "parameter is shared with another layer, give each layer its own")
            axes.append(x if x is not None else y)
        return tuple(axes)

    # -- building --

    def build(self, op_class: type[Operation], operands: Sequence[SSAValue], name: str,
              result: Sequence[int] | None = None,
              properties: dict[str, Attribute] | None = None) -> SSAValue:
        """Append a layer; its result type is `result`'s dims, or what its shape rule
        infers. A shape the rule rejects is an error at the node."""
        properties = properties or {}
        element = dnn.shape_of(operands[0]).element
        wanted = (self.tensor_type(result, element).shape if result is not None
                  else dnn.NO_RESULT)
        # Operand types name the dims as they were when built; the shape rule must see
        # them as they are now (merged since).
        assert issubclass(op_class, dnn.LayerOp)
        try:
            inferred = op_class.infer_shape([self.current_type(o).shape for o in operands],
                                            properties, wanted)
        except ShapeError as error:
            raise self.error(str(error)) from None
        op = op_class.create(operands=list(operands), result_types=[
            dnn.TensorType.of(inferred)], properties=properties)
        self.dims.record(int(d[1:]) for d in inferred.dims)
        op.results[0].name_hint = self.value_name(name)
        self.body.append(op)
        return op.results[0]

    def ordered(self, value: Value, name: str, what: str = "input") -> SSAValue:
        """The dnn tensor laid out in ONNX's axis order (as conv2d, reshape and concat
        need): the value itself, or its transpose (a one-operand einsum)."""
        assert value.ssa is not None
        if any(axis is None for axis in value.axes):
            sizes = ["1" if a is None else str(self.dims.size(a)) for a in value.axes]
            raise self.error(
                f"its {what} [{', '.join(sizes)}] has axes of size 1 that a computed tensor "
                "has no dimension for in pase (they come from keepdims, Unsqueeze or a "
                "Reshape); this op needs them as axes of their own")
        order = [self.dims.find(a) for a in value.axes if a is not None]
        if self.layout(value) == order:
            return value.ssa
        return self.build(dnn.EinsumOp, [value.ssa], f"{name}_transposed", order)

    def rename(self, value: Value, position: int, dim: int, name: str) -> Value:
        """`value` with the axis at `position` renamed to `dim` (a dnn.reshape)."""
        old = value.axes[position]
        assert value.ssa is not None
        assert old is not None
        if dim in [self.dims.find(d) for d in self.layout(value)]:
            raise self.error("two axes of one tensor would be one dimension")
        layout = [dim if d == self.dims.find(old) else d for d in self.layout(value)]
        ssa = self.build(dnn.ReshapeOp, [value.ssa], name, layout)
        axes = list(value.axes)
        axes[position] = dim
        return Value(tuple(axes), ssa)

    def elementwise(self, op_class: type[Operation], a: Value, b: Value, name: str) -> Value:
        """A two-operand elementwise layer with ONNX broadcasting."""
        axes = self.broadcast(a.axes, b.axes)
        first, second = set(self.layout(a)), set(self.layout(b))
        if not (first <= second or second <= first):
            raise self.error("it broadcasts both operands (each has axes the other lacks); "
                             "pase's elementwise layers broadcast one operand into the other")
        return Value(axes, self.build(op_class, [a.value, b.value], name))

    def reduce_over(self, x: Value, positions: Sequence[int], kind: str, keepdims: bool,
                    name: str) -> Value:
        """A `dnn.reduce` of `kind` over the axes at `positions`."""
        over = [x.axes[p] for p in positions if x.axes[p] is not None]
        kept = tuple(None if p in positions else a for p, a in enumerate(x.axes)
                     if keepdims or p not in positions)
        if not over:  # only axes of size 1: nothing to reduce
            return Value(kept, x.ssa)
        y = self.build(dnn.ReduceOp, [x.value], name, None,
                       {"kind": StringAttr(kind), "over": self.dim_array(over)})
        return Value(kept, y)
