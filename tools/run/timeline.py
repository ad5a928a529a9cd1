"""`pase-run --timeline FILE`: pictures of a pipelined training step, the measured timeline
of every device above the modelled one of every stage, and the bubble fractions pase-run
prints beside them (issue 10).

    report = train(module, 8, record=True)
    draw_timeline("step.svg", module, report)   # prints the bubbles too

The runtime records when each device ran each op of the first step
(`train(record=True)`); each op is a forward or backward piece of its micro-batch (its
`dist.phase` and `dist.microbatch`), a send or receive between stages (a
`dist.redistribute` from one stage's grid to another's), or the once-per-step update
(the parameter-gradient all-reduce and SGD). The modelled timeline is the cost model's
simulation of the same plan, on the shapes that ran (`pase.passes.strategy.schedule`).
The pieces, drawn by `draw`:

    spans = [Span(device=0, stage=0, kind="forward", microbatch=0, start=0.0, end=0.002),
             ...]                        # what the runtime recorded, seconds from the step's start
    model = simulate("1f1b", forward=[...], backward=[...], microbatches=4)
    draw("step.svg", spans, model, stage_devices=[(0, 2), (2, 2)], title="mlp: P=4, S=2, M=4")
    print(format_bubbles(measured_bubble(spans, 4), model.bubble, ideal_bubble(2, 4)))
    # bubble: measured 0.412, modelled 0.375, (S-1)/(M+S-1) = 0.375

The picture has two panels on one time axis each (in ms, each its own scale: the runtime's
numpy kernels are not the modelled machine). "measured" has one row per device, grouped by
stage; "modelled" one row per stage, from `pase.passes.strategy.simulate`. Compute
boxes are coloured by stage, a forward a light shade and a backward a dark one, numbered by
micro-batch where they are wide enough; transfers and the all-reduce are thin grey bars, the
update a full-height grey box, idle time the background. The same input draws the same bytes:
matplotlib's default style (not the user's matplotlibrc), a fixed SVG hash salt and no date.

matplotlib is an optional extra (`pip install 'pase[plot]'`), imported only by `draw`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import ModuleOp

from pase.core.files import write_atomically, write_bytes_atomically
from pase.dialect.pase import pipeline_of, stage_of
from pase.formats.machine_toml import load_machine
from pase.passes.strategy import (
    PipelinePlan,
    PlanSpec,
    Simulation,
    evaluate_plan,
    ideal_bubble,
    read_graph,
)
from pase.runtime.program import Program, Step
from pase.tools.errors import ToolError
from pase.tools.run.check import TrainingReport
from pase.tools.run.load import forward_graph, layer_configs

if TYPE_CHECKING:
    from matplotlib.axes import Axes

KINDS = ("forward", "backward", "send", "recv", "allreduce", "update")
COMPUTE = ("forward", "backward")
FORMATS = ("svg", "png")

# matplotlib's tab10 without its grey, which the transfers use.
_STAGE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#bcbd22", "#17becf")
_TRANSFER = "#9a9a9a"
_ALLREDUCE = "#4d4d4d"
_UPDATE = "#cfcfcf"
_IDLE = "#f2f2f2"
UPDATES = ("dnn.sgd", "dnn.update")
"""The kernels of the optimizer step."""
_KIND_LABELS = {"send": "transfer", "recv": "transfer", "allreduce": "all-reduce",
                "update": "update"}
_ROW_INCHES = 0.3
_LABEL_POINTS = 6.5
_LEGEND_COLUMNS = 8


@dataclass(frozen=True)
class Span:
    """One operation of a measured step on `device` (of stage `stage`): a "forward" or
    "backward" of micro-batch `microbatch`, a "send" or "recv" of its activations or
    gradient as this device sees the transfer, or the step's "allreduce" and "update"
    (micro-batch -1); from `start` to `end` seconds after the step's start."""

    device: int
    stage: int
    kind: str
    microbatch: int
    start: float
    end: float

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown span kind '{self.kind}'; use one of {', '.join(KINDS)}")
        if self.end < self.start:
            raise ValueError(f"a {self.kind} span on device {self.device} ends at {self.end} "
                             f"s, before it starts at {self.start} s")


