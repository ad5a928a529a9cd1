"""The collectives of the `dist` dialect besides `dist.all_reduce`, spelled as MLIR's `shard`
dialect spells them, on `!dist.tensor` values (whose types say the layout before and after):

    %y = dist.all_gather %x on @g grid_axes = [1] gather_axis = 0 tag "h" : T -> T'
    %y = dist.reduce_scatter %x on @g grid_axes = [1] scatter_axis = 0 tag "h" : T -> T'
    %y = dist.all_to_all %x on @g grid_axes = [1] split_axis = 0 concat_axis = 1 tag "h"
        : T -> T'
    dist.send %x to @g_at4 tag "h" : T
    %y = dist.recv from @g tag "h" : T'

A collective runs within each *device group* of its grid: the devices whose coordinates
agree on every grid axis but `grid_axes`, ordered row-major over `grid_axes` (as
`shard`'s; pase's runtime forms the same groups for `dist.all_reduce`). A dim split along
grid axes `[a0, ..., ak]` is blocked with a0 outermost (`!dist.tensor`'s docstring), so a
group over `grid_axes` holds consecutive blocks of a dim exactly when `grid_axes` are the
last (innermost) of its split axes, in order. The verifiers below check each op's result
type against the one its input, grid axes and tensor axes give, and say which differs.

- `dist.all_gather`: every device of a group receives the group's blocks of dim
  `gather_axis` (split along `grid_axes` last), concatenated: that dim is no longer split
  along `grid_axes`.
- `dist.reduce_scatter`: a group sums its partial sums over `grid_axes` (which the input
  holds partial sums over) and each device keeps one block of dim `scatter_axis`, which
  is then split along `grid_axes` too (innermost).
- `dist.all_to_all`: each device cuts its block of dim `split_axis` into one piece per
  group member and sends them round; received pieces are concatenated along dim
  `concat_axis` (split along `grid_axes` last): `grid_axes` move from splitting
  `concat_axis` to splitting `split_axis` (innermost).
- `dist.send` / `dist.recv`: point to point between two grids of one shape (a pipeline
  stage's grid and the next's): the device at coordinates c of the sending grid sends its
  block to the device at c of `to`. The value keeps its global shape, element type, split
  and partial axes; only its grid changes. A send and a receive pair by tag, first in first
  out: the k-th `dist.send` tagged "h" is received by the k-th `dist.recv` tagged "h", which
  comes after it in the program, from the send's grid, with the type the send gives on the
  receiving grid.

Partial sums over axes that a collective does not touch stay as they are. pase-lower-spmd
does not emit these ops: it moves layouts with `dist.redistribute` (which the runtime runs
as point-to-point transfers of exactly the words a device lacks, the cost model's
redistribution) and sums with `dist.all_reduce`. The runtime's communicator has each of
these collectives, but its interpreter (`pase.runtime.program.program_from_ir`) runs only
what the lowering emits and refuses a program holding one of these with `cannot run
dist.all_gather`; pase-run itself takes the forward model and lowers it, never a
`dist.program`.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    I16,
    I64,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Operation
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import HasParent, SymbolTable
from xdsl.utils.exceptions import VerifyException

from pase.dialect.dist.ops import ProgramOp, first_device, grid_shape, verify_values
from pase.dialect.dist.quoted import Quoted
from pase.dialect.dist.types import TensorType


def _axes_text(axes: Sequence[int]) -> str:
    return ("axis " if len(axes) == 1 else "axes ") + ", ".join(map(str, axes))


def _dim_text(tensor: TensorType, dim: int) -> str:
    return f"dim {dim} ('{tensor.dim_names[dim]}')"


class _GroupCollective(IRDLOperation):
    """A collective within the device groups of `grid` along `grid_axes`: one input, one
    result, both on `grid`."""

    input = operand_def(TensorType)
    grid = prop_def(FlatSymbolRefAttr)
    grid_axes = prop_def(DenseArrayBase[I16])
    tag = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)

    def _tensors(self) -> tuple[TensorType, TensorType]:
        source, target = self.input.type, self.result.type
        assert isinstance(source, TensorType)
        assert isinstance(target, TensorType)
        return source, target

    def _verify_group(self) -> tuple[TensorType, TensorType, tuple[int, ...]]:
        """The checks every group collective shares; the input, result and grid axes."""
        verify_values(self)
        source, target = self._tensors()
        grid = self.grid.root_reference.data
        for tensor, what in ((source, "input"), (target, "result")):
            if tensor.grid != self.grid:
                raise VerifyException(f"{self.name} runs on @{grid}, so its {what} must be on "
                                      f"@{grid}, not @{tensor.grid_name}")
        axes = tuple(self.grid_axes.get_values())
        shape = grid_shape(self, self.grid) or ()
        if not axes:
            raise VerifyException(f"{self.name} needs at least one grid axis to run along")
        for index, axis in enumerate(axes):
            if axis in axes[:index]:
                raise VerifyException(f"grid axis {axis} appears twice in grid_axes")
            if not 0 <= axis < len(shape):
                raise VerifyException(f"grid axis {axis} is not an axis of @{grid}, which has "
                                      f"{len(shape)} {'axis' if len(shape) == 1 else 'axes'}")
        if source.element_type != target.element_type:
            raise VerifyException(f"{self.name} keeps the element type, got {source.element} "
                                  f"-> {target.element}")
        return source, target, axes

    def _group_size(self, axes: Sequence[int]) -> int:
        shape = grid_shape(self, self.grid) or ()
        return prod(shape[a] for a in axes)

    def _tensor_axis(self, tensor: TensorType, name: str, attr: IntegerAttr) -> int:
        dim = attr.value.data
        if not 0 <= dim < len(tensor.dim_names):
            raise VerifyException(f"{name} {dim} is not a dim of the input, which has "
                                  f"{len(tensor.dim_names)} dims")
        return dim

    def _gathered(self, tensor: TensorType, dim: int, axes: tuple[int, ...],
                  role: str) -> list[list[int]]:
        """The split axes after `axes` stop splitting `dim`, whose split must end with them."""
        split = [list(a) for a in tensor.axes]
        if tuple(split[dim][len(split[dim]) - len(axes):]) != axes:
            along = (f"split along grid {_axes_text(split[dim])}" if split[dim]
                     else "not split")
            raise VerifyException(
                f"{self.name} {role} the blocks of {_dim_text(tensor, dim)} over grid "
                f"{_axes_text(axes)}, so that dim's split axes must end with "
                f"{list(axes)} (innermost last); it is {along}")
        del split[dim][len(split[dim]) - len(axes):]
        return split

    def _scattered(self, tensor: TensorType, dim: int, axes: tuple[int, ...],
                   split: list[list[int]]) -> list[int]:
        """The local shape once each group member keeps one block of `dim`'s local block."""
        size = self._group_size(axes)
        local = list(tensor.local_shape)
        if local[dim] % size:
            raise VerifyException(f"{self.name} splits {_dim_text(tensor, dim)}, of local "
                                  f"size {local[dim]}, {size} ways over grid "
                                  f"{_axes_text(axes)}, which do not divide it")
        local[dim] //= size
        split[dim] += axes
        return local

    def _expect(self, target: TensorType, expected: TensorType, what: str) -> None:
        if expected != target:
            raise VerifyException(f"{self.name} {what} gives {expected}, not the result's "
                                  f"{target}")


