"""The command-line parser of every pase script: a usage error is one line and exit status 1.

argparse prints the whole usage text and exits with status 2 on a bad argument, and takes the
last of a flag given twice; pase's tools (pase-run, models/generate.py, the benchmarks) say
what was wrong in one line and exit 1, like every other pase error, and refuse a flag given
twice rather than pick one silently.

    >>> parser = UsageParser(prog="generate.py")
    >>> _ = parser.add_argument("--layers", type=int)
    >>> parser.parse_args(["--layers", "x"])  # doctest: +SKIP
    generate.py: error: argument --layers: invalid int value: 'x'      (exit status 1)
    >>> parser.parse_args(["--layers", "2", "--layers=4"])  # doctest: +SKIP
    generate.py: error: argument --layers: given twice                 (exit status 1)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pase.core.diagnostics import terminal_safe

# Actions a flag may take more than once by design (`-v -v`, `--models a --models b` with
# action="append"); every other flag holds one value.
REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
              argparse._ExtendAction)


class UsageParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line on stderr, exit 1."""

    def error(self, message: str) -> NoReturn:
        print(terminal_safe(f"{self.prog}: error: {message}"), file=sys.stderr)
        sys.exit(1)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: Any = None) -> tuple[Any, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        self._refuse_repeats(words)
        return super().parse_known_args(words, namespace)

    def _refuse_repeats(self, words: list[str]) -> None:
        """One error for a single-valued flag given twice (`--devices 2 --devices=4`)."""
        flags = words[:words.index("--")] if "--" in words else words
        for action in self._actions:
            if not action.option_strings or isinstance(action, REPEATABLE):
                continue
            given = sum(word.split("=", 1)[0] in action.option_strings
                        for word in flags if word.startswith("-"))
            if given > 1:
                self.error(f"argument {'/'.join(action.option_strings)}: given twice")
