"""`CheckedOptions`: options in xDSL's spec syntax (`-p 'pase-search{devices=8}'`,
`-f 'onnx{batch=32}'`, `-t 'jax{devices=8}'`) checked one by one.

xDSL's `from_spec` reports a wrong option as a Python conversion error (`Incompatible
types: given ('nan',), expected <class 'int'>`); pase names what takes the option and the
option at fault:

    pase-opt m.dnn -p 'pase-search{devices=abc}'
    pase-search: option 'devices' takes an integer, got "abc"
    pase-opt m.onnx -f 'onnx{batch=nan}'
    -f onnx: option 'batch' takes an integer, got "nan"
"""

from __future__ import annotations

import dataclasses
import difflib
from types import NoneType, UnionType
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible

from pase.core.numbers import DECIMAL, float_literal


class CheckedOptions(ArgSpecConvertible):
    """A base, before xDSL's `ModulePass`, `Frontend` or `Target`, whose `from_spec`
    checks each option: a float option also takes an integer (`lr=1`), and an unknown,
    repeated or ill-typed option is one `ValueError` naming `OPTIONS_OF` (the pass's name
    when empty, as `pase-search`; `-f onnx` for a frontend)."""

    OPTIONS_OF: ClassVar[str] = ""

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        owner = cls.OPTIONS_OF or cls.name
        hints = get_type_hints(cls)
        fields = [f.name for f in dataclasses.fields(cls)
                  if f.init and f.name != "name"]
        parameters: dict[str, tuple[str | int | bool | float, ...]] = {}
        for key, values in spec.parameters.items():
            field = key.replace("-", "_")
            if field not in fields:
                raise ValueError(f"{owner}: unknown option '{key}'; {_known(key, fields)}")
            if len(values) != 1:
                raise ValueError(f"{owner}: option '{key}' takes one value, got {len(values)}")
            parameters[key] = (_option_value(owner, key, values[0], hints[field]),)
        return super().from_spec(ArgSpec(spec.name, parameters))


def _known(key: str, fields: list[str]) -> str:
    """What an unknown option's message lists: the options, and the one meant where
    `key` is one in other case or a letter or two off (`Devices`, `device`)."""
    if not fields:
        return "it takes none"
    names = [f.replace("_", "-") for f in fields]
    close = difflib.get_close_matches(key.lower().replace("_", "-"), names, n=1, cutoff=0.8)
    meant = f"did you mean '{close[0]}'? " if close else ""
    return f"{meant}its options are {', '.join(names)}"


def _option_value(owner: str, key: str, value: Any, hint: Any) -> Any:
    """`value` as the option's type, or ValueError naming the option."""
    kinds = set(get_args(hint)) - {NoneType} if get_origin(hint) in (Union, UnionType) \
        else {hint}
    # What each spec value may become, in order of preference; the spec syntax has no
    # exponents, so memory-gib=1e-3 arrives as a string.
    # A string becomes a float only as a decimal literal a float holds (`float_literal`:
    # not `1_000`, and not `1e-400`, which `float` reads as 0).
    reason = ""
    for kind in {bool: (bool,), int: (int, float), float: (float,),
                 str: (str, float)}.get(type(value), ()):
        if kind in kinds:
            try:
                return float_literal(value) if kind is float and isinstance(value, str) \
                    else kind(value)
            except ValueError as error:
                reason = str(error) if DECIMAL.fullmatch(str(value)) else reason
    wanted = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if float in kinds:
        kinds.discard(int)
    described = " or ".join(wanted[kind] for kind in sorted(kinds, key=list(wanted).index)
                            if kind in wanted)
    given = f'"{value}"' if isinstance(value, str) else str(value).lower()
    raise ValueError(f"{owner}: option '{key}' takes {described}, got {given}"
                     + (f": {reason}" if reason else ""))
