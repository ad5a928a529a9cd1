"""The console scripts `pase-opt` and `pase-run`: each takes SIGINT, SIGTERM and SIGHUP
before it imports its tool, which takes a second or more on a loaded machine.

A Ctrl-C there was a KeyboardInterrupt traceback from inside an import (SIGTERM ended
Python by its default action, which is right, but no pase code ran). Until the tool's
`report_errors` installs its own handlers (`pase.core.signals.signals_raise`), a signal
ends the process at once with status 128 + its number: nothing is written or started
yet. Only this module and `pase.core.signals` load first.
"""

from __future__ import annotations

from pase.core.signals import exit_at_once_on_signals


def pase_opt() -> None:
    """`pase-opt`: `pase.tools.pase_opt.main`."""
    exit_at_once_on_signals()
    from pase.tools.pase_opt import main

    main()


def pase_run() -> None:
    """`pase-run`: `pase.tools.pase_run.main`."""
    exit_at_once_on_signals()
    from pase.tools.pase_run import main

    main()
