"""A `dist.program` as plain data, so workers (threads or processes) need no IR.

`program_from_ir` reads the program once; `Program` is picklable and holds the grids and
the steps in order. `Sharded` is a `!dist.tensor` type; `box` gives a device's block.

    program = program_from_ir(module)      # after pase-lower-spmd
    program.steps[0].kind                  # "param", "input", "layer", "all_reduce", ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from math import prod
from typing import Any

from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, SSAValue

from pase.dialect import dist
from pase.runtime.kernels.context import Tensor

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True, kw_only=True)
class Sharded(Tensor):
    """A distributed tensor type: a `Tensor` with its element type, grid, split axes (per
    dim) and partial axes."""

    element: str
    grid: str
    split: tuple[tuple[int, ...], ...]
    partial: tuple[int, ...] = ()

    @staticmethod
    def of(attr: Attribute) -> Sharded:
        assert isinstance(attr, dist.TensorType)
        return Sharded(attr.dim_names, attr.global_shape, attr.local_shape,
                       element=attr.element, grid=attr.grid_name, split=attr.axes,
                       partial=attr.partial_axes)


@dataclass(frozen=True)
class Step:
    """One op of the program; values are numbered in program order."""

    kind: str
    operands: tuple[int, ...]
    results: tuple[int, ...]
    operand_types: tuple[Sharded, ...]
    result_types: tuple[Sharded, ...]
    kernel: str = ""
    props: dict[str, Any] = field(default_factory=dict)
    axes: tuple[int, ...] = ()
    """stats axes of a layer, grid axes of an all-reduce"""
    tag: str = ""
    name: str = ""
    seeded: bool = False
    """a loss's vjp: its incoming gradient is 1, not an operand (`dist.layer ... seeded`)"""


@dataclass(frozen=True)
class Program:
    name: str
    devices: int
    grids: dict[str, tuple[int, ...]]
    steps: tuple[Step, ...]


def plain(attr: Attribute) -> Any:
    """An attribute as plain Python data."""
    match attr:
        case StringAttr() | IntAttr():
            return attr.data
        case IntegerAttr() | FloatAttr():
            return attr.value.data
        case ArrayAttr():
            return [plain(a) for a in attr.data]
        case DictionaryAttr():
            return {k: plain(v) for k, v in attr.data.items()}
    raise ValueError(f"cannot turn {attr} into plain data")


def program_from_ir(module: ModuleOp) -> Program:
    programs = [op for op in module.walk() if isinstance(op, dist.ProgramOp)]
    if len(programs) != 1:
        raise ValueError(f"expected one dist.program, found {len(programs)}")
    program = programs[0]
    numbers: dict[SSAValue, int] = {}
    grids: dict[str, tuple[int, ...]] = {}
    steps: list[Step] = []

    def number(value: SSAValue) -> int:
        return numbers.setdefault(value, len(numbers))

    for op in program.body.block.ops:
        if isinstance(op, shard.GridOp):
            grids[op.sym_name.data] = tuple(op.shape.get_values())
            continue
        operands = tuple(number(v) for v in op.operands)
        results = tuple(number(v) for v in op.results)
        operand_types = tuple(Sharded.of(v.type) for v in op.operands)
        result_types = tuple(Sharded.of(v.type) for v in op.results)
        step = partial(Step, operands=operands, results=results, operand_types=operand_types,
                       result_types=result_types)

        match op:
            case dist.InputOp() | dist.ParamOp():
                kind = "input" if isinstance(op, dist.InputOp) else "param"
                steps.append(step(kind, name=op.value_name.data))
            case dist.LayerOp():
                steps.append(step("layer", kernel=op.kernel.data,
                                  props=plain(op.op_properties),
                                  axes=tuple(op.stats_axes.get_values()), tag=op.tag.data,
                                  seeded=op.is_seeded))
            case dist.AllReduceOp():
                steps.append(step("all_reduce", axes=tuple(op.grid_axes.get_values()),
                                  tag=op.tag.data))
            case dist.RedistributeOp():
                steps.append(step("redistribute", tag=op.tag.data))
            case dist.ReturnOp():
                steps.append(step("return"))
            case _:
                raise ValueError(f"cannot run {op.name}")
    return Program(program.sym_name.data, program.devices.data, grids, tuple(steps))


def coordinates(rank: int, grid: tuple[int, ...]) -> tuple[int, ...] | None:
    """A device's row-major coordinates on a grid, or None if it idles there."""
    if rank >= prod(grid):
        return None
    coords = []
    for size in reversed(grid):
        coords.append(rank % size)
        rank //= size
    return tuple(reversed(coords))


def box(tensor: Sharded, grid: tuple[int, ...], rank: int) -> Box | None:
    """[lo, hi) per dim of a device's block, or None if the device holds nothing."""
    coords = coordinates(rank, grid)
    if coords is None:
        return None
    result = []
    for size, axes in zip(tensor.sizes, tensor.split, strict=True):
        parts, index = 1, 0
        for axis in axes:
            parts *= grid[axis]
            index = index * grid[axis] + coords[axis]
        length = size // parts
        result.append((index * length, (index + 1) * length))
    return tuple(result)


def group(rank: int, grid: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """The devices that share `rank`'s coordinates except along `axes`, in id order."""
    coords = coordinates(rank, grid)
    assert coords is not None
    members = []
    for other in range(prod(grid)):
        other_coords = coordinates(other, grid)
        assert other_coords is not None
        if all(a == b or axis in axes
               for axis, (a, b) in enumerate(zip(coords, other_coords, strict=True))):
            members.append(other)
    return tuple(members)
