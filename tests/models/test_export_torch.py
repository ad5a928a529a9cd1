"""models/export_torch.py's errors: one line, exit status 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "models" / "export_torch.py"


def test_without_torch_the_script_says_how_to_install_it(tmp_path: Path) -> None:
    """(torch is hidden, installed or not: the result does not depend on the machine.) It
    was a traceback, ModuleNotFoundError: No module named 'torch'."""
    hide_torch = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", hide_torch, str(SCRIPT), str(tmp_path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr == ("export_torch.py: error: exporting needs torch: "
                             "pip install -e '.[torch]'\n")
    assert list(tmp_path.iterdir()) == []
