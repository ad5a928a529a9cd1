"""The ops of the `dist` dialect: `dist.program` and the values, layers and collectives
in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import ClassVar

from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    I16,
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FlatSymbolRefAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Operation
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptPropertyDef,
    VarConstraint,
    VerificationContext,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from pase.core.placement import check_devices
from pase.core.shapes import ShapeError
from pase.dialect import dnn
from pase.dialect.dist.quoted import Quoted
from pase.dialect.dist.types import KERNELS, TensorType
from pase.dialect.dnn import LAYER_OPS
from pase.dialect.traits import OrderedDataflow, VerifyExceptionAt


def _grid_text(shape: Sequence[int]) -> str:
    return "x".join(str(s) if s >= 0 else "?" for s in shape)


def _check_grid(grid: shard.GridOp) -> tuple[int, ...]:
    shape = tuple(grid.shape.get_values())
    if any(size < 1 for size in shape):
        raise VerifyException(f"shard.grid @{grid.sym_name.data} has shape "
                              f"{_grid_text(shape)}; every grid axis needs at least 1 device")
    return shape


FIRST_DEVICE = "dist.first_device"
"""The attribute of a `shard.grid` that places it on devices first..first+q-1 instead
of 0..q-1: a pipeline stage's grid, `shard.grid @grid2x2_at4(shape = 2x2)
{dist.first_device = 4 : i64}`."""

MICROBATCH = "dist.microbatch"
"""The micro-batch (0-based) an op of a pipelined program works on, `{dist.microbatch = 2 :
i64}`; the program's `dist.microbatches` says how many there are."""

PHASE = "dist.phase"
"""Which part of a pipelined step an op belongs to: "forward", "backward" or "update"."""

PHASES = ("forward", "backward", "update")

PIPELINE_ATTRS = ("dist.stages", "dist.microbatches")
"""The integer attributes of a pipelined `dist.program`: its stages and micro-batches."""


def first_device(grid: shard.GridOp) -> int:
    """The first device of `grid` (its `dist.first_device`, 0 without one)."""
    attr = grid.attributes.get(FIRST_DEVICE)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def _int_attribute(op: Operation, name: str, low: int, high: int, what: str) -> None:
    """Check that `op`'s attribute `name`, if present, is an integer in [low, high)."""
    attr = op.attributes.get(name)
    if attr is None:
        return
    if not isinstance(attr, IntegerAttr) or not low <= attr.value.data < high:
        raise VerifyException(f"{name} must be an integer {what}, got {attr}")


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

    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove(),
                        HasParent(ModuleOp), OrderedDataflow(("dist.", "shard.grid")))

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
        try:
            check_devices(devices)
        except ValueError as error:
            raise VerifyException(f"dist.program @{self.sym_name.data}: {error}") from None
        if self.body.block.args:
            raise VerifyException("the body of a dist.program takes no arguments; inputs "
                                  "and parameters enter through dist.input and dist.param")
        for name in PIPELINE_ATTRS:
            _int_attribute(self, name, 1, devices + 1 if name == "dist.stages" else 1 << 53,
                           "at least 1" + (" and at most the devices"
                                           if name == "dist.stages" else ""))
        micro = self.attributes.get("dist.microbatches")
        count = micro.value.data if isinstance(micro, IntegerAttr) else 1
        for op in self.body.block.ops:
            if not isinstance(op, shard.GridOp):
                try:
                    _int_attribute(op, MICROBATCH, 0, count,
                                   f"from 0 to {count - 1}, the program's micro-batches")
                    phase = op.attributes.get(PHASE)
                    if phase is not None and not (isinstance(phase, StringAttr)
                                                  and phase.data in PHASES):
                        raise VerifyException(f"{PHASE} must be one of "
                                              f"{', '.join(map(repr, PHASES))}, got {phase}")
                except VerifyException as error:
                    raise VerifyExceptionAt(op, str(error)) from None
                continue
            grid = op
            _int_attribute(grid, FIRST_DEVICE, 0, devices, "from 0 to the devices - 1")
            first = first_device(grid)
            if (size := prod(_check_grid(grid))) + first > devices:
                at = f" from device {first}" if first else ""
                raise VerifyException(f"shard.grid @{grid.sym_name.data} has {size} devices"
                                      f"{at} but dist.program @{self.sym_name.data} runs on "
                                      f"{devices}")


class _ValueSource(IRDLOperation):
    """A training input or parameter, already laid out: each device holds its block."""

    value_name = prop_def(StringAttr)
    output = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = "custom<Quoted>($value_name) attr-dict `:` type($output)"

    def verify_(self) -> None:
        verify_values(self)
        output = self.output.type
        assert isinstance(output, TensorType)
        if output.partial_axes:
            raise VerifyException(f"a {self.name} arrives complete, not as partial sums; only "
                                  "a dist.layer leaves partial sums")


@irdl_op_definition
class InputOp(_ValueSource):
    """`%x = dist.input "x" : !dist.tensor<...>`; a micro-batch reads a slice of the
    input: `dist.input "x" at [16, 0] : !dist.tensor<[b = 16, d = 256] ...>` is rows
    16..31 of an input whose whole value may be larger (`at`: where the slice starts,
    per dim)."""

    name = "dist.input"

    at = opt_prop_def(DenseArrayBase[I64])

    assembly_format = "custom<Quoted>($value_name) (`at` $at^)? attr-dict `:` type($output)"

    def verify_(self) -> None:
        super().verify_()
        if self.at is None:
            return
        starts = self.at.get_values()
        output = self.output.type
        assert isinstance(output, TensorType)
        if len(starts) != len(output.global_shape) or any(s < 0 for s in starts):
            raise VerifyException(f"`at` gives where the slice starts in each of the "
                                  f"{len(output.global_shape)} dims, each at least 0; got "
                                  f"{list(starts)}")

    @property
    def starts(self) -> tuple[int, ...]:
        """Where the input's slice starts per dim (all 0 without `at`)."""
        output = self.output.type
        assert isinstance(output, TensorType)
        return (tuple(self.at.get_values()) if self.at is not None
                else (0,) * len(output.global_shape))


@irdl_op_definition
class ParamOp(_ValueSource):
    """`%w = dist.param "w1" : !dist.tensor<...>`"""

    name = "dist.param"


@irdl_op_definition
class LayerOp(IRDLOperation):
    """One device-local step of a `dnn` op (forward, `dnn.vjp` or `dnn.sgd`) on the
    blocks each device of the grid holds; `stats_axes` are the grid axes the kernel's
    own reductions (softmax and norm statistics) or gathers (LSTM state) run over.

    `%h = dist.layer "dnn.einsum"(%x, %w) stats [] props {} tag "h" : (...) -> ...`;
    the dnn op's properties are in `op_properties`. A `dnn.vjp` kernel reads the forward
    operands, the forward result and the incoming gradient, unless it is `seeded`: the
    vjp of the loss, whose incoming gradient is the seed 1 and not an operand:

        %dz = dist.layer "dnn.vjp"(%z, %t, %l) seeded stats [] props {...} tag "l" : ...

    In a pipeline of M micro-batches, a cross-entropy with an `ignore_index` reads after
    its logits and labels the labels of all M micro-batches: its mean divides by the
    count of labels the whole batch keeps.

    A layer on a grid smaller than the program runs on devices 0..q-1 of its grid; the
    others skip it (the grid's size and the program's `devices` say which).
    """

    name = "dist.layer"

    kernel = prop_def(StringAttr)
    op_properties = prop_def(DictionaryAttr)
    stats_axes = prop_def(DenseArrayBase[I16])
    tag = prop_def(StringAttr)
    seeded = opt_prop_def(UnitAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = ("custom<Quoted>($kernel) `(` $inputs `)` (`seeded` $seeded^)? "
                       "`stats` $stats_axes `props` $op_properties `tag` custom<Quoted>($tag) "
                       "attr-dict `:` functional-type($inputs, $outputs)")

    @property
    def is_seeded(self) -> bool:
        """Whether this is the loss's vjp, whose incoming gradient is 1 (no operand)."""
        return self.seeded is not None

    def verify_(self) -> None:
        if self.kernel.data not in KERNELS:
            raise VerifyException(f"unknown kernel '{self.kernel.data}'; a dist.layer runs a "
                                  "dnn layer op, dnn.vjp or dnn.sgd")
        if not self.outputs:
            raise VerifyException("a dist.layer produces at least one value")
        self._verify_properties()
        if self.kernel.data == "dnn.vjp":
            self._verify_vjp()
        if self.is_seeded:
            self._verify_seeded()
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
        self._verify_shape_rule()
        shape = grid_shape(self, types[0].grid)
        stats = tuple(self.stats_axes.get_values())
        for index, axis in enumerate(stats):
            if axis in stats[:index]:
                raise VerifyException(f"stats axis {axis} appears twice")
            if shape is not None and not 0 <= axis < len(shape):
                raise VerifyException(f"stats axis {axis} is not an axis of "
                                      f"@{types[0].grid_name}, which has {len(shape)} "
                                      f"{'axis' if len(shape) == 1 else 'axes'}")

    def _verify_properties(self) -> None:
        """`props` are the properties the kernel's dnn op declares, with their types, so the
        runtime's kernels read them as the dnn op would: `props {kind = 3}` on a
        `dnn.reduce` is an error here, not a crash of a worker."""
        kernel = self.kernel.data
        declared = kernel_class(kernel).get_irdl_definition().properties
        given = self.op_properties.data
        for name, definition in declared.items():
            if name == AttrSizedOperandSegments.attribute_name:
                continue  # a dist.layer's operands are one flat list
            if name not in given:
                if isinstance(definition, OptPropertyDef):
                    continue
                raise VerifyException(f"a {kernel} kernel needs the property '{name}' in "
                                      "its props")
            try:
                definition.constr.verify(given[name], VerificationContext())
            except VerifyException as error:
                raise VerifyException(f"property '{name}' of the {kernel} kernel: "
                                      f"{error}") from None
        for name in given:
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise VerifyException(f"a {kernel} kernel takes no property '{name}' (its "
                                      f"properties: {known})")

    def _verify_vjp(self) -> None:
        """A vjp kernel differentiates a dnn layer op with respect to some of its operands:
        its operands are the forward operands, the forward result and, unless seeded,
        the incoming gradient; one result per `wrt` index."""
        forward = self.op_properties.data["forward"]
        assert isinstance(forward, StringAttr)  # _verify_properties checked it
        if forward.data not in KERNELS - {"dnn.vjp", "dnn.sgd", "dnn.update"}:
            raise VerifyException(f"a dnn.vjp kernel differentiates a dnn layer op, not "
                                  f"'{forward.data}'")
        wrt = self.op_properties.data["wrt"]
        assert isinstance(wrt, ArrayAttr)
        indices = [index.data for index in wrt.data]
        forward_operands = len(self.inputs) - (1 if self.is_seeded else 2)
        for index in indices:
            if not 0 <= index < forward_operands:
                raise VerifyException(f"dnn.vjp wrt index {index} is not one of the "
                                      f"{max(forward_operands, 0)} forward operands")
        if len(indices) != len(self.outputs):
            raise VerifyException(f"a dnn.vjp kernel has one result per wrt index: "
                                  f"{len(indices)} indices, {len(self.outputs)} results")

    def _verify_seeded(self) -> None:
        if self.kernel.data != "dnn.vjp":
            raise VerifyException(f"only a dnn.vjp kernel is seeded, not {self.kernel.data}")
        result = self.inputs[-1].type if self.inputs else None
        if not isinstance(result, TensorType) or result.dim_names:
            raise VerifyException("a seeded dnn.vjp differentiates the loss: its last operand "
                                  "(the forward result) must be a scalar")

    def _verify_shape_rule(self) -> None:
        """A forward kernel's global shapes follow its dnn op's shape rule, as they would
        in the dnn dialect (the gradient kernels' shapes follow from their forward op)."""
        kernel = next((op for op in LAYER_OPS if op.name == self.kernel.data), None)
        if kernel is None or len(self.outputs) != 1:
            return
        operand_shapes = [dnn.TensorType(t.dim_names, t.global_shape, t.element_type).shape
                          for t in self.inputs.types if isinstance(t, TensorType)]
        if len(operand_shapes) > 2 and self.kernel.data == "dnn.softmax_cross_entropy":
            # A pipeline's micro-batch reads every micro-batch's labels after its own.
            if "ignore_index" not in self.op_properties.data or any(
                    shape != operand_shapes[1] for shape in operand_shapes[2:]):
                raise VerifyException("a dnn.softmax_cross_entropy kernel reads more than "
                                      "its logits and labels only with an ignore_index, "
                                      "and then the labels of each micro-batch of the step")
            operand_shapes = operand_shapes[:2]
        result = self.outputs[0].type
        assert isinstance(result, TensorType)
        result_shape = dnn.TensorType(result.dim_names, result.global_shape,
                                      result.element_type).shape
        try:
            expected = kernel.infer_shape(operand_shapes, dict(self.op_properties.data),
                                          result_shape)
        except ShapeError as error:
            raise VerifyException(f"{self.kernel.data}: {error}") from None
        if expected != result_shape:
            raise VerifyException(f"{self.kernel.data} of these operands gives "
                                  f"{dnn.TensorType.of(expected)}, not the result's "
                                  f"{dnn.TensorType.of(result_shape)}")


def kernel_class(kernel: str) -> type[IRDLOperation]:
    """The dnn op class a `dist.layer` kernel name (one of `KERNELS`) stands for.

        >>> kernel_class("dnn.sgd").name
        'dnn.sgd'
    """
    ops: tuple[type[IRDLOperation], ...] = (*LAYER_OPS, dnn.VjpOp, dnn.SgdOp, dnn.UpdateOp)
    return next(op for op in ops if op.name == kernel)


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
    custom_directives = (Quoted,)
    assembly_format = ("$input `on` $grid `grid_axes` `=` $grid_axes `tag` custom<Quoted>($tag) "
                       "attr-dict `:` type($input) `->` type($result)")

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
    custom_directives = (Quoted,)
    assembly_format = ("$input `tag` custom<Quoted>($tag) attr-dict `:` type($input) `->` "
                       "type($result)")

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
class AccumulateOp(IRDLOperation):
    """Add two values of one layout block by block, partial sums included: the running
    sum of a pipelined step's micro-batch gradients and losses,
    `%g1 = dist.accumulate %g0, %dw tag "z" : !dist.tensor<...>`."""

    name = "dist.accumulate"

    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    tag = prop_def(StringAttr)
    result = result_def(T)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = "$lhs `,` $rhs `tag` custom<Quoted>($tag) attr-dict `:` type($result)"

    def verify_(self) -> None:
        verify_values(self)


@irdl_op_definition
class ScaleOp(IRDLOperation):
    """Multiply every block by a constant: a mean loss and its gradients averaged over a
    step's micro-batches, `%l = dist.scale %sum by 2.5e-01 tag "l" : !dist.tensor<...>`."""

    name = "dist.scale"

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    factor = prop_def(FloatAttr)
    tag = prop_def(StringAttr)
    result = result_def(T)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = ("$input `by` $factor `tag` custom<Quoted>($tag) attr-dict `:` "
                       "type($result)")

    def verify_(self) -> None:
        verify_values(self)


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
