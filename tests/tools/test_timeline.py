"""Timeline pictures: the measured bubble is the model's when the devices run the simulated
step, and `draw` writes the same bytes for the same input, one element per span, or nothing."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pase.core.files import WriteError, deferred_writes
from pase.passes.strategy import Simulation, ideal_bubble, simulate
from pase.tools.run.load import Stages, load_model, strategy_and_scale
from pase.tools.run.runtime import train
from pase.tools.run.timeline import (
    PlottingUnavailable,
    Span,
    draw,
    format_bubbles,
    measured_bubble,
    measured_spans,
)

ROOT = Path(__file__).resolve().parents[2]

DEVICES_PER_STAGE = 2


def simulated(schedule: str = "1f1b", stages: int = 3, microbatches: int = 4) -> Simulation:
    """A step with unequal stages, transfers and an all-reduce (times exact in binary)."""
    return simulate(schedule, forward=[1.0, 1.5, 0.5][:stages],
                    backward=[2.0, 3.0, 1.0][:stages], microbatches=microbatches,
                    send_forward=[0.25] * (stages - 1), send_backward=[0.125] * (stages - 1),
                    allreduce=[0.5] * stages)


def spans_of(simulation: Simulation) -> list[Span]:
    """The simulated step as its devices would record it: every event on each of its stage's
    devices, a transfer as a send on the sending stage's and a recv on the receiving one's."""
    spans = []
    for event in simulation.events:
        receiver = {"send-forward": event.stage + 1, "send-backward": event.stage - 1}
        for k in range(DEVICES_PER_STAGE):
            if event.kind in receiver:
                other = receiver[event.kind]
                spans.append(Span(event.stage * DEVICES_PER_STAGE + k, event.stage, "send",
                                  event.microbatch, event.start, event.end))
                spans.append(Span(other * DEVICES_PER_STAGE + k, other, "recv",
                                  event.microbatch, event.start, event.end))
            else:
                spans.append(Span(event.stage * DEVICES_PER_STAGE + k, event.stage,
                                  event.kind, event.microbatch, event.start, event.end))
    return spans


def groups(stages: int) -> list[tuple[int, int]]:
    return [(stage * DEVICES_PER_STAGE, DEVICES_PER_STAGE) for stage in range(stages)]


def drawn(path: Path, simulation: Simulation, stages: int = 3) -> bytes:
    draw(str(path), spans_of(simulation), simulation, groups(stages), "mlp: S=3, M=4")
    return path.read_bytes()


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize(("stages", "microbatches"), [(1, 1), (2, 4), (3, 4), (3, 1)])
def test_the_simulated_step_measures_the_modelled_bubble(schedule: str, stages: int,
                                                         microbatches: int) -> None:
    simulation = simulated(schedule, stages, microbatches)
    measured = measured_bubble(spans_of(simulation), stages * DEVICES_PER_STAGE)
    assert measured == pytest.approx(simulation.bubble, abs=1e-12)


def test_equal_stages_measure_the_ideal_bubble() -> None:
    simulation = simulate("gpipe", forward=[1.0] * 4, backward=[2.0] * 4, microbatches=8)
    measured = measured_bubble(spans_of(simulation), 4 * DEVICES_PER_STAGE)
    assert measured == pytest.approx(ideal_bubble(4, 8))


def test_the_bubble_counts_idle_devices_and_not_transfers() -> None:
    spans = [Span(0, 0, "forward", 0, 0.0, 1.0), Span(0, 0, "send", 0, 1.0, 2.0),
             Span(0, 0, "backward", 0, 2.0, 4.0), Span(0, 0, "allreduce", -1, 4.0, 9.0)]
    assert measured_bubble(spans, devices=1) == 0.25
    assert measured_bubble(spans, devices=2) == 0.625   # device 1 did nothing
    assert measured_bubble(spans[:2], devices=1) == 0.0  # no backward yet


def test_format_bubbles() -> None:
    assert format_bubbles(0.4123, 0.375, ideal_bubble(3, 4)) == \
        "bubble: measured 0.412, modelled 0.375 (at full size), (S-1)/(M+S-1) = 0.333"
    assert format_bubbles(0.5, 0.25, 0.0, "--scale 0.5") == \
        "bubble: measured 0.500, modelled 0.250 (at --scale 0.5), (S-1)/(M+S-1) = 0.000"


def test_a_one_stage_step_shows_its_forward_backward_and_update() -> None:
    """One stage and one micro-batch lower to a plain program (no `dist.phase`): its
    spans are still the forward and backward of micro-batch 0, then the update."""
    module, _ = load_model(str(ROOT / "models" / "mlp.dnn"))
    module = strategy_and_scale(module, 4, 0.125, stages=Stages(1, 1))
    report = train(module, 4, record=True)
    assert report.program is not None
    assert (report.program.stages, report.program.microbatches) == (1, 1)
    spans = measured_spans(report)
    kinds = [span.kind for span in spans if span.device == 0]
    assert kinds.index("backward") > max(i for i, k in enumerate(kinds) if k == "forward")
    assert kinds[-1] == "update"
    assert {span.microbatch for span in spans if span.kind in ("forward", "backward")} == {0}
    assert {span.microbatch for span in spans if span.kind in ("update", "allreduce")} == {-1}
    assert {span.stage for span in spans} == {0}


@pytest.mark.parametrize(("fields", "message"), [
    ({"kind": "idle"}, "unknown span kind 'idle'; use one of forward, backward, send"),
    ({"start": 2.0, "end": 1.0}, "ends at 1.0 s, before it starts at 2.0 s"),
])
def test_a_bad_span_is_refused(fields: dict[str, Any], message: str) -> None:
    values: dict[str, Any] = {"device": 0, "stage": 0, "kind": "forward", "microbatch": 0,
                              "start": 0.0, "end": 1.0} | fields
    with pytest.raises(ValueError, match=message):
        Span(**values)


def test_the_svg_is_the_same_bytes_each_time_with_one_group_per_span(tmp_path: Path) -> None:
    simulation = simulated()
    first = drawn(tmp_path / "first.svg", simulation)
    assert drawn(tmp_path / "second.svg", simulation) == first
    text = first.decode("utf-8")
    assert text.count('<g id="span-measured-') == len(spans_of(simulation))
    assert text.count('<g id="span-modelled-') == len(simulation.events)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.svg", "second.svg"]


def test_the_png_is_a_png(tmp_path: Path) -> None:
    picture = drawn(tmp_path / "step.PNG", simulated())
    assert picture.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("name", ["step.pdf", "step", "step.svg.txt"])
def test_another_file_type_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=r"name an \.svg or a \.png file"):
        drawn(tmp_path / name, simulated())
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_path_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="No such file or directory"):
        drawn(tmp_path / "missing" / "step.svg", simulated())
    (tmp_path / "step.png").mkdir()
    with pytest.raises(WriteError, match="directory"):
        drawn(tmp_path / "step.png", simulated())
    assert [p.name for p in tmp_path.iterdir()] == ["step.png"]
    assert list((tmp_path / "step.png").iterdir()) == []


def test_a_failed_run_leaves_no_picture(tmp_path: Path) -> None:
    simulation = simulated()

    def run_that_fails() -> None:
        with deferred_writes():
            draw(str(tmp_path / "step.svg"), spans_of(simulation), simulation, groups(3), "t")
            assert list(tmp_path.iterdir()) != []   # its temporary, renamed when the run ends
            raise RuntimeError("the check failed")

    with pytest.raises(RuntimeError):
        run_that_fails()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("spans", "stage_devices", "message"), [
    ([Span(7, 0, "forward", 0, 0.0, 1.0)], [(0, 2)], "device 7, which no stage has"),
    ([Span(1, 0, "forward", 0, 0.0, 1.0)], [(0, 1), (1, 1)],
     "says stage 0, but the device is in stage 1"),
    ([], [(0, 2), (1, 2)], "device 1 is in stage 0 and in stage 1"),
    ([], [(0, 0)], "a stage needs at least one device"),
    ([], [], "a timeline needs at least one stage"),
])
def test_spans_the_stages_do_not_place_are_refused(
        tmp_path: Path, spans: Sequence[Span], stage_devices: Sequence[tuple[int, int]],
        message: str) -> None:
    with pytest.raises(ValueError, match=message):
        draw(str(tmp_path / "step.svg"), spans, simulated(stages=1), stage_devices, "t")


def test_modelled_stages_beyond_the_groups_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a forward on stage 2, but there are 2 stages"):
        draw(str(tmp_path / "step.svg"), [], simulated(stages=3), groups(2), "t")


def test_without_matplotlib_the_error_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r"pip install 'pase\[plot\]'") as raised:
        drawn(tmp_path / "step.svg", simulated())
    assert isinstance(raised.value, PlottingUnavailable)
    assert list(tmp_path.iterdir()) == []
