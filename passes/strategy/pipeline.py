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
    [16, 1024, 256]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import prod

from pase.passes.strategy.cost import Config, edge_costs, layer_cost, local_elements
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.schedule import Simulation
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
               machine: Machine, memo: dict | None = None,
               kinds: tuple[Sequence[int], Sequence[int]] | None = None) -> StageCost:
    """The times of a stage whose `layers` (micro-batch shapes) run under `assignment`
    on `devices` devices; `edges` are those between two of its layers, numbered
    within `layers`. `memo` keeps each layer's and edge's seconds under its
    configurations for the next call (the same layers recur in many stage ranges);
    with `kinds` (a number per layer and per edge, equal where only names differ, as
    `SharedTables` gives them) repeated blocks share those entries too."""
    memo = {} if memo is None else memo
    forward = backward = allreduce = 0.0
    configs = [dict(assignment[layer.name]) for layer in layers]
    frozen = [_frozen(config) for config in configs]
    for index, (layer, config) in enumerate(zip(layers, configs, strict=True)):
        key: tuple = ((kinds[0][index],) if kinds is not None else (layer.name, layer.space)
                      ) + (frozen[index],)
        if key not in memo:
            cost = layer_cost(layer, config, machine)
            memo[key] = (cost.forward, cost.backward, cost.param_communication)
        ahead, back, once = memo[key]
        forward += ahead
        backward += back
        allreduce += once
    for index, edge in enumerate(edges):
        producer, consumer = layers[edge.producer], layers[edge.consumer]
        ends = (frozen[edge.producer], frozen[edge.consumer], devices)
        key = (("edge", kinds[1][index]) if kinds is not None else
               (producer.name, consumer.name, edge.held, edge.needed, edge.backward)) + ends
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
    """The simulated step (its events), from `partition.Partitioner.evaluate`."""

    @property
    def assignment(self) -> dict[str, Config]:
        return {name: config for stage in self.stages
                for name, config in stage.assignment.items()}

    @property
    def gap(self) -> float:
        """The largest gap of a stage solved under the cap (0 when all are proven)."""
        return max(stage.gap for stage in self.stages)


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
