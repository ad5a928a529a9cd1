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

GRAPH = """graph @mlp(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  %a = relu %y
  %v = param [h, d]
  %z = einsum %a, %v -> [b, d]
  %r = add %x, %z
  %w2 = param [d, h]
  %y2 = einsum %r, %w2 -> [b, h]
  %a2 = relu %y2
  %v2 = param [h, d]
  %z2 = einsum %a2, %v2 -> [b, d]
  %r2 = add %r, %z2
  return %r2
}
"""

STEP = ("devices=4 machine=a100-80gb-dgx optimizer=adam precision=bf16 recompute=auto "
        "zero=auto data-parallel=2")

PASSES = {
    "search": ("pase-search", "device-memory-gib=0.0000083"),
    "stages": ("pase-partition-stages", "stages=2 microbatches=1"),
}


def run(graph: Path, pass_name: str, options: str, capsys: pytest.CaptureFixture[str]
        ) -> tuple[int, str]:
    status, _, err = run_tool(main, [str(graph), "-p", f"{pass_name}{{{options}}}",
                                     "-o", str(graph.with_suffix(".out"))], capsys)
    return status, err


@pytest.mark.parametrize("which", sorted(PASSES))
def test_read_back_keeps_the_choices(which: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]):
    pass_name, searched = PASSES[which]
    graph = tmp_path / "g.dnn"
    graph.write_text(GRAPH)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert run(graph, pass_name, f'{STEP} {searched} export="{first}"', capsys)[0] == 0
    assert run(graph, pass_name, f'{STEP} strategy="{first}" export="{second}"',
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
    graph = tmp_path / "g.dnn"
    graph.write_text(GRAPH)
    plan = tmp_path / "plan.json"
    assert run(graph, pass_name, f'{STEP} {searched} export="{plan}"', capsys)[0] == 0
    status, err = run(graph, pass_name, f'devices=4 {searched} strategy="{plan}"', capsys)
    assert status == 1
    assert err.count("error:") == 1
    assert "Traceback" not in err
    assert "written for the training step {optimizer=adam precision=bf16 recompute=auto " \
        "zero=auto data-parallel=2}, but this run's options give {optimizer=sgd " \
        "precision=fp32 recompute=none zero=0 data-parallel=0}" in err
