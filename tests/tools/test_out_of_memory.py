"""Running out of memory is one error line and exit status 1, not "internal error ...
please report it" (pase's own budgets are checked before the work; the system's memory
can still run out, as when other processes hold it)."""

from __future__ import annotations

import pytest

from pase.tools.errors import report_errors


def test_a_memory_error_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_, report_errors("pase-opt"):
        raise MemoryError()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("pase-opt: error: out of memory: ")
    assert err.count("\n") == 1
    assert "internal error" not in err
    assert "Traceback" not in err
