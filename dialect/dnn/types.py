"""The `!dnn.tensor` type: a tensor as named dims with sizes and an element type.

    !dnn.tensor<[b = 64, d = 256], f32>
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    StringAttr,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from pase.core.shapes import ELEMENTS, MAX_ELEMENTS, MAX_RANK, NamedShape

ELEMENT_TYPES: dict[str, Attribute] = dict(zip(ELEMENTS, (f32, f64, i32, i64), strict=True))
"""The xDSL type of each element type of `pase.core.shapes.ELEMENTS`, in its order."""


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
        return checked_parameters(cls, parameters, parser, start, end)

    def print_parameters(self, printer: Printer) -> None:
        shape = self.shape
        dims = ", ".join(f"{d} = {s}" for d, s in zip(shape.dims, shape.sizes, strict=True))
        printer.print_string(f"<[{dims}], {shape.element}>")

    def verify(self) -> None:
        if len(self.dims.data) != len(self.sizes.data):
            raise VerifyException("!dnn.tensor needs one size per dimension")
        if len(self.dims.data) > MAX_RANK:
            raise VerifyException(f"a !dnn.tensor of {len(self.dims.data)} dimensions has too "
                                  f"many; pase handles at most {MAX_RANK}")
        names = [d.data for d in self.dims.data]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise VerifyException(f"dimension '{name}' appears twice in a !dnn.tensor")
        for size in self.sizes.data:
            if size.data < 1:
                raise VerifyException(f"dimension sizes must be positive, got {size.data}")
        elements = prod(size.data for size in self.sizes.data)
        if elements > MAX_ELEMENTS:
            raise VerifyException(f"a !dnn.tensor of {elements:,} elements is too large; pase "
                                  "handles at most 2^53 per tensor")
        element_name(self.element_type)


def shape_of(value: SSAValue) -> NamedShape:
    if not isinstance(value.type, TensorType):
        raise VerifyException(f"expected a !dnn.tensor, got {value.type}")
    return value.type.shape


def checked_parameters(cls: type[ParametrizedAttribute], parameters: tuple[Attribute, ...],
                       parser: AttrParser, start: int, end: int) -> tuple[Attribute, ...]:
    """`parameters` once they make a valid `cls`; otherwise the verifier's message as a
    parse error over `start:end`, so an invalid type is reported where it is written."""
    try:
        cls.new(parameters)
    except VerifyException as error:
        parser.raise_error(str(error), start, end)
    return parameters
