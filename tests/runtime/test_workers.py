"""The launcher: results in rank order, failures and timeouts that stop every worker.

Worker functions are module-level so the processes backend can pickle them by name; a test
bounds the time of a failing run only to tell "stopped by the abort flag" from "stopped by
the timeout", with the timeout far above the bound.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from functools import partial
from typing import Any

import numpy as np
import pytest
from processes import children, wait_for

from pase.runtime.communicator import CollectiveTimeout, DeviceComm, WorkerAborted
from pase.runtime.workers import WorkerError, run_workers

BACKENDS = ["threads", "processes"]
LONG_TIMEOUT = 30.0


def describe(comm: DeviceComm) -> dict[str, Any]:
    return {"rank": comm.rank, "size": comm.size, "block": np.full(2, comm.rank, np.int64)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_come_back_in_rank_order(backend: str) -> None:
    results = run_workers(describe, 3, backend=backend)
    assert len(results) == 3
    assert [result["rank"] for result in results] == [0, 1, 2]
    assert {result["size"] for result in results} == {3}
    np.testing.assert_array_equal(results[2]["block"], [2, 2])
    assert results.counters() == {0: {}, 1: {}, 2: {}}


def fail_midway(comm: DeviceComm, seen: list[BaseException] | None = None) -> None:
    """Device 2 raises at the fourth step while the others wait in that step's all_reduce."""
    group = tuple(range(comm.size))
    try:
        for step in range(8):
            if comm.rank == 2 and step == 3:
                raise ValueError("injected at step 3")
            comm.all_reduce(np.ones(16, np.float32), group, tag=f"step/{step}")
    except BaseException as error:
        if seen is not None:
            seen.append(error)
        raise


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failing_worker_stops_the_others_with_its_error(backend: str) -> None:
    started = time.monotonic()
    with pytest.raises(ValueError, match="injected at step 3") as caught:
        run_workers(fail_midway, 3, backend=backend, timeout=LONG_TIMEOUT)
    assert time.monotonic() - started < LONG_TIMEOUT / 2
    assert "device 2 failed: ValueError: injected at step 3" in caught.value.__notes__
    if backend == "processes":
        assert any("traceback on device 2" in note and "fail_midway" in note
                   for note in caught.value.__notes__)


def test_the_others_are_aborted_not_timed_out() -> None:
    seen: list[BaseException] = []
    with pytest.raises(ValueError, match="injected"):
        run_workers(partial(fail_midway, seen=seen), 4, timeout=LONG_TIMEOUT)
    aborted = [error for error in seen if isinstance(error, WorkerAborted)]
    assert len(aborted) == 3  # devices 0, 1 and 3
    assert all("device 2 failed" in str(error) for error in aborted)


def never_arrives(comm: DeviceComm) -> np.ndarray | None:
    if comm.rank == 3:
        return None
    return comm.all_reduce(np.ones(8), (0, 1, 2, 3), tag="fc6/grad")


# Processes get a longer timeout: on a loaded machine their first steps are further apart.
@pytest.mark.parametrize(("backend", "timeout"), [("threads", 0.5), ("processes", 1.0)])
def test_a_device_that_never_arrives_times_out_by_name(backend: str, timeout: float) -> None:
    with pytest.raises(CollectiveTimeout,
                       match=r"^all_reduce 'fc6/grad' on group \(0, 1, 2, 3\): timed out after "
                             rf"{timeout} s waiting for device 3 \(device 3 returned from its "
                             r"function without joining\)") as caught:
        run_workers(never_arrives, 4, backend=backend, timeout=timeout)
    assert caught.value.missing == (3,)
    assert (caught.value.op, caught.value.tag) == ("all_reduce", "fc6/grad")
    assert any(note.startswith("device ") and " failed: CollectiveTimeout: all_reduce" in note
               for note in caught.value.__notes__)


def arrives_late(comm: DeviceComm) -> np.ndarray:
    if comm.rank == 1:
        time.sleep(1.0)  # still computing when the others give up
    return comm.all_gather(np.ones(2), (2, 0, 1), axis=0, tag="late")


def test_a_late_device_is_named_even_if_the_wait_is_on_another() -> None:
    """Device 2 waits on device 1 directly and device 0 on device 2: both blame device 1."""
    with pytest.raises(CollectiveTimeout, match=r"waiting for device 1$") as caught:
        run_workers(arrives_late, 3, timeout=0.2)
    assert caught.value.missing == (1,)


