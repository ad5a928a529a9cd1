"""The `dnn` dialect: a deep-learning training graph with named dimensions.

One op per layer kind, in the spelling of the `.dnn` language. A graph declares every
dimension once, with its size; tensors are lists of dimension names, so the same
name means the same extent everywhere and transposes are free:

    dnn.graph @mlp(b = 64, d = 256, h = 1024) {
      %x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>
      %w1 = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>
      %h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>, ...) -> ...
      dnn.return %h : !dnn.tensor<[b = 64, h = 1024], f32>
    }

Every layer op takes its tensors as operands, keeps its parameters (dims to reduce
over, stride, ...) as properties, and implements the layer-op interface
(`iteration_space()`, see `pase.dialect.interface`). Its verifier runs the same shape
rule as the frontend (`pase.dialect.shapes`), so hand-written IR is held to the same
invariants as `.dnn` source. A layer may carry a `pase.config` attribute; the verifier
checks it against the iteration space. The custom syntax of the layer ops follows
MLIR's shape: `%y = dnn.op <kind>? %operands <keyword value>* attr-dict : (types) -> type`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerType,
    StringAttr,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from pase.dialect import shapes
from pase.dialect.interface import IterationSpace, IterDim
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    LAYER_ATTR_NAME,
    LAYOUT_OF_ATTR_NAME,
    ConfigAttr,
)
from pase.dialect.shapes import NamedShape, ShapeError

ELEMENT_TYPES: dict[str, Attribute] = {"f32": f32, "f64": f64, "i32": i32, "i64": i64}


def element_name(element_type: Attribute) -> str:
    for name, attr in ELEMENT_TYPES.items():
        if attr == element_type:
            return name
    raise VerifyException(f"unsupported element type {element_type}; "
                          "expected f32, f64, i32 or i64")


# --- Types -------------------------------------------------------------------------


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A tensor with named dimensions: `!dnn.tensor<[b = 64, d = 256], f32>`.

    The scalar (a loss) is `!dnn.tensor<[], f32>`.
    """

    name = "dnn.tensor"

    dims: ArrayAttr[StringAttr]
    sizes: ArrayAttr[IntAttr]
    element_type: Float32Type | Float64Type | IntegerType

    def __init__(self, dims: Sequence[str], sizes: Sequence[int],
                 element_type: Attribute = f32):
        super().__init__(ArrayAttr(StringAttr(d) for d in dims),
                         ArrayAttr(IntAttr(s) for s in sizes), element_type)

    @staticmethod
    def of(shape: NamedShape) -> TensorType:
        return TensorType(shape.dims, shape.sizes, ELEMENT_TYPES[shape.element])

    @property
    def shape(self) -> NamedShape:
        return NamedShape(tuple(d.data for d in self.dims.data),
                          tuple(s.data for s in self.sizes.data),
                          element_name(self.element_type))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_dim() -> tuple[str, int]:
            dim = parser.parse_identifier(context_msg=" (a dimension name)")
            parser.parse_punctuation("=")
            return dim, parser.parse_integer(allow_boolean=False)

        start = parser.pos
        with parser.in_angle_brackets():
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_dim)
            parser.parse_punctuation(",")
            element_type = parser.parse_type()
            end = parser.pos + 1  # just past the closing '>'
        parameters = (ArrayAttr(StringAttr(d) for d, _ in dims),
                      ArrayAttr(IntAttr(s) for _, s in dims), element_type)
        try:  # report an invalid type where it is written, not without a location
            cls.new(parameters)
        except VerifyException as error:
            parser.raise_error(str(error), start, end)
        return parameters

    def print_parameters(self, printer: Printer) -> None:
        shape = self.shape
        dims = ", ".join(f"{d} = {s}" for d, s in zip(shape.dims, shape.sizes, strict=True))
        printer.print_string(f"<[{dims}], {shape.element}>")

    def verify(self) -> None:
        if len(self.dims.data) != len(self.sizes.data):
            raise VerifyException("!dnn.tensor needs one size per dimension")
        names = [d.data for d in self.dims.data]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise VerifyException(f"dimension '{name}' appears twice in a !dnn.tensor")
        for size in self.sizes.data:
            if size.data < 1:
                raise VerifyException(f"dimension sizes must be positive, got {size.data}")
        element_name(self.element_type)


