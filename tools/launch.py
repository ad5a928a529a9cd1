"""The console scripts `pase-opt` and `pase-run`: each takes SIGINT, SIGTERM and SIGHUP
before it imports its tool, which takes a second or more on a loaded machine.

A Ctrl-C there was a KeyboardInterrupt traceback from inside an import (SIGTERM ended
Python by its default action, which is right, but no pase code ran). Until the tool's
`report_errors` installs its own handlers (`pase.core.signals.signals_raise`), a signal
ends the process at once with status 128 + its number: nothing is written or started
yet. Only this module and `pase.core.signals` load first.

A standard stream the shell closed (`pase-opt m.dnn >&-`, `<&-`, `2>&-`) is held open on
/dev/null before anything else (`hold_standard_descriptors`; stdout read-only): the
first file the tool opened took its number (an `-o` temporary became the standard
output), and Python's `sys.stdout` was None (a traceback). Writing to a closed standard
output is then one error, `cannot write the standard output: Bad file descriptor`.
"""

from __future__ import annotations

import io
import os
import sys

from pase.core.signals import exit_at_once_on_signals


def hold_standard_descriptors() -> None:
    """Put /dev/null on each of descriptors 0, 1 and 2 that is closed: stdin for reading
    (an empty input), stdout read-only so that writing to it fails with EBADF as to a
    closed one, stderr for writing (its diagnostics go nowhere; the exit status stays)."""
    for descriptor, mode in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(descriptor)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, mode)
        if opened != descriptor:  # (the lowest free number is the closed one)
            os.dup2(opened, descriptor)
            os.close(opened)
        if descriptor == 0:
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        else:
            stream = io.TextIOWrapper(io.FileIO(descriptor, "w", closefd=False),
                                      encoding="utf-8", line_buffering=descriptor == 2)
            if descriptor == 1:
                sys.stdout = stream
            else:
                sys.stderr = stream


def pase_opt() -> None:
    """`pase-opt`: `pase.tools.pase_opt.main`."""
    hold_standard_descriptors()
    exit_at_once_on_signals()
    from pase.tools.pase_opt import main

    main()


def pase_run() -> None:
    """`pase-run`: `pase.tools.pase_run.main`."""
    hold_standard_descriptors()
    exit_at_once_on_signals()
    from pase.tools.pase_run import main

    main()
