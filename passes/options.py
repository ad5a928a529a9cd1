"""`PasePass`: a module pass whose `-p` options are checked one by one.

xDSL's `ModulePass.from_spec` reports a wrong option as a Python conversion error; pase
names the pass and the option at fault:

    pase-opt m.dnn -p 'pase-search{devices=abc}'
    pase-search: option 'devices' takes an integer, got "abc"
"""

from __future__ import annotations

import dataclasses
from types import NoneType, UnionType
from typing import Any, Self, Union, get_args, get_origin, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from pase.core.diagnostics import Diagnostic
from pase.passes.strategy import Machine, TrainingOptions


class PasePass(ModulePass):
    """A module pass whose `-p` options are checked one by one, with messages such as
    `pase-search: option 'devices' takes an integer, got "abc"`. A float option also
    takes an integer (`lr=1`)."""

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        hints = get_type_hints(cls)
        fields = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]
        parameters: dict[str, tuple[str | int | bool | float, ...]] = {}
        for key, values in spec.parameters.items():
            field = key.replace("-", "_")
            if field not in fields:
                known = ", ".join(f.replace("_", "-") for f in fields)
                raise ValueError(f"{cls.name}: unknown option '{key}'; its options are {known}")
            if len(values) != 1:
                raise ValueError(f"{cls.name}: option '{key}' takes one value, got "
                                 f"{len(values)}")
            parameters[key] = (_option_value(cls.name, key, values[0], hints[field]),)
        return super().from_spec(ArgSpec(spec.name, parameters))


def _option_value(pass_name: str, key: str, value: Any, hint: Any) -> Any:
    """`value` as the option's type, or ValueError naming the option."""
    kinds = set(get_args(hint)) - {NoneType} if get_origin(hint) in (Union, UnionType) \
        else {hint}
    # What each spec value may become, in order of preference; the spec syntax has no
    # exponents, so memory-gib=1e-3 arrives as a string.
    for kind in {bool: (bool,), int: (int, float), float: (float,),
                 str: (str, float)}.get(type(value), ()):
        if kind in kinds:
            try:
                return kind(value)
            except ValueError:
                pass
    wanted = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if float in kinds:
        kinds.discard(int)
    described = " or ".join(wanted[kind] for kind in sorted(kinds, key=list(wanted).index)
                            if kind in wanted)
    given = f'"{value}"' if isinstance(value, str) else str(value).lower()
    raise ValueError(f"{pass_name}: option '{key}' takes {described}, got {given}")


def training_options(pass_name: str, devices: int, optimizer: str, precision: str,
                     recompute: str, zero: str | int, data_parallel: int) -> TrainingOptions:
    """The training step a search pass's options state (`optimizer`, `precision`,
    `recompute`, `zero`, `data-parallel`; 0 for no pinned degree), or one Diagnostic
    naming the pass and the option at fault.

        >>> training_options("pase-search", 8, "adam", "bf16", "none", 1, 2).json()["zero"]
        1
    """
    options = TrainingOptions(optimizer, precision, recompute, str(zero),
                              data_parallel or None)
    try:
        options.check()
    except ValueError as error:
        raise Diagnostic(f"{pass_name}: {error}") from None
    if data_parallel and devices % data_parallel:
        raise Diagnostic(f"{pass_name}: data-parallel={data_parallel} does not divide the "
                         f"{devices} devices")
    return options


def check_training(pass_name: str, graph: str, options: TrainingOptions, machine: Machine,
                   batch: tuple[str, int] | None) -> None:
    """The checks of a training step that need the graph (its batch dim and size) and the
    machine: one Diagnostic each."""
    try:
        machine.peak(options.precision)
    except ValueError as error:
        raise Diagnostic(f"{pass_name}: {error}") from None
    pinned = options.data_parallel
    if pinned is not None and (batch is None or batch[1] % pinned):
        shown = f"the batch {batch[0]} = {batch[1]}" if batch else "a graph without a batch"
        raise Diagnostic(f"{pass_name} on @{graph}: data-parallel={pinned} does not divide "
                         f"{shown}")
