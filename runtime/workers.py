"""Launch p workers, each running `fn(comm)` on its own device, and collect their results.

    def step(comm):
        return comm.all_reduce(np.full(4, comm.rank, np.float32), tuple(range(comm.size)))

    results = run_workers(step, 4)                        # threads
    results = run_workers(step, 4, backend="processes")   # 'spawn' processes
    results[2], results.counters()[2]

With `backend="processes"`, `fn` must be a module-level function (it is pickled by name): each
worker imports its module by name, or loads it from its file when the name does not import
there (a script, a test module under pytest's importlib mode). Results and exceptions travel
back pickled. `start_method` is 'spawn' unless you ask for 'fork' or 'forkserver'; workers
start `fn` together once every process is up, so timeouts never count interpreter start-up.

A worker that raises makes every other worker stop within a poll interval (they raise
`WorkerAborted` in the collective they wait in), and `run_workers` re-raises the original
exception of the first worker that failed, with the note "device 2 failed: ValueError: ...".
A worker that cannot report (its process died, its exception does not pickle) becomes a
`WorkerError` ("device 1 failed: its process exited with code 3 ..."). Workers still busy
computing a grace period after the failure are left behind (threads) or terminated
(processes): `run_workers` never hangs on them.

Processes end with their launcher, whatever ends it: an exception or a signal that raises
(`pase.core.signals`) stops and joins them in `run_workers`; a launcher killed outright
(SIGKILL runs no handler) leaves each worker's pipe from its parent closed, and a thread of
the worker, blocked on that pipe, ends the worker at once. A worker killed by a signal is
`WorkerError("device 1 failed: its process was killed by SIGKILL before reporting")`.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import wait
from typing import Any

from pase.core.signals import signals_held
from pase.runtime.communicator import (
    Communicator,
    DeviceComm,
    Endpoint,
    Words,
    WorkerAborted,
)
from pase.runtime.transport import POLL_SECONDS

# How long workers get to stop once one has failed.
GRACE_SECONDS = 2.0


class WorkerError(RuntimeError):
    """A worker failed without an exception that can be re-raised here."""


class WorkerResults(list[Any]):
    """`results[rank]` is what `fn` returned on device `rank`; `counters()` the words moved."""

    def __init__(self, results: list[Any], communicator: Communicator) -> None:
        super().__init__(results)
        self.communicator = communicator

    def counters(self, by: str = "tag") -> dict[int, dict[str, dict[str, int]]]:
        """{rank: {tag: {"sent": n, "received": n}}} (`by="op"`: per op kind)."""
        return self.communicator.counters(by)


@dataclass
class _Outcome:
    """What one worker reported: a result, or an error with its traceback."""

    result: Any = None
    error: BaseException | None = None
    remote_traceback: str = ""
    words: Words = field(default_factory=dict)


def run_workers(fn: Callable[[DeviceComm], Any], size: int, backend: str = "threads",
                timeout: float = 60.0, *, start_method: str = "spawn") -> WorkerResults:
    """Run `fn(comm)` on devices 0..size-1 and return their results in rank order."""
    communicator = Communicator(size, backend, timeout, start_method=start_method)
    if backend == "threads":
        outcomes = _run_threads(fn, communicator)
    else:
        outcomes = _run_processes(fn, communicator)
    for rank, outcome in outcomes.items():
        communicator.words[rank] = outcome.words
    first = communicator.first_failure()
    if first is not None:
        raise _failure(first, outcomes.get(first))
    return WorkerResults([outcomes[rank].result for rank in range(size)], communicator)


def _failure(rank: int, outcome: _Outcome | None) -> BaseException:
    """The first failing worker's own exception, noting its device (and remote traceback)."""
    if outcome is None or outcome.error is None:
        return WorkerError(f"device {rank} failed and was stopped before it could report why")
    error = outcome.error
    if isinstance(error, WorkerError):  # no original to re-raise: the message says it all
        error = WorkerError(f"device {rank} failed: {error}")
    else:
        error.add_note(f"device {rank} failed: {type(error).__name__}: {error}")
    if outcome.remote_traceback:
        error.add_note(f"traceback on device {rank}:\n{outcome.remote_traceback.rstrip()}")
    return error


# Threads ---------------------------------------------------------------------------------------


