"""The size of the numbers pase reads, in every input: `.dnn` and MLIR sources, pass options,
strategy JSON, machine TOML, pase-run's flags.

A dim, size, stride, window, padding or split factor is at most 2^53 (`MAX_ELEMENTS`), and
`devices` at most 8,192 (the search's `MAX_DEVICES`). A reader checks an integer literal's
digits before it converts it (Python refuses a literal of more than 4,300 digits with its
own unlocated message), so a number past its limit is one located diagnostic that names the
limit:

    >>> read_integer("9" * 5000, "the size of dimension 'b'")
    Traceback (most recent call last):
    ValueError: the size of dimension 'b' is a number of 5,000 digits; pase handles at most 2^53
    >>> too_long_integer('{"a": "1111", "b": 22}', 1)
    (19, 2)
"""

from __future__ import annotations

import math
import re

from pase.core.shapes import MAX_ELEMENTS

LONGEST_INTEGER = 40
"""The most digits of an integer literal any reader converts: more than the 39 of the widest
MLIR integer type (i128), far more than pase's own numbers have (2^53 has 16)."""

SHOWN_DIGITS = 30
"""A number longer than this is named by its count of digits in a message."""


def read_integer(text: str, what: str, limit: int = MAX_ELEMENTS,
                 limit_name: str = "2^53") -> int:
    """`int(text)` of a decimal integer literal, or `ValueError` naming `what` and the limit
    when it is past `limit` (also when it is too long for Python to convert)."""
    digits = len(text.lstrip("+-").lstrip("0"))
    if digits > len(str(limit)) or int(text) > limit:
        raise ValueError(f"{what} is {shown_integer(text)}; pase handles at most {limit_name}")
    return int(text)


DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
"""A decimal number literal: digits, an optional point and an optional exponent (no `_`,
no `0x`)."""

NAMED_FLOATS = re.compile(r"[-+]?(?:nan|inf|infinity)", re.IGNORECASE)
"""`nan`, `inf`, `-inf`: read as themselves, for the option's own range check to name."""


def float_literal(text: str) -> float:
    """`float(text)` of an option's number (a pass option, pase-run's `--memory-gib`), or
    `ValueError` saying why it is not one: not a decimal literal (`0x10`, `1_000`, which
    Python's `float` takes as 1000), or a literal a float does not hold, which Python reads
    as 0 or inf without a word (`1e-400` would make `device-memory-gib` no cap at all):

        >>> float_literal("1e-3"), float_literal("-0")
        (0.001, -0.0)
        >>> float_literal("1e-400")
        Traceback (most recent call last):
        ValueError: not 0, but a float reads it as 0 (the least positive float is about 4.9e-324)
    """
    if NAMED_FLOATS.fullmatch(text):
        return float(text)
    if not DECIMAL.fullmatch(text):
        raise ValueError("not a decimal number")
    value = float(text)
    if value == 0 and re.search(r"[1-9]", re.split(r"[eE]", text)[0]):
        raise ValueError("not 0, but a float reads it as 0 (the least positive float is "
                         "about 4.9e-324)")
    if math.isinf(value):
        raise ValueError("a float reads it as infinity (the largest float is about 1.8e308)")
    return value


def read_float(text: str, what: str) -> float:
    """`float_literal(text)` of a finite number (a `.dnn` clause's `-1.0e9`), or `ValueError`
    naming `what`, and why where `float_literal` says:

        >>> read_float("6.0", "max")
        6.0
        >>> read_float("1e-400", "epsilon")
        Traceback (most recent call last):
        ValueError: epsilon must be a finite number, got '1e-400': not 0, but a float reads \
it as 0 (the least positive float is about 4.9e-324)
    """
    try:
        value = float_literal(text)
        reason = ""
    except ValueError as error:
        value, reason = math.nan, f": {error}" if DECIMAL.fullmatch(text) else ""
    if not math.isfinite(value):
        shown = text if len(text) <= SHOWN_DIGITS else f"{text[:SHOWN_DIGITS]}..."
        raise ValueError(f"{what} must be a finite number, got '{shown}'{reason}")
    return value


MAX_GIB = float(1 << 33)
"""The most GiB a memory option takes (pase-search's memory-gib, device-memory-gib,
pase-run's --memory-gib): 2^33 GiB is 2^63 bytes, the most a signed 64-bit byte count
holds. A larger finite value (1e308) made an infinite number of bytes."""


def too_many_gib(option: str, value: float) -> str | None:
    """Why a finite memory option `value` (GiB) is out of the bytes pase counts, or None:
    more than 2^63 bytes, or above 0 and less than one byte (0 is no cap, so a positive
    cap of no byte must not read as 0). None also for 0, inf and nan: the option's own
    check takes 0 or refuses it, and refuses inf and nan.

        >>> too_many_gib("memory-gib", 1e308)
        'memory-gib=1e+308 is more than 2^33 GiB (2^63 bytes, the most pase counts)'
        >>> too_many_gib("device-memory-gib", 1e-10)
        'device-memory-gib=1e-10 is less than one byte (2^-30 GiB, 9.3e-10, is the least)'
    """
    if 0 < value < 1 / (1 << 30):
        return (f"{option}={value!r} is less than one byte (2^-30 GiB, "
                f"{1 / (1 << 30):.2g}, is the least)")
    if not MAX_GIB < value < math.inf:
        return None
    return f"{option}={value:g} is more than 2^33 GiB (2^63 bytes, the most pase counts)"


def shown_integer(text: str) -> str:
    """An integer literal as a message shows it: `12,345`, or `a number of 5,000 digits`."""
    digits = len(text.lstrip("+-").lstrip("0"))
    return f"{int(text):,}" if digits <= SHOWN_DIGITS else f"a number of {digits:,} digits"


_INTEGER_OR_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|(?<![\w.])[-+]?\d[\d_]*")


def too_long_integer(text: str, longest: int = LONGEST_INTEGER) -> tuple[int, int] | None:
    """Offset and length of the first integer literal of `text` (JSON or TOML) with more than
    `longest` digits, outside strings; None if there is none."""
    for match in _INTEGER_OR_STRING.finditer(text):
        token = match.group()
        if token[0] not in "\"'" and len(token.lstrip("+-").replace("_", "")) > longest:
            return match.start(), len(token)
    return None
