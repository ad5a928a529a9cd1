"""The `dist` dialect: one SPMD program over p devices, with explicit communication.

Follows MLIR's `shard` dialect where the concepts match: device grids are `shard.grid`
symbols (xDSL's op), a tensor dim is split along a grid axis (`split_axes`, as in
`shard.sharding`), and collectives are spelled `dist.all_reduce %x on @grid grid_axes =
[1]` like `shard.all_reduce`. What `shard` lacks and pase needs: a value type that
carries its global named shape, its local (per-device) shape and its sharding, partial
sums, and `dist.redistribute` between layouts on different grids.

A grid's devices are ids 0..q-1 in row-major order; devices q..p-1 hold nothing of the
values on that grid and skip its ops.

    dist.program @mlp(devices = 4) {
      shard.grid @grid4(shape = 4)
      %x = dist.input "x" : !dist.tensor<[b = 64, d = 256] local [64, 256], f32
                                         on @grid4 split [[], []]>
      %h = dist.layer "dnn.einsum"(%x, %w1) stats [] props {} tag "h"
          : (...) -> !dist.tensor<... partial [0]>
      %h_sum = dist.all_reduce %h on @grid4 grid_axes = [0] tag "h" : ... -> ...
      %h_a = dist.redistribute %h_sum tag "h->a" : !dist.tensor<...> -> !dist.tensor<...>
      dist.return %l : ...
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    I16,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FlatSymbolRefAttr,
    IntAttr,
    StringAttr,
    i16,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from pase.dialect.dnn import ELEMENT_TYPES, LAYER_OPS, element_name

KERNELS = frozenset({*(op.name for op in LAYER_OPS), "dnn.vjp", "dnn.sgd"})
"""What a `dist.layer` can run: a dnn layer op, a vector-Jacobian product or an SGD step."""


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
        try:  # report an invalid type where it is written, not without a location
            cls.new(parameters)
        except VerifyException as error:
            parser.raise_error(str(error), start, end)
        return parameters

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


def _grid_text(shape: Sequence[int]) -> str:
    return "x".join(str(s) if s >= 0 else "?" for s in shape)


def _check_grid(grid: shard.GridOp) -> tuple[int, ...]:
    shape = tuple(grid.shape.get_values())
    if any(size < 1 for size in shape):
        raise VerifyException(f"shard.grid @{grid.sym_name.data} has shape "
                              f"{_grid_text(shape)}; every grid axis needs at least 1 device")
    return shape


def _program_of(op: Operation) -> ProgramOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ProgramOp):
        parent = parent.parent_op()
    return parent


def grid_shape(op: Operation, grid: FlatSymbolRefAttr) -> tuple[int, ...] | None:
    """The shape of the `shard.grid` that `grid` names in `op`'s `dist.program` (None for
    an op outside a program, which `HasParent` reports)."""
    program = _program_of(op)
    if program is None:
        return None
    found = SymbolTable.lookup_symbol(program, grid)
    if not isinstance(found, shard.GridOp):
        raise VerifyException(f"@{grid.root_reference.data} is not a shard.grid of "
                              f"dist.program @{program.sym_name.data}; declare it there with "
                              f"`shard.grid @{grid.root_reference.data}(shape = ...)`")
    return _check_grid(found)


def verify_values(op: Operation) -> None:
    """Check the `!dist.tensor` of every operand and result of `op` against its grid."""
    values = [*((value, _position("operand", index, len(op.operands)))
                for index, value in enumerate(op.operands)),
              *((value, _position("result", index, len(op.results)))
                for index, value in enumerate(op.results))]
    for value, position in values:
        tensor = value.type
        if not isinstance(tensor, TensorType):
            continue
        try:
            shape = grid_shape(op, tensor.grid)
            if shape is not None:
                tensor.verify_on_grid(shape)
        except VerifyException as error:
            raise VerifyException(f"{position}: {error}") from None


def _position(kind: str, index: int, count: int) -> str:
    """`the result`, `operand 2`: which value of an op a message is about."""
    return f"the {kind}" if count == 1 else f"{kind} {index}"


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """The SPMD program of one graph: `dist.program @mlp(devices = 8) { ... }`."""

    name = "dist.program"

    sym_name = prop_def(StringAttr)
    devices = prop_def(IntAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove())

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name()
        parser.parse_punctuation("(")
        parser.parse_keyword("devices")
        parser.parse_punctuation("=")
        devices = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        op = cls.create(properties={"sym_name": name, "devices": IntAttr(devices)},
                        regions=[parser.parse_region()])
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f"(devices = {self.devices.data})")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        devices = self.devices.data
        if devices < 1:
            raise VerifyException(f"dist.program @{self.sym_name.data} runs on {devices} "
                                  "devices; it needs at least 1")
        if self.body.block.args:
            raise VerifyException("the body of a dist.program takes no arguments; inputs "
                                  "and parameters enter through dist.input and dist.param")
        for grid in self.body.block.ops:
            if not isinstance(grid, shard.GridOp):
                continue
            if (size := prod(_check_grid(grid))) > devices:
                raise VerifyException(f"shard.grid @{grid.sym_name.data} has {size} devices "
                                      f"but dist.program @{self.sym_name.data} runs on "
                                      f"{devices}")


class _ValueSource(IRDLOperation):
    """A training input or parameter, already laid out: each device holds its block."""

    value_name = prop_def(StringAttr)
    output = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "$value_name attr-dict `:` type($output)"

    def verify_(self) -> None:
        verify_values(self)
        output = self.output.type
        assert isinstance(output, TensorType)
        if output.partial_axes:
            raise VerifyException(f"a {self.name} arrives complete, not as partial sums; only "
                                  "a dist.layer leaves partial sums")


@irdl_op_definition
class InputOp(_ValueSource):
    """`%x = dist.input "x" : !dist.tensor<...>`"""

    name = "dist.input"


@irdl_op_definition
class ParamOp(_ValueSource):
    """`%w = dist.param "w1" : !dist.tensor<...>`"""

    name = "dist.param"


@irdl_op_definition
class LayerOp(IRDLOperation):
    """One device-local step of a `dnn` op (forward, `dnn.vjp` or `dnn.sgd`) on the
    blocks each device of the grid holds; `stats_axes` are the grid axes the kernel's
    own reductions (softmax and norm statistics) or gathers (LSTM state) run over.

    `%h = dist.layer "dnn.einsum" (%x, %w) {tag = "h"} : (...) -> !dist.tensor<...>`;
    the dnn op's properties are in `op_properties`.
    """

    name = "dist.layer"

    kernel = prop_def(StringAttr)
    op_properties = prop_def(DictionaryAttr)
    stats_axes = prop_def(DenseArrayBase[I16])
    tag = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = ("$kernel `(` $inputs `)` `stats` $stats_axes `props` $op_properties "
                       "`tag` $tag attr-dict `:` functional-type($inputs, $outputs)")

    def verify_(self) -> None:
        if self.kernel.data not in KERNELS:
            raise VerifyException(f"unknown kernel '{self.kernel.data}'; a dist.layer runs a "
                                  "dnn layer op, dnn.vjp or dnn.sgd")
        if not self.outputs:
            raise VerifyException("a dist.layer produces at least one value")
        verify_values(self)
        types = [t for t in (*self.inputs.types, *self.outputs.types)
                 if isinstance(t, TensorType)]
        for value in self.inputs:
            assert isinstance(value.type, TensorType)
            if value.type.partial_axes:
                raise VerifyException("a dist.layer cannot read partial sums; all-reduce "
                                      "them first")
        grids = {t.grid_name for t in types}
        if len(grids) > 1:
            raise VerifyException("a dist.layer runs on one grid, got "
                                  + ", ".join(f"@{g}" for g in sorted(grids)))
        shape = grid_shape(self, types[0].grid)
        stats = tuple(self.stats_axes.get_values())
        for index, axis in enumerate(stats):
            if axis in stats[:index]:
                raise VerifyException(f"stats axis {axis} appears twice")
            if shape is not None and not 0 <= axis < len(shape):
                raise VerifyException(f"stats axis {axis} is not an axis of "
                                      f"@{types[0].grid_name}, which has {len(shape)} "
                                      f"{'axis' if len(shape) == 1 else 'axes'}")


def _source_target(op: IRDLOperation) -> tuple[TensorType, TensorType]:
    """The input and result types of a one-in, one-out op (checked by their constraints)."""
    source, target = op.operands[0].type, op.results[0].type
    assert isinstance(source, TensorType)
    assert isinstance(target, TensorType)
    return source, target


@irdl_op_definition
class AllReduceOp(IRDLOperation):
    """Sum partial blocks over grid axes (ring all-reduce), as `shard.all_reduce`:
    `%s = dist.all_reduce %h on @g grid_axes = [1] tag "h" : ... -> ...`."""

    name = "dist.all_reduce"

    input = operand_def(TensorType)
    grid = prop_def(FlatSymbolRefAttr)
    grid_axes = prop_def(DenseArrayBase[I16])
    tag = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = ("$input `on` $grid `grid_axes` `=` $grid_axes `tag` $tag attr-dict "
                       "`:` type($input) `->` type($result)")

    def verify_(self) -> None:
        verify_values(self)
        source, target = _source_target(self)
        if self.grid != source.grid:
            raise VerifyException(f"dist.all_reduce runs on @{source.grid_name}, the grid of "
                                  f"its input, not @{self.grid.root_reference.data}")
        axes = tuple(self.grid_axes.get_values())
        if sorted(axes) != sorted(source.partial_axes) or target.partial_axes:
            raise VerifyException("dist.all_reduce must sum exactly the partial axes of its "
                                  "input")
        if source.with_partial(()) != target:
            raise VerifyException("dist.all_reduce keeps the layout of its input")


@irdl_op_definition
class RedistributeOp(IRDLOperation):
    """Move a tensor between layouts (grids or split axes): every device receives the
    part of its new block it does not hold already.
    `%y = dist.redistribute %x tag "h->a" : !dist.tensor<...> -> !dist.tensor<...>`."""

    name = "dist.redistribute"

    input = operand_def(TensorType)
    tag = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "$input `tag` $tag attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        verify_values(self)
        source, target = _source_target(self)
        if source.partial_axes or target.partial_axes:
            raise VerifyException("dist.redistribute moves complete blocks, not partial sums")
        if (source.dim_names, source.global_shape) != (target.dim_names, target.global_shape):
            raise VerifyException("dist.redistribute keeps the global shape")
        if source.element_type != target.element_type:
            raise VerifyException(f"dist.redistribute keeps the element type, got "
                                  f"{source.element} -> {target.element}")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`dist.return %l, %w_next : ...`"""

    name = "dist.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(ProgramOp))
    assembly_format = "$values attr-dict `:` type($values)"

    def verify_(self) -> None:
        verify_values(self)
        for index, value in enumerate(self.values):
            assert isinstance(value.type, TensorType)
            if value.type.partial_axes:
                raise VerifyException(f"operand {index} is a partial sum; all-reduce it "
                                      "before dist.return")


Dist = Dialect("dist", [ProgramOp, InputOp, ParamOp, LayerOp, AllReduceOp, RedistributeOp,
                        ReturnOp], [TensorType])