def _tensor(like: TensorType, local: Sequence[int], split: Sequence[Sequence[int]],
            partial: Sequence[int]) -> TensorType:
    return TensorType(like.dim_names, like.global_shape, local, like.element, like.grid_name,
                      split, partial)


@irdl_op_definition
class AllGatherOp(_GroupCollective):
    """Gather dim `gather_axis` over `grid_axes`, as `shard.all_gather`:
    `%y = dist.all_gather %x on @g grid_axes = [1] gather_axis = 0 tag "h" : T -> T'`."""

    name = "dist.all_gather"

    gather_axis = prop_def(IntegerAttr[I64])

    assembly_format = ("$input `on` $grid `grid_axes` `=` $grid_axes `gather_axis` `=` "
                       "$gather_axis `tag` custom<Quoted>($tag) attr-dict `:` type($input) "
                       "`->` type($result)")

    def verify_(self) -> None:
        source, target, axes = self._verify_group()
        dim = self._tensor_axis(source, "gather_axis", self.gather_axis)
        split = self._gathered(source, dim, axes, "gathers")
        local = list(source.local_shape)
        local[dim] *= self._group_size(axes)
        self._expect(target, _tensor(source, local, split, source.partial_axes),
                     f"of {_dim_text(source, dim)} over grid {_axes_text(axes)}")


