"""The search's one memory accountant: every allocation that grows with the problem is
charged here before it is made.

`pase-search{memory-gib=G}` bounds the process's peak resident memory above its baseline
(the interpreter, the imports and the parsed module): the configuration lists, the cost
tables and the redistribution working arrays that build them, pruning's rows and pruned
copies, the DP's minimum, argmin and chunk tables, and the kernels' contiguous copies all
charge one `MemoryBudget` before they exist, and release what they free. A charge that
would pass the limit raises `SearchMemoryError`, so the search stops with a message
instead of dying of memory.

>>> budget = MemoryBudget(1 << 20)
>>> budget.charge(1 << 19, "a table")
>>> with budget.holding(1 << 18, "a working array"):
...     budget.used
786432
>>> budget.used, budget.peak
(524288, 786432)
>>> try:
...     budget.charge(1 << 20, "another table")
... except SearchMemoryError as error:
...     print(str(error).split(";")[0])
another table would bring the search's memory to 1.5 MiB, over the memory budget of 1.0 MiB
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

REMEDY = "use fewer devices or a larger min-shard, or raise memory-gib"


class SearchError(Exception):
    """The search cannot run as asked; the message says why and what to change."""


class SearchMemoryError(SearchError):
    """An allocation would exceed the memory budget."""


class MemoryBudget:
    """Bytes charged against a limit; `peak` is the most ever charged at once."""

    def __init__(self, limit: int):
        if limit <= 0:
            raise ValueError(f"a memory budget must be positive, got {limit}")
        self.limit = limit
        self.used = 0
        self.peak = 0

    def charge(self, nbytes: int, what: str, remedy: str = REMEDY) -> None:
        """Count `nbytes` about to be allocated for `what`, or raise `SearchMemoryError`
        (nothing charged) if they would not fit."""
        self.check(nbytes, f"{what} would bring the search's memory to "
                           f"{format_bytes(self.used + nbytes)}", remedy)
        self.count(nbytes)

    def count(self, nbytes: int) -> None:
        """Count `nbytes` allocated already, unchecked: the next charge that does not fit
        refuses, naming what it was for."""
        self.used += nbytes
        self.peak = max(self.peak, self.used)

    def check(self, nbytes: int, message: str, remedy: str = REMEDY) -> None:
        """Raise `SearchMemoryError("<message>, over the memory budget of ...; <remedy>")`
        unless `nbytes` more would fit; charges nothing."""
        if self.used + nbytes > self.limit:
            raise SearchMemoryError(f"{message}, over the memory budget of "
                                    f"{format_bytes(self.limit)}; {remedy}")

    def release(self, nbytes: int) -> None:
        """Give back bytes charged earlier and freed since."""
        self.used -= nbytes

    @contextmanager
    def holding(self, nbytes: int, what: str, remedy: str = REMEDY) -> Iterator[None]:
        """`nbytes` charged while the block runs (a working array), released after it."""
        self.charge(nbytes, what, remedy)
        try:
            yield
        finally:
            self.release(nbytes)


def as_budget(budget: int | MemoryBudget) -> MemoryBudget:
    """`budget` itself, or a fresh accountant with a limit of `budget` bytes."""
    return budget if isinstance(budget, MemoryBudget) else MemoryBudget(budget)


def format_bytes(count: int) -> str:
    """`count` bytes in the largest binary unit that keeps the number at least 1.

    >>> format_bytes(512), format_bytes(3 << 30)
    ('512 B', '3.0 GiB')
    """
    if count < 1024:
        return f"{count} B"
    exponent = min((count.bit_length() - 1) // 10, 4)
    return f"{count / 1024**exponent:.1f} {('KiB', 'MiB', 'GiB', 'TiB')[exponent - 1]}"
