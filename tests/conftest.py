"""The whole suite's one setting of its own: signal dispositions as a terminal gives them.

A shell ignores SIGINT in what it starts in the background (`cmd &` without job control),
and `nohup` ignores SIGHUP. pase keeps an ignored signal ignored, as a program should
(`pase.core.signals.signals_raise`), and an ignored disposition is inherited by every
process a test starts, so the signal tests (tests/tools/test_signals.py,
tests/core/test_signals.py) would then test how the suite was launched, not pase. The
suite therefore starts from the dispositions an interactive shell gives a foreground
command: SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP end the process.
"""

from __future__ import annotations

import signal

for _signum, _default in ((signal.SIGINT, signal.default_int_handler),
                          (signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL)):
    if signal.getsignal(_signum) == signal.SIG_IGN:
        signal.signal(_signum, _default)
