"""The training step a strategy file states, for a run that executes the strategy.

`pase-run --strategy FILE` runs the step the strategy was searched for: its "training"
(`TrainingOptions.json`, what `export=` writes) gives each of optimizer, precision,
recompute and zero that its flag does not. A flag that says otherwise is one error at
the file's value, naming both:

    s.json:75:18: error: --precision fp32 contradicts the strategy's "training", searched
    for precision bf16; drop --precision to run the file's step, or give a strategy
    searched for precision fp32
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.formats.json_locations import located as _located
from pase.formats.strategy_input import strategy_text
from pase.passes.strategy import TrainingOptions

OPTIONS = ("optimizer", "precision", "recompute", "zero")
"""The step options a strategy's "training" gives a run (data_parallel is the loader's)."""


def file_step(path: str, given: Mapping[str, str | None]) -> dict[str, str | None]:
    """The step options of a run of the strategy file at `path`: `given` (the flags by
    option name, None where not given) with the file's "training" for each one not
    given (`text_step`). A file that cannot be read leaves `given` as it is: the
    strategy loader then reports what is wrong with it."""
    try:
        path, text = strategy_text(path)
    except Diagnostic:
        return dict(given)
    return text_step(path, text, given)


def text_step(path: str, text: str, given: Mapping[str, str | None]
              ) -> dict[str, str | None]:
    """`file_step` of the file `path` holding `text`. Raises `Diagnostic` at the file's
    value for a flag that contradicts it. A text that is not JSON, or states no single
    step (no "training", or graphs searched for different steps), leaves `given` as it
    is.

        >>> text = '{"layers": [], "training": {"optimizer": "adam", "zero": 1}}'
        >>> text_step("s.json", text, {"optimizer": None, "precision": "fp32", "zero": None})
        {'optimizer': 'adam', 'precision': 'fp32', 'zero': '1'}
        >>> try:
        ...     text_step("s.json", text, {"optimizer": "sgd"})
        ... except Diagnostic as error:
        ...     print(str(error).splitlines()[0])
        s.json:1:42: error: --optimizer sgd contradicts the strategy's "training", searched \
for optimizer adam; drop --optimizer to run the file's step, or give a strategy searched \
for optimizer sgd
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return dict(given)
    strategies = data if isinstance(data, list) else [data]
    stated = [(index, strategy["training"]) for index, strategy in enumerate(strategies)
              if isinstance(strategy, dict) and isinstance(strategy.get("training"), dict)]
    if not stated or any(training != stated[0][1] for _, training in stated) or \
            len(stated) != len(strategies):
        return dict(given)
    index, training = stated[0]
    prefix = (index,) if isinstance(data, list) else ()
    step = dict(given)
    for option in OPTIONS:
        if option not in training or not _takes(option, training[option]):
            continue
        value, flag = str(training[option]), given.get(option)
        if flag is None:
            step[option] = value
        elif flag != value:
            raise _located(f"--{option} {flag} contradicts the strategy's \"training\", "
                           f"searched for {option} {value}; drop --{option} to run the "
                           f"file's step, or give a strategy searched for {option} {flag}",
                           path, text, (*prefix, "training", option))
    return step


def _takes(option: str, value: Any) -> bool:
    """Whether `option` takes `value` (as a string; the loader words any other)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    try:
        TrainingOptions(**{option: str(value)}).check()  # type: ignore[arg-type]
    except ValueError:
        return False
    return True
