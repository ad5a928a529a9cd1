"""The pieces of a pipeline plan's cost: micro-batch layers and one stage's times.

pase-partition-stages (issue 10) splits a graph's segments into S contiguous stages on
disjoint groups of P/S devices and runs M micro-batches per step. This module holds what
its cost model is made of, as plain data:

- `microbatch_layers`: the layers as one micro-batch sees them, the batch dim divided
  by M in every iteration space and tensor;
- `stage_cost`: one stage's forward and backward seconds per micro-batch (its layers'
  compute and collectives, the redistribution on the edges inside it) and what runs
  once per step: its parameter-gradient all-reduce (`LayerCost.param_communication`)
  and the moves of a parameter two layers share, and of its gradient (`carries_param`);
- `boundary_seconds`: a tensor crossing from one stage's group to the next: the
  groups are disjoint, so each consumer device receives its whole block forward and
  each producer device its whole gradient block backward.

`pase.passes.strategy.schedule.simulate` turns the stage times into the step time.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> [dim.size for dim in microbatch_layers(mlp.layers, "b", 4)[0].space.dims]
    [16, 256, 1024]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import prod

from pase.passes.strategy.cost import Config, edge_costs, layer_cost, local_elements
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.schedule import Simulation, simulate
from pase.passes.strategy.vertices import Edge, Layer, TensorUse


def microbatch_layers(layers: Sequence[Layer], batch: str,
                      microbatches: int) -> list[Layer]:
    """`layers` with the size of dim `batch` divided by `microbatches` everywhere.

    Raises ValueError where a layer's batch size is not a multiple of it.
    """
    if microbatches < 1:
        raise ValueError(f"microbatches must be at least 1, got {microbatches}")
    result = []
    for layer in layers:
        dims = []
        for dim in layer.space.dims:
            if dim.name == batch:
                if dim.size % microbatches:
                    raise ValueError(f"layer '{layer.name}': batch {dim.name} = {dim.size} "
                                     f"does not split into {microbatches} micro-batches")
                dim = replace(dim, size=dim.size // microbatches)
            dims.append(dim)
        space = replace(layer.space, dims=tuple(dims))

        def shrink(use: TensorUse) -> TensorUse:
            return replace(use, sizes=tuple(size // microbatches if d == batch else size
                                            for d, size in zip(use.dims, use.sizes,
                                                               strict=True)))

        result.append(replace(layer, space=space,
                              operands=tuple(shrink(use) for use in layer.operands),
                              result=shrink(layer.result)))
    return result


@dataclass(frozen=True)
class StageCost:
    """One stage's seconds: forward and backward per micro-batch, and once per step
    the parameter-gradient all-reduce and the moves of shared parameters (and of their
    gradients) inside the stage."""

    forward: float
    backward: float
    allreduce: float


def stage_cost(layers: Sequence[Layer], edges: Sequence[Edge],
               assignment: Mapping[str, Config], devices: int,
               machine: Machine, memo: dict | None = None) -> StageCost:
    """The times of a stage whose `layers` (micro-batch shapes) run under `assignment`
    on `devices` devices; `edges` are those between two of its layers, numbered
    within `layers`. `memo` keeps each layer's and edge's seconds under its
    configurations for the next call (the same layers recur in many stage ranges)."""
    memo = {} if memo is None else memo
    forward = backward = allreduce = 0.0
    configs = [dict(assignment[layer.name]) for layer in layers]
    for layer, config in zip(layers, configs, strict=True):
        key: tuple = (layer.name, layer.space, _frozen(config))
        if key not in memo:
            cost = layer_cost(layer, config, machine)
            memo[key] = (cost.forward, cost.backward, cost.param_communication)
        ahead, back, once = memo[key]
        forward += ahead
        backward += back
        allreduce += once
    for edge in edges:
        producer, consumer = layers[edge.producer], layers[edge.consumer]
        key = (producer.name, consumer.name, edge.held, edge.needed, edge.backward,
               _frozen(configs[edge.producer]), _frozen(configs[edge.consumer]), devices)
        if key not in memo:
            memo[key] = _edge_seconds(edge, producer, configs[edge.producer], consumer,
                                      configs[edge.consumer], devices, machine)
        ahead, back = memo[key]
        if carries_param(edge):
            allreduce += ahead + back
            continue
        forward += ahead
        backward += back
    return StageCost(forward, backward, allreduce)


def _frozen(config: Config) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(config.items()))


def carries_param(edge: Edge) -> bool:
    """Whether `edge` carries a parameter (shared by two layers) from its first reader:
    the parameter is the same for every micro-batch and its gradient is summed over them
    first, so a pipeline moves it, and its gradient, once per step."""
    return bool(edge.carried) and edge.backward


def _edge_seconds(edge: Edge, producer: Layer, producer_config: Config, consumer: Layer,
                  consumer_config: Config, devices: int, machine: Machine
                  ) -> tuple[float, float]:
    """(forward, backward) redistribution seconds of an edge inside a stage."""
    both = float(edge_costs(edge, producer, [producer_config], consumer, [consumer_config],
                            devices, machine)[0, 0])
    if not edge.backward:
        return both, 0.0
    ahead = float(edge_costs(replace(edge, backward=False), producer, [producer_config],
                             consumer, [consumer_config], devices, machine)[0, 0])
    return ahead, both - ahead


def boundary_seconds(edge: Edge, producer_config: Config, consumer_config: Config,
                     producer_offset: int, consumer_offset: int,
                     machine: Machine) -> tuple[float, float]:
    """(forward, backward) seconds per micro-batch of `edge` between two stages whose
    groups start at device `producer_offset` and `consumer_offset`: the consumer's
    devices hold nothing of the producer's, so the worst consumer device receives its
    whole block, and backward (if a gradient flows) the worst producer device its whole
    gradient block; over the inter-node link where the two groups are on other nodes."""
    per_node = machine.devices_per_node
    apart = producer_offset // per_node != consumer_offset // per_node
    bandwidth = machine.inter_node_bandwidth if apart else machine.intra_node_bandwidth
    ahead = local_elements(edge.needed, consumer_config) * edge.needed.element_bytes
    back = local_elements(edge.held, producer_config) * edge.held.element_bytes \
        if edge.backward else 0.0
    return ahead / bandwidth, back / bandwidth


def activation_bytes(layers: Sequence[Layer], assignment: Mapping[str, Config]) -> float:
    """Bytes one device keeps per micro-batch in flight: the block of every layer's
    result under its configuration (what the backward pass reads again)."""
    return sum(local_elements(layer.result, assignment[layer.name])
               * layer.result.element_bytes for layer in layers)


def parameter_bytes(layers: Sequence[Layer], assignment: Mapping[str, Config]) -> float:
    """Bytes one device holds of parameters and their gradients (two copies of each
    parameter block its layers read)."""
    total = 0.0
    for layer in layers:
        config = assignment[layer.name]
        for use, param in zip(layer.operands, layer.params, strict=False):
            if param:
                total += 2 * local_elements(use, config) * use.element_bytes
    return total


def devices_of(config: Config) -> int:
    """How many devices a configuration works on."""
    return prod(config.values()) if config else 1


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
    """The simulated step (its events), from `Partitioner.evaluate`."""

    @property
    def assignment(self) -> dict[str, Config]:
        return {name: config for stage in self.stages
                for name, config in stage.assignment.items()}


class PlanError(ValueError):
    """No plan fits: the message says why (and how much memory the best plan needs)."""


class Partitioner:
    """Plans for one graph on `devices` devices: stage ranges solved once each.

    `cuts` are the positions (0 < i < len(layers)) where a stage may begin: the first
    layer of each segment but the first. `solve_stage(layers, edges, devices)` returns
    a stage's configurations (the search engine on the stage's sub-problem).
    """

    def __init__(self, layers: Sequence[Layer], edges: Sequence[Edge], batch: str,
                 devices: int, machine: Machine, cuts: Sequence[int],
                 solve_stage: Callable[[list[Layer], list[Edge], int], dict[str, Config]]):
        self.layers = list(layers)
        self.edges = list(edges)
        self.batch = batch
        self.devices = devices
        self.machine = machine
        self.cuts = sorted(set(cuts))
        self.solve_stage = solve_stage
        self._stages: dict[tuple[int, int, int, int], tuple[dict[str, Config], StageCost,
                                                            float, float]] = {}
        self._memo: dict = {}

    def stage(self, start: int, stop: int, devices: int, microbatches: int
              ) -> tuple[dict[str, Config], StageCost, float, float]:
        """(configs, cost, parameter bytes, activation bytes per micro-batch) of layers
        [start, stop) on `devices` devices for a micro-batch of batch / M."""
        key = (start, stop, devices, microbatches)
        if key not in self._stages:
            layers = microbatch_layers(self.layers[start:stop], self.batch, microbatches)
            edges = [replace(e, producer=e.producer - start, consumer=e.consumer - start)
                     for e in edges_at(self.edges, layers, self.batch, microbatches)
                     if start <= e.producer and e.consumer < stop]
            assignment = self.solve_stage(layers, edges, devices)
            self._stages[key] = (assignment,
                                 stage_cost(layers, edges, assignment, devices, self.machine,
                                            self._memo),
                                 parameter_bytes(layers, assignment),
                                 activation_bytes(layers, assignment))
        return self._stages[key]

    def ideal(self, start: int, stop: int, devices: int, microbatches: int) -> float:
        """A lower bound on M (F + B) of layers [start, stop) on `devices` devices: their
        FLOPs for the whole batch spread evenly, without communication."""
        flops = sum(layer.space.points * (layer.space.flops_forward
                                          + (layer.space.flops_backward
                                             if layer.backward else 0.0))
                    for layer in self.layers[start:stop])
        return flops / devices / self.machine.flops

    def evaluate(self, bounds: Sequence[int], microbatches: int,
                 schedule: str) -> PipelinePlan:
        """The plan whose stages begin at `bounds` (0 first), simulated."""
        count = len(bounds)
        group = self.devices // count
        edges_of = list(bounds[1:]) + [len(self.layers)]
        stage_of = [0] * len(self.layers)
        for s, (start, stop) in enumerate(zip(bounds, edges_of, strict=True)):
            for i in range(start, stop):
                stage_of[i] = s
        plans: list[tuple[int, int, int, dict[str, Config], StageCost, float, float]] = []
        for s, (start, stop) in enumerate(zip(bounds, edges_of, strict=True)):
            assignment, cost, params, acts = self.stage(start, stop, group, microbatches)
            plans.append((start, stop, s * group, assignment, cost, params, acts))
        send_f = [0.0] * (count - 1)
        send_b = [0.0] * (count - 1)
        once = [0.0] * count
        micro = microbatch_layers(self.layers, self.batch, microbatches)
        configs = {name: c for plan in plans for name, c in plan[3].items()}
        for edge in self.edges:
            u, v = stage_of[edge.producer], stage_of[edge.consumer]
            if u == v:
                continue
            small = replace(edge, held=_use_of(edge.held, self.batch, microbatches),
                            needed=_use_of(edge.needed, self.batch, microbatches))
            ahead, back = boundary_seconds(small, configs[micro[edge.producer].name],
                                           configs[micro[edge.consumer].name], u * group,
                                           v * group, self.machine)
            if carries_param(edge):  # once per step: into the consumer, and back
                once[v] += ahead
                once[u] += back
                continue
            # A tensor skipping stages arrives with the last boundary it crosses.
            send_f[v - 1] += ahead
            send_b[v - 1] += back
        sim = simulate(schedule, [p[4].forward for p in plans],
                       [p[4].backward for p in plans], microbatches, send_f, send_b,
                       [p[4].allreduce + extra for p, extra in zip(plans, once, strict=True)])
        stages = tuple(StagePlan(start, stop, offset, group, assignment, cost, params, acts,
                                 params + acts * sim.in_flight[s])
                       for s, (start, stop, offset, assignment, cost, params, acts)
                       in enumerate(plans))
        return PipelinePlan(stages, microbatches, schedule, sim.step, sim.bubble,
                            max(stage.memory for stage in stages), sim)

    def best(self, stages: int, microbatches: int, schedule: str,
             memory: float | None = None, method: str = "dp",
             bound: float = math.inf) -> PipelinePlan | None:
        """The plan with the least step among those with `stages` contiguous stages
        that fit in `memory` bytes per device, or None if none fits.

        `method="exhaustive"` simulates every choice of stage beginnings among the cuts;
        `method="dp"` walks the same choices depth-first, stage by stage, and skips a
        prefix once one of its stages alone takes at least the best step found (a stage
        needs M(F + B) + AR whatever the others do, and the simulated step is at least
        that of every stage) or needs more memory than allowed even holding one
        micro-batch: the same optimum, with ties broken alike (the first in the order).
        Before solving a stage it tries a cheaper bound, the stage's FLOPs spread evenly
        over its devices. With `bound` (a step already reached elsewhere, for example
        with another S or M), only plans strictly faster than it are returned.
        """
        if stages > len(self.cuts) + 1:
            return None
        group = self.devices // stages
        best: list[PipelinePlan | None] = [None]

        def consider(bounds: list[int]) -> None:
            plan = self.evaluate(bounds, microbatches, schedule)
            if memory is not None and plan.memory > memory:
                return
            if plan.step < (best[0].step if best[0] is not None else bound):
                best[0] = plan

        def walk(bounds: list[int], after: int) -> None:
            if len(bounds) == stages:
                consider(bounds)
                return
            left = stages - len(bounds)
            choices = [c for c in self.cuts if c > after]
            for k, cut in enumerate(choices):
                if len(choices) - k < left:
                    break
                if method == "dp":
                    reached = best[0].step if best[0] is not None else bound
                    if self.ideal(after, cut, group, microbatches) >= reached:
                        continue
                    _, cost, params, acts = self.stage(after, cut, group, microbatches)
                    alone = microbatches * (cost.forward + cost.backward) + cost.allreduce
                    if alone >= reached:
                        continue
                    if memory is not None and params + acts > memory:
                        continue
                walk([*bounds, cut], cut)

        if stages == 1:
            consider([0])
        else:
            walk([0], 0)
        return best[0]


def _use_of(use: TensorUse, batch: str, microbatches: int) -> TensorUse:
    """`use` (a tensor of the whole batch) at micro-batch size."""
    return replace(use, sizes=tuple(size // microbatches if d == batch else size
                                    for d, size in zip(use.dims, use.sizes, strict=True)))


def edges_at(edges: Sequence[Edge], layers: Sequence[Layer], batch: str,
             microbatches: int) -> list[Edge]:
    """`edges` with their tensors at micro-batch size (`layers` are the micro-batch
    layers, `microbatch_layers`)."""
    del layers
    return [replace(edge, held=_use_of(edge.held, batch, microbatches),
                    needed=_use_of(edge.needed, batch, microbatches)) for edge in edges]


def stage_solver(machine: Machine, batch: str | None, min_shard: int = 4,
                 method: str = "dp", memory_budget: int = 4 << 30
                 ) -> Callable[[list[Layer], list[Edge], int], dict[str, Config]]:
    """A `solve_stage` for `Partitioner`: pase's search on the stage's sub-problem."""
    from pase.passes.strategy.problem import Problem, solve

    def solve_stage(layers: list[Layer], edges: list[Edge], devices: int
                    ) -> dict[str, Config]:
        problem = Problem.from_layers(layers, edges, devices, machine, batch=batch,
                                      min_shard=min_shard)
        return {name: dict(config) for name, config in
                solve(problem, method, memory_budget=memory_budget).assignment.items()}

    return solve_stage
