"""`OrderedDataflow`: the trait of `dnn.graph` and `dist.program`, whose one block is an
ordered dataflow region, as MLIR's SSACFG regions are.

xDSL checks no dominance, so without this trait `%y = dnn.relu %w` one line above
`%w = dnn.param`, `%a = dnn.relu %a` and cycles verify, and every pass that walks the
block in order then fails on a value it has not seen. MLIR rejects them with
`operand #0 does not dominate this use`; the trait says so at the use:

    g.mlir:4:5: error: 'dnn.relu' op operand 0 (%w) is used before its definition at
    line 5; in a dnn.graph every value is defined above its uses
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation, SSAValue
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException


class VerifyExceptionAt(VerifyException):
    """A verifier error that the verifier of one op finds in another op it holds (a use
    before its definition in a graph body): the drivers report it at `op`, the use.

        raise VerifyExceptionAt(use, "operand 0 (%w) is used before its definition")
    """

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class OrderedDataflow(OpTrait):
    """The op's block holds only ops named with one of `ops` (prefixes such as "dnn."), and
    each of them reads only values defined above it in the block: no value is used before
    its definition or by the op that defines it, so the block has no cycle.

        traits = traits_def(OrderedDataflow(("dnn.",)))

    One pass over the block, so a graph of any size verifies in linear time."""

    ops: tuple[str, ...]

    def verify(self, op: Operation) -> None:
        holder = op.name
        for block in op.regions[0].blocks if op.regions else ():
            defined: set[SSAValue] = set(block.args)
            for inner in block.ops:
                if not inner.name.startswith(self.ops):
                    raise VerifyExceptionAt(inner, f"a {holder} holds only "
                                            f"{_names(self.ops)} ops, not '{inner.name}'")
                for index, operand in enumerate(inner.operands):
                    if operand not in defined:
                        raise VerifyExceptionAt(inner, _undefined(holder, inner, index,
                                                                  operand))
                defined.update(inner.results)


def _names(prefixes: tuple[str, ...]) -> str:
    return " and ".join(prefix.removesuffix(".") for prefix in prefixes)


def _undefined(holder: str, op: Operation, index: int, operand: SSAValue) -> str:
    """Why `operand` (operand `index` of `op`) may not be read there."""
    name = f"%{operand.name_hint}" if operand.name_hint else "a value"
    what = f"operand {index} ({name})"
    if operand.owner is op:
        return f"{what} is its own result; an op cannot read the value it defines"
    where = ""
    if isinstance(operand.owner, Operation) and isinstance(operand.owner.location,
                                                           FileLineColLoc):
        where = f" at line {operand.owner.location.line.data}"
    if operand.owner is not None and _in_block_of(operand.owner, op):
        return (f"{what} is used before its definition{where}; in a {holder} every value "
                "is defined above its uses")
    return f"{what} is not defined in this {holder}"


def _in_block_of(owner: object, op: Operation) -> bool:
    return isinstance(owner, Operation) and owner.parent is op.parent
