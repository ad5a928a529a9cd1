"""`LayerOp`, the base of every `dnn` layer op: its generic syntax
(`%y = dnn.op <kind>? %operands <keyword value>* attr-dict : (types) -> type`), its
shape rule and its iteration space.

Both rules are class-level (`shape_rule`, `space_rule`) over a `LayerSignature` -- the
operand shapes, properties and result shape of a layer -- so a frontend learns a result
shape, and `dnn.vjp` its forward layer's iteration space, without building an op:

    dnn.ReluOp.infer_shape([NamedShape(("b", "h"), (64, 1024))], {})

This module does not import `graph`: `GraphOp` imports it (for `GraphOp.layers`), and a
layer finds its graph by the `HoldsLayers` trait `dnn.graph` carries, so the two modules
form no import circle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, StringAttr, f64
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation, result_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from pase.core.shapes import NamedShape, ShapeError
from pase.core.space import IterationSpace
from pase.dialect.dnn.types import TensorType, shape_of
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    LAYER_ATTR_NAME,
    LAYOUT_OF_ATTR_NAME,
    ConfigAttr,
    grid_order,
    verify_gradient_attributes,
)

Kind = tuple[str, tuple[str, ...]] | None
Clauses = tuple[tuple[str, str, str], ...]
Flops = tuple[float, float]
ScaleTie = Literal["window", "concat", "regroup", "slice", "pad"] | None
OperandDim = tuple[int, int]
Multiple = tuple[OperandDim, int, OperandDim]


def float_text(value: float) -> str:
    """A float as IR and `.dnn` print it, with a point before any exponent (MLIR's float
    literal needs one): `float_text(1e-05) == "1.0e-05"`, `float_text(6.0) == "6.0"`."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text


class HoldsLayers(OpTrait):
    """Marks the op whose block holds layers: `dnn.graph`."""


@dataclass(frozen=True)
class InLayerHolder(OpTrait):
    """`HasParent(GraphOp)` for layers, by `GraphOp`'s `HoldsLayers` trait instead of its
    class (which imports this module)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is not None and not parent.has_trait(HoldsLayers):
            raise VerifyException(f"'{op.name}' expects parent op 'dnn.graph'")


NO_RESULT = NamedShape((), ())
"""The result shape a frontend gives a shape rule when it has none: the rule names the
result's dims (a rule that reads the result's dims, as einsum, then sees none)."""


@dataclass(frozen=True)
class LayerSignature:
    """A layer as its shape rule and iteration space see it: its op class, the shapes of
    its operands, its properties and its result's shape. A `LayerOp` has one
    (`op.signature()`); a frontend or `dnn.vjp` makes one without an op:

        LayerSignature(dnn.Pool2dOp, (x,), {"kind": StringAttr("max"), ...}, NO_RESULT)
    """

    op: type[LayerOp]
    input_shapes: tuple[NamedShape, ...]
    properties: Mapping[str, Attribute]
    result_shape: NamedShape

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def short_name(self) -> str:
        """The op's name in `.dnn` and in its shape errors: `relu` for `dnn.relu`."""
        return self.op.name.removeprefix("dnn.")

    def operand_shapes(self, count: int, roles: str = "") -> tuple[NamedShape, ...]:
        """The operand shapes, of which there must be `count` (`roles` names them in the
        error, e.g. " (input, filter)")."""
        inputs = self.input_shapes
        if len(inputs) != count:
            raise ShapeError(f"{self.short_name} takes {count} operand{'s' if count > 1 else ''}"
                             f"{roles}, got {len(inputs)}")
        return inputs

    def dims_prop(self, prop: str) -> tuple[str, ...]:
        return dims_property(self.properties, prop)

    def ints_prop(self, prop: str) -> tuple[int, ...]:
        return ints_property(self.properties, prop)

    def int_prop(self, prop: str) -> int:
        attr = self.properties[prop]
        assert isinstance(attr, IntAttr)
        return attr.data

    def dim_prop(self, prop: str) -> str:
        """A "dim" clause's value (one dim name)."""
        attr = self.properties[prop]
        assert isinstance(attr, StringAttr)
        return attr.data

    def float_prop(self, prop: str) -> float:
        return float_property(self.properties, prop)

    def count_prop(self, prop: str) -> int:
        """A "count" clause's value: 1 when it is left out."""
        return count_property(self.properties, prop)

    def kind_prop(self) -> str:
        return kind_property(self.op, self.properties)

    def infer(self) -> NamedShape:
        """The result shape the operands and properties imply (raises ShapeError)."""
        return self.op.shape_rule(self)

    def iteration_space(self) -> IterationSpace:
        return self.op.space_rule(self)

    def verify(self, config: Attribute | None = None) -> None:
        """The checks of a layer's verifier that need no op: its kind, its result shape
        against the shape rule and its `config` (a `#pase.config`) against its iteration
        space; raises VerifyException."""
        if self.op.KIND is not None and self.kind_prop() not in self.op.KIND[1]:
            raise VerifyException(f"{self.name} kind must be one of "
                                  f"{', '.join(self.op.KIND[1])}, got '{self.kind_prop()}'")
        try:
            expected = self.infer()
        except ShapeError as error:
            raise VerifyException(str(error)) from None
        if expected != self.result_shape:
            raise VerifyException(
                f"result type {TensorType.of(self.result_shape)} does not match the "
                f"inferred {TensorType.of(expected)}")
        if config is not None:
            self.verify_config(config)

    def verify_config(self, config: Attribute) -> None:
        if not isinstance(config, ConfigAttr):
            raise VerifyException(f"{CONFIG_ATTR_NAME} must be a #pase.config, got {config}")
        space = self.iteration_space()
        for dim, factor in config.splits.items():
            if dim not in space.names:
                raise VerifyException(
                    f"#pase.config splits '{dim}', which is not an iteration dimension of "
                    f"{self.name} (its dimensions: {', '.join(space.names)})")
            iter_dim = space.dim(dim)
            if not iter_dim.splittable:
                raise VerifyException(f"dimension '{dim}' of {self.name} cannot be split")
            if iter_dim.size % factor:
                raise VerifyException(f"split factor {factor} does not divide dimension "
                                      f"'{dim}' of size {iter_dim.size}")