class PlottingUnavailable(ToolError, ImportError):
    """matplotlib is not installed: `pip install 'pase[plot]'`."""


def measured_bubble(spans: Sequence[Span], devices: int) -> float:
    """The idle share of the devices' compute time before the gradient all-reduce:
    1 - (forward and backward time summed over the devices) / (devices T), with T from the
    earliest span's start to the last backward's end. It is `Simulation.bubble` per device
    rather than per stage (every device of a stage is busy when its stage is); 0 without a
    backward.

        >>> measured_bubble([Span(0, 0, "forward", 0, 0.0, 1.0),
        ...                  Span(0, 0, "backward", 0, 2.0, 4.0)], devices=1)
        0.25
    """
    if devices < 1:
        raise ValueError(f"a step runs on at least one device, not {devices}")
    backward_ends = [span.end for span in spans if span.kind == "backward"]
    if not backward_ends:
        return 0.0
    length = max(backward_ends) - min(span.start for span in spans)
    if length <= 0:
        return 0.0
    busy = sum(span.end - span.start for span in spans if span.kind in COMPUTE)
    return max(1.0 - busy / (devices * length), 0.0)


def format_bubbles(measured_bubble: float, modelled_bubble: float, ideal: float,
                   size: str = "full size") -> str:
    """The line pase-run prints under a timeline; `size` says which shapes the modelled
    bubble is of (the ones that ran).

        >>> format_bubbles(0.4123, 0.375, 0.375, "--scale 0.125")
        'bubble: measured 0.412, modelled 0.375 (at --scale 0.125), (S-1)/(M+S-1) = 0.375'
    """
    return (f"bubble: measured {measured_bubble:.3f}, modelled {modelled_bubble:.3f} "
            f"(at {size}), (S-1)/(M+S-1) = {ideal:.3f}")


@dataclass(frozen=True)
class _Box:
    """One box of a panel: on row `row`, in stage `stage`'s colours, in ms."""

    row: int
    stage: int
    kind: str
    microbatch: int
    start: float
    end: float
    gid: str


def draw(path: str, measured: Sequence[Span], modelled: Simulation,
         stage_devices: Sequence[tuple[int, int]], title: str, *,
         measured_what: str = "measured", modelled_what: str = "modelled",
         active: int | None = None) -> None:
    """Draw the measured and modelled timelines of one step to `path`, an .svg or a .png
    (written atomically: a failed run leaves no file).

    `stage_devices[s]` is (first device, device count) of stage s: the devices of a stage
    are consecutive and the stages' groups disjoint. Each span is one SVG group with id
    `span-measured-I` (I its index in `measured`), each modelled event `span-modelled-I`.
    Raises ValueError for another file type or spans the stages do not place, and
    `PlottingUnavailable` (an ImportError) without matplotlib. `measured_what` and
    `modelled_what` head the two panels; `active` is the number of devices the measured
    bubble is over (default: every device drawn).
    """
    file_format = _format_of(path)
    rows = _device_rows(stage_devices)
    measured_boxes = [_measured_box(index, span, rows) for index, span in enumerate(measured)]
    modelled_boxes = [_modelled_box(index, event.stage, event.kind, event.microbatch,
                                    event.start, event.end, len(stage_devices))
                      for index, event in enumerate(modelled.events)]
    try:
        import matplotlib
        import matplotlib.style
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as error:
        raise PlottingUnavailable("drawing a timeline needs matplotlib: "
                                  "pip install 'pase[plot]'") from error
    devices = len(rows)
    stages = len(stage_devices)
    width = 11.0
    height = 1.9 + _ROW_INCHES * (devices + stages)
    device_labels = [f"stage {stage} · device {device}" for device, (_, stage) in rows.items()]
    stage_labels = [f"stage {stage}" for stage in range(stages)]
    # matplotlib's defaults, not the user's matplotlibrc; within the block only.
    with matplotlib.style.context("default"), \
            matplotlib.rc_context({"svg.hashsalt": "pase-timeline", "svg.id": "timeline"}):
        figure = Figure(figsize=(width, height), layout="constrained")
        figure.suptitle(title, fontsize=10)
        top, bottom = figure.subplots(2, 1, height_ratios=[devices + 1.5, stages + 1.5])
        _panel(top, measured_boxes, device_labels, _stage_starts(rows), width,
               f"{measured_what}: {devices} devices, bubble "
               f"{measured_bubble(measured, active or devices):.3f}, "
               f"step {max((span.end for span in measured), default=0.0) * 1e3:.4g} ms")
        _panel(bottom, modelled_boxes, stage_labels, list(range(1, stages)), width,
               f"{modelled_what}: {plural(stages, 'stage')}, bubble {modelled.bubble:.3f}, "
               f"step {modelled.step * 1e3:.4g} ms")
        kinds = {box.kind for box in measured_boxes + modelled_boxes}
        handles = [Patch(facecolor=colour, label=label,
                         edgecolor="#bdbdbd" if label == "idle" else "none")
                   for label, colour in _legend(stages, kinds)]
        figure.legend(handles=handles, loc="outside lower center", fontsize=7,
                      ncols=_legend_columns(len(handles)), frameon=False)
        picture = io.BytesIO()
        metadata: dict[str, Any] = {"Date": None} if file_format == "svg" else {}
        figure.savefig(picture, format=file_format, metadata=metadata)
    if file_format == "svg":
        write_atomically(path, picture.getvalue().decode("utf-8"))
    else:
        write_bytes_atomically(path, picture.getvalue())


