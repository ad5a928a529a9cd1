"""`pase-run --engine jax`'s collectives tables count what XLA's HLO holds: under bf16 an
f32 all-reduce (the master weights' gradients under ZeRO) is 4 bytes an element, not a
2-byte word; fp32 runs keep their tables in words, as before."""

from __future__ import annotations

import pytest

from pase.tools.run.check import TrainingReport
from pase.tools.run.jax import Collective, Compiled, JaxReport
from pase.tools.run.jax_pipeline import (
    Boundary,
    PipelineCompiled,
    StageCollectives,
    print_pipeline_collectives,
)
from pase.tools.run.report import print_collectives

# ZeRO 1 under bf16 on 2 replicas: XLA all-reduces 2048 f32 gradient elements and
# all-gathers 2048 f32 params; pase charges 2048 words of 2 bytes.
ALL_REDUCE = Collective("all-reduce", 2, 2048, 8192, "{{0,1}}")
ALL_GATHER = Collective("all-gather", 2, 2048, 8192, "{{0,1}}")
HALF = Collective("all-reduce", 2, 1024, 2048, "{{0,1}}")  # a bf16 one: 2 bytes each


def report(element: str) -> JaxReport:
    training = TrainingReport("m", 2, element, [1.0], [1.0], [0.0], 0.0, 0.0)
    return JaxReport(training, Compiled([ALL_REDUCE, ALL_GATHER, HALF],
                                        {"layer": 2048.0, "edge": 0.0}))


def test_bf16_collectives_are_counted_in_bytes_by_their_element_type(
        capsys: pytest.CaptureFixture[str]) -> None:
    print_collectives(report("bf16"))
    lines = capsys.readouterr().out.splitlines()
    # all-reduce: 2 (g-1)/g x 2048 f32 = 8192 bytes, and 1024 bf16 = 2048 bytes
    assert lines[3].split() == ["all-reduce", "2", "2", "10240", "10240"]
    assert lines[4].split() == ["all-gather", "1", "2", "8192", "4096"]
    assert lines[5].split() == ["total", "(XLA)", "14336"]
    assert lines[6].startswith("  pase predicts 4096 bytes (2048 words of 2 bytes)")


def test_fp32_collectives_stay_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    print_collectives(report("f32"))
    lines = capsys.readouterr().out.splitlines()
    assert "words: received per device" in lines[1]
    assert lines[3].split() == ["all-reduce", "2", "2", "10240", "2560"]
    assert lines[6].startswith("  pase predicts 2048 words: 2048 within layers")


@pytest.mark.parametrize(("width", "unit", "total", "predicted", "crossing"), [
    (2, "bytes", "12288", "pase predicts 4096 (2048 words of 2 bytes): 4096 within layers",
     "forward 1024 (pase 512) gradient back 1024 (pase 512)"),
    (4, "words", "3072", "pase predicts 2048: 2048 within layers",
     "forward 256 (pase 256) gradient back 256 (pase 256)")])
def test_the_pipeline_table_counts_bytes_under_bf16(
        width: int, unit: str, total: str, predicted: str, crossing: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    stage = StageCollectives(0, range(0, 2), [(ALL_REDUCE, 1), (ALL_GATHER, 1)], 2048.0, 0.0)
    # %h crosses the boundary as 256 f32 elements each way (1024 bytes); the plan
    # charges 256 words
    boundary = Boundary("h", 0, 1, 256.0, 256.0, 256.0, 256.0, 1024.0, 1024.0)
    print_pipeline_collectives(PipelineCompiled(stages=[stage], boundaries=[boundary]), width)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[-1] == unit
    assert lines[5].split()[4] == total
    assert predicted in lines[5]
    assert lines[6].startswith(f"transfers between stages per step (collective-permute; {unit}")
    assert " ".join(lines[7].split()) == f"0 -> 1 %h {crossing}"
