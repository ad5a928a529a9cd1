"""The memory budget of a source file's IR (`-f 'dnn{memory-gib=G}'`, `-f 'mlir{memory-gib=G}'`,
default 4 GiB): a reader counts what the file's IR will hold (`.dnn`: before it builds any of
it; `.mlir`: as it reads the tokens, stopping at the first one over the budget, so that an
error early in a large file comes without reading the rest first), and a file whose IR would
take more than the budget is one error that names the option to raise.

    >>> budget_bytes(0.5, "m.mlir", "mlir")
    536870912
    >>> check_budget(3, "tokens", 300, 100, "m.mlir", "mlir")
    Traceback (most recent call last):
    pase.core.diagnostics.Diagnostic: m.mlir: error: the IR of the file's 3 tokens takes about \
300 bytes, over the memory budget of 100 bytes; raise it with -f 'mlir{memory-gib=G}'
"""

from __future__ import annotations

import math

from pase.core.diagnostics import Diagnostic
from pase.core.numbers import too_many_gib

DEFAULT_MEMORY_GIB = 4.0
"""The readers' default memory budget, as pase-search's `memory-gib` and the ONNX
frontend's."""


def budget_bytes(memory_gib: float, filename: str, frontend: str) -> int:
    """`memory_gib` in bytes, or a `Diagnostic` for a value that is no budget."""
    if not 0 < memory_gib < math.inf:
        raise Diagnostic(f"memory-gib must be a finite number above 0, got {memory_gib} "
                         f"(-f '{frontend}{{memory-gib=G}}')", filename)
    if (reason := too_many_gib("memory-gib", memory_gib)) is not None:
        raise Diagnostic(reason, filename)
    return int(memory_gib * (1 << 30))


def check_budget(count: int, what: str, needed: int, limit: int, filename: str,
                 frontend: str, first: bool = False) -> None:
    """A `Diagnostic` if the IR of the file's `count` `what` (statements, tokens), `needed`
    bytes, is over `limit`; `first`: they are the file's first ones, read as its IR is
    built, and the budget is spent before its end."""
    if needed > limit:
        whose = "first " if first else ""
        raise Diagnostic(f"the IR of the file's {whose}{count:,} {what} takes about {needed:,} "
                         f"bytes, over the memory budget of {limit:,} bytes; raise it with "
                         f"-f '{frontend}{{memory-gib=G}}'", filename)