def _run_threads(fn: Callable[[DeviceComm], Any],
                 communicator: Communicator) -> dict[int, _Outcome]:
    outcomes: dict[int, _Outcome] = {}

    def work(rank: int) -> None:
        device = communicator.endpoint(rank).connect()
        try:
            result = fn(device)
        except BaseException as error:  # reported to run_workers, which re-raises it
            device.fail()
            outcomes[rank] = _Outcome(error=error, words=device.words)
        else:
            device.finish()
            outcomes[rank] = _Outcome(result=result, words=device.words)

    threads = [threading.Thread(target=work, args=(rank,), name=f"pase-device-{rank}",
                                daemon=True) for rank in range(communicator.size)]
    for thread in threads:
        thread.start()
    aborted_at: float | None = None
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(POLL_SECONDS)
                if communicator.abort.is_set():
                    aborted_at = aborted_at or time.monotonic()
                    if time.monotonic() - aborted_at > GRACE_SECONDS:
                        return outcomes  # stragglers are daemon threads busy computing
    except BaseException:
        communicator.abort.set()  # an interrupt here stops the workers too
        raise
    return outcomes


# Processes -------------------------------------------------------------------------------------


def _run_processes(fn: Callable[[DeviceComm], Any],
                   communicator: Communicator) -> dict[int, _Outcome]:
    function = _pickle_function(fn)
    modules = _modules_of(fn)
    context = communicator.context
    assert context is not None
    started = context.Value("i", 0)
    results, processes, functions = [], [], []
    try:
        for rank in range(communicator.size):
            reader, writer = context.Pipe(duplex=False)
            function_reader, function_writer = context.Pipe(duplex=False)
            process = context.Process(
                target=_process_main, name=f"pase-device-{rank}", daemon=True,
                args=(communicator.endpoint(rank), function_reader, modules, started, writer))
            with signals_held():  # a worker cut off from its start-up data prints a traceback
                process.start()
            writer.close()
            function_reader.close()
            results.append(reader)
            processes.append(process)
            functions.append(function_writer)
        _send_function(function, functions)
        communicator.release()
        return _collect(communicator, results, processes)
    except BaseException:
        communicator.abort.set()
        raise
    finally:
        deadline = time.monotonic() + GRACE_SECONDS
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join()
        for reader in results:
            reader.close()
        for function_writer in functions:
            function_writer.close()


def _send_function(function: bytes, writers: list[Any]) -> None:
    """Send each started worker the pickled function (with its data: megabytes) on a pipe
    of its own. Not in the start-up data: multiprocessing writes that to the new process
    while holding the pipe's other end open itself, so a worker killed while it starts
    would block that write, and the launcher with it, for ever (and hold off every signal:
    `start` runs in `signals_held`). A worker that died is a broken pipe here, and
    `_collect` reports it."""
    for writer in writers:
        try:
            writer.send_bytes(function)
        except OSError:  # it died before reading: its sentinel says so in `_collect`
            pass
        writer.close()


def _collect(communicator: Communicator, results: list[Any],
             processes: list[Any]) -> dict[int, _Outcome]:
    """Read every worker's report as it comes; a process that dies silently is a failure."""
    outcomes: dict[int, _Outcome] = {}
    pending = set(range(communicator.size))
    aborted_at: float | None = None
    while pending:
        waiting = {results[rank]: rank for rank in pending}
        waiting.update({processes[rank].sentinel: rank for rank in pending})
        for ready in wait(list(waiting), POLL_SECONDS):
            rank = waiting[ready]
            if rank not in pending:
                continue
            if ready is results[rank] or results[rank].poll():
                outcomes[rank] = _read_report(results[rank], processes[rank])
            else:
                processes[rank].join()
                outcomes[rank] = _died(processes[rank].exitcode)
            if outcomes[rank].error is not None:
                communicator.failure.claim(rank)
                communicator.abort.set()
            pending.discard(rank)
        if communicator.abort.is_set():
            aborted_at = aborted_at or time.monotonic()
            if time.monotonic() - aborted_at > GRACE_SECONDS:
                break  # the finally of _run_processes terminates the stragglers
    return outcomes


