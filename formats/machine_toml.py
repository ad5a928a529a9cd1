"""Machine files: a TOML table that describes a `Machine`, read with located errors.

`pase-search{machine=...}` and `build_problem(machine=...)` take a preset name or the path
of such a file:

    name = "my-cluster"
    flops = 19.5e12                  # FLOP/s per device
    intra_node_bandwidth = 300e9     # bytes/s per device, within a node
    inter_node_bandwidth = 25e9      # bytes/s per device, between nodes
    devices_per_node = 8
    source = "where the numbers come from"
    memory_gib = 80                  # optional: GiB per device (a plan past it: a warning)

The other optional keys are `bf16_flops`, `fp16_flops`, `hbm_bandwidth` and
`hierarchical` (`pase.passes.strategy.machines.Machine`).

An error names the file, and the line and column of the key at fault:
`m.toml:3:1: 'flops' must be a number of at least 1, got -1.0`.

    >>> load_machine("pase-default").name
    'pase-default'
"""

from __future__ import annotations

import math
import os
import re
import sys
from typing import NoReturn

from pase.core.diagnostics import Diagnostic, offset_to_line_column, read_line
from pase.core.files import read_text
from pase.core.numbers import LONGEST_INTEGER, shown_integer, too_long_integer
from pase.core.shapes import MAX_ELEMENTS
from pase.formats.json_locations import long_integer
from pase.passes.strategy import PRESETS, Machine


class MachineError(ValueError):
    """An unknown preset or a malformed machine file; `filename`, `line` and `column`
    (1-based, 0 when unknown) say where, and `key` names the machine key at fault.

    Its text is `m.toml:3:1: 'flops' must be a number of at least 1, got -1.0`."""

    def __init__(self, message: str, filename: str = "", line: int = 0, column: int = 0,
                 key: str | None = None):
        super().__init__(message)
        self.message, self.filename, self.line, self.column = message, filename, line, column
        self.key = key

    def __str__(self) -> str:
        if not self.filename:
            return self.message
        where = f"{self.filename}:{self.line}:{self.column}" if self.line else self.filename
        return f"{where}: {self.message}"


def machine_diagnostic(error: MachineError, where: str) -> Diagnostic:
    """`error` as one diagnostic: at its place in the machine file, with the source line,
    or, where there is no file (an unknown preset), naming `where`: the pass or tool that
    was given the machine (`pase-search`, `pase-partition-stages`, `pase-run`)."""
    if not error.filename:
        return Diagnostic(f"{where}: {error.message}")
    return Diagnostic(error.message, error.filename, error.line, error.column,
                      source_line=read_line(error.filename, error.line) if error.line else None)


