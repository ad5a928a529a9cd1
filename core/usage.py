"""The command-line parser of every pase script: a usage error is one line and exit status 1.

argparse prints the whole usage text and exits with status 2 on a bad argument; pase's tools
(pase-run, models/generate.py, the benchmarks) say what was wrong in one line and exit 1, like
every other pase error.

    >>> parser = UsageParser(prog="generate.py")
    >>> _ = parser.add_argument("--layers", type=int)
    >>> parser.parse_args(["--layers", "x"])  # doctest: +SKIP
    generate.py: error: argument --layers: invalid int value: 'x'      (exit status 1)
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class UsageParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line on stderr, exit 1."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)
