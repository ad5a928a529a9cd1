"""The table of per-op importers: each ONNX op type maps to the function that builds its
`dnn` ops, registered where the function is defined.

    @importer("Relu", "Tanh")
    def unary(graph: GraphState, node: Any) -> list[Value]:
        ...

`OPERATORS["Relu"].function` is then `unary`; the attributes a function reads are given
with it (`attributes=("axis",)`), and any other attribute of a node is an error naming it.
A second registration of one op type is an error when the module is imported, so the
table and the code cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pase.frontend.onnx.values import GraphState, Value

ImportFunction = Callable[["GraphState", Any], "list[Value]"]


@dataclass(frozen=True)
class Importer:
    """How one ONNX op type is imported: the function, the attributes it reads, and how
    many of the node's outputs it defines (a use of any other output is an error)."""

    function: ImportFunction
    attributes: frozenset[str] = frozenset()
    outputs: int = 1


OPERATORS: dict[str, Importer] = {}
"""ONNX op type (default domain) -> its importer; filled by `pase.frontend.onnx.operators`."""


def importer(*op_types: str, attributes: Iterable[str] = (),
             outputs: int = 1) -> Callable[[ImportFunction], ImportFunction]:
    """Register the decorated function as the importer of `op_types`."""

    def register(function: ImportFunction) -> ImportFunction:
        for op_type in op_types:
            if op_type in OPERATORS:
                raise ValueError(f"two importers of ONNX {op_type}: "
                                 f"{OPERATORS[op_type].function.__name__} and "
                                 f"{function.__name__}")
            OPERATORS[op_type] = Importer(function, frozenset(attributes), outputs)
        return function

    return register
