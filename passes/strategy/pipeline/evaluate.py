"""A given plan's cost: its stages' times, the transfers between them, the simulated step.

`evaluate_plan` takes a plan as a user gives it (`PlanSpec`: a plan file read back, a
pipelined module's attributes) and simulates it; `assemble` is the step both it and
the search (`search.Partitioner`) end with, from stages already solved.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> spec = PlanSpec((0, 3), 4, "1f1b", {layer.name: {"b": 4} for layer in mlp.layers})
    >>> plan = evaluate_plan(mlp.layers, mlp.edges, mlp.batch, 8, preset("v100-nvlink"), spec)
    >>> [(stage.start, stage.stop, stage.offset) for stage in plan.stages]
    [(0, 3, 0), (3, 4, 4)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pase.core.schedule import simulate
from pase.passes.strategy.cost_models import CostModel
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.bounds import SLACK, critical_path
from pase.passes.strategy.pipeline.microbatch import Micro, edges_at, microbatch_layers
from pase.passes.strategy.pipeline.plan import PipelinePlan, PlanSpec, SolvedStage, StagePlan
from pase.passes.strategy.pipeline.replay import replayed
from pase.passes.strategy.pipeline.stages import solved_stage
from pase.passes.strategy.pipeline.transfers import Transfers
from pase.passes.strategy.training_cost import copy_config
from pase.passes.strategy.vertices import Edge, Layer, edges_among


def evaluate_plan(layers: Sequence[Layer], edges: Sequence[Edge], batch: str, devices: int,
                  machine: Machine, spec: PlanSpec, model: CostModel | None = None
                  ) -> PipelinePlan:
    """The plan `spec` of the graph of `layers` and `edges` on `devices` devices of
    `machine`, its stages in the given configurations, simulated. Raises ValueError
    where the stages do not begin at 0 in ascending order, or the micro-batches do not
    divide `batch`. `model` charges the training step (default: today's)."""
    bounds = list(spec.bounds)
    if not bounds or bounds[0] != 0 or bounds != sorted(set(bounds)) or \
            bounds[-1] >= len(layers):
        raise ValueError(f"stages must begin at 0 and at cuts, not at {bounds}")
    micro_layers = microbatch_layers(layers, batch, spec.microbatches)
    micro = Micro(micro_layers, edges_at(edges, micro_layers, batch, spec.microbatches))
    group = devices // len(bounds)
    memo: dict = {}
    solved = []
    for start, stop in zip(bounds, [*bounds[1:], len(layers)], strict=True):
        inside = edges_among(micro.edges, range(start, stop))
        stage_layers = micro.layers[start:stop]
        solved.append(solved_stage(stage_layers, [edge for _, edge in inside],
                                   {layer.name: copy_config(spec.assignment[layer.name])
                                    for layer in stage_layers}, group, machine, memo,
                                   model=model))
    plan = assemble(bounds, len(layers), solved, spec.microbatches, spec.schedule, devices,
                    Transfers(edges, bounds[1:], devices, machine).transfers(bounds, solved,
                                                                             micro))
    assert plan is not None  # no `beat`
    return plan


def assemble(bounds: Sequence[int], stop: int, solved: Sequence[SolvedStage],
             microbatches: int, schedule: str, devices: int,
             sends: tuple[list[float], list[float], list[float]], beat: float = math.inf
             ) -> PipelinePlan | None:
    """The plan of the `solved` stages beginning at `bounds` (the last ends at `stop`)
    on `devices` devices with `sends` between them (`Transfers.transfers`), simulated;
    None if its step is not less than `beat` (then the events are not recorded)."""
    send_f, send_b, once = sends
    forward = [p.cost.forward for p in solved]
    backward = [p.cost.backward for p in solved]
    allreduce = [p.cost.allreduce + extra for p, extra in zip(solved, once, strict=True)]
    if beat < math.inf:
        if critical_path(forward, backward, microbatches, send_f, send_b, allreduce,
                         schedule) * (1 - SLACK) >= beat:
            return None
        if replayed(schedule, forward, backward, microbatches, send_f, send_b,
                    allreduce) >= beat:
            return None
    sim = simulate(schedule, forward, backward, microbatches, send_f, send_b, allreduce)
    group = devices // len(bounds)
    ends = [*bounds[1:], stop]
    stages = tuple(StagePlan(start, end, s * group, group, p.assignment, p.cost,
                             p.parameter_bytes, p.activation_bytes,
                             p.parameter_bytes + p.activation_bytes * sim.in_flight[s],
                             p.gap)
                   for s, (start, end, p) in enumerate(zip(bounds, ends, solved,
                                                           strict=True)))
    return PipelinePlan(stages, microbatches, schedule, sim.step, sim.bubble,
                        max(stage.memory for stage in stages), sim)
