"""A progress line on stderr for searches that take longer than a second.

Silent when stderr is not a terminal (CI, pipes, lit), so output stays diffable:

    pase-search: eliminating layer 120 of 240, table 1.1e+10 entries
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`Progress("pase-search")(i, n, entries)` updates one line; `done()` clears it."""

    def __init__(self, label: str, stream: TextIO | None = None, delay: float = 1.0,
                 interval: float = 0.1):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()
        self.delay = delay
        self.interval = interval
        self.last = 0.0
        self.shown = False

    def __call__(self, index: int, count: int, entries: int) -> None:
        self.message(f"eliminating layer {index + 1} of {count}, table {entries:.1e} entries")

    def message(self, text: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last < self.interval:
            return
        self.last = now
        self.stream.write(f"\r\033[K{self.label}: {text}")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False