def dims_property(properties: Mapping[str, Attribute], prop: str) -> tuple[str, ...]:
    attr = properties[prop]
    assert isinstance(attr, ArrayAttr)
    return tuple(s.data for s in attr.data)


def ints_property(properties: Mapping[str, Attribute], prop: str) -> tuple[int, ...]:
    attr = properties[prop]
    assert isinstance(attr, ArrayAttr)
    return tuple(i.data for i in attr.data)


def float_property(properties: Mapping[str, Attribute], prop: str) -> float:
    attr = properties[prop]
    assert isinstance(attr, FloatAttr)
    return float(attr.value.data)


def count_property(properties: Mapping[str, Attribute], prop: str) -> int:
    attr = properties.get(prop)
    return attr.data if isinstance(attr, IntAttr) else 1


def kind_property(op: type[LayerOp], properties: Mapping[str, Attribute]) -> str:
    assert op.KIND is not None
    attr = properties[op.KIND[0]]
    assert isinstance(attr, StringAttr)
    return attr.data


class LayerOp(IRDLOperation):
    """Base of every layer: tensors in, one tensor out, a shape rule, an iteration space.

    Subclasses list their syntax in `KIND` (the property holding the leading keyword,
    e.g. `max` of pool2d, with its choices) and `CLAUSES` (`(keyword, property, form)`,
    form one of "dims", "dim" (one dim name), "int", "index" (an int that may be 0),
    "signed" (an int that may be negative: a cross-entropy's `ignore -100`),
    "count" (an int whose default 1 is left out: `groups`), "float", "ints", "pair" -- a
    pair of ints printed as one int when both are equal), and implement the class-level
    `shape_rule` and `space_rule` over a `LayerSignature`. The `SCALE_*` attributes
    say what `pase-scale` recomputes rather than scales; the defaults suit a layer whose
    result has its operands' dims (elementwise, einsum, a norm, a reduction).
    """

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(InLayerHolder())

    KIND: ClassVar[Kind] = None
    CLAUSES: ClassVar[Clauses] = ()
    SCALE_OPERANDS: ClassVar[tuple[int, ...]] = ()
    """The operands the layer multiplies its result by (a norm's scale), which
    `pase.dialect.dnn.seeding` seeds near one."""

    SCALE_TIE: ClassVar[ScaleTie] = None
    """How the shape rule ties the result's dims to the operands' (passes/scale.py):
    "window" -- an NCHW sliding window, the result's height and width follow from the
    input's, the window (a `window` property, else the filter operand's last two dims),
    `stride` and `padding`; "concat" -- the joined dim is the sum of the operands'; "regroup"
    -- merged dims multiply, a split group keeps its product; "slice" -- the slice keeps its
    scaled size and start; "pad" -- the padded dim is the scaled one plus the pads. None:
    no tie."""
    SCALE_KEEP: ClassVar[tuple[OperandDim, ...]] = ()
    """(operand, axis) of dims that keep their size (a filter's height and width)."""
    SCALE_MULTIPLES: ClassVar[tuple[Multiple, ...]] = ()
    """((operand, axis), k, (operand, axis)): the first dim is k times the second. The
    value feeding that first operand is sized by this layer, not where it is defined."""

    # -- the shape rule and the layer-op interface --

    @classmethod
    def shape_rule(cls, layer: LayerSignature) -> NamedShape:
        """The result shape `layer`'s operands and properties imply (raises ShapeError)."""
        raise NotImplementedError

    @classmethod
    def space_rule(cls, layer: LayerSignature) -> IterationSpace:
        """The iteration space of a layer of this class with `layer`'s signature."""
        raise NotImplementedError

    @classmethod
    def infer_shape(cls, operands: Sequence[NamedShape], properties: Mapping[str, Attribute],
                    result: NamedShape = NO_RESULT) -> NamedShape:
        """The result shape of a layer of this class over `operands` with `properties`
        (`result`: the dims the result should have, where the rule reads them); what a
        frontend asks before it builds the op. Raises ShapeError."""
        return cls.shape_rule(LayerSignature(cls, tuple(operands), properties, result))

    def signature(self) -> LayerSignature:
        return LayerSignature(type(self), tuple(self.input_shapes), self.properties,
                              self.result_shape)

    def infer(self) -> NamedShape:
        """The result shape the operands and properties imply (raises ShapeError)."""
        return self.shape_rule(self.signature())

    def iteration_space(self) -> IterationSpace:
        return self.space_rule(self.signature())

    @property
    def input_shapes(self) -> list[NamedShape]:
        return [shape_of(v) for v in self.inputs]

    @property
    def result_shape(self) -> NamedShape:
        return self.output.type.shape

    @property
    def short_name(self) -> str:
        """The op's name in `.dnn` and in its shape errors: `relu` for `dnn.relu`."""
        return self.name.removeprefix("dnn.")

    def dims_prop(self, prop: str) -> tuple[str, ...]:
        return dims_property(self.properties, prop)

    def ints_prop(self, prop: str) -> tuple[int, ...]:
        return ints_property(self.properties, prop)

    def float_prop(self, prop: str) -> float:
        return float_property(self.properties, prop)

    def count_prop(self, prop: str) -> int:
        """A "count" clause's value: 1 when it is left out."""
        return count_property(self.properties, prop)

    def kind_prop(self) -> str:
        return kind_property(type(self), self.properties)

    @property
    def config(self) -> ConfigAttr | None:
        attr = self.attributes.get(CONFIG_ATTR_NAME)
        return attr if isinstance(attr, ConfigAttr) else None

    @property
    def is_gradient(self) -> bool:
        """Whether pase-autodiff wrote this layer for the backward pass: an einsum gradient
        names its forward layer (`pase.layer`), a sum of gradient contributions its layout
        (`pase.layout_of`). `GraphOp.layers` are the layers that are not."""
        return LAYER_ATTR_NAME in self.attributes or LAYOUT_OF_ATTR_NAME in self.attributes

    # -- verification --

    def verify_(self) -> None:
        self.signature().verify(self.attributes.get(CONFIG_ATTR_NAME))
        verify_gradient_attributes(self)
        if (order := grid_order(self)) is not None:
            names = self.iteration_space().names
            if sorted(order) != sorted(names):
                quoted = ", ".join(f'"{name}"' for name in order)
                raise VerifyException(f"pase.grid_order [{quoted}] must order the iteration "
                                      f"dimensions of {self.name} ({', '.join(names)})")

    def verify_config(self, config: Attribute) -> None:
        self.signature().verify_config(config)

    # -- syntax --

    @classmethod
    def parse_clauses(cls, parser: Parser) -> dict[str, Attribute]:
        """The `keyword value` clauses of this op (`over [t]`, `stride 2`, ...)."""
        properties: dict[str, Attribute] = {}

        def parse_ints() -> ArrayAttr[IntAttr]:
            return ArrayAttr(IntAttr(i) for i in parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)))

        for keyword, prop, form in cls.CLAUSES:
            if parser.parse_optional_keyword(keyword) is None:
                continue
            if form in ("int", "index", "signed"):
                properties[prop] = IntAttr(parser.parse_integer(allow_boolean=False))
            elif form == "count":
                if (count := parser.parse_integer(allow_boolean=False)) != 1:
                    properties[prop] = IntAttr(count)
            elif form == "float":
                properties[prop] = FloatAttr(parser.parse_float(), f64)
            elif form == "dim":
                properties[prop] = StringAttr(parser.parse_identifier())
            elif form == "pair":
                single = parser.parse_optional_integer(allow_boolean=False)
                properties[prop] = (parse_ints() if single is None
                                    else ArrayAttr((IntAttr(single), IntAttr(single))))
            elif form == "ints":
                properties[prop] = parse_ints()
            else:
                dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                         parser.parse_identifier)
                properties[prop] = ArrayAttr(StringAttr(d) for d in dims)
        return properties

    @classmethod
    def clause_text(cls, properties: dict[str, Attribute], bare_dim: bool = False) -> str:
        """The op's clauses as printed (` stride 1 padding [0, 3]`); with `bare_dim`, a
        one-dim list prints bare (`over c`), as `.dnn` source writes it."""
        text = ""
        for keyword, prop, form in cls.CLAUSES:
            attr = properties.get(prop)
            if attr is None:
                continue
            if isinstance(attr, IntAttr):
                if form != "count" or attr.data != 1:
                    text += f" {keyword} {attr.data}"
                continue
            if isinstance(attr, FloatAttr):
                text += f" {keyword} {float_text(attr.value.data)}"
                continue
            if isinstance(attr, StringAttr):
                text += f" {keyword} {attr.data}"
                continue
            assert isinstance(attr, ArrayAttr)
            items = [str(a.data) for a in attr.data]  # type: ignore[attr-defined]
            if (form == "pair" and len(set(items)) == 1
                    or bare_dim and form == "dims" and len(items) == 1):
                text += f" {keyword} {items[0]}"
            else:
                text += f" {keyword} [{', '.join(items)}]"
        return text

    @classmethod
    def print_clauses(cls, printer: Printer, properties: dict[str, Attribute]) -> None:
        printer.print_string(cls.clause_text(properties))

    @classmethod
    def parse(cls, parser: Parser) -> LayerOp:
        properties: dict[str, Attribute] = {}
        if cls.KIND is not None:
            kind_prop, choices = cls.KIND
            kind = parser.parse_identifier(context_msg=f" ({' or '.join(choices)})")
            properties[kind_prop] = StringAttr(kind)
        start = parser.pos
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        properties |= cls.parse_clauses(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_start = parser.pos
        function_type = parser.parse_function_type()
        operand_types = function_type.inputs.data
        if len(function_type.outputs.data) != 1:
            parser.raise_error(f"{cls.name} has exactly one result", type_start)
        values = parser.resolve_operands(operands, operand_types, start)
        return cls.create(operands=values, result_types=function_type.outputs.data,
                          properties=properties, attributes=attributes)

    def print(self, printer: Printer) -> None:
        if self.KIND is not None:
            printer.print_string(f" {self.kind_prop()}")
        if self.inputs:
            printer.print_string(" ")
            printer.print_list(self.inputs, printer.print_operand)
        self.print_clauses(printer, dict(self.properties))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [self.output.type])
