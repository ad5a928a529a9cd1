"""What the benchmark scripts share: model lookup, argument types, the host, markdown tables."""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

T = TypeVar("T")

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """Run a benchmark's `main` and exit with its status; a standard output that closes
    early (`search.py | head`) is one line, `search.py: error: cannot write the standard
    output: Broken pipe`, exit 1 (it was a BrokenPipeError traceback)."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Nothing more can go there, and Python's own flush at exit must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"{os.path.basename(sys.argv[0])}: error: cannot write the standard output: "
              "Broken pipe", file=sys.stderr)
        sys.exit(1)
    sys.exit(status)


def model_path(name: str) -> Path:
    """A model name in models/ (e.g. alexnet) or a .dnn path, as an argparse type."""
    path = Path(name)
    if path.suffix != ".dnn":
        path = MODELS_DIR / f"{name}.dnn"
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(MODELS_DIR.glob("*.dnn")))
        raise argparse.ArgumentTypeError(f"no model '{name}' ({path} does not exist); "
                                         f"known models: {known}")
    return path


def add_model_arguments(parser: argparse.ArgumentParser, models_help: str,
                        devices: list[int], devices_help: str) -> None:
    """The `--models` and `--devices` arguments of every benchmark."""
    parser.add_argument("--models", nargs="+", metavar="MODEL", type=model_path,
                        default=sorted(MODELS_DIR.glob("*.dnn")), help=models_help)
    parser.add_argument("--devices", nargs="+", metavar="P", type=positive_int,
                        default=devices, help=devices_help)


def _parsed(text: str, convert: Callable[[str], T], noun: str) -> T:
    """`convert(text)`, or a usage error saying `text` is not `noun`."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {noun}") from None


def positive_float(text: str) -> float:
    """A finite number above 0 (GiB, seconds): nan, inf, 0 or below is a usage error.

    >>> positive_float("1.5")
    1.5
    """
    value = _parsed(text, float, "a number")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number of at least 0 (a memory cap, 0 for none)."""
    value = _parsed(text, float, "a number")
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number at least 0, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An integer of at least 0 (an effort bound, 0 for none).

    >>> non_negative_int("0")
    0
    """
    value = _parsed(text, int, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def machine(text: str) -> str:
    """A machine preset's name or a machine TOML file that loads, as an argparse type.

    >>> machine("v100-nvlink")
    'v100-nvlink'
    """
    from pase.formats.machine_toml import MachineError, load_machine

    try:
        load_machine(text)
    except MachineError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def positive_int(text: str) -> int:
    """An integer of at least 1 (a count of devices, steps, ...)."""
    value = _parsed(text, int, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cpus() -> str:
    """The CPU model and how many logical CPUs there are (and this process may use)."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    logical = os.cpu_count() or 0
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else logical
    return f"{cpu}, {logical} logical CPUs ({available} available)"


def versions() -> str:
    import numpy

    return f"Python {platform.python_version()}, numpy {numpy.__version__}"


def markdown_table(columns: tuple[tuple[str, str], ...], rows: list[list[str]]) -> list[str]:
    """Header, separator and rows; `columns` are (title, "<" or ">") for the alignment."""
    # At least three characters, so that every separator cell is valid markdown.
    widths = [max(3, len(title), *(len(row[i]) for row in rows))
              for i, (title, _) in enumerate(columns)]
    aligns = "".join(align for _, align in columns)
    return [_line([title for title, _ in columns], widths, "<" * len(columns)),
            "| " + " | ".join(("-" * (width - 1) + ":") if align == ">" else "-" * width
                              for width, align in zip(widths, aligns, strict=True)) + " |",
            *(_line(row, widths, aligns) for row in rows)]


def _line(cells: list[str], widths: list[int], aligns: str) -> str:
    return "| " + " | ".join(cell.rjust(width) if align == ">" else cell.ljust(width)
                             for cell, width, align in zip(cells, widths, aligns, strict=True)
                             ) + " |"


# The smallest search: what every case pays whatever the model (interpreter, imports, modules
# the engine loads on demand, kernel compilation).
BASELINE_GRAPH = """\
graph @baseline(b = 8, d = 8, h = 8) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  return %y
}
"""