def shape_of(value: SSAValue) -> NamedShape:
    if not isinstance(value.type, TensorType):
        raise VerifyException(f"expected a !dnn.tensor, got {value.type}")
    return value.type.shape


# --- Graph structure ---------------------------------------------------------------


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A training graph with its dimension table.

    Example: `dnn.graph @mlp(b = 64, d = 256) { ... }`; attributes (such as a
    `pase.strategy`) follow the header as `attributes {...}`.
    """

    name = "dnn.graph"

    sym_name = prop_def(StringAttr)
    dim_names = prop_def(ArrayAttr[StringAttr])
    dim_sizes = prop_def(ArrayAttr[IntAttr])
    body = region_def("single_block")

    # Isolated like func.func: a graph reads only its own inputs and params, and the
    # printer restarts SSA names per graph, so %x stays %x in every graph of a file.
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, name: str, dims: dict[str, int], body: Sequence[IRDLOperation] = ()):
        from xdsl.ir import Block, Region

        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "dim_names": ArrayAttr(StringAttr(d) for d in dims),
                "dim_sizes": ArrayAttr(IntAttr(s) for s in dims.values()),
            },
            regions=[Region(Block(body))],
        )

    @property
    def dims(self) -> dict[str, int]:
        return {n.data: s.data for n, s in zip(self.dim_names.data, self.dim_sizes.data,
                                               strict=True)}

    @property
    def layers(self) -> list[LayerOp]:
        """The forward layers (not the gradient ops pase-autodiff adds)."""
        return [op for op in self.body.block.ops if isinstance(op, LayerOp)
                and LAYER_ATTR_NAME not in op.attributes
                and LAYOUT_OF_ATTR_NAME not in op.attributes]

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        name = parser.parse_symbol_name().data

        def parse_dim() -> tuple[str, int]:
            dim = parser.parse_identifier(context_msg=" (a dimension name)")
            parser.parse_punctuation("=")
            return dim, parser.parse_integer(allow_boolean=False)

        dims = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_dim)
        seen: dict[str, int] = {}
        for dim, size in dims:
            if dim in seen:
                parser.raise_error(f"dimension '{dim}' is declared twice in @{name}")
            seen[dim] = size
        extra = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, seen)
        region = parser.parse_region()
        if region.blocks:  # `{}` keeps the empty block; the verifier asks for a dnn.return
            op.body.detach_block(0)
            region.move_blocks(op.body)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(" + ", ".join(f"{d} = {s}" for d, s in self.dims.items()) + ")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        if len(self.dim_names.data) != len(self.dim_sizes.data):
            raise VerifyException(f"@{self.sym_name.data} needs one size per dimension, got "
                                  f"{len(self.dim_names.data)} names and "
                                  f"{len(self.dim_sizes.data)} sizes")
        dims = self.dims
        if len(dims) != len(self.dim_names.data):
            raise VerifyException(f"@{self.sym_name.data} declares a dimension twice")
        for dim, size in dims.items():
            if size < 1:
                raise VerifyException(f"dimension '{dim}' must have a positive size, got {size}")
        block = self.body.block
        if block.args:
            raise VerifyException("dnn.graph takes no block arguments; "
                                  "use dnn.input and dnn.param")
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException("dnn.graph must end with dnn.return")
        for op in block.ops:
            for value in op.results:
                if not isinstance(value.type, TensorType):
                    continue
                for dim, size in zip(value.type.shape.dims, value.type.shape.sizes, strict=True):
                    if dim not in dims:
                        raise VerifyException(
                            f"dimension '{dim}' of {_value_name(value)} is not declared "
                            f"in @{self.sym_name.data}")
                    if dims[dim] != size:
                        raise VerifyException(
                            f"dimension '{dim}' is {dims[dim]} in @{self.sym_name.data} "
                            f"but {size} in {_value_name(value)}")


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """The graph's outputs, usually the loss: `dnn.return %l : !dnn.tensor<[], f32>`."""

    name = "dnn.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(GraphOp))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not self.values:
            raise VerifyException("dnn.return needs at least one value")