def load_machine(name_or_path: str) -> Machine:
    """A preset by name (`pase.passes.strategy.machines.PRESETS`), or a machine described
    by a TOML file."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    if not name_or_path.endswith(".toml") and not os.path.exists(name_or_path):
        raise MachineError(f"unknown machine '{name_or_path}'; presets are "
                           + ", ".join(PRESETS) + ", or give a .toml file")
    try:
        text = read_text(name_or_path, "machine file")
    except Diagnostic as error:
        raise MachineError(error.message, name_or_path, error.line, error.column) from None
    import tomllib  # only a machine file needs it, not the presets most runs use

    if (long := long_integer(text)) is not None:  # (refused as pase's other readers do)
        _too_long(name_or_path, text, long)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message, line, column = _toml_error(str(error), text)
        raise MachineError(f"not valid TOML: {message}", name_or_path, line,
                           column) from None
    except RecursionError:
        raise MachineError("not a machine file: its arrays and tables nest too deeply",
                           name_or_path) from None
    except ValueError:  # the only other: an integer longer than Python converts
        _too_long(name_or_path, text, too_long_integer(text, sys.get_int_max_str_digits()))
    try:
        return machine_from_dict(data, name_or_path)
    except MachineError as error:
        if error.key is None:
            raise
        line, column = _key_location(text, error.key)
        raise MachineError(error.message, name_or_path, line, column, error.key) from None


def _too_long(path: str, text: str, where: tuple[int, int] | None) -> NoReturn:
    """Raise the error at the integer literal too long to read (offset and length)."""
    line, column = offset_to_line_column(text, where[0]) if where else (0, 0)
    count = sum(c.isdigit() for c in text[where[0]:sum(where)]) if where else 0
    digits = f"of {count:,} digits" if where else "too long to read"
    raise MachineError(f"not a machine file: an integer {digits}; pase reads integers of at "
                       f"most {LONGEST_INTEGER} digits (flops and bandwidths are numbers "
                       "below 1.8e308, written with an exponent: 1.95e13)", path, line,
                       column) from None


def _toml_error(text: str, document: str) -> tuple[str, int, int]:
    """tomllib's `message (at line L, column C)` as (message, L, C); the end of the document
    is its last character."""
    match = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", text, re.DOTALL)
    if match:
        return match.group(1), int(match.group(2)), int(match.group(3))
    match = re.fullmatch(r"(.*) \(at end of document\)", text, re.DOTALL)
    if match:
        line, column = offset_to_line_column(document, max(len(document) - 1, 0))
        return match.group(1), line, column
    return text, 0, 0


def _key_location(document: str, key: str) -> tuple[int, int]:
    """Line and column of the key `key = ...` (bare or quoted) or the table `[key]`; (0, 0)
    if it is not written as either."""
    names = "|".join(re.escape(name) for name in (key, f'"{key}"', f"'{key}'"))
    pattern = rf"^[ \t]*(?:\[+[ \t]*)?({names})[ \t]*[=\]]"
    match = re.search(pattern, document, re.MULTILINE)
    return offset_to_line_column(document, match.start(1)) if match else (0, 0)


def _finite(value: object) -> float | None:
    """`value` as a finite float, or None (not a number, a bool, infinite, or an integer too
    large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def machine_from_dict(data: dict[str, object], where: str = "machine") -> Machine:
    """Build a Machine from a TOML table or a strategy file's "machine" object."""
    required = ("flops", "intra_node_bandwidth", "inter_node_bandwidth")
    values: dict[str, float] = {}
    optional = ("bf16_flops", "fp16_flops", "hbm_bandwidth", "memory_gib")
    for key in data:
        if key not in ("name", "source", "devices_per_node", "hierarchical", *required,
                       *optional):
            raise MachineError(f"unknown key '{key}'; expected name, flops, "
                               "intra_node_bandwidth, inter_node_bandwidth, "
                               "devices_per_node, source, bf16_flops, fp16_flops, "
                               "hbm_bandwidth, hierarchical, memory_gib", where, key=key)
    for key in optional:
        if key in data:
            number = _finite(data[key])
            # 0 (no such peak) or at least 1, as the required ones: 1e-300 overflowed the
            # costs to inf (the search's strategy then failed the verifier).
            if number is None or number < 0 or 0 < number < 1:
                raise MachineError(f"'{key}' must be 0 (none) or a number of at least 1, "
                                   f"got {data[key]!r}", where, key=key)
            values[key] = number
    if not isinstance(data.get("hierarchical", False), bool):
        raise MachineError(f"'hierarchical' must be true or false, got "
                           f"{data['hierarchical']!r}", where, key="hierarchical")
    for key in required:
        if key not in data:
            raise MachineError(f"missing '{key}' (a positive number)", where)
        # At least 1 (FLOP/s, bytes/s): smaller positive values overflow costs to inf.
        value = data[key]
        number = _finite(value)
        if number is None or number < 1:
            shown = shown_integer(str(value)) if type(value) is int else repr(value)
            raise MachineError(f"'{key}' must be a number of at least 1, got {shown}", where,
                               key=key)
        values[key] = number
    for key in ("name", "source"):
        if key in data and not isinstance(data[key], str):
            raise MachineError(f"'{key}' must be a string, got {data[key]!r}", where, key=key)
    per_node = data.get("devices_per_node", 1 << 30)
    if isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1:
        raise MachineError(f"'devices_per_node' must be a positive integer, got {per_node!r}",
                           where, key="devices_per_node")
    if per_node > MAX_ELEMENTS:  # (as every count pase reads: `pase.core.numbers`)
        raise MachineError(f"'devices_per_node' must be at most 2^53, got "
                           f"{shown_integer(str(per_node))}", where, key="devices_per_node")
    return Machine(str(data.get("name", os.path.basename(where))), values["flops"],
                   values["intra_node_bandwidth"], values["inter_node_bandwidth"], per_node,
                   str(data.get("source", "")), values.get("bf16_flops", 0.0),
                   values.get("fp16_flops", 0.0), values.get("hbm_bandwidth", 0.0),
                   bool(data.get("hierarchical", False)), values.get("memory_gib", 0.0))
