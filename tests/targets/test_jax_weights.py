"""A `-t jax` program of an ONNX model starts from the model's weights: pase-opt writes
them beside it (`step.weights.npz`), and the program refuses a file that does not fit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from cli import run_tool  # noqa: E402

from pase.frontend.onnx import load_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402

MODEL = Path(__file__).resolve().parents[2] / "models" / "onnx" / "mlp.dynamo.onnx"


def test_the_program_gets_the_models_weights_beside_it(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]):
    program = tmp_path / "step.py"
    status, _, err = run_tool(pase_opt, [str(MODEL), "-t", "jax", "-o", str(program)], capsys)
    assert status == 0, err
    assert "initial, inputs = model_weights(initial, inputs)" in program.read_text()
    expected = load_model(str(MODEL)).initial_values
    with np.load(tmp_path / "step.weights.npz") as written:
        assert set(written) == set(expected)
        for name, array in expected.items():
            np.testing.assert_array_equal(written[name], array)


def test_a_dnn_model_has_no_weights_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    program = tmp_path / "step.py"
    source = Path(__file__).resolve().parents[2] / "models" / "mlp.dnn"
    status, _, err = run_tool(pase_opt, [str(source), "-t", "jax", "-o", str(program)], capsys)
    assert status == 0, err
    assert "model_weights" not in program.read_text()
    assert not (tmp_path / "step.weights.npz").exists()


@pytest.mark.parametrize("output", [None, "/dev/null"])
def test_without_o_file_the_weights_have_nowhere_to_go(
        output: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """No -o, or a stream (a device, a FIFO): no program without its weights (with
    -o /dev/null they went to a new file /dev/null.weights.npz)."""
    before = sorted(os.listdir(os.path.dirname(output) if output else tmp_path))
    status, out, err = run_tool(pase_opt, [str(MODEL), "-t", "jax",
                                           *(["-o", output] if output else [])], capsys)
    assert status == 1
    assert out == ""
    assert "give -o FILE.py (a file, not a stream)" in err
    assert sorted(os.listdir(os.path.dirname(output) if output else tmp_path)) == before


def test_weights_that_do_not_fit_are_an_error_naming_the_param(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("jax")
    program = tmp_path / "step.py"
    assert run_tool(pase_opt, [str(MODEL), "-t", "jax", "-o", str(program)], capsys)[0] == 0
    weights = tmp_path / "step.weights.npz"
    with np.load(weights) as written:
        values = dict(written)
    dropped = sorted(values)[0]
    del values[dropped]
    np.savez(weights, **values)
    result = subprocess.run([sys.executable, str(program), "--steps", "1"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert f"for param '{dropped}'" in result.stderr
