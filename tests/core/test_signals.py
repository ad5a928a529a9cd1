"""Signals as exceptions: `signals_raise` turns SIGTERM and SIGHUP into `Terminated` (and
leaves an ignored signal ignored); `signals_held` delays one to the end of its block."""

from __future__ import annotations

import os
import signal
import weakref
from pathlib import Path

import pytest

from pase.core.files import deferred_writes, write_atomically
from pase.core.signals import Terminated, signals_held, signals_raise


@pytest.mark.parametrize(("signum", "status"), [
    (signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_raises_terminated_with_its_exit_status(signum: int, status: int) -> None:
    with pytest.raises(Terminated) as raised, signals_raise():
        os.kill(os.getpid(), signum)
    assert raised.value.exit_status == status
    assert isinstance(raised.value, KeyboardInterrupt)
    assert str(raised.value) == f"terminated by {signal.Signals(signum).name}"


def test_the_handlers_are_restored_after_the_block() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals_raise():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_ignored_signal_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)   # as under nohup
    try:
        with signals_raise():
            os.kill(os.getpid(), signal.SIGHUP)
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_held_signal_is_raised_when_the_outermost_block_ends() -> None:
    steps = []

    def run() -> None:
        with signals_raise():
            with signals_held():
                with signals_held():
                    os.kill(os.getpid(), signal.SIGTERM)
                    steps.append("inner")
                steps.append("outer")
            steps.append("after")

    with pytest.raises(Terminated, match="SIGTERM"):
        run()
    assert steps == ["inner", "outer"]


def test_a_signal_whose_exception_python_dropped_is_raised_before_a_stream_is_written(
        tmp_path: Path) -> None:
    # A handler's exception raised inside a weakref callback (importlib's module locks have
    # one) is printed and dropped by Python; the run would then block opening a FIFO nothing
    # reads. The signal is raised again before the streams are written, silently.
    class Referent:
        pass

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)

    def run() -> None:
        referent = Referent()
        with signals_raise(), deferred_writes():
            held = weakref.ref(referent, lambda _: os.kill(os.getpid(), signal.SIGINT))
            del referent  # the callback's Terminated is dropped here
            assert held() is None
            write_atomically(str(fifo), "never written\n")

    with pytest.raises(Terminated, match="SIGINT"):
        run()
