"""The strategy JSON's descriptive objects, checked: "machine", "training", and a layer
entry's "recompute" and "zero".

pase-search and pase-partition-stages write them (the machine a strategy was searched
for, its training step, the per-layer choices of `recompute=auto` and `zero=auto`); a
strategy file read back (`strategy=`, `pase-run --strategy`) pins only its layers'
configurations and is evaluated on the machine and step of the run that reads it. These
objects still say what the strategy is, so a wrong one is an error, not ignored:

    >>> check_training({"optimizer": "adamw"})
    Traceback (most recent call last):
    ...
    pase.formats.strategy_fields.FieldError: must be sgd, momentum or adam, not "adamw"
"""

from __future__ import annotations

import json
from typing import Any

from pase.formats.machine_toml import MachineError, machine_from_dict
from pase.passes.strategy import (
    OPTIMIZER_STATE_WORDS,
    PRECISIONS,
    RECOMPUTE,
    TrainingConfig,
    TrainingOptions,
)

ZERO_STAGES = (0, 1, 2, 3)


class FieldError(ValueError):
    """A field at fault: its message and its key (None: the object itself); the caller
    names the field before the message unless the message `names_key` itself."""

    def __init__(self, message: str, key: str | None = None, at_key: bool = False,
                 names_key: bool = False):
        super().__init__(message)
        self.message, self.key, self.at_key, self.names_key = message, key, at_key, names_key


def check_machine(data: dict[str, Any]) -> None:
    """A strategy's "machine": what `Machine.to_json` writes, as a machine file holds
    it (`machine_from_dict`: every key known, rates at least 1)."""
    try:
        machine_from_dict(data)
    except MachineError as error:
        raise FieldError(error.message, error.key, names_key=True,
                         at_key=error.message.startswith("unknown key")) from None


def check_training(data: dict[str, Any]) -> None:
    """A strategy's "training" (`TrainingOptions.json`): each key known, each value one
    the pass option of the same name takes."""
    for key, value in data.items():
        allowed = {"optimizer": tuple(OPTIMIZER_STATE_WORDS), "precision": PRECISIONS,
                   "recompute": RECOMPUTE}.get(key)
        if allowed is not None:
            if value not in allowed:
                raise FieldError(f"must be {', '.join(allowed[:-1])} or {allowed[-1]}, not "
                                 f"{_shown(value)}", key)
        elif key == "zero":
            if value != "auto" and not _integer_in(value, ZERO_STAGES):
                raise FieldError(f"must be a ZeRO stage 0, 1, 2, 3 or \"auto\", not "
                                 f"{_shown(value)}", key)
        elif key == "data_parallel":
            if value is not None and not (_is_integer(value) and value >= 1):
                raise FieldError("must be a positive integer (the pinned data-parallel "
                                 f"degree) or null, not {_shown(value)}", key)
        else:
            raise FieldError("has an unknown key; expected optimizer, precision, recompute, "
                             "zero, data_parallel", key, at_key=True)


def check_layer_step(entry: dict[str, Any]) -> None:
    """A layer entry's per-layer choices: "recompute" true or false, "zero" a stage."""
    if "recompute" in entry and not isinstance(entry["recompute"], bool):
        raise FieldError(f"must be true or false, not {_shown(entry['recompute'])}",
                         "recompute")
    if "zero" in entry and not _integer_in(entry["zero"], ZERO_STAGES):
        raise FieldError(f"must be a ZeRO stage 0, 1, 2 or 3, not {_shown(entry['zero'])}",
                         "zero")


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer_in(value: object, allowed: tuple[int, ...]) -> bool:
    return _is_integer(value) and value in allowed


def _shown(value: object) -> str:
    """A JSON value as a message shows it, at most 40 characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:36] + "..."


def other_step(strategy: dict[str, Any], training: TrainingOptions) -> str | None:
    """Why a strategy's "training" is not the run's step `training` (None if it is, or if
    it states none): the error's text, naming both. A run that leaves data-parallel to
    the search (0) takes the file's: its layers' configurations state the split."""
    stated, run = strategy.get("training"), training.json()
    if stated is None or stated == {**run, "data_parallel": run["data_parallel"] if
                                    run["data_parallel"] is not None else
                                    stated.get("data_parallel")}:
        return None
    return (f"the strategy was written for the training step "
            f"{_shown_step(strategy['training'])}, but this run's options give "
            f"{_shown_step(training.json())}")


def _shown_step(step: dict[str, Any]) -> str:
    """A "training" object as options: `{optimizer=adam precision=bf16 ...}` (a searched
    data-parallel degree, null, as the option's 0)."""
    return "{" + " ".join(f"{key.replace('_', '-')}={0 if value is None else value}"
                          for key, value in step.items()) + "}"


def with_choices(entry: dict[str, Any], training: TrainingOptions | None) -> dict[str, int]:
    """A layer entry's configuration; under recompute=auto or zero=auto with the entry's
    "recompute" or "zero", a `TrainingConfig` with them (the option's own choice for the
    one it does not state)."""
    config = entry["config"]
    auto_recompute = training is not None and training.recompute == "auto" and \
        "recompute" in entry
    auto_zero = training is not None and training.zero == "auto" and "zero" in entry
    if training is None or not (auto_recompute or auto_zero):
        return config
    return TrainingConfig(
        config, entry["recompute"] if auto_recompute else training.recompute == "full",
        entry["zero"] if auto_zero else (0 if training.zero == "auto" else int(training.zero)))
