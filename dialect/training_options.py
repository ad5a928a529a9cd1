"""The training step a plan was searched for, as the IR records it: `pase.training`.

`pase-search` and `pase-partition-stages` write, when an option is not its default, a
builtin dictionary on the `dnn.graph` op (all four keys, string values):

    dnn.graph @mlp(...) attributes {pase.training = {optimizer = "adam",
        precision = "bf16", recompute = "full", zero = "1"}} { ... }

and, for `recompute=auto` / `zero=auto`, the per-layer decisions: `pase.recompute` (a unit
attribute on a layer whose forward is recomputed in the backward) and `pase.zero = N : i64`.
The execution side (`pase-autodiff`, `pase-run`, `-t jax`) reads them here; its own options
override them (`StepOptions.overridden`).

    >>> StepOptions().optimizer, StepOptions().precision, StepOptions().zero
    ('sgd', 'fp32', 0)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr
from xdsl.ir import Operation

TRAINING_ATTR_NAME = "pase.training"
RECOMPUTE_ATTR_NAME = "pase.recompute"
ZERO_ATTR_NAME = "pase.zero"

OPTIMIZERS = ("sgd", "momentum", "adam")
PRECISIONS = ("fp32", "bf16", "fp16")
RECOMPUTES = ("none", "full", "auto")
ZEROS = ("0", "1", "2", "3", "auto")

CHOICES = {"optimizer": OPTIMIZERS, "precision": PRECISIONS, "recompute": RECOMPUTES,
           "zero": ZEROS}

NOUNS = {"zero": "ZeRO stage"}


class TrainingOptionError(ValueError):
    """An unknown value of a training option; its message names the option and the
    values it takes."""


def checked(option: str, value: str) -> str:
    """`value` if `option` takes it, else `TrainingOptionError`.

        >>> checked("optimizer", "adam")
        'adam'
        >>> checked("optimizer", "lamb")
        Traceback (most recent call last):
        ...
        pase.dialect.training_options.TrainingOptionError: unknown optimizer 'lamb'; \
it is one of sgd, momentum, adam
    """
    if value not in CHOICES[option]:
        raise TrainingOptionError(f"unknown {NOUNS.get(option, option)} '{value}'; it is one of "
                                  f"{', '.join(CHOICES[option])}")
    return value


@dataclass(frozen=True)
class StepOptions:
    """The training step to execute: optimizer, precision, recompute, zero ("auto" for
    the per-layer decisions of `pase.recompute` / `pase.zero`)."""

    optimizer: str = "sgd"
    precision: str = "fp32"
    recompute: str = "none"
    zero: int | str = 0

    def __post_init__(self) -> None:
        for option in ("optimizer", "precision", "recompute"):
            checked(option, getattr(self, option))
        checked("zero", str(self.zero))
        if str(self.zero) != "auto":
            object.__setattr__(self, "zero", int(self.zero))

    def overridden(self, **given: str | int | None) -> StepOptions:
        """These options with those `given` that are not None or "" in their place.

            >>> StepOptions().overridden(optimizer="adam", zero=None).optimizer
            'adam'
        """
        changes: dict[str, Any] = {k: v for k, v in given.items() if v not in (None, "")}
        return replace(self, **changes)

    def is_default(self) -> bool:
        return self == StepOptions()


def training_of(graph: Operation) -> StepOptions:
    """The options of `graph`'s `pase.training` (the defaults without one); a malformed
    attribute raises `TrainingOptionError`."""
    attribute = graph.attributes.get(TRAINING_ATTR_NAME)
    if attribute is None:
        return StepOptions()
    if not isinstance(attribute, DictionaryAttr):
        raise TrainingOptionError(f"{TRAINING_ATTR_NAME} must be a dictionary of "
                                  "optimizer, precision, recompute and zero")
    values: dict[str, str] = {}
    for key, value in attribute.data.items():
        if key not in CHOICES:
            raise TrainingOptionError(f"{TRAINING_ATTR_NAME} has an unknown key '{key}'; "
                                      f"its keys are {', '.join(CHOICES)}")
        if not isinstance(value, StringAttr):
            raise TrainingOptionError(f"{TRAINING_ATTR_NAME}: '{key}' must be a string")
        values[key] = value.data
    return StepOptions(**values)  # type: ignore[arg-type]


def recomputed(layer: Operation, options: StepOptions) -> bool:
    """Whether `layer`'s forward is recomputed in the backward: every layer under
    recompute=full, those marked `pase.recompute` under auto."""
    return options.recompute == "full" or (options.recompute == "auto"
                                           and RECOMPUTE_ATTR_NAME in layer.attributes)


def zero_stage(layer: Operation, options: StepOptions) -> int:
    """The ZeRO stage of `layer`'s params: the graph's, or under auto its `pase.zero`."""
    if options.zero != "auto":
        return int(options.zero)
    stage = layer.attributes.get(ZERO_ATTR_NAME)
    return stage.value.data if isinstance(stage, IntegerAttr) else 0


def set_training(graph: Operation, options: StepOptions) -> None:
    """Record `options` as `graph`'s `pase.training` (all four keys, string values), or
    remove it for the defaults, so a graph without options prints as before."""
    if options.is_default():
        graph.attributes.pop(TRAINING_ATTR_NAME, None)
        return
    graph.attributes[TRAINING_ATTR_NAME] = DictionaryAttr({
        "optimizer": StringAttr(options.optimizer), "precision": StringAttr(options.precision),
        "recompute": StringAttr(options.recompute), "zero": StringAttr(str(options.zero))})
