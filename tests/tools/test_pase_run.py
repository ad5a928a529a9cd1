"""`pase-run` in-process, for what its stderr cannot show without a fault injected here: a
failing check and a failing device. Everything else a user sees is a lit test
(`tests/lit/tools/pase-run*.dnn`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli import run_tool

import pase.tools.pase_run as pase_run
from pase.runtime import executor
from pase.tools.pase_run import main
from pase.tools.run.check import TrainingReport
from pase.tools.run.harness import Trained

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")


def test_check_fails_when_the_errors_are_too_large(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    check_training = pase_run.check_training

    def wrong(*args: object, **kwargs: object) -> tuple[TrainingReport, Trained]:
        report, trained = check_training(*args, **kwargs)  # type: ignore[arg-type]
        report.gradient_error = 0.5
        return report, trained

    monkeypatch.setattr(pase_run, "check_training", wrong)
    status, out, err = run_tool(main, [MLP, "--devices", "2", "--check"], capsys)
    assert status == 1
    assert "check passed" not in out
    assert err.splitlines() == ["check failed: relative error 5.00e-01 exceeds 1e-04"]


def test_a_failing_device_stops_the_run_with_one_error_naming_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    layer = executor._Device.layer
    calls: dict[int, int] = {}

    def failing(self: executor._Device, step: executor.Step) -> list[np.ndarray | None]:
        if self.rank == 1 and step.kernel == "dnn.relu":
            calls[self.rank] = calls.get(self.rank, 0) + 1
            if calls[self.rank] == 2:  # the relu of the second training step
                raise RuntimeError("injected failure")
        return layer(self, step)

    monkeypatch.setattr(executor._Device, "layer", failing)
    monkeypatch.delenv("PASE_DEBUG", raising=False)
    # No clock here (no timed tests): the other devices, blocked in a collective, would
    # report their own timeout after 30 s; the error reported is the failing device's.
    status, out, err = run_tool(main, [MLP, "--devices", "4", "--data-parallel", "--steps",
                                       "2", "--timeout", "30"], capsys)
    assert calls == {1: 2}
    assert (status, out) == (1, "")
    assert err.splitlines() == ["pase-run: error: RuntimeError: injected failure",
                                "device 1 failed: RuntimeError: injected failure"]


def test_a_run_over_its_memory_is_refused_with_the_scale_that_fits(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_tool(main, [MLP, "--devices", "2",
                                       "--memory-gib", "0.005"], capsys)
    assert status == 1
    assert out == ""
    assert err == ("pase-run: error: training @mlp on 2 workers would take about 0.0094 GiB "
                   "(each tensor and its gradient in every worker and the one-device "
                   "reference), over "
                   "--memory-gib 0.005; use --scale 0.5 or less, or raise --memory-gib\n")
    # The scale it names fits.
    status, _, err = run_tool(main, [MLP, "--devices", "2", "--memory-gib",
                                     "0.005", "--scale", "0.5"], capsys)
    assert status == 0, err


def test_a_run_no_scale_fits_says_the_least_memory_not_a_tiny_scale(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--memory-gib 0.000001 used to suggest --scale 8.67362e-19 (60 halvings, none of
    which fits: dims stop shrinking at their floor)."""
    status, out, err = run_tool(main, [MLP, "--devices", "4", "--memory-gib", "0.000001"],
                                capsys)
    assert (status, out) == (1, "")
    assert err.endswith("; no --scale fits: the least memory a run takes is about 4,360 "
                        "bytes (at --scale 0.00390625); give --memory-gib 4.07e-06 or more\n")
    # What it names fits.
    status, _, err = run_tool(main, [MLP, "--devices", "4", "--memory-gib", "4.07e-06",
                                     "--scale", "0.00390625"], capsys)
    assert status == 0, err


def test_an_onnx_model_whose_inputs_are_over_the_memory_is_refused_before_its_import(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An input of [2, 2^40]: refused by its declared size alone, before the model's
    folding, shape inference and import (it spent seconds there before)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from pase.frontend.onnx import model as onnx_model

    huge = [2, 1 << 40]
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "huge",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, huge)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, huge)])
    path = tmp_path / "huge.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    monkeypatch.setattr(onnx_model, "simplify", None)
    status, out, err = run_tool(main, [str(path), "--devices", "2"], capsys)
    assert (status, out) == (1, "")
    assert err == ("pase-run: error: training on 2 workers would take 12288 GiB or more for the "
                   "model's inputs alone (each input and its gradient in every worker and the "
                   "one-device reference), over --memory-gib 4; use a --scale below 1 or raise "
                   "--memory-gib\n")