@irdl_op_definition
class InputOp(IRDLOperation):
    """Training data: `%x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>`."""

    name = "dnn.input"

    output = result_def(TensorType)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = "attr-dict `:` type($output)"

    def __init__(self, result_type: TensorType):
        super().__init__(result_types=[result_type])


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A trainable parameter: `%w = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>`."""

    name = "dnn.param"

    output = result_def(TensorType)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = "attr-dict `:` type($output)"

    def __init__(self, result_type: TensorType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        if self.output.type.shape.element not in shapes.FLOAT_TYPES:
            raise VerifyException("dnn.param must be floating-point")


# --- Layers ------------------------------------------------------------------------


Kind = tuple[str, tuple[str, ...]] | None
Clauses = tuple[tuple[str, str, str], ...]
Flops = tuple[float, float]


class LayerOp(IRDLOperation):
    """Base of every layer: tensors in, one tensor out, a shape rule, an iteration space.

    Subclasses list their syntax in `KIND` (the property holding the leading keyword,
    e.g. `max` of pool2d, with its choices) and `CLAUSES` (`(keyword, property, form)`,
    form one of "dims", "int", "ints", "pair" -- a pair of ints printed as one int when
    both are equal), and implement `infer` and `iteration_space`.
    """

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(HasParent(GraphOp))

    KIND: ClassVar[Kind] = None
    CLAUSES: ClassVar[Clauses] = ()

    # -- the shape rule and the layer-op interface --

    def infer(self) -> NamedShape:
        """The result shape the operands and properties imply (raises ShapeError)."""
        raise NotImplementedError

    def iteration_space(self) -> IterationSpace:
        raise NotImplementedError

    @property
    def layer_name(self) -> str:
        """The layer's name in reports: its result's SSA name (`%h` -> `h`)."""
        return self.output.name_hint or f"{self.name.removeprefix('dnn.')}"

    @property
    def input_shapes(self) -> list[NamedShape]:
        return [shape_of(v) for v in self.inputs]

    @property
    def result_shape(self) -> NamedShape:
        return self.output.type.shape

    def dims_prop(self, prop: str) -> tuple[str, ...]:
        attr = self.properties[prop]
        assert isinstance(attr, ArrayAttr)
        return tuple(s.data for s in attr.data)

    def int_prop(self, prop: str) -> int:
        attr = self.properties[prop]
        assert isinstance(attr, IntAttr)
        return attr.data

    def ints_prop(self, prop: str) -> tuple[int, ...]:
        attr = self.properties[prop]
        assert isinstance(attr, ArrayAttr)
        return tuple(i.data for i in attr.data)

    def kind_prop(self) -> str:
        assert self.KIND is not None
        attr = self.properties[self.KIND[0]]
        assert isinstance(attr, StringAttr)
        return attr.data

    @property
    def config(self) -> ConfigAttr | None:
        attr = self.attributes.get(CONFIG_ATTR_NAME)
        return attr if isinstance(attr, ConfigAttr) else None

    # -- verification --

    def verify_(self) -> None:
        if self.KIND is not None and self.kind_prop() not in self.KIND[1]:
            raise VerifyException(f"{self.name} kind must be one of "
                                  f"{', '.join(self.KIND[1])}, got '{self.kind_prop()}'")
        try:
            expected = self.infer()
        except ShapeError as error:
            raise VerifyException(str(error)) from None
        if expected != self.result_shape:
            raise VerifyException(
                f"result type {TensorType.of(self.result_shape)} does not match the "
                f"inferred {TensorType.of(expected)}")
        config = self.attributes.get(CONFIG_ATTR_NAME)
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
            if form == "int":
                properties[prop] = IntAttr(parser.parse_integer(allow_boolean=False))
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
    def print_clauses(cls, printer: Printer, properties: dict[str, Attribute]) -> None:
        for keyword, prop, form in cls.CLAUSES:
            attr = properties.get(prop)
            if attr is None:
                continue
            if isinstance(attr, IntAttr):
                printer.print_string(f" {keyword} {attr.data}")
                continue
            assert isinstance(attr, ArrayAttr)
            items = [str(a.data) for a in attr.data]  # type: ignore[attr-defined]
            if form == "pair" and len(set(items)) == 1:
                printer.print_string(f" {keyword} {items[0]}")
            else:
                printer.print_string(f" {keyword} [{', '.join(items)}]")

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


def _pair(values: tuple[int, ...]) -> tuple[int, int]:
    if len(values) != 2:
        raise ShapeError(f"padding must be one int or [height, width], got {list(values)}")
    return values[0], values[1]


def _identity_space(shape: NamedShape, operands: Sequence[NamedShape], forward: float,
                    backward: float, reduced: Sequence[str] = (),
                    fixed: Sequence[str] = ()) -> IterationSpace:
    """The space of a layer that iterates over its input's dims (elementwise-like)."""
    dims = tuple(IterDim(d, s, splittable=d not in fixed, reduction=d in reduced)
                 for d, s in zip(shape.dims, shape.sizes, strict=True))
    names = {d.name for d in dims}
    return IterationSpace(
        dims=dims,
        operands=tuple(tuple(d if d in names else None for d in o.dims) for o in operands),
        result=tuple(d for d in shape.dims if d not in reduced),
        flops_forward=forward, flops_backward=backward)