@irdl_op_definition
class ReduceScatterOp(_GroupCollective):
    """Sum the partial sums over `grid_axes` and scatter dim `scatter_axis` over them, as
    `shard.reduce_scatter`:
    `%y = dist.reduce_scatter %x on @g grid_axes = [1] scatter_axis = 0 tag "h" : T -> T'`."""

    name = "dist.reduce_scatter"

    scatter_axis = prop_def(IntegerAttr[I64])

    assembly_format = ("$input `on` $grid `grid_axes` `=` $grid_axes `scatter_axis` `=` "
                       "$scatter_axis `tag` custom<Quoted>($tag) attr-dict `:` type($input) "
                       "`->` type($result)")

    def verify_(self) -> None:
        source, target, axes = self._verify_group()
        dim = self._tensor_axis(source, "scatter_axis", self.scatter_axis)
        missing = [a for a in axes if a not in source.partial_axes]
        if missing:
            held = (f"over grid {_axes_text(source.partial_axes)}" if source.partial_axes
                    else "over no grid axis")
            raise VerifyException(f"dist.reduce_scatter sums partial sums over grid "
                                  f"{_axes_text(axes)}, but its input holds partial sums "
                                  f"{held}")
        split = [list(a) for a in source.axes]
        local = self._scattered(source, dim, axes, split)
        partial = [a for a in source.partial_axes if a not in axes]
        self._expect(target, _tensor(source, local, split, partial),
                     f"over grid {_axes_text(axes)} scattering {_dim_text(source, dim)}")


@irdl_op_definition
class AllToAllOp(_GroupCollective):
    """Move `grid_axes` from splitting dim `concat_axis` to splitting dim `split_axis`, as
    `shard.all_to_all`: `%y = dist.all_to_all %x on @g grid_axes = [1] split_axis = 0
    concat_axis = 1 tag "h" : T -> T'`."""

    name = "dist.all_to_all"

    split_axis = prop_def(IntegerAttr[I64])
    concat_axis = prop_def(IntegerAttr[I64])

    assembly_format = ("$input `on` $grid `grid_axes` `=` $grid_axes `split_axis` `=` "
                       "$split_axis `concat_axis` `=` $concat_axis `tag` custom<Quoted>($tag) "
                       "attr-dict `:` type($input) `->` type($result)")

    def verify_(self) -> None:
        source, target, axes = self._verify_group()
        split_dim = self._tensor_axis(source, "split_axis", self.split_axis)
        concat_dim = self._tensor_axis(source, "concat_axis", self.concat_axis)
        if split_dim == concat_dim:
            raise VerifyException(f"dist.all_to_all splits and concatenates "
                                  f"{_dim_text(source, split_dim)}, which moves nothing; "
                                  "split_axis and concat_axis must differ")
        split = self._gathered(source, concat_dim, axes, "concatenates")
        local = self._scattered(source, split_dim, axes, split)
        local[concat_dim] *= self._group_size(axes)
        self._expect(target, _tensor(source, local, split, source.partial_axes),
                     f"over grid {_axes_text(axes)} from {_dim_text(source, concat_dim)} "
                     f"to {_dim_text(source, split_dim)}")


def _pairs(program: Operation) -> dict[Operation, Operation | None]:
    """Each `dist.send` and `dist.recv` of `program` with the op it pairs with (None for
    none): per tag, the k-th send with the k-th receive, in program order."""
    sends: dict[str, list[Operation]] = {}
    recvs: dict[str, list[Operation]] = {}
    for op in program.regions[0].block.ops if program.regions else ():
        if isinstance(op, SendOp | RecvOp):
            (sends if isinstance(op, SendOp) else recvs).setdefault(op.tag.data, []).append(op)
    pairs: dict[Operation, Operation | None] = {}
    for tag in {*sends, *recvs}:
        sent, received = sends.get(tag, []), recvs.get(tag, [])
        for index in range(max(len(sent), len(received))):
            send = sent[index] if index < len(sent) else None
            recv = received[index] if index < len(received) else None
            if send is not None:
                pairs[send] = recv
            if recv is not None:
                pairs[recv] = send
    return pairs


def _ordinal(index: int) -> str:
    suffix = "th" if 10 <= index % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(index % 10,
                                                                                   "th")
    return f"{index}{suffix}"