def _format_of(path: str) -> str:
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension not in FORMATS:
        named = f"'.{extension}'" if extension else "no extension"
        raise ValueError(f"cannot draw a timeline to '{path}' ({named}): name an .svg or a "
                         f".png file")
    return extension


def _device_rows(stage_devices: Sequence[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Each device's (row, stage), stage 0's devices first."""
    if not stage_devices:
        raise ValueError("a timeline needs at least one stage")
    rows: dict[int, tuple[int, int]] = {}
    for stage, (first, count) in enumerate(stage_devices):
        if count < 1 or first < 0:
            raise ValueError(f"stage {stage} has devices {first}..{first + count - 1}: a stage "
                             f"needs at least one device, numbered from 0")
        for device in range(first, first + count):
            if device in rows:
                raise ValueError(f"device {device} is in stage {rows[device][1]} and in "
                                 f"stage {stage}: the stages' device groups are disjoint")
            rows[device] = (len(rows), stage)
    return rows


def _stage_starts(rows: dict[int, tuple[int, int]]) -> list[int]:
    """The rows where a stage other than the first begins."""
    stages = [stage for _, stage in rows.values()]
    return [row for row in range(1, len(stages)) if stages[row] != stages[row - 1]]


def _measured_box(index: int, span: Span, rows: dict[int, tuple[int, int]]) -> _Box:
    if span.device not in rows:
        raise ValueError(f"a {span.kind} span is on device {span.device}, which no stage "
                         f"has (devices {', '.join(map(str, rows))})")
    row, stage = rows[span.device]
    if span.stage != stage:
        raise ValueError(f"a {span.kind} span on device {span.device} says stage "
                         f"{span.stage}, but the device is in stage {stage}")
    return _Box(row, stage, span.kind, span.microbatch, span.start * 1e3, span.end * 1e3,
                f"span-measured-{index}")


def _modelled_box(index: int, stage: int, kind: str, microbatch: int, start: float,
                  end: float, stages: int) -> _Box:
    if not 0 <= stage < stages:
        raise ValueError(f"the modelled step has a {kind} on stage {stage}, but there are "
                         f"{stages} stages")
    shown = "send" if kind.startswith("send-") else kind   # drawn on the sending stage
    return _Box(stage, stage, shown, microbatch, start * 1e3, end * 1e3,
                f"span-modelled-{index}")


def _panel(axes: Axes, boxes: Sequence[_Box], row_labels: Sequence[str],
           separators: Sequence[int], figure_width: float, heading: str) -> None:
    """Draw `boxes` on `axes`, one row per label, a line above each row in `separators`."""
    from matplotlib.patches import Rectangle

    right = max((box.end for box in boxes), default=0.0) * 1.02 or 1.0
    # Points per ms along the axis, close enough to tell whether a label fits in its box.
    scale = 0.8 * figure_width * 72 / right
    for box in boxes:
        tall = box.kind in COMPUTE or box.kind == "update"
        # Compute on top, communication in a strip below it: a transfer overlaps compute.
        bottom, top = (-0.42, 0.2) if tall else (0.24, 0.42)
        axes.add_patch(Rectangle((box.start, box.row + bottom), box.end - box.start,
                                 top - bottom, facecolor=_colour(box), edgecolor="white",
                                 linewidth=0.5 if tall else 0.0, gid=box.gid))
        label = str(box.microbatch)
        fits = (box.end - box.start) * scale >= len(label) * _LABEL_POINTS * 0.65 + 2
        if box.kind in COMPUTE and fits:
            axes.text((box.start + box.end) / 2, box.row - 0.11, label, ha="center", va="center",
                      fontsize=_LABEL_POINTS,
                      color="black" if box.kind == "forward" else "white")
    for row in separators:
        axes.axhline(row - 0.5, color="#8a8a8a", linewidth=0.8)
    axes.set_facecolor(_IDLE)
    axes.set_xlim(0.0, right)
    axes.set_ylim(len(row_labels) - 0.5, -0.5)
    axes.set_yticks(range(len(row_labels)), list(row_labels), fontsize=7)
    axes.tick_params(axis="x", labelsize=7)
    axes.tick_params(axis="y", length=0)
    axes.set_xlabel("time (ms)", fontsize=8)
    axes.set_title(heading, fontsize=9, loc="left")
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _colour(box: _Box) -> tuple[float, float, float]:
    match box.kind:
        case "forward":
            return _shade(_stage_colour(box.stage), toward=1.0, amount=0.5)
        case "backward":
            return _shade(_stage_colour(box.stage), toward=0.0, amount=0.2)
        case "allreduce":
            return _rgb(_ALLREDUCE)
        case "update":
            return _rgb(_UPDATE)
    return _rgb(_TRANSFER)


def _legend(stages: int, kinds: set[str]) -> list[tuple[str, tuple[float, float, float]]]:
    """(label, colour) of every stage's forward and backward, then the other kinds drawn."""
    entries = []
    for stage in range(stages):
        for kind in COMPUTE:
            entries.append((f"stage {stage} {kind}", _colour(_Box(0, stage, kind, 0, 0, 0, ""))))
    shown = []
    for kind in KINDS[2:]:
        if kind in kinds and _KIND_LABELS[kind] not in shown:
            shown.append(_KIND_LABELS[kind])
            entries.append((_KIND_LABELS[kind], _colour(_Box(0, 0, kind, 0, 0, 0, ""))))
    return [*entries, ("idle", _rgb(_IDLE))]


def _legend_columns(entries: int) -> int:
    """At most `_LEGEND_COLUMNS` columns (the width of the picture), in one row or an even
    number of them: the legend fills columns first, so each stage's forward stays above its
    backward."""
    rows = math.ceil(entries / _LEGEND_COLUMNS)
    if rows > 1 and rows % 2:
        rows += 1
    return math.ceil(entries / rows)


def _stage_colour(stage: int) -> tuple[float, float, float]:
    return _rgb(_STAGE_COLOURS[stage % len(_STAGE_COLOURS)])


def _rgb(colour: str) -> tuple[float, float, float]:
    """'#1f77b4' -> its red, green and blue in [0, 1]."""
    red, green, blue = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return red, green, blue


def _shade(rgb: tuple[float, float, float], toward: float,
           amount: float) -> tuple[float, float, float]:
    """`rgb` moved `amount` of the way to white (`toward` 1) or black (0)."""
    red, green, blue = (channel + (toward - channel) * amount for channel in rgb)
    return red, green, blue


def modelled_plan(module: ModuleOp) -> PipelinePlan:
    """The cost model's plan of `module`'s pipeline (its stages, configurations and
    micro-batches as they are), simulated."""
    graph = forward_graph(module)
    pipeline = pipeline_of(graph)
    assert pipeline is not None
    data = read_graph(graph)
    assert data.batch is not None
    configs = layer_configs(graph)
    starts: list[int] = []
    for index, layer in enumerate(graph.layers):
        stage = stage_of(layer)
        assert stage is not None
        if index == 0 or stage.index.data != len(starts) - 1:
            starts.append(index)
    spec = PlanSpec(tuple(starts), pipeline.microbatches.data, pipeline.schedule.data,
                    configs)
    return evaluate_plan(data.layers, data.edges, data.batch, pipeline.devices.data,
                         load_machine(pipeline.machine.data), spec)


def phases(program: Program) -> list[tuple[str, int]]:
    """The (phase, micro-batch) of each step of `program`: a pipelined program's own
    (`dist.phase`, `dist.microbatch`); a plain one's (one stage, one micro-batch: its
    steps carry neither) from its order, the steps before the loss's seeded gradient the
    forward of micro-batch 0, the others its backward, except the SGD steps and the
    all-reduces of the gradients they apply, which are the step's update (micro-batch -1)."""
    steps = program.steps
    if program.stages > 1 or program.microbatches > 1:
        return [(step.phase, step.microbatch) for step in steps]
    applied = {step.operands[1] for step in steps if step.kernel in UPDATES}
    phase = "forward"
    result = []
    for step in steps:
        if step.seeded:
            phase = "backward"
        update = step.kernel in UPDATES or (step.kind == "all_reduce"
                                              and step.results[0] in applied)
        result.append(("update", -1) if update else (phase, 0))
    return result


def _kind(step: Step, phase: str, program: Program, device: int, group: int) -> str | None:
    """What a device did in `step` of `phase`, as a timeline shows it (None: not shown)."""
    if step.kind in ("input", "param", "return"):
        return None
    if step.kind == "redistribute":
        source = program.first.get(step.operand_types[0].grid, 0) // group
        target = program.first.get(step.result_types[0].grid, 0) // group
        if source != target:
            return "send" if device // group == source else "recv"
    if phase == "update":
        return "allreduce" if step.kind == "all_reduce" else "update"
    return phase or "forward"


def measured_spans(report: TrainingReport) -> list[Span]:
    """The spans of the first step on every device, in seconds from its start."""
    program = report.program
    assert program is not None
    group = program.devices // program.stages
    origin = min((start for spans in report.spans for _, start, _ in spans), default=0.0)
    of_step = phases(program)
    result = []
    for device, spans in enumerate(report.spans):
        for index, start, end in spans:
            step = program.steps[index]
            phase, microbatch = of_step[index]
            kind = _kind(step, phase, program, device, group)
            if kind is not None:
                result.append(Span(device, min(device // group, program.stages - 1), kind,
                                   microbatch, start - origin, end - origin))
    return result


def draw_timeline(path: str, module: ModuleOp, report: TrainingReport,
                  scale: float = 1.0) -> None:
    """Draw the measured and modelled timelines to `path` and print both bubbles; `scale`
    is the `--scale` the model ran at (the modelled lane is the cost model's time of the
    shapes that ran, on the plan's machine: another time axis than the measured one)."""
    program = report.program
    assert program is not None
    plan = modelled_plan(module)
    assert plan.simulation is not None
    pipeline = pipeline_of(forward_graph(module))
    assert pipeline is not None
    spans = measured_spans(report)
    group = program.devices // program.stages
    stages, micro = program.stages, program.microbatches
    # The devices no layer of the plan uses are not the schedule's bubble.
    active = len({span.device for span in spans}) or 1
    size = "full size" if scale == 1 else f"--scale {scale:g}"
    draw(path, spans, plan.simulation,
         [(s * group, group) for s in range(stages)],
         f"@{report.graph}: {plural(stages, 'stage')} x {plural(micro, 'micro-batch')}, "
         f"{plan.schedule}, {program.devices} devices",
         measured_what="measured (pase's runtime on this machine)",
         modelled_what=f"modelled (the cost model on {pipeline.machine.data}, {size}; "
         "its own time axis)", active=active)
    print(format_bubbles(measured_bubble(spans, active), plan.simulation.bubble,
                         ideal_bubble(stages, micro), size))
    print(f"timeline written to {path}")


def plural(count: int, noun: str) -> str:
    """`count` `noun`s, in English.

        >>> plural(1, "stage"), plural(2, "stage"), plural(4, "micro-batch")
        ('1 stage', '2 stages', '4 micro-batches')
    """
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun}{'es' if noun.endswith(('ch', 'sh', 's', 'x')) else 's'}"
