"""Helpers for the kernel tests (the `kit` fixture): simulated device groups and
finite differences.

`kit.run_devices(size, run, group)` runs `run(device, reduce, all_gather)` on `size`
threads, one per simulated device, whose callbacks really exchange the blocks with the
devices of the same group (sum and max in device order, gather = concatenation along the
last axis), and returns the results with the callback calls device 0 made (all devices
must make the same). `kit.assert_gradients(f, inputs, weights, grads)` checks gradients
against central finite differences of `Σ weights · f(*inputs)`. `split` and `assemble` cut
a tensor into blocks and put per-block results back together, concatenated along a split
dim or summed as partial sums; `kit.assert_sharded(step, inputs, axes, parts)` does both
around a step on simulated devices.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

Call = tuple[str, str, tuple[int, ...]]
DeviceRun = Callable[[int, Callable[..., np.ndarray], Callable[..., np.ndarray]], Any]


def run_devices(size: int, run: DeviceRun,
                group: Callable[[int], int] = lambda device: 0) -> tuple[list[Any], list[Call]]:
    """Run `run(device, reduce, all_gather)` on `size` threads; the callbacks of a device
    exchange blocks with the devices of its `group(device)`, in device order."""
    members: dict[int, list[int]] = {}
    for device in range(size):
        members.setdefault(group(device), []).append(device)
    barriers = {key: threading.Barrier(len(devices), timeout=20)
                for key, devices in members.items()}
    slots: list[np.ndarray | None] = [None] * size
    calls: list[list[Call]] = [[] for _ in range(size)]

    def exchange(device: int, array: np.ndarray) -> list[np.ndarray]:
        barrier = barriers[group(device)]
        slots[device] = np.array(array)
        barrier.wait()
        blocks = [slots[member] for member in members[group(device)]]
        barrier.wait()
        return [block for block in blocks if block is not None]

    def on_device(device: int) -> Any:
        def reduce(array: np.ndarray, op: str) -> np.ndarray:
            calls[device].append(("reduce", op, array.shape))
            blocks = exchange(device, array)
            combine = {"sum": np.add, "max": np.maximum}[op]
            result = blocks[0]
            for block in blocks[1:]:
                result = combine(result, block)
            return result

        def all_gather(array: np.ndarray) -> np.ndarray:
            calls[device].append(("all_gather", "", array.shape))
            return np.concatenate(exchange(device, array), axis=-1)

        try:
            return run(device, reduce, all_gather)
        except BaseException:
            for barrier in barriers.values():  # the others fail instead of waiting
                barrier.abort()
            raise

    with ThreadPoolExecutor(max_workers=size) as pool:
        futures = [pool.submit(on_device, device) for device in range(size)]
        results = [future.result() for future in futures]
    assert all(log == calls[0] for log in calls), "devices made different callback calls"
    return results, calls[0]


def numeric_gradient(function: Callable[[np.ndarray], float], x: np.ndarray,
                     step: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + step
        above = function(x)
        x[index] = original - step
        below = function(x)
        x[index] = original
        grad[index] = (above - below) / (2 * step)
    return grad


def assert_gradients(function: Callable[..., np.ndarray], inputs: Sequence[np.ndarray],
                     weights: np.ndarray, grads: Sequence[np.ndarray]) -> None:
    """Each of `grads` against the central differences of Σ weights · function(*inputs)
    in its input."""
    for index, (operand, grad) in enumerate(zip(inputs, grads, strict=True)):
        def loss(value: np.ndarray, index: int = index) -> float:
            operands = [*inputs[:index], value, *inputs[index + 1:]]
            return float(np.sum(weights * function(*operands)))

        assert_gradient(grad, numeric_gradient(loss, operand.copy()))


def axis_of(dims: Sequence[str], dim: str) -> int | None:
    """Where a tensor over `dims` runs along `dim`; None if it does not range over it."""
    return list(dims).index(dim) if dim in dims else None


def split(array: np.ndarray, axis: int | None, parts: int) -> list[np.ndarray]:
    """`parts` blocks along `axis`, or the whole array on every device if axis is None."""
    if axis is None:
        return [array] * parts
    return [np.ascontiguousarray(block) for block in np.split(array, parts, axis=axis)]


def assemble(blocks: Sequence[np.ndarray], axis: int | None) -> np.ndarray:
    """Blocks concatenated along `axis`, or summed in device order when axis is None."""
    if axis is not None:
        return np.concatenate(list(blocks), axis=axis)
    total = blocks[0].copy()
    for block in blocks[1:]:
        total = total + block
    return total


def assert_sharded(step: Callable[..., Sequence[np.ndarray | None]],
                   inputs: Sequence[np.ndarray], axes: Sequence[int | None], parts: int,
                   with_reduce: bool = False) -> list[Call]:
    """`step(*inputs)` on `parts` devices, input k split along `axes[k]` (None: whole on
    every device), equals it unsharded. Result k is laid out as input k (the output as the
    output gradient, an operand's gradient as the operand): concatenated along `axes[k]`,
    or where that is None a partial sum the devices add up; None results are skipped.
    `with_reduce` passes each device its `reduce` callback; returns the callback calls."""
    blocks = [split(x, axis, parts) for x, axis in zip(inputs, axes, strict=True)]

    def run(device: int, reduce: Callable[..., np.ndarray], all_gather: Any) -> Any:
        return step(*(block[device] for block in blocks),
                    **({"reduce": reduce} if with_reduce else {}))

    results, calls = run_devices(parts, run)
    for k, expected in enumerate(step(*inputs)):
        if expected is not None:
            assert_exact(assemble([result[k] for result in results], axes[k]), expected)
    return calls


def assert_exact(actual: np.ndarray, expected: np.ndarray) -> None:
    """Sharded equals unsharded up to summation order (1e-12)."""
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def assert_gradient(actual: np.ndarray, expected: np.ndarray) -> None:
    """Analytic gradient against central differences."""
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7)


class KernelTestKit:
    """The helpers above, for test modules (importlib mode cannot import conftest)."""

    run_devices = staticmethod(run_devices)
    assert_gradients = staticmethod(assert_gradients)
    axis_of = staticmethod(axis_of)
    split = staticmethod(split)
    assemble = staticmethod(assemble)
    assert_sharded = staticmethod(assert_sharded)
    assert_exact = staticmethod(assert_exact)


@pytest.fixture
def kit() -> KernelTestKit:
    return KernelTestKit()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240607)