@irdl_op_definition
class EinsumOp(LayerOp):
    """Contraction over named dims; dims absent from the result are summed.

    Example: `%h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>,
    !dnn.tensor<[d = 256, h = 1024], f32>) -> !dnn.tensor<[b = 64, h = 1024], f32>`
    """

    name = "dnn.einsum"

    def infer(self) -> NamedShape:
        return shapes.einsum_shape(self.input_shapes, self.result_shape.dims)

    def iteration_space(self) -> IterationSpace:
        result = self.result_shape
        sizes: dict[str, int] = dict(zip(result.dims, result.sizes, strict=True))
        for shape in self.input_shapes:
            for dim, size in zip(shape.dims, shape.sizes, strict=True):
                sizes.setdefault(dim, size)
        dims = tuple(IterDim(d, s, reduction=d not in result.dims) for d, s in sizes.items())
        # One multiply-add per point forward; two backward (one per operand gradient).
        return IterationSpace(dims, tuple(s.dims for s in self.input_shapes), result.dims,
                              flops_forward=2.0, flops_backward=4.0)


@irdl_op_definition
class Conv2dOp(LayerOp):
    """NCHW convolution: `%y = dnn.conv2d %x, %w stride 1 padding 1 : (...) -> ...`.

    `padding [0, 3]` pads height and width differently (a 1x7 filter keeping the width).

    Iteration space (b, co, ci, ho, wo, r, s); only batch and channels split (PaSE
    switches height/width splits off: they would need halo exchanges).
    """

    name = "dnn.conv2d"

    stride = prop_def(IntAttr)
    padding = prop_def(ArrayAttr[IntAttr])

    CLAUSES: ClassVar[Clauses] = (("stride", "stride", "int"), ("padding", "padding", "pair"))

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 2:
            raise ShapeError(f"conv2d takes 2 operands (input, filter), got {len(inputs)}")
        return shapes.conv2d_shape(inputs[0], inputs[1], self.stride.data,
                                   _pair(self.ints_prop("padding")), self.result_shape)

    def iteration_space(self) -> IterationSpace:
        x, w = self.input_shapes
        y = self.result_shape
        dims = (IterDim(y.dims[0], y.sizes[0]), IterDim(y.dims[1], y.sizes[1]),
                IterDim(x.dims[1], x.sizes[1], reduction=True),
                IterDim(y.dims[2], y.sizes[2], splittable=False),
                IterDim(y.dims[3], y.sizes[3], splittable=False),
                IterDim(w.dims[2], w.sizes[2], splittable=False, reduction=True),
                IterDim(w.dims[3], w.sizes[3], splittable=False, reduction=True))
        return IterationSpace(dims, ((x.dims[0], x.dims[1], None, None), w.dims), y.dims,
                              flops_forward=2.0, flops_backward=4.0)


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

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 1:
            raise ShapeError(f"pool2d takes 1 operand, got {len(inputs)}")
        window = self.ints_prop("window")
        if len(window) != 2:
            raise ShapeError(f"pool2d window must be [height, width], got {list(window)}")
        return shapes.pool2d_shape(inputs[0], (window[0], window[1]), self.stride.data,
                                   _pair(self.ints_prop("padding")), self.result_shape)

    def iteration_space(self) -> IterationSpace:
        (x,) = self.input_shapes
        y = self.result_shape
        kh, kw = self.ints_prop("window")
        dims = (IterDim(y.dims[0], y.sizes[0]), IterDim(y.dims[1], y.sizes[1]),
                IterDim(y.dims[2], y.sizes[2], splittable=False),
                IterDim(y.dims[3], y.sizes[3], splittable=False))
        return IterationSpace(dims, ((x.dims[0], x.dims[1], None, None),), y.dims,
                              flops_forward=float(kh * kw), flops_backward=float(kh * kw))


