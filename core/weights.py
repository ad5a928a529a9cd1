"""Initial parameter values that travel with a module from its frontend to its targets.

A frontend that reads a model with weights (`pase.frontend.onnx`: the initializers)
records them with the module it returns; a target that writes a program (`-t jax`) asks
for them, by the params' names:

    record(module, {"fc1_weight": array, ...})
    initial_values(module)           # the dict, or None for a model without weights

The record is kept as long as the module lives (passes change a module in place).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import ModuleOp

if TYPE_CHECKING:  # numpy is imported where it is used: pase-opt starts without it
    import numpy as np

_VALUES: WeakKeyDictionary[ModuleOp, dict[str, np.ndarray]] = WeakKeyDictionary()

WEIGHTS_SUFFIX = ".weights.npz"
"""A `-t jax -o step.py` program's weights are `step.weights.npz`, beside it."""


def record(module: ModuleOp, values: dict[str, np.ndarray]) -> None:
    _VALUES[module] = values


def initial_values(module: ModuleOp) -> dict[str, np.ndarray] | None:
    return _VALUES.get(module)


def npz_bytes(values: dict[str, np.ndarray]) -> bytes:
    """`values` as the bytes of an uncompressed .npz (`numpy.load` reads it back)."""
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **values)  # type: ignore[arg-type]
    return buffer.getvalue()
