"""A strategy or pipeline plan written under recompute=auto / zero=auto and read back with
`strategy=` keeps each layer's exported "recompute" and "zero": the same step and memory,
and the same file when exported again (tests/lit/passes/strategy-training-read-back.dnn
runs the tools). A "training" other than the run's options is one error naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import run_tool

from pase.tools.pase_opt import main

GRAPH = str(Path(__file__).resolve().parents[1] / "lit" / "passes" /
            "strategy-training-read-back.dnn")
"""Two residual blocks (the lit test's graph; its comments are comments in `.dnn`)."""

STEP = ("devices=4 machine=a100-80gb-dgx optimizer=adam precision=bf16 recompute=auto "
        "zero=auto data-parallel=2")

PASSES = {
    "search": ("pase-search", "device-memory-gib=0.0000083"),
    "stages": ("pase-partition-stages", "stages=2 microbatches=1"),
}


def run(pass_name: str, options: str, out: Path, capsys: pytest.CaptureFixture[str]
        ) -> tuple[int, str]:
    status, _, err = run_tool(main, [GRAPH, "-p", f"{pass_name}{{{options}}}", "-o",
                                     str(out / "g.out")], capsys)
    return status, err


def exported(which: str, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The file `which` pass exports under the training options STEP (a warning allowed:
    the capped search need not prove its optimum)."""
    pass_name, searched = PASSES[which]
    first = out / "first.json"
    assert run(pass_name, f'{STEP} {searched} export="{first}"', out, capsys)[0] == 0
    return first


@pytest.mark.parametrize("which", sorted(PASSES))
def test_read_back_keeps_the_choices(which: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]):
    first, second = exported(which, tmp_path, capsys), tmp_path / "second.json"
    assert run(PASSES[which][0], f'{STEP} strategy="{first}" export="{second}"', tmp_path,
               capsys) == (0, "")
    written, read = json.loads(first.read_text()), json.loads(second.read_text())
    # Some layer's choices are not what the option's default would give: kept, not lost.
    assert any(layer.get("zero") or layer.get("recompute") for layer in written["layers"])
    assert [(layer.get("recompute"), layer.get("zero")) for layer in read["layers"]] == \
        [(layer.get("recompute"), layer.get("zero")) for layer in written["layers"]]
    written.pop("device_memory_cap", None)  # the cap is the first run's only
    assert read == written
    if which == "stages":
        assert first.read_text() == second.read_text()


@pytest.mark.parametrize("which", sorted(PASSES))
def test_another_training_step_is_one_error(which: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]):
    pass_name, searched = PASSES[which]
    plan = exported(which, tmp_path, capsys)
    status, err = run(pass_name, f'devices=4 {searched} strategy="{plan}"', tmp_path, capsys)
    assert status == 1
    assert err.count("error:") == 1
    assert "Traceback" not in err
    assert "written for the training step {optimizer=adam precision=bf16 recompute=auto " \
        "zero=auto data-parallel=2}, but this run's options give {optimizer=sgd " \
        "precision=fp32 recompute=none zero=0 data-parallel=0}" in err
