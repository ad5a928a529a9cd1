"""The optimizer steps, elementwise on the local blocks: sgd `p − lr · g`, and momentum
and Adam (`dnn.update`) on the parameter and its state tensors.

An update runs in the parameter's layout and its state lives there too, so it needs no
communication; it is never differentiated (its table entries have no backward). The
arithmetic is in the parameter's element type, the scalar hyperparameters rounded to it.

Example:
    >>> sgd_update(np.ones(2), np.full(2, 0.5), 0.1)
    array([0.95, 0.95])
    >>> w, m = momentum_update(np.ones(2), np.full(2, 0.5), np.full(2, 1.0), 0.1, 0.9)
    >>> w, m
    (array([0.86, 0.86]), array([1.4, 1.4]))
    >>> w, m, v, t = adam_update(np.ones(1), np.full(1, 0.5), np.zeros(1), np.zeros(1),
    ...                          np.zeros(()), 0.1, 0.9, 0.999, 1e-8)
    >>> float(w[0]), float(t)  # the first step moves each weight by lr, against its grad
    (0.900000002, 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pase.runtime.kernels.context import Kernels


def sgd_update(param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """One SGD step, in the parameter's element type."""
    step_size = np.asarray(lr, dtype=param.dtype)
    return (param - step_size * grad).astype(param.dtype)


def momentum_update(param: np.ndarray, grad: np.ndarray, velocity: np.ndarray, lr: float,
                    beta: float) -> tuple[np.ndarray, np.ndarray]:
    """SGD with momentum (PyTorch's form): m' = beta m + g, p' = p − lr m'."""
    scalar = param.dtype.type
    velocity = (scalar(beta) * velocity + grad).astype(param.dtype)
    return (param - scalar(lr) * velocity).astype(param.dtype), velocity


def adam_update(param: np.ndarray, grad: np.ndarray, first: np.ndarray, second: np.ndarray,
                count: np.ndarray, lr: float, beta1: float, beta2: float, eps: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Adam (Kingma and Ba, Algorithm 1) with bias correction; `count` is the number of
    steps taken, a scalar."""
    scalar = param.dtype.type
    count = (count + scalar(1)).astype(param.dtype)
    first = (scalar(beta1) * first + scalar(1 - beta1) * grad).astype(param.dtype)
    second = (scalar(beta2) * second + scalar(1 - beta2) * grad * grad).astype(param.dtype)
    unbiased_first = first / (scalar(1) - scalar(beta1) ** count)
    unbiased_second = second / (scalar(1) - scalar(beta2) ** count)
    step = scalar(lr) * unbiased_first / (np.sqrt(unbiased_second) + scalar(eps))
    return (param - step).astype(param.dtype), first, second, count


def _update(ctx: Any, inputs: list[np.ndarray]) -> tuple[tuple[np.ndarray, ...], None]:
    props = ctx.props
    param, grad, *states = inputs
    if props["optimizer"] == "momentum":
        return momentum_update(param, grad, states[0], props["lr"], props["beta1"]), None
    first, second, count = states
    return adam_update(param, grad, first, second, count, props["lr"], props["beta1"],
                       props["beta2"], props["eps"]), None


KERNELS: Kernels = {
    "dnn.sgd": (lambda ctx, inputs: (sgd_update(inputs[0], inputs[1], ctx.props["lr"]), None),
                None),
    "dnn.update": (_update, None),  # type: ignore[dict-item]
}
