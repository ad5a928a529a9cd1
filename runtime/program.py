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
    at: tuple[int, ...] = ()
    """an input's slice: where it starts per dim (empty: the whole input)"""
    factor: float = 1.0
    """a scale's constant"""
    microbatch: int = -1
    """the micro-batch of an op of a pipelined program (-1: the step as a whole)"""
    phase: str = ""
    """"forward", "backward" or "update" in a pipelined program"""


@dataclass(frozen=True)
class Program:
    name: str
    devices: int
    grids: dict[str, tuple[int, ...]]
    steps: tuple[Step, ...]
    first: dict[str, int] = field(default_factory=dict)
    """each grid's first device (a pipeline stage's grid); absent: 0"""
    stages: int = 1
    microbatches: int = 1


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

    first: dict[str, int] = {}
    for op in program.body.block.ops:
        if isinstance(op, shard.GridOp):
            grids[op.sym_name.data] = tuple(op.shape.get_values())
            if offset := dist.first_device(op):
                first[op.sym_name.data] = offset
            continue
        operands = tuple(number(v) for v in op.operands)
        results = tuple(number(v) for v in op.results)
        operand_types = tuple(Sharded.of(v.type) for v in op.operands)
        result_types = tuple(Sharded.of(v.type) for v in op.results)
        micro = op.attributes.get(dist.MICROBATCH)
        phase = op.attributes.get(dist.PHASE)
        step = partial(Step, operands=operands, results=results, operand_types=operand_types,
                       result_types=result_types,
                       microbatch=micro.value.data if isinstance(micro, IntegerAttr) else -1,
                       phase=phase.data if isinstance(phase, StringAttr) else "")

        match op:
            case dist.InputOp():
                steps.append(step("input", name=op.value_name.data,
                                  at=op.starts if op.at is not None else ()))
            case dist.ParamOp():
                steps.append(step("param", name=op.value_name.data))
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
            case dist.AccumulateOp():
                steps.append(step("accumulate", tag=op.tag.data))
            case dist.ScaleOp():
                steps.append(step("scale", tag=op.tag.data, factor=op.factor.value.data))
            case dist.ReturnOp():
                steps.append(step("return"))
            case _:
                raise ValueError(f"cannot run {op.name}")
    counts = [program.attributes.get(name) for name in ("dist.stages", "dist.microbatches")]
    stages, microbatches = (c.value.data if isinstance(c, IntegerAttr) else 1 for c in counts)
    return Program(program.sym_name.data, program.devices.data, grids, tuple(steps), first,
                   stages, microbatches)


def coordinates(rank: int, grid: tuple[int, ...], first: int = 0) -> tuple[int, ...] | None:
    """A device's row-major coordinates on a grid of devices first, first + 1, ..., or
    None if it idles there."""
    rank -= first
    if not 0 <= rank < prod(grid):
        return None
    coords = []
    for size in reversed(grid):
        coords.append(rank % size)
        rank //= size
    return tuple(reversed(coords))


def box(tensor: Sharded, grid: tuple[int, ...], rank: int, first: int = 0) -> Box | None:
    """[lo, hi) per dim of a device's block, or None if the device holds nothing."""
    coords = coordinates(rank, grid, first)
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


def group(rank: int, grid: tuple[int, ...], axes: tuple[int, ...],
          first: int = 0) -> tuple[int, ...]:
    """The devices that share `rank`'s coordinates except along `axes`, in id order."""
    coords = coordinates(rank, grid, first)
    assert coords is not None
    members = []
    for other in range(first, first + prod(grid)):
        other_coords = coordinates(other, grid, first)
        assert other_coords is not None
        if all(a == b or axis in axes
               for axis, (a, b) in enumerate(zip(coords, other_coords, strict=True))):
            members.append(other)
    return tuple(members)