class UnaryOp(LayerOp):
    """Elementwise function of one tensor."""

    FLOPS: ClassVar[Flops] = (1.0, 1.0)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 1:
            raise ShapeError(f"{self.name.removeprefix('dnn.')} takes 1 operand, "
                             f"got {len(inputs)}")
        return shapes.unary_shape(self.name.removeprefix("dnn."), inputs[0])

    def iteration_space(self) -> IterationSpace:
        return _identity_space(self.result_shape, self.input_shapes, *self.FLOPS)


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


class BinaryOp(LayerOp):
    """Elementwise function of two tensors, broadcasting by dimension name."""

    FLOPS: ClassVar[Flops] = (1.0, 1.0)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        op = self.name.removeprefix("dnn.")
        if len(inputs) != 2:
            raise ShapeError(f"{op} takes 2 operands, got {len(inputs)}")
        return shapes.binary_shape(op, inputs[0], inputs[1])

    def iteration_space(self) -> IterationSpace:
        return _identity_space(self.result_shape, self.input_shapes, *self.FLOPS)


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


@irdl_op_definition
class SoftmaxOp(LayerOp):
    """`%p = dnn.softmax %s over [t] : (...) -> ...`; a split `t` all-reduces statistics."""

    name = "dnn.softmax"

    over = prop_def(ArrayAttr[StringAttr])

    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"),)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 1:
            raise ShapeError(f"softmax takes 1 operand, got {len(inputs)}")
        return shapes.softmax_shape(inputs[0], self.dims_prop("over"))

    def iteration_space(self) -> IterationSpace:
        return _identity_space(self.result_shape, self.input_shapes, 5.0, 4.0)


class NormOp(LayerOp):
    """Normalization over `over` dims with optional scale and bias operands."""

    over = prop_def(ArrayAttr[StringAttr])

    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"),)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        op = self.name.removeprefix("dnn.")
        if not inputs:
            raise ShapeError(f"{op} takes 1 operand, or 3 with scale and bias, got 0")
        return shapes.norm_shape(op, inputs[0], inputs[1:], self.dims_prop("over"))

    def iteration_space(self) -> IterationSpace:
        # PaSE: 16 FLOPs per element, forward and backward together.
        return _identity_space(self.result_shape, self.input_shapes, 8.0, 8.0)


@irdl_op_definition
class LayerNormOp(NormOp):
    """`%y = dnn.layernorm %x, %g, %beta over [d] : (...) -> ...`"""

    name = "dnn.layernorm"


@irdl_op_definition
class BatchNormOp(NormOp):
    """`%y = dnn.batchnorm %x, %g, %beta over [b, h, w] : (...) -> ...` (training mode)"""

    name = "dnn.batchnorm"


@irdl_op_definition
class ReduceOp(LayerOp):
    """`%y = dnn.reduce sum %x over [s] : (...) -> ...` (sum or mean)."""

    name = "dnn.reduce"

    kind = prop_def(StringAttr)
    over = prop_def(ArrayAttr[StringAttr])

    KIND: ClassVar[Kind] = ("kind", ("sum", "mean"))
    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"),)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 1:
            raise ShapeError(f"reduce takes 1 operand, got {len(inputs)}")
        return shapes.reduce_shape(self.kind.data, inputs[0], self.dims_prop("over"))

    def iteration_space(self) -> IterationSpace:
        return _identity_space(self.input_shapes[0], self.input_shapes, 1.0, 1.0,
                               reduced=self.dims_prop("over"))


