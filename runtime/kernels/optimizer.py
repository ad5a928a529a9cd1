"""sgd: the parameter update `p − lr · g`, elementwise on the local blocks.

The update runs in the parameter's layout, so it needs no communication, and it is
never differentiated (its table entry has no backward).

Example:
    >>> sgd_update(np.ones(2), np.full(2, 0.5), 0.1)
    array([0.95, 0.95])
"""

from __future__ import annotations

import numpy as np

from pase.runtime.kernels.context import Kernels


def sgd_update(param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """One SGD step, in the parameter's element type."""
    step_size = np.asarray(lr, dtype=param.dtype)
    return (param - step_size * grad).astype(param.dtype)


KERNELS: Kernels = {"dnn.sgd": (
    lambda ctx, inputs: (sgd_update(inputs[0], inputs[1], ctx.props["lr"]), None), None)}
