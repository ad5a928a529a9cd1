"""`pase-opt`: xdsl-opt with pase's dialects, passes and the `.dnn` frontend.

    pase-opt models/mlp.dnn -p 'pase-annotate-configs{devices=8}'
    pase-opt graph.mlir --split-input-file --verify-diagnostics

Every xdsl-opt flag works. Errors in the input (syntax, verifier, a bad pass option)
are one diagnostic, `file:line:col: error: message` where there is a location, and
exit status 1; `-o FILE` (and what passes write, `export=`) is written only when
everything succeeded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def main(args: Sequence[str] | None = None) -> None:
    # pase-opt's passes use no BLAS, and OpenBLAS starts a thread per core when numpy loads,
    # which cost a small search 50 ms of CPU (issue 13). OpenBLAS reads the setting when it
    # loads, so it is made before anything imports numpy (hence the imports below), and
    # only then: called in a process that has numpy already (a test), main changes nothing.
    # A user's own setting wins. pase-opt starts no process that would inherit it.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from pase.core.files import deferred_writes
    from pase.core.nesting import allow_nesting
    from pase.formats.strategy_input import standard_input_strategy
    from pase.tools.errors import report_errors
    from pase.tools.opt_main import PaseOptMain

    allow_nesting()
    with report_errors("pase-opt"), deferred_writes(), standard_input_strategy():
        driver = PaseOptMain(args)
        driver.run()
        driver.write_output()
