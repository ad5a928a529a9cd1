"""`PasePass`: a module pass whose `-p` options are checked one by one.

xDSL's `ModulePass.from_spec` reports a wrong option as a Python conversion error; pase
names the pass and the option at fault:

    pase-opt m.dnn -p 'pase-search{devices=abc}'
    pase-search: option 'devices' takes an integer, got "abc"
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from pase.core.diagnostics import Diagnostic
from pase.core.options import CheckedOptions
from pase.passes.strategy import Machine, TrainingOptions


class PasePass(CheckedOptions, ModulePass):
    """A module pass whose `-p` options are checked one by one, with messages such as
    `pase-search: option 'devices' takes an integer, got "abc"` (`core.options`)."""


def shown_option(value: object) -> str:
    """An option's value as a message shows it after "got": itself, but an empty string
    says so (`stages=""` printed "got " and nothing).

        >>> shown_option(""), shown_option("all"), shown_option(3)
        ('an empty value', 'all', '3')
    """
    return "an empty value" if value == "" else str(value)


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
