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

import math
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
        if self.used + nbytes > self.limit:  # (the message made only where it is said)
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


def over_gib(needed: float, limit: float, digits: int = 4) -> tuple[str, str]:
    """`needed` bytes (rounded up) and `limit` bytes, in GiB, for a message saying the
    first is more than the second: each to `digits` significant digits, or as many more
    as it takes for the two to read differently (`.4g` alone can say "needs 40 GiB, more
    than the 40 GiB"). A cap of the first number shown holds `needed`.

        >>> over_gib(40.001 * 2**30, 40 * 2**30), over_gib(50 * 2**30, 40 * 2**30)
        (('40.01', '40'), ('50', '40'))
        >>> over_gib(12288.5 * 2**30, 4 * 2**30)
        ('12289', '4')
        >>> over_gib(39.99999999 * 2**30, 39.9999999 * 2**30)
        ('40', '39.9999999')
    """
    value, bound = needed / 2**30, limit / 2**30
    whole = max(value, bound, 1.0)
    least = max(digits, math.floor(math.log10(whole)) + 1) if math.isfinite(whole) else digits
    for shown in range(least, 18):
        scale = 10.0 ** (math.floor(math.log10(value)) - shown + 1) if value > 0 else 1.0
        up = f"{math.ceil(value / scale * (1 - 1e-15)) * scale:.{shown}g}" \
            if value > 0 and math.isfinite(value) else f"{value:.{shown}g}"
        if up != f"{bound:.{shown}g}" or value <= bound:
            return up, f"{bound:.{shown}g}"
    return repr(value), repr(bound)


def format_bytes(count: int) -> str:
    """`count` bytes in the largest binary unit that keeps the number at least 1.

    >>> format_bytes(512), format_bytes(3 << 30)
    ('512 B', '3.0 GiB')
    """
    if count < 1024:
        return f"{count} B"
    exponent = min((count.bit_length() - 1) // 10, 4)
    return f"{count / 1024**exponent:.1f} {('KiB', 'MiB', 'GiB', 'TiB')[exponent - 1]}"