@irdl_op_definition
class EmbeddingOp(LayerOp):
    """Table lookup: `%e = dnn.embedding %ids, %table : (...) -> ...`.

    ids [b, s] (integers), table [v, d] -> [b, s, d]. The vocabulary dim `v` is an
    iteration dim, so the table may be split over it (as PaSE does for RNNLM).
    """

    name = "dnn.embedding"

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 2:
            raise ShapeError(f"embedding takes 2 operands (ids, table), got {len(inputs)}")
        return shapes.embedding_shape(inputs[0], inputs[1])

    def iteration_space(self) -> IterationSpace:
        ids, table = self.input_shapes
        y = self.result_shape
        vocab = table.sizes[0]
        dims = tuple(IterDim(d, s) for d, s in zip(ids.dims, ids.sizes, strict=True))
        dims += (IterDim(table.dims[0], vocab, reduction=True),)
        dims += tuple(IterDim(d, s) for d, s in zip(table.dims[1:], table.sizes[1:],
                                                   strict=True))
        # A gather copies one row per id: ids·features FLOPs over ids·vocab·features points.
        return IterationSpace(dims, (ids.dims, table.dims), y.dims,
                              flops_forward=1.0 / vocab, flops_backward=1.0 / vocab)


@irdl_op_definition
class LstmOp(LayerOp):
    """A multi-layer LSTM as one layer (as in PaSE): `%y = dnn.lstm %x, %w : ...`.

    x [b, s, e], w [l, k, n] with k = 2·e (input and recurrent weights stacked) and
    n = 4·e (four gates per hidden unit, unit-major: column 4·u + gate). Iteration
    space (l, s, b, n, k) as in PaSE, where the `n` dim counts the e hidden units, so a
    split of `n` gives each device whole units with all four gates. Layer and sequence
    are not split (the recurrence runs through them), nor is `k`: its partial sums
    would need an all-reduce inside every time step on top of the all-gather of the
    hidden state.
    """

    name = "dnn.lstm"

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 2:
            raise ShapeError(f"lstm takes 2 operands (input, weight), got {len(inputs)}")
        return shapes.lstm_shape(inputs[0], inputs[1])

    def iteration_space(self) -> IterationSpace:
        x, w = self.input_shapes
        dims = (IterDim(w.dims[0], w.sizes[0], splittable=False),
                IterDim(x.dims[1], x.sizes[1], splittable=False),
                IterDim(x.dims[0], x.sizes[0]),
                IterDim(w.dims[2], x.sizes[2]),
                IterDim(w.dims[1], w.sizes[1], splittable=False, reduction=True))
        # Per point of (l, s, b, units, k): four multiply-adds, one per gate.
        return IterationSpace(dims, ((x.dims[0], x.dims[1], None), w.dims),
                              (x.dims[0], x.dims[1], None),
                              flops_forward=8.0, flops_backward=16.0)


@irdl_op_definition
class ConcatOp(LayerOp):
    """`%y = dnn.concat %a, %b : (...) -> ...`: joins along the one dim where the
    operands' names differ from the result's; that dim is not split."""

    name = "dnn.concat"

    def infer(self) -> NamedShape:
        return shapes.concat_shape(self.input_shapes, self.result_shape)

    def iteration_space(self) -> IterationSpace:
        y = self.result_shape
        axis = shapes.concat_axis(self.input_shapes, y)
        return _identity_space(y, self.input_shapes, 0.0, 0.0, fixed=(y.dims[axis],))


