"""The memory a call holds at its peak, measured with tracemalloc (Python's own
allocations, the same on every host), never time."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

from pase.core.diagnostics import Diagnostic


def traced(call: Callable[[], object]) -> tuple[int, Diagnostic | None]:
    """The most memory `call()` held at once, and the diagnostic it raised if any."""
    tracemalloc.start()
    try:
        call()
        error = None
    except Diagnostic as diagnostic:
        error = diagnostic
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, error