def _position(op: SendOp | RecvOp) -> str:
    """`the 2nd dist.send tagged "h"`."""
    parent = op.parent
    assert parent is not None
    index = 1 + sum(1 for other in parent.ops if other is not op and type(other) is type(op)
                    and other.tag == op.tag and other.is_before_in_block(op))
    return f"the {_ordinal(index)} {op.name} tagged \"{op.tag.data}\""


@irdl_op_definition
class SendOp(IRDLOperation):
    """Send each device's block to the device at its coordinates on grid `to`:
    `dist.send %x to @grid2_at2 tag "h" : !dist.tensor<... on @grid2 ...>`."""

    name = "dist.send"

    input = operand_def(TensorType)
    to = prop_def(FlatSymbolRefAttr)
    tag = prop_def(StringAttr)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = "$input `to` $to `tag` custom<Quoted>($tag) attr-dict `:` type($input)"

    def verify_(self) -> None:
        verify_values(self)
        source = self.input.type
        assert isinstance(source, TensorType)
        _check_grids(self, source.grid, self.to)
        program = self.parent_op()
        if program is None:
            return
        if _pairs(program).get(self) is None:
            raise VerifyException(f"{_position(self)} has no dist.recv tagged "
                                  f"\"{self.tag.data}\" after it to receive it")


@irdl_op_definition
class RecvOp(IRDLOperation):
    """Receive the blocks the paired `dist.send` sent from grid `from`:
    `%y = dist.recv from @grid2 tag "h" : !dist.tensor<... on @grid2_at2 ...>`."""

    name = "dist.recv"

    source = prop_def(FlatSymbolRefAttr, prop_name="from")
    tag = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(HasParent(ProgramOp))
    custom_directives = (Quoted,)
    assembly_format = "`from` $from `tag` custom<Quoted>($tag) attr-dict `:` type($result)"

    def verify_(self) -> None:
        verify_values(self)
        target = self.result.type
        assert isinstance(target, TensorType)
        _check_grids(self, self.source, target.grid)
        program = self.parent_op()
        if program is None:
            return
        send = _pairs(program).get(self)
        if not isinstance(send, SendOp) or not send.is_before_in_block(self):
            raise VerifyException(f"{_position(self)} has no dist.send tagged "
                                  f"\"{self.tag.data}\" before it to receive from")
        sent = send.input.type
        assert isinstance(sent, TensorType)
        if send.to != target.grid or sent.grid != self.source:
            raise VerifyException(f"{_position(self)} receives from @{sent.grid_name} on "
                                  f"@{send.to.root_reference.data}, as its dist.send sends, "
                                  f"not from @{self.source.root_reference.data} on "
                                  f"@{target.grid_name}")
        expected = TensorType(sent.dim_names, sent.global_shape, sent.local_shape,
                              sent.element, target.grid_name, sent.axes, sent.partial_axes)
        if expected != target:
            raise VerifyException(f"{_position(self)} receives {expected}, the value its "
                                  f"dist.send sends, not {target}")


def _check_grids(op: Operation, source: FlatSymbolRefAttr, dest: FlatSymbolRefAttr) -> None:
    """Point to point runs between two grids of one shape on different devices."""
    source_shape, dest_shape = grid_shape(op, source), grid_shape(op, dest)
    if source_shape is None or dest_shape is None:
        return
    names = source.root_reference.data, dest.root_reference.data
    if source_shape != dest_shape:
        shapes = ["x".join(map(str, s)) for s in (source_shape, dest_shape)]
        raise VerifyException(f"{op.name} moves each block to the device at its coordinates, "
                              f"so @{names[0]} (shape {shapes[0]}) and @{names[1]} (shape "
                              f"{shapes[1]}) must have one shape")
    firsts = [first_device(_grid(op, ref)) for ref in (source, dest)]
    if firsts[0] == firsts[1]:
        raise VerifyException(f"{op.name} between @{names[0]} and @{names[1]}, which are the "
                              f"same devices (from device {firsts[0]}), moves nothing")


def _grid(op: Operation, ref: FlatSymbolRefAttr) -> shard.GridOp:
    """The `shard.grid` that `ref` names (grid_shape found it already)."""
    program = op.parent_op()
    assert program is not None
    found = SymbolTable.lookup_symbol(program, ref)
    assert isinstance(found, shard.GridOp)
    return found