@irdl_op_definition
class ReshapeOp(LayerOp):
    """`%y = dnn.reshape %x : (...) -> ...`: merge, split or rename consecutive dims.

    Dims that pass through unchanged or are renamed one-to-one can be split; merged
    or split groups cannot.
    """

    name = "dnn.reshape"

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        if len(inputs) != 1:
            raise ShapeError(f"reshape takes 1 operand, got {len(inputs)}")
        return shapes.reshape_shape(inputs[0], self.result_shape)

    def iteration_space(self) -> IterationSpace:
        (x,) = self.input_shapes
        y = self.result_shape
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
class SoftmaxCrossEntropyOp(LayerOp):
    """Mean softmax cross-entropy loss: `%l = dnn.softmax_cross_entropy %z, %t over [c]`."""

    name = "dnn.softmax_cross_entropy"

    over = prop_def(ArrayAttr[StringAttr])

    CLAUSES: ClassVar[Clauses] = (("over", "over", "dims"),)

    def infer(self) -> NamedShape:
        inputs = self.input_shapes
        over = self.dims_prop("over")
        if len(inputs) != 2:
            raise ShapeError(f"softmax_cross_entropy takes 2 operands (logits, labels), "
                             f"got {len(inputs)}")
        if len(over) != 1:
            raise ShapeError(f"softmax_cross_entropy is over one class dimension, "
                             f"got [{', '.join(over)}]")
        return shapes.cross_entropy_shape(inputs[0], inputs[1], over[0])

    def iteration_space(self) -> IterationSpace:
        logits, labels = self.input_shapes
        return IterationSpace(
            tuple(IterDim(d, s, reduction=True)
                  for d, s in zip(logits.dims, logits.sizes, strict=True)),
            (logits.dims, labels.dims), (), flops_forward=5.0, flops_backward=2.0)


# --- Training: gradients and updates (written by pase-autodiff) ---------------------


def layer_class(name: str) -> type[LayerOp]:
    """The forward layer op class named `name` (e.g. "dnn.relu")."""
    for op in LAYER_OPS:
        if op.name == name:
            return op
    raise VerifyException(f"unknown layer op '{name}'")


@irdl_op_definition
class VjpOp(IRDLOperation):
    """The gradients of some operands of a forward layer (its vector-Jacobian product).

    Operands: the forward layer's operands, its result, and the gradient of its result
    (absent for the loss, whose gradient is 1). `wrt` lists the forward operands whose
    gradients are the results. The forward layer's kind and clauses follow in its own
    syntax, so the op has the forward layer's iteration space and takes its
    configuration:

        %dx, %dw = dnn.vjp "dnn.conv2d" [0, 1] (%x, %w) -> %y grad %dy stride 1 padding 0
        %dz = dnn.vjp "dnn.pool2d" max [0] (%z) -> %p grad %dp window [2, 2] stride 2 ...
            : (!dnn.tensor<...>, !dnn.tensor<...>), !dnn.tensor<...> -> (..., ...)
    """

    name = "dnn.vjp"

    inputs = var_operand_def(TensorType)
    result = operand_def(TensorType)
    cotangent = opt_operand_def(TensorType)
    gradients = var_result_def(TensorType)
    forward = prop_def(StringAttr)
    wrt = prop_def(ArrayAttr[IntAttr])
    kind = opt_prop_def(StringAttr)
    over = opt_prop_def(ArrayAttr[StringAttr])
    window = opt_prop_def(ArrayAttr[IntAttr])
    stride = opt_prop_def(IntAttr)
    padding = opt_prop_def(ArrayAttr[IntAttr])

    traits = traits_def(HasParent(GraphOp))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    FORWARD_PROPERTIES: ClassVar[tuple[str, ...]] = ("kind", "over", "window", "stride",
                                                      "padding")

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(i.data for i in self.wrt.data)

    @property
    def forward_class(self) -> type[LayerOp]:
        return layer_class(self.forward.data)

    def forward_properties(self) -> dict[str, Attribute]:
        return {name: value for name, value in self.properties.items()
                if name in self.FORWARD_PROPERTIES}

    def probe(self) -> LayerOp:
        """A detached forward layer op with this op's operands and properties; call
        `drop_all_references()` on it when done."""
        return self.forward_class.create(operands=list(self.inputs),
                                         result_types=[self.result.type],
                                         properties=self.forward_properties())

    def iteration_space(self) -> IterationSpace:
        probe = self.probe()
        try:
            return probe.iteration_space()
        finally:
            probe.drop_all_references()

    def verify_(self) -> None:
        indices = self.indices
        if len(indices) != len(self.gradients):
            raise VerifyException(f"dnn.vjp has {len(self.gradients)} results for "
                                  f"{len(indices)} operands in wrt")
        for index, gradient in zip(indices, self.gradients, strict=True):
            if not 0 <= index < len(self.inputs):
                raise VerifyException(f"dnn.vjp wrt index {index} is not a forward operand")
            if gradient.type != self.inputs[index].type:
                raise VerifyException(f"the gradient of operand {index} must have its type "
                                      f"{self.inputs[index].type}")
        if self.cotangent is not None and self.cotangent.type != self.result.type:
            raise VerifyException("the incoming gradient must have the forward result's type")
        if self.cotangent is None and shape_of(self.result).dims:
            raise VerifyException("only a scalar loss may leave out its incoming gradient")
        probe = self.probe()
        try:
            probe.verify_()
            if (config := self.attributes.get(CONFIG_ATTR_NAME)) is not None:
                probe.verify_config(config)
        finally:
            probe.drop_all_references()

    @classmethod
    def parse(cls, parser: Parser) -> VjpOp:
        forward = parser.parse_str_literal(" (the forward op name)")
        try:
            forward_class = layer_class(forward)
        except VerifyException as error:
            parser.raise_error(str(error))
        kind = None
        if forward_class.KIND is not None:
            kind = parser.parse_identifier(context_msg=f" ({' or '.join(forward_class.KIND[1])})")
        wrt = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
        start = parser.pos
        inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                   parser.parse_unresolved_operand)
        parser.parse_punctuation("->")
        result = parser.parse_unresolved_operand()
        cotangent = (parser.parse_unresolved_operand()
                     if parser.parse_optional_keyword("grad") is not None else None)
        properties = forward_class.parse_clauses(parser)
        if kind is not None:
            properties["kind"] = StringAttr(kind)
        properties["forward"] = StringAttr(forward)
        properties["wrt"] = ArrayAttr(IntAttr(i) for i in wrt)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        input_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                        parser.parse_type)
        parser.parse_punctuation(",")
        result_type = parser.parse_type()
        parser.parse_punctuation("->")
        gradient_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                           parser.parse_type)
        operands = [parser.resolve_operands(inputs, input_types, start),
                    [parser.resolve_operand(result, result_type)],
                    [] if cotangent is None else [parser.resolve_operand(cotangent,
                                                                         result_type)]]
        return cls.build(operands=operands, result_types=[gradient_types],
                         properties=properties, attributes=attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.forward.data}"')
        if self.kind is not None:
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" [")
        printer.print_string(", ".join(str(i) for i in self.indices) + "] (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") -> ")
        printer.print_operand(self.result)
        if self.cotangent is not None:
            printer.print_string(" grad ")
            printer.print_operand(self.cotangent)
        self.forward_class.print_clauses(printer, self.properties)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([v.type for v in self.inputs], printer.print_attribute)
        printer.print_string("), ")
        printer.print_attribute(self.result.type)
        printer.print_string(" -> (")
        printer.print_list([v.type for v in self.gradients], printer.print_attribute)
        printer.print_string(")")


