"""`pase-run --timeline FILE`: the measured per-device timeline of a pipelined step next
to the modelled one.

The runtime records when each device ran each op of the first step
(`train(record=True)`); each op is a forward or backward piece of its micro-batch (its
`dist.phase` and `dist.microbatch`), a send or receive between stages (a
`dist.redistribute` from one stage's grid to another's), or the once-per-step update
(the parameter-gradient all-reduce and SGD). The modelled timeline is the cost model's
simulation of the same plan, on the shapes that ran (`pase.passes.strategy.evaluate_plan`).

    report = train(module, 8, record=True)
    draw_timeline("step.svg", module, report)   # prints the bubbles too
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from pase.dialect.pase import pipeline_of, stage_of
from pase.formats.machine_toml import load_machine
from pase.passes.strategy import PipelinePlan, PlanSpec, evaluate_plan, ideal_bubble, read_graph
from pase.runtime.program import Program, Step
from pase.tools.run_check import TrainingReport
from pase.tools.run_pipeline import forward_graph, layer_configs
from pase.tools.timeline import Span, draw, format_bubbles, measured_bubble


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


def _kind(step: Step, program: Program, device: int, group: int) -> str | None:
    """What a device did in `step`, as a timeline shows it (None: not shown)."""
    if step.kind in ("input", "param", "return"):
        return None
    if step.kind == "redistribute":
        source = program.first.get(step.operand_types[0].grid, 0) // group
        target = program.first.get(step.result_types[0].grid, 0) // group
        if source != target:
            return "send" if device // group == source else "recv"
    if step.phase == "update":
        return "allreduce" if step.kind == "all_reduce" else "update"
    return step.phase or "forward"


def measured_spans(report: TrainingReport) -> list[Span]:
    """The spans of the first step on every device, in seconds from its start."""
    program = report.program
    assert program is not None
    group = program.devices // program.stages
    origin = min((start for spans in report.spans for _, start, _ in spans), default=0.0)
    result = []
    for device, spans in enumerate(report.spans):
        for index, start, end in spans:
            step = program.steps[index]
            kind = _kind(step, program, device, group)
            if kind is not None:
                result.append(Span(device, min(device // group, program.stages - 1), kind,
                                   step.microbatch, start - origin, end - origin))
    return result


def draw_timeline(path: str, module: ModuleOp, report: TrainingReport) -> None:
    """Draw the measured and modelled timelines to `path` and print both bubbles."""
    program = report.program
    assert program is not None
    plan = modelled_plan(module)
    assert plan.simulation is not None
    spans = measured_spans(report)
    group = program.devices // program.stages
    draw(path, spans, plan.simulation,
         [(s * group, group) for s in range(program.stages)],
         f"@{report.graph}: {program.stages} stages x {program.microbatches} micro-batches, "
         f"{plan.schedule}, {program.devices} devices")
    # The devices no layer of the plan uses are not the schedule's bubble.
    active = len({span.device for span in spans}) or 1
    print(format_bubbles(measured_bubble(spans, active), plan.simulation.bubble,
                         ideal_bubble(program.stages, program.microbatches)))
    print(f"timeline written to {path}")