def receives_nothing(comm: DeviceComm) -> np.ndarray | None:
    return comm.recv(0, "weights") if comm.rank == 1 else None


def test_a_recv_without_send_times_out() -> None:
    with pytest.raises(CollectiveTimeout, match=r"^recv 'weights' from device 0: timed out "
                                                r"after 0\.3 s waiting for device 0"):
        run_workers(receives_nothing, 2, timeout=0.3)


def dies(comm: DeviceComm) -> np.ndarray:
    if comm.rank == 1:
        os._exit(3)
    return comm.all_reduce(np.ones(4), (0, 1, 2), tag="x")


def test_a_process_that_dies_is_a_worker_error() -> None:
    started = time.monotonic()
    with pytest.raises(WorkerError, match="device 1 failed: its process exited with code 3"):
        run_workers(dies, 3, backend="processes", timeout=LONG_TIMEOUT)
    assert time.monotonic() - started < LONG_TIMEOUT / 2


def returns_a_lock(comm: DeviceComm) -> Any:
    return threading.Lock()


@pytest.mark.parametrize(("fn", "message"), [
    (lambda comm: comm.rank, "must be a module-level function"),
    (returns_a_lock, "device [01] returned a result that cannot be pickled"),
])
def test_processes_need_a_function_and_results_that_pickle(fn: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        run_workers(fn, 2, backend="processes")


class Unpicklable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def raises_unpicklable(comm: DeviceComm) -> None:
    raise Unpicklable(f"device {comm.rank} holds a lock")


def test_an_error_that_does_not_pickle_keeps_its_type_and_message() -> None:
    with pytest.raises(WorkerError) as caught:
        run_workers(partial(raises_unpicklable), 1, backend="processes")
    assert str(caught.value) == "device 0 failed: Unpicklable: device 0 holds a lock"
    assert any("traceback on device 0" in note for note in caught.value.__notes__)


BIG = 1 << 18  # 2 MiB of float64 per device: far more than a pipe buffers


def big_messages(comm: DeviceComm) -> tuple[np.ndarray, np.ndarray]:
    """Every device sends at once, so pipes fill up unless receivers keep draining them."""
    world = tuple(range(comm.size))
    summed = comm.all_reduce(np.full(BIG, comm.rank + 1.0), world, tag="big")
    exchanged = comm.all_to_all(np.full((comm.size, BIG // 8), float(comm.rank)), world,
                                split_axis=0, concat_axis=0, tag="exchange")
    return summed, exchanged


# Python 3.12+ warns when forking a process that runs threads (numpy's BLAS pool among them).
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_big_messages_through_pipes_with_fork() -> None:
    results = run_workers(big_messages, 4, backend="processes", start_method="fork")
    for summed, exchanged in results:
        np.testing.assert_array_equal(summed, np.full(BIG, 10.0))
        np.testing.assert_array_equal(exchanged[:, 0], [0.0, 1.0, 2.0, 3.0])
    words = results.counters()
    assert words[0]["big"] == {"sent": 2 * 3 * BIG // 4, "received": 2 * 3 * BIG // 4}
    assert words[0]["exchange"] == {"sent": 3 * BIG // 8, "received": 3 * BIG // 8}


def carries_data(comm: DeviceComm, data: np.ndarray) -> int:
    return comm.rank


def test_a_worker_killed_as_it_starts_fails_the_run() -> None:
    """The launcher never blocks on a worker that died before reading its function (here
    with 8 MiB of data: far more than a pipe buffers)."""
    outcome: list[BaseException] = []

    def launch() -> None:
        try:
            run_workers(partial(carries_data, data=np.zeros(1 << 20)), 2,
                        backend="processes", timeout=LONG_TIMEOUT)
        except BaseException as error:
            outcome.append(error)

    launcher = threading.Thread(target=launch, daemon=True)
    launcher.start()
    victim = wait_for(lambda: next((proc for proc in children(os.getpid())
                                    if "spawn_main" in proc.cmdline()), None), "a worker")
    os.kill(victim.pid, signal.SIGKILL)
    launcher.join(LONG_TIMEOUT)
    assert not launcher.is_alive()
    assert isinstance(outcome[0], WorkerError)
    assert "killed by SIGKILL" in str(outcome[0])