@irdl_op_definition
class SgdOp(IRDLOperation):
    """One SGD step on a parameter: `%w2 = dnn.sgd %w, %dw lr 0.01 : !dnn.tensor<...>`."""

    name = "dnn.sgd"

    param = operand_def(TensorType)
    gradient = operand_def(TensorType)
    output = result_def(TensorType)
    lr = prop_def(FloatAttr)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = ("$param `,` $gradient `lr` $lr attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, param: SSAValue, gradient: SSAValue, lr: float):
        super().__init__(operands=[param, gradient], result_types=[param.type],
                         properties={"lr": FloatAttr(lr, f64)})

    def verify_(self) -> None:
        if not self.param.type == self.gradient.type == self.output.type:
            raise VerifyException("dnn.sgd needs the parameter, its gradient and the result "
                                  "to have one type")


LAYER_OPS: tuple[type[LayerOp], ...] = (
    EinsumOp, Conv2dOp, Pool2dOp, ReluOp, GeluOp, TanhOp, SigmoidOp, ExpOp, AddOp, SubOp,
    MulOp, SoftmaxOp, LayerNormOp, BatchNormOp, ReduceOp, EmbeddingOp, LstmOp, ConcatOp,
    ReshapeOp, SoftmaxCrossEntropyOp,
)

Dnn = Dialect("dnn", [GraphOp, ReturnOp, InputOp, ParamOp, *LAYER_OPS, VjpOp, SgdOp],
              [TensorType])
