"""`!dist.tensor`: a value of an SPMD program, with its global named shape, its local
(per-device) shape, its grid, its split axes and its partial-sum axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IntAttr,
    StringAttr,
    i16,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from pase.dialect.dnn import ELEMENT_TYPES, LAYER_OPS, element_name
from pase.dialect.dnn.types import checked_parameters

KERNELS = frozenset({*(op.name for op in LAYER_OPS), "dnn.vjp", "dnn.sgd", "dnn.update"})
"""What a `dist.layer` can run: a dnn layer op, a vector-Jacobian product or an optimizer
step (SGD, or momentum and Adam with their state)."""


def axes_attr(axes: Sequence[int]) -> DenseArrayBase:
    """Grid axes as MLIR's `shard` spells them: an i16 array printed `[0, 1]`."""
    return DenseArrayBase.from_list(i16, list(axes))


def _int_lists(data: Sequence[Sequence[int]]) -> ArrayAttr[ArrayAttr[IntAttr]]:
    return ArrayAttr(ArrayAttr(IntAttr(i) for i in inner) for inner in data)


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A distributed tensor: global named shape, local shape, sharding, partial sums.

    `!dist.tensor<[b = 64, h = 1024] local [16, 512], f32 on @g split [[0], [1]]>`; with
    `partial [2]` the local blocks are partial sums still to be all-reduced over grid
    axis 2. Each grid axis splits at most one dim or holds partial sums, and each local
    size is the size divided by the devices along the grid axes that split it (on
    `shard.grid @g(shape = 4x2x2)` above, 64 / 4 and 1024 / 2); the ops that use the type
    check that last rule against their program's grid.
    """

    name = "dist.tensor"

    dims: ArrayAttr[StringAttr]
    sizes: ArrayAttr[IntAttr]
    local: ArrayAttr[IntAttr]
    element_type: Attribute
    grid: FlatSymbolRefAttr
    split_axes: ArrayAttr[ArrayAttr[IntAttr]]
    partial: ArrayAttr[IntAttr]

    def __init__(self, dims: Sequence[str], sizes: Sequence[int], local: Sequence[int],
                 element: str, grid: str, split_axes: Sequence[Sequence[int]],
                 partial: Sequence[int] = ()):
        super().__init__(ArrayAttr(StringAttr(d) for d in dims),
                         ArrayAttr(IntAttr(s) for s in sizes),
                         ArrayAttr(IntAttr(s) for s in local), ELEMENT_TYPES[element],
                         FlatSymbolRefAttr(grid), _int_lists(split_axes),
                         ArrayAttr(IntAttr(a) for a in partial))

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d.data for d in self.dims.data)

    @property
    def global_shape(self) -> tuple[int, ...]:
        return tuple(s.data for s in self.sizes.data)

    @property
    def local_shape(self) -> tuple[int, ...]:
        return tuple(s.data for s in self.local.data)

    @property
    def element(self) -> str:
        return element_name(self.element_type)

    @property
    def grid_name(self) -> str:
        return self.grid.root_reference.data

    @property
    def axes(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(i.data for i in inner.data) for inner in self.split_axes.data)

    @property
    def partial_axes(self) -> tuple[int, ...]:
        return tuple(a.data for a in self.partial.data)

    def with_partial(self, partial: Sequence[int]) -> TensorType:
        return TensorType(self.dim_names, self.global_shape, self.local_shape, self.element,
                          self.grid_name, self.axes, partial)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_dim() -> tuple[str, int]:
            dim = parser.parse_identifier()
            parser.parse_punctuation("=")
            return dim, parser.parse_integer(allow_boolean=False)

        def parse_ints() -> list[int]:
            return parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))

        start = parser.pos
        with parser.in_angle_brackets():
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_dim)
            parser.parse_keyword("local")
            local = parse_ints()
            parser.parse_punctuation(",")
            element_type = parser.parse_type()
            parser.parse_keyword("on")
            grid = parser.parse_symbol_name()
            parser.parse_keyword("split")
            axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_ints)
            partial = parse_ints() if parser.parse_optional_keyword("partial") else []
            end = parser.pos + 1  # just past the closing '>'
        parameters = (ArrayAttr(StringAttr(d) for d, _ in dims),
                      ArrayAttr(IntAttr(s) for _, s in dims), ArrayAttr(IntAttr(s) for s in local),
                      element_type, FlatSymbolRefAttr(grid), _int_lists(axes),
                      ArrayAttr(IntAttr(a) for a in partial))
        return checked_parameters(cls, parameters, parser, start, end)

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(f"{d} = {s}" for d, s in zip(self.dim_names, self.global_shape,
                                                        strict=True))
        local = ", ".join(str(s) for s in self.local_shape)
        axes = ", ".join("[" + ", ".join(str(a) for a in inner) + "]" for inner in self.axes)
        text = (f"<[{dims}] local [{local}], {self.element} on @{self.grid_name} "
                f"split [{axes}]")
        if self.partial_axes:
            text += " partial [" + ", ".join(str(a) for a in self.partial_axes) + "]"
        printer.print_string(text + ">")

    def verify(self) -> None:
        """The rules that need no grid; `verify_on_grid` checks the rest."""
        rank = len(self.dims.data)
        if not len(self.sizes.data) == len(self.local.data) == len(self.split_axes.data) == rank:
            raise VerifyException("!dist.tensor needs a size, a local size and split axes "
                                  "per dimension")
        element_name(self.element_type)
        names = self.dim_names
        for index, name in enumerate(names):
            if name in names[:index]:
                raise VerifyException(f"dimension '{name}' appears twice in a !dist.tensor")
        for name, size, local in zip(names, self.global_shape, self.local_shape, strict=True):
            if size < 1 or local < 1:
                raise VerifyException(f"dimension '{name}' has size {size} and local size "
                                      f"{local}; both must be positive")
        splitting: dict[int, str] = {}
        for name, size, local, axes in zip(names, self.global_shape, self.local_shape,
                                           self.axes, strict=True):
            for axis in axes:
                if axis < 0:
                    raise VerifyException(f"dimension '{name}' is split along grid axis "
                                          f"{axis}; grid axes are 0 or more")
                if axis in splitting:
                    raise VerifyException(
                        f"grid axis {axis} splits both '{splitting[axis]}' and '{name}'"
                        if splitting[axis] != name else
                        f"grid axis {axis} appears twice in the split of '{name}'")
                splitting[axis] = name
            if not axes and local != size:
                raise VerifyException(f"dimension '{name}' is not split, so its local size "
                                      f"is its size {size}, not {local}")
        partial = self.partial_axes
        for index, axis in enumerate(partial):
            if axis < 0:
                raise VerifyException(f"partial sums over grid axis {axis}; grid axes are 0 "
                                      "or more")
            if axis in partial[:index]:
                raise VerifyException(f"grid axis {axis} appears twice in the partial axes")
            if axis in splitting:
                raise VerifyException(f"grid axis {axis} both splits '{splitting[axis]}' and "
                                      "holds partial sums; a grid axis does one or the other")

    def verify_on_grid(self, grid_shape: Sequence[int]) -> None:
        """The rules that need the shape of the grid: split and partial axes exist, and each
        local size is the size divided by the devices along its split axes."""
        rank = len(grid_shape)
        axes_text = "axis" if rank == 1 else "axes"
        for name, size, local, axes in zip(self.dim_names, self.global_shape,
                                           self.local_shape, self.axes, strict=True):
            for axis in axes:
                if axis >= rank:
                    raise VerifyException(f"dimension '{name}' is split along grid axis "
                                          f"{axis}, but @{self.grid_name} has {rank} "
                                          f"{axes_text}")
            parts = prod(grid_shape[a] for a in axes)
            along = ", ".join(str(a) for a in axes)
            where = (f"{parts} ways along grid {'axes' if len(axes) > 1 else 'axis'} {along} "
                     f"of @{self.grid_name}")
            if size % parts:
                raise VerifyException(f"dimension '{name}' of size {size} does not split "
                                      f"evenly {where}")
            if local * parts != size:
                raise VerifyException(f"dimension '{name}' of size {size} is split {where}, "
                                      f"so its local size is {size // parts}, not {local}")
        for axis in self.partial_axes:
            if axis >= rank:
                raise VerifyException(f"partial sums over grid axis {axis}, but "
                                      f"@{self.grid_name} has {rank} {axes_text}")


def local_shape(sizes: Sequence[int], split_axes: Sequence[Sequence[int]],
                grid_shape: Sequence[int]) -> tuple[int, ...]:
    """Each dim's size divided by the product of the grid axes it is split along."""
    return tuple(size // prod(grid_shape[a] for a in axes)
                 for size, axes in zip(sizes, split_axes, strict=True))
