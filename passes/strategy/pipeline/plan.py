"""What a pipeline plan is, as plain data: its stages, their times and memory, the step.

A plan splits a graph's layers, in program order, into S contiguous stages on disjoint
groups of P/S devices and runs M micro-batches per step under a schedule. `PlanSpec` is a
plan as a user gives it (a plan file read back, a pipelined module's attributes); the
search (`search.Partitioner`) and `evaluate.evaluate_plan` turn one into a
`PipelinePlan`, with each stage's `StageCost` and the simulated step.

    >>> spec = PlanSpec((0, 3), 4, "1f1b", {"fc1": {"b": 2}})
    >>> spec.stages
    2
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pase.core.schedule import Simulation
from pase.passes.strategy.cost import Config


@dataclass(frozen=True)
class PlanSpec:
    """A plan as given, not searched: the first layer of each stage (`bounds`, 0 first),
    the micro-batches, the schedule, and every layer's configuration by name (for one
    micro-batch)."""

    bounds: tuple[int, ...]
    microbatches: int
    schedule: str
    assignment: dict[str, Config]

    @property
    def stages(self) -> int:
        return len(self.bounds)


@dataclass(frozen=True)
class StageCost:
    """One stage's seconds: forward and backward per micro-batch, and once per step
    the parameter-gradient all-reduce and the moves of shared parameters (and of their
    gradients) inside the stage."""

    forward: float
    backward: float
    allreduce: float


@dataclass(frozen=True)
class SolvedStage:
    """A stage range in some configurations on some devices for a micro-batch size: its
    configurations, times, parameter bytes and activation bytes per micro-batch per
    device, and its gap (solved under a cap without proof: `CappedSolution.gap`)."""

    assignment: dict[str, Config]
    cost: StageCost
    parameter_bytes: float
    activation_bytes: float
    gap: float = 0.0

    @property
    def work(self) -> float:
        """F + B: one micro-batch's seconds on the stage."""
        return self.cost.forward + self.cost.backward


@dataclass(frozen=True)
class StagePlan:
    """One stage of a plan: layers [start, stop) in program order on devices
    [offset, offset + devices), their configurations for one micro-batch, its times
    and the most memory one of its devices needs."""

    start: int
    stop: int
    offset: int
    devices: int
    assignment: dict[str, Config]
    cost: StageCost
    parameter_bytes: float
    activation_bytes: float
    memory: float
    gap: float = 0.0
    """Solved under the memory cap without a proof of optimality: how far above the
    least cost under it its configurations may be (`CappedSolution.gap`); else 0."""


@dataclass(frozen=True)
class PipelinePlan:
    """S stages, M micro-batches, a schedule, and the simulated step."""

    stages: tuple[StagePlan, ...]
    microbatches: int
    schedule: str
    step: float
    bubble: float
    memory: float
    """The most memory any device needs, in bytes."""
    simulation: Simulation | None = field(default=None, compare=False)
    """The simulated step (its events), from `evaluate.assemble`."""
    floor: float | None = None
    """Where the plan is not proven the least (effort stopped capped stage solves): a
    proven lower bound on the step of every plan searched (`Partitioner.step_floor`);
    None where the plan is proven (or was given, not searched)."""

    @property
    def assignment(self) -> dict[str, Config]:
        return {name: config for stage in self.stages
                for name, config in stage.assignment.items()}

    @property
    def gap(self) -> float:
        """The largest gap of a stage solved under the cap (0 when all are proven)."""
        return max(stage.gap for stage in self.stages)

    @property
    def step_gap(self) -> float:
        """How far the step may be above the least step of every plan searched, relative
        to `floor` (0 when proven; inf without a positive floor): the pipeline's gap.

            >>> PipelinePlan((), 1, "1f1b", 1.5, 0.0, 0.0, floor=1.0).step_gap
            0.5
        """
        if self.floor is None or self.floor >= self.step:
            return 0.0
        return (self.step - self.floor) / self.floor if self.floor > 0 else math.inf
