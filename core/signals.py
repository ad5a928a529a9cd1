"""Termination signals as exceptions, so that every `finally` and context manager runs.

    with signals_raise():        # a tool's entry: SIGINT, SIGTERM, SIGHUP raise Terminated
        run()                    # ... and the tool exits 128 + error.signum (130, 143, 129)

    with signals_held():         # a step that must not be cut in two (create a temporary
        ...                      # and record it); a signal waits for the block's end

By default SIGTERM and SIGHUP end Python at once: no temporary file is removed and no child
process is stopped. Inside `signals_raise()` each of the three raises `Terminated`, a
`KeyboardInterrupt`, in the main thread, so that code which already cleans up after Ctrl-C
cleans up after every signal a user or a job scheduler sends.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_held = 0
"""How many `signals_held()` blocks the main thread is in."""

_waiting: list[int] = []
"""The signals that arrived while held."""

_received: list[int] = []
"""Every signal the handler took inside `signals_raise()`. Python drops an exception raised
where it cannot propagate (a weakref callback such as importlib's module-lock one, a
`__del__`): `raise_if_received()` raises it again before a step that may block for ever."""


class Terminated(KeyboardInterrupt):
    """Signal `signum` asked the process to end."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The shell's status of a process ended by the signal: 128 + its number."""
        return 128 + self.signum


@contextmanager
def signals_raise() -> Iterator[None]:
    """Make SIGINT, SIGTERM and SIGHUP raise `Terminated` in the block (only in the main
    thread, the one Python runs handlers in; elsewhere the block runs unchanged). A signal
    the process was started ignoring stays ignored: `nohup` still protects from SIGHUP."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _raise) for signum in SIGNALS
                if signal.getsignal(signum) is not signal.SIG_IGN}
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: (
        None if isinstance(unraisable.exc_value, Terminated) else hook(unraisable))
    _received.clear()
    try:
        yield
    finally:
        _received.clear()
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def raise_if_received() -> None:
    """Raise `Terminated` for a signal taken earlier whose exception Python dropped (see
    `_received`); a no-op inside `signals_held()` and when no signal came."""
    if _received and not _held:
        raise Terminated(_received[0])


@contextmanager
def signals_held() -> Iterator[None]:
    """Delay `Terminated` until the block ends (nested blocks: the outermost)."""
    global _held
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if not _held and _waiting:
            signum = _waiting[0]
            _waiting.clear()
            raise Terminated(signum)


def exit_at_once_on_signals() -> None:
    """Until `signals_raise()` takes over, end the process at once on SIGINT, SIGTERM or
    SIGHUP, with status 128 + the signal's number and no message: for a tool's start,
    while it imports its modules (a second or more on a loaded machine), when it has no
    temporary file and no child to clean up, and where Python's default SIGINT handler
    would print a KeyboardInterrupt traceback from inside an import. A signal the
    process was started ignoring stays ignored."""
    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _exit_at_once)


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (the process that removes the shared memory
    of worker processes that died) deaf to SIGHUP, as Python starts it deaf to SIGINT and
    SIGTERM. A hang-up of the terminal reaches the whole process group: it killed the
    tracker, the parent started another one to unregister its blocks, and that one printed
    a KeyError traceback per block. SIGHUP is blocked while the tracker starts, and a
    blocked signal stays blocked across exec (the tracker unblocks only the two it
    ignores); this process gets any SIGHUP that came meanwhile when it unblocks it. Does
    nothing when the tracker runs already."""
    from multiprocessing import resource_tracker

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _exit_at_once(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)


def _raise(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if _held:
        _waiting.append(signum)
        return
    raise Terminated(signum)