def _read_report(reader: Any, process: Any) -> _Outcome:
    try:
        kind, payload, type_name, message, remote_traceback, words = pickle.loads(
            reader.recv_bytes())
    except EOFError:
        process.join(GRACE_SECONDS)
        return _died(process.exitcode)
    if kind == "result":
        try:
            return _Outcome(result=pickle.loads(payload), words=words)
        except Exception as unpickling:
            return _Outcome(words=words, error=WorkerError(
                f"its result cannot be unpickled here: {unpickling}"))
    try:
        original = pickle.loads(payload) if payload is not None else None
    except Exception:
        original = None
    if not isinstance(original, BaseException):  # it did not survive pickling: keep its words
        original = WorkerError(f"{type_name}: {message}")
    return _Outcome(error=original, remote_traceback=remote_traceback, words=words)


def _died(exitcode: int | None) -> _Outcome:
    if exitcode is not None and exitcode < 0:  # multiprocessing's -N: killed by signal N
        how = f"was killed by {signal.Signals(-exitcode).name}"
    else:
        how = f"exited with code {exitcode}"
    return _Outcome(error=WorkerError(f"its process {how} before reporting (see its stderr)"))


def _process_main(endpoint: Endpoint, function: Any, modules: list[tuple[str, str]],
                  started: Any, report: Any) -> None:
    """A worker process: run the function (pickled, read from the pipe `function`) on its
    device and report back, whatever happens."""
    _end_with_parent()
    device = endpoint.connect()
    try:
        function_bytes = function.recv_bytes()
        function.close()
        for name, path in modules:
            _load_module(name, path)
        fn = pickle.loads(function_bytes)
        _start_together(started, endpoint)
        result = fn(device)
        try:
            payload = pickle.dumps(result)
        except Exception as error:
            raise TypeError(f"device {device.rank} returned a result that cannot be pickled "
                            f"back: {error}") from error
    except BaseException as error:  # reported to run_workers, which re-raises it
        device.fail()
        try:
            pickled: bytes | None = pickle.dumps(error)
        except Exception:
            pickled = None
        report.send_bytes(pickle.dumps(("error", pickled, type(error).__name__, str(error),
                                        traceback.format_exc(), device.words)))
    else:
        device.finish()
        report.send_bytes(pickle.dumps(("result", payload, "", "", "", device.words)))
    finally:
        report.close()
        device.close()


def _end_with_parent() -> None:
    """End this process as soon as its parent is gone: multiprocessing gives every child
    a pipe that its parent holds open, so the pipe's end is the parent's end (even one that
    came before this call, or a SIGKILL)."""
    parent = multiprocessing.parent_process()
    assert parent is not None
    sentinel = parent.sentinel

    def watch() -> None:
        wait([sentinel])
        os._exit(128 + signal.SIGHUP)  # as a shell's hang-up ends a session's jobs

    threading.Thread(target=watch, name="pase-parent-watch", daemon=True).start()


def _start_together(started: Any, endpoint: Endpoint) -> None:
    """Wait until every process is up, so that no collective's timeout counts the seconds
    a sibling spends starting Python and importing its modules."""
    with started.get_lock():
        started.value += 1
    while started.value < endpoint.size:
        if endpoint.abort.is_set():
            raise WorkerAborted(f"device {endpoint.rank} stopped before starting: another "
                                "device failed")
        time.sleep(POLL_SECONDS / 4)


def _pickle_function(fn: Callable[[DeviceComm], Any]) -> bytes:
    try:
        return pickle.dumps(fn)
    except Exception as error:
        raise TypeError(f"backend='processes' runs {fn!r} in other processes, so it must be a "
                        f"module-level function (pickled by name): {error}") from error


def _modules_of(fn: Any) -> list[tuple[str, str]]:
    """(name, file) of the modules defining `fn` (and the function a partial wraps)."""
    modules = []
    while True:
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        path = getattr(module, "__file__", None)
        if module is not None and path and module.__name__ != "__main__":
            modules.append((module.__name__, path))
        if not isinstance(fn, partial):
            return modules
        fn = fn.func


def _load_module(name: str, path: str) -> None:
    """Import `name`, or load it from `path` when it does not import here."""
    if name in sys.modules:
        return
    try:
        importlib.import_module(name)
        return
    except ImportError:
        pass
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load module {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
