"""`pase-opt`: xdsl-opt with pase's dialects, passes and the `.dnn` frontend.

    pase-opt models/mlp.dnn -p 'pase-annotate-configs{devices=8}'
    pase-opt graph.mlir --split-input-file --verify-diagnostics

Every xdsl-opt flag works. Errors in the input (syntax, verifier, a bad pass option)
are one diagnostic, `file:line:col: error: message` where there is a location, and
exit status 1; `-o FILE` (and what passes write, `export=`) is written only when
everything succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence

from pase.core.files import deferred_writes
from pase.core.nesting import allow_nesting
from pase.tools.errors import report_errors
from pase.tools.opt_main import PaseOptMain


def main(args: Sequence[str] | None = None) -> None:
    allow_nesting()
    with report_errors("pase-opt"), deferred_writes():
        driver = PaseOptMain(args)
        driver.run()
        driver.write_output()
