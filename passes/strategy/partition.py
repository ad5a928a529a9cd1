"""The stage search of pase-partition-stages: S contiguous stages, M micro-batches.

`Partitioner` holds one graph on P devices and finds, for given S, M and schedule, the
choice of stage beginnings (among the segment cuts) with the least simulated step
(`pipeline.py` has the cost pieces, `schedule.py` the simulation). Each stage's layers
get the configurations of pase's search on the stage's sub-problem at micro-batch
shapes (`StageSolver`); under a device-memory cap, a stage whose configurations need
more than the cap with the micro-batches its position holds at once is solved under
that cap instead (`memory.solve_capped`), so every plan's stages fit by construction.

The walk over cuts is exact: it prunes only with lower bounds on the simulated step
(docs/cost-model.md, "Pipelines"). Stage s cannot start before micro-batch 0 has gone
through stages 0..s-1, does M(F_s + B_s) of work, and its last backward's gradient then
goes back through them, so with w_t = F_t + B_t

    step >= w_0 + ... + w_{s-1} + M w_s + AR_0          for every stage s,

and over any split of work W into r stages, max_s (w_0 + ... + w_{s-1} + M w_s) is at
least W / (1 - (1 - 1/M)^r) (`spread`). Before a stage is solved, w is bounded below by
its layers' least compute (`least_compute`: FLOPs over the most devices any of its
configurations uses), and tighter by the segments' least costs and the least transfers
(`stagebound.SegmentBounds`). Sub-problems that are structurally the same (layers equal
but for their names, the same edges between them: the blocks of a transformer) are
solved once. `search` tries every (S, M), the most promising first.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> machine = preset("v100-nvlink")
    >>> search = Partitioner(mlp.layers, mlp.edges, mlp.batch, 8, machine, [1, 2, 3],
    ...                      stage_solver(machine, mlp.batch))
    >>> plan = search.best(2, 4, "1f1b")
    >>> [(stage.start, stage.stop, stage.devices) for stage in plan.stages]
    [(0, 3, 4), (3, 4, 4)]
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.configs import split_factors
from pase.passes.strategy.cost import Config, local_elements
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.layer_costs import layer_costs
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.memory import (
    BoundReached,
    MemoryCapError,
    memory_vectors,
    one_array_each,
    priced,
    solve_capped,
)
from pase.passes.strategy.pipeline import (
    PipelinePlan,
    StageCost,
    StagePlan,
    activation_bytes,
    boundary_seconds,
    carries_param,
    edges_at,
    microbatch_layers,
    parameter_bytes,
    stage_cost,
)
from pase.passes.strategy.problem import Problem, SharedTables, solve, solve_graph
from pase.passes.strategy.progress import Progress
from pase.passes.strategy.schedule import in_flight, simulate, step_time
from pase.passes.strategy.stagebound import SegmentBounds
from pase.passes.strategy.vertices import Edge, Layer

SLACK = 1e-9
"""Bounds are lowered by this, relative, before they prune: the simulated step adds the
same seconds in another order, so an exact tie must not be pruned by a rounding."""

SolveStage = Callable[[list[Layer], list[Edge], int], dict[str, Config]]

FIRST_EFFORT = 20_000
"""`Partitioner.search` first gives each (S, M) this much effort (`best`'s `effort`), and
four times more in each later round to those that used it up."""
LEAF_EFFORT = 5
"""A plan's evaluation (its transfers) counts as this many steps of the walk in `best`'s
`effort`, plus S M / 4 for its simulation. Stage solves count nothing: they are kept
between rounds (counting them made the Transformer re-solve ranges a later plan prunes)."""


class EffortSpent(Exception):
    """`Partitioner.best` used up its `effort` before it finished."""


@dataclass(frozen=True)
class StageSolution:
    """A stage's configurations and, solved under a cap, how far above the least cost
    under it they may be (`CappedSolution.gap`: 0 when proven optimal)."""

    assignment: dict[str, Config]
    gap: float = 0.0


@dataclass(frozen=True)
class SolvedStage:
    """A stage range solved on some devices for a micro-batch size: its configurations,
    times, parameter bytes and activation bytes per micro-batch per device, and gap."""

    assignment: dict[str, Config]
    cost: StageCost
    parameter_bytes: float
    activation_bytes: float
    gap: float = 0.0

    @property
    def work(self) -> float:
        """F + B: one micro-batch's seconds on the stage."""
        return self.cost.forward + self.cost.backward


class StageSolver:
    """A `solve_stage` for `Partitioner`: pase's search on a stage's sub-problem, each
    structurally distinct sub-problem solved once, with cost tables and configuration
    lists shared between sub-problems (`SharedTables`, a quarter of `memory_budget`;
    each solve gets the rest).

    Called as `solver(layers, edges, devices)` it returns the configurations by layer
    name; `solve` takes the layers' and edges' `kinds` (from `kinds`) and, with
    `memory`, solves under that cap with `in_flight` micro-batches' activations held.
    """

    def __init__(self, machine: Machine, batch: str | None, min_shard: int = 4,
                 method: str = "dp", memory_budget: int = 4 << 30):
        self.machine = machine
        self.batch = batch
        self.min_shard = min_shard
        self.method = method
        self.memory_budget = memory_budget
        self.tables = SharedTables(machine, batch, min_shard, limit=memory_budget // 4)
        self._solved: dict[tuple, tuple[tuple[Config, ...], float] | None] = {}
        self._floors: dict[tuple, float] = {}
        """A proven lower bound on the cost of a capped sub-problem whose search an
        `enough` ended (`solve`)."""
        self.solves = 0
        """How many sub-problems were solved (the others came from the cache)."""

    def kinds(self, layers: Sequence[Layer], edges: Sequence[Edge]
              ) -> tuple[list[int], list[int]]:
        """`SharedTables.layer_kind` of each layer and `edge_kind` of each edge (edges
        index `layers`)."""
        layer_kinds = [self.tables.layer_kind(layer) for layer in layers]
        return layer_kinds, [self.tables.edge_kind(edge, layer_kinds[edge.producer],
                                                   layer_kinds[edge.consumer])
                             for edge in edges]

    def __call__(self, layers: list[Layer], edges: list[Edge], devices: int
                 ) -> dict[str, Config]:
        solution = self.solve(layers, edges, devices, self.kinds(layers, edges))
        assert solution is not None  # without a cap every sub-problem has a solution
        return solution.assignment

    def solve(self, layers: list[Layer], edges: list[Edge], devices: int,
              kinds: tuple[list[int], list[int]], memory: float | None = None,
              in_flight: int = 1, enough: Callable[[float], bool] | None = None
              ) -> StageSolution | None:
        """The stage's configurations (under `memory` bytes per device with `in_flight`
        micro-batches held, if given), or None if none fits under it. Under `memory`,
        `enough` may end the search (`solve_capped`'s, on the stage's F + B + AR): then
        `BoundReached` is raised, and the bound is kept for the next call, which solves
        again only if its `enough` does not accept that bound."""
        signature = (tuple(kinds[0]),
                     tuple((kind, edge.producer, edge.consumer)
                           for kind, edge in zip(kinds[1], edges, strict=True)),
                     devices, memory, in_flight if memory is not None else 0)
        if signature not in self._solved:
            floor = self._floors.get(signature)
            if enough is not None and floor is not None and enough(floor):
                raise BoundReached(floor)
            try:
                self._solved[signature] = self._solve(layers, edges, devices, kinds, memory,
                                                      in_flight, enough)
            except BoundReached as reached:
                self._floors[signature] = reached.bound if floor is None else \
                    max(reached.bound, floor)
                raise
        solved = self._solved[signature]
        if solved is None:
            return None
        configs, gap = solved
        return StageSolution({layer.name: dict(config)
                              for layer, config in zip(layers, configs, strict=True)}, gap)

    def _solve(self, layers: list[Layer], edges: list[Edge], devices: int,
               kinds: tuple[list[int], list[int]], memory: float | None, in_flight: int,
               enough: Callable[[float], bool] | None = None
               ) -> tuple[tuple[Config, ...], float] | None:
        self.solves += 1
        problem = Problem.from_layers(layers, edges, devices, self.machine, batch=self.batch,
                                      min_shard=self.min_shard, tables=self.tables,
                                      kinds=kinds)
        budget = MemoryBudget(self.memory_budget)
        budget.count(self.tables.nbytes)  # the shared tables are held throughout
        if memory is None:
            assignment = solve(problem, self.method, memory_budget=budget).assignment
            return tuple(assignment[layer.name] for layer in layers), 0.0
        try:
            capped = solve_capped(problem, memory, self.method, memory_budget=budget,
                                  in_flight=in_flight, enough=enough)
        except MemoryCapError:
            return None
        return (tuple(capped.assignment[layer.name] for layer in layers),
                0.0 if capped.proven else capped.gap)


def stage_solver(machine: Machine, batch: str | None, min_shard: int = 4,
                 method: str = "dp", memory_budget: int = 4 << 30) -> StageSolver:
    """A `solve_stage` for `Partitioner`: pase's search on the stage's sub-problem."""
    return StageSolver(machine, batch, min_shard, method, memory_budget)


def spread(microbatches: int, stages: int) -> float:
    """The least max_s (w_0 + ... + w_{s-1} + M w_s) over work split into `stages`
    parts, per unit of work: 1 / (1 - (1 - 1/M)^r) (the weighted sum with weights
    (1 - 1/M)^(r-1-s) gives it; equal at w_s proportional to (1 - 1/M)^s).

        >>> spread(1, 4), spread(4, 1)
        (1.0, 4.0)
    """
    if stages < 1:
        return 0.0
    return 1.0 / (1.0 - (1.0 - 1.0 / microbatches) ** stages)


def most_devices(layer: Layer, devices: int, min_shard: int, batch: str | None) -> int:
    """The most devices any configuration of `layer` in pase's space on `devices`
    devices works on (the data-parallel configuration included)."""
    products = {1}
    for dim in layer.space.splittable:
        factors = split_factors(dim.size, devices, min_shard)
        products = {p * f for p in products for f in factors if p * f <= devices}
    most = max(products)
    if batch is not None and batch in layer.space.names and \
            layer.space.dim(batch).splittable:
        most = max(most, max(split_factors(layer.space.dim(batch).size, devices, 1)))
    return most


@dataclass
class _Micro:
    """The graph at one micro-batch size: layers, edges (global numbering) and the
    shared tables' kinds of both (when the solver is a `StageSolver`)."""

    layers: list[Layer]
    edges: list[Edge]
    kinds: tuple[list[int], list[int]] | None


@dataclass
class _Bytes:
    """At least the bytes of one edge between segments each stage [p_a, p_b) receives
    (`Partitioner._least_bytes`): `ahead` per micro-batch, or once per step if
    `carried`; `back` its gradient."""

    producer: int
    consumer: int
    carried: bool
    ahead: np.ndarray
    back: np.ndarray


class Partitioner:
    """Plans for one graph on `devices` devices: stage ranges solved once each.

    `cuts` are the positions (0 < i < len(layers)) where a stage may begin: the first
    layer of each segment but the first. `solve_stage(layers, edges, devices)` returns
    a stage's configurations (the search engine on the stage's sub-problem); a
    `StageSolver` also solves stages under a memory cap and shares its tables.
    """

    def __init__(self, layers: Sequence[Layer], edges: Sequence[Edge], batch: str,
                 devices: int, machine: Machine, cuts: Sequence[int],
                 solve_stage: SolveStage):
        self.layers = list(layers)
        self.edges = list(edges)
        self.batch = batch
        self.devices = devices
        self.machine = machine
        self.cuts = sorted(set(cuts))
        self.solve_stage = solve_stage
        self._micro: dict[int, _Micro] = {}
        self._stages: dict[tuple, SolvedStage | None] = {}
        self._least: dict[tuple[int, int], list[float]] = {}
        self._bounds: dict[tuple[int, int], SegmentBounds] = {}
        self._ranges: dict[tuple, SegmentBounds] = {}
        self._layer_memory: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._free_only = False
        """Whether a stage that does not fit unconstrained is infeasible (instead of
        solved under the cap): `search`'s first pass under a cap."""
        self.progress: Progress | None = None
        """Where `search` reports what it is doing (a line on a terminal), if set."""
        self._status = ""
        self._segments: dict[tuple, tuple[float, float, float]] = {}
        self._spans: list[tuple[int, int, int]] | None = None
        self._carried: list[tuple[int, int, int]] | None = None
        self._memo: dict = {}
        # (Keyed by the id of a solved stage: `_stages` keeps every one alive.)
        self._crossings: dict[tuple[int, int, int, bool], tuple[float, float]] = {}
        self._work_graphs: dict[tuple, tuple[CostGraph, CostGraph, Problem,
                                              MemoryBudget]] = {}
        self._hulls: dict[tuple, _Hull] = {}
        self._capped: dict[tuple, float] = {}
        self._signatures: dict[tuple[int, int, int, int], tuple] = {}

    def micro(self, microbatches: int) -> _Micro:
        """The graph's layers and edges at micro-batch shapes (made once per M)."""
        if microbatches not in self._micro:
            layers = microbatch_layers(self.layers, self.batch, microbatches)
            edges = edges_at(self.edges, layers, self.batch, microbatches)
            kinds = self.solve_stage.kinds(layers, edges) \
                if isinstance(self.solve_stage, StageSolver) else None
            self._micro[microbatches] = _Micro(layers, edges, kinds)
        return self._micro[microbatches]

    def stage(self, start: int, stop: int, devices: int, microbatches: int,
              in_flight: int = 1, memory: float | None = None,
              enough: Callable[[float], bool] | None = None) -> SolvedStage | None:
        """Layers [start, stop) solved on `devices` devices for a micro-batch of batch / M;
        with `memory`, the stage must fit in it holding `in_flight` micro-batches (solved
        under the cap where its unconstrained configurations do not): None if it cannot.
        Solved under the cap, `enough` may end that search first (`StageSolver.solve`:
        `BoundReached`)."""
        free = self._solved(start, stop, devices, microbatches, None, 1)
        assert free is not None
        if memory is None or \
                free.parameter_bytes + in_flight * free.activation_bytes <= memory:
            return free
        if not isinstance(self.solve_stage, StageSolver) or self._free_only:
            return None  # fixed configurations (a plan read back) cannot change
        return self._solved(start, stop, devices, microbatches, memory, in_flight, enough)

    def _fits(self, start: int, stop: int, devices: int, microbatches: int, in_flight: int,
              memory: float) -> bool:
        """Whether the stage's unconstrained configurations fit in `memory` holding
        `in_flight` micro-batches."""
        free = self._solved(start, stop, devices, microbatches, None, 1)
        assert free is not None
        return free.parameter_bytes + in_flight * free.activation_bytes <= memory

    def _solved(self, start: int, stop: int, devices: int, microbatches: int,
                memory: float | None, in_flight: int,
                enough: Callable[[float], bool] | None = None) -> SolvedStage | None:
        key = (start, stop, devices, microbatches, memory, in_flight)
        if key in self._stages:
            return self._stages[key]
        micro = self.micro(microbatches)
        layers = micro.layers[start:stop]
        inside = [i for i, e in enumerate(micro.edges)
                  if start <= e.producer and e.consumer < stop]
        edges = [replace(micro.edges[i], producer=micro.edges[i].producer - start,
                         consumer=micro.edges[i].consumer - start) for i in inside]
        solution: StageSolution | None
        kinds = None
        if isinstance(self.solve_stage, StageSolver):
            assert micro.kinds is not None
            kinds = (micro.kinds[0][start:stop], [micro.kinds[1][i] for i in inside])
            solution = self.solve_stage.solve(layers, edges, devices, kinds, memory,
                                              in_flight, enough)
        else:
            solution = StageSolution(self.solve_stage(layers, edges, devices))
        result = None if solution is None else SolvedStage(
            solution.assignment,
            stage_cost(layers, edges, solution.assignment, devices, self.machine,
                       self._memo, kinds),
            parameter_bytes(layers, solution.assignment),
            activation_bytes(layers, solution.assignment), solution.gap)
        self._stages[key] = result
        return result

    def least_compute(self, devices: int, microbatches: int) -> list[float]:
        """Prefix sums of the layers' least compute seconds per micro-batch on `devices`
        devices (FLOPs over the most devices any configuration uses): entry i bounds
        from below the F + B of layers [0, i) in any configurations."""
        key = (devices, microbatches)
        if key not in self._least:
            solver = self.solve_stage
            min_shard = solver.min_shard if isinstance(solver, StageSolver) else 1
            sums = [0.0]
            for layer in self.micro(microbatches).layers:
                space = layer.space
                flops = space.points * (space.flops_forward
                                        + (space.flops_backward if layer.backward else 0.0))
                most = most_devices(layer, devices, min_shard, self.batch)
                sums.append(sums[-1] + flops / most / self.machine.flops)
            self._least[key] = sums
        return self._least[key]

    def segment_bounds(self, stages: int, microbatches: int) -> SegmentBounds | None:
        """The segments' least costs for `stages` stages of `microbatches`
        (`stagebound.SegmentBounds`), or None where stages are not solved by a
        `StageSolver` (configurations read back)."""
        if not isinstance(self.solve_stage, StageSolver):
            return None
        key = (stages, microbatches)
        if key not in self._bounds:
            group = self.devices // stages
            positions = [0, *self.cuts, len(self.layers)]
            forward, work, own = [0.0], [0.0], [0.0]
            for start, stop in zip(positions, positions[1:], strict=False):
                least = self._segment_least(start, stop, group, microbatches)
                forward.append(forward[-1] + least[0])
                work.append(work[-1] + least[1])
                own.append(own[-1] + least[2])
            ahead, back, shared = self._sends(positions, stages,
                                              self._least_bytes(positions, group,
                                                                microbatches))
            self._bounds[key] = SegmentBounds.of(positions, forward, work, own,
                                                 microbatches, stages, ahead, back, shared)
        return self._bounds[key]

    def range_bounds(self, stages: int, microbatches: int, schedule: str,
                     memory: float | None = None) -> SegmentBounds | None:
        """`segment_bounds` with every stage range a plan of `stages` stages can have
        solved first: its F, F + B and M (F + B) + AR exactly, the tensors it receives
        forward and the parameters it shares with other stages moved under its own
        configurations, and as the first stage its all-reduce. Solving them costs what
        a long walk costs, so `search` builds these only for the (S, M) whose walk with
        segment bounds ran out of effort. Under `memory`, a range whose configurations
        would not fit holding the most micro-batches a stage holds keeps its segments'
        bounds (it may be solved under the cap instead)."""
        tight = self.segment_bounds(stages, microbatches)
        if tight is None:
            return None
        key = (stages, microbatches, schedule, memory)
        if key in self._ranges:
            return self._ranges[key]
        positions = tight.positions
        size = len(positions)
        group = self.devices // stages
        holds = in_flight(schedule, stages, microbatches, 0)
        forward = tight.forward.copy()
        work = tight.work.copy()
        own = tight.own_least.copy()
        opening = np.zeros(size)
        micro = self.micro(microbatches)
        parts = self._least_bytes(positions, group, microbatches)
        for a in range(size - 1):
            for b in range(a + 1, size):
                if not _possible(a, b, size, stages):
                    continue
                start, stop = positions[a], positions[b]
                stage = self._solved(start, stop, group, microbatches, None, 1)
                assert stage is not None
                if memory is not None and \
                        stage.parameter_bytes + holds * stage.activation_bytes > memory:
                    continue
                forward[a][b] = stage.cost.forward
                work[a][b] = stage.work
                own[a][b] = microbatches * stage.work + stage.cost.allreduce
                if a == 0:
                    opening[b] = stage.cost.allreduce
                for (index, producer, consumer), part in zip(self._spanning(), parts,
                                                             strict=True):
                    edge = micro.edges[index]
                    if start <= consumer < stop and producer < start:
                        part.ahead[a][b] = local_elements(
                            edge.needed, stage.assignment[micro.layers[consumer].name]) \
                            * edge.needed.element_bytes
                    elif part.carried and start <= producer < stop <= consumer:
                        part.back[a][b] = local_elements(
                            edge.held, stage.assignment[micro.layers[producer].name]) \
                            * edge.held.element_bytes
        ahead, back, shared = self._sends(positions, stages, parts)
        bounds = SegmentBounds.of_ranges(positions, forward, work, own, microbatches,
                                         stages, ahead, back, shared, opening)
        self._ranges[key] = bounds
        return bounds

    def _least_bytes(self, positions: Sequence[int], devices: int, microbatches: int
                     ) -> list[_Bytes]:
        """For each edge between segments (`_spanning`), at least the bytes each stage
        [p_a, p_b) between two positions receives of it: its block forward where the
        stage holds the consumer and not the producer (a tensor skipping stages comes
        with the last boundary it crosses) and the gradient it sends back for it; for
        an edge that carries a parameter (`carries_param`: once per step) the gradient
        where the stage holds the producer and not the consumer. Each block is the
        least under its consumer's (for a gradient, its producer's) most split
        configuration on `devices` devices; the lists come from `_segment_least`'s
        problems."""
        solver = self.solve_stage
        assert isinstance(solver, StageSolver)
        micro = self.micro(microbatches)
        assert micro.kinds is not None
        places = np.asarray(positions)
        parts = []
        for index, producer, consumer in self._spanning():
            edge = micro.edges[index]
            consumers = solver.tables.configs[(micro.kinds[0][consumer], devices)]
            ahead = min(local_elements(edge.needed, config) for config in consumers) \
                * edge.needed.element_bytes
            gradient = 0.0
            if edge.backward:
                producers = solver.tables.configs[(micro.kinds[0][producer], devices)]
                gradient = min(local_elements(edge.held, config) for config in producers) \
                    * edge.held.element_bytes
            # Stages [p_a, p_b) with producer < p_a <= consumer < p_b receive it.
            receives = np.outer((places > producer) & (places <= consumer),
                                places > consumer).astype(np.float64)
            carried = carries_param(edge)
            if carried:  # the stage with p_a <= producer < p_b <= consumer: its gradient
                back = gradient * np.outer(places <= producer,
                                           (places > producer) & (places <= consumer))
            else:
                back = gradient * receives
            parts.append(_Bytes(producer, consumer, carried, ahead * receives, back))
        return parts

    def _sends(self, positions: Sequence[int], stages: int, parts: Sequence[_Bytes]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The seconds of `parts`' bytes (`_least_bytes`) per stage index s and range
        [a][b]: forward and backward per micro-batch (a tensor into stage s and its
        gradient), and once per step (a shared parameter into stage s, or its gradient
        to the producer's stage s). A link is the inter-node one where the other stage
        is on another node whatever the cuts (the stage holding the other end of the
        edge is at most, or at least, the one its segment's position allows), else the
        fastest two groups of P/S devices can have."""
        group = self.devices // stages
        per_node = self.machine.devices_per_node
        fastest = self._fastest(group)
        inter = self.machine.inter_node_bandwidth
        size = len(positions)
        ahead = np.zeros((stages, size, size))
        back = np.zeros((stages, size, size))
        shared = np.zeros((stages, size, size))

        def apart(u: int, v: int) -> bool:
            return u * group // per_node != v * group // per_node

        for part in parts:
            produced = bisect_right(positions, part.producer) - 1  # segments
            consumed = bisect_right(positions, part.consumer) - 1
            for s in range(stages):
                if s > 0:  # the producer's stage is at most s - 1 and its segment
                    link = inter if apart(min(s - 1, produced), s) else fastest
                    if part.carried:
                        shared[s] += part.ahead / link
                    else:
                        ahead[s] += part.ahead / link
                        back[s] += part.back / link
                if part.carried and s < stages - 1:
                    # The consumer's stage is at least s + 1, and leaves a segment to
                    # each stage after it.
                    link = inter if apart(s, max(s + 1, stages + 1 - size + consumed)) \
                        else fastest
                    shared[s] += part.back / link
        return ahead, back, shared

    def _fastest(self, devices: int) -> float:
        """The fastest link between two stage groups of `devices` devices: groups of
        at least a node's devices begin on other nodes than the one before."""
        if devices >= self.machine.devices_per_node:
            return self.machine.inter_node_bandwidth
        return max(self.machine.intra_node_bandwidth, self.machine.inter_node_bandwidth)

    def _segment_least(self, start: int, stop: int, devices: int, microbatches: int
                       ) -> tuple[float, float, float]:
        """Layers [start, stop) on `devices` devices at micro-batch shapes: the sum of
        their least forward seconds, the least F + B of the whole (pase's DP; edges that
        move a shared parameter left out) and the least M (F + B) + AR (every edge once).
        Structurally equal ranges are solved once."""
        solver = self.solve_stage
        assert isinstance(solver, StageSolver)
        micro = self.micro(microbatches)
        assert micro.kinds is not None
        layers = micro.layers[start:stop]
        inside = [i for i, e in enumerate(micro.edges)
                  if start <= e.producer and e.consumer < stop]
        edges = [replace(micro.edges[i], producer=micro.edges[i].producer - start,
                         consumer=micro.edges[i].consumer - start) for i in inside]
        kinds = (micro.kinds[0][start:stop], [micro.kinds[1][i] for i in inside])
        signature = (tuple(kinds[0]), tuple((kind, edge.producer, edge.consumer)
                                            for kind, edge in zip(kinds[1], edges,
                                                                  strict=True)),
                     devices, microbatches)
        self._signatures[(start, stop, devices, microbatches)] = signature
        if signature in self._segments:
            return self._segments[signature]
        problem = Problem.from_layers(layers, edges, devices, self.machine, batch=self.batch,
                                      min_shard=solver.min_shard, tables=solver.tables,
                                      kinds=kinds)
        budget = MemoryBudget(solver.memory_budget)
        budget.count(solver.tables.nbytes)
        problem.cost_graph(budget)  # the tables, shared with the stages solved later
        forward_least = 0.0
        work_vectors, own_vectors = [], []
        for layer, configs in zip(layers, problem.config_lists, strict=True):
            costs = layer_costs(layer, configs, self.machine)
            work = costs.forward + costs.backward
            forward_least += float(costs.forward.min())
            work_vectors.append(work)
            own_vectors.append(microbatches * work + costs.param_communication)
        names = [layer.name for layer in layers]
        work_graph = CostGraph(names, work_vectors)
        own_graph = CostGraph(names, own_vectors)
        for index, edge in enumerate(edges):
            table = problem.edge_table(index)
            if not carries_param(edge):
                work_graph.add_edge(edge.producer, edge.consumer, table)
            own_graph.add_edge(edge.producer, edge.consumer, table)
        least = (forward_least, solve_graph(work_graph, budget=budget).cost,
                 solve_graph(own_graph, budget=budget).cost)
        self._segments[signature] = least
        self._work_graphs[signature] = (work_graph, own_graph, problem, budget)
        return least

    def objective_own(self, start: int, stop: int, devices: int, microbatches: int,
                      work: float) -> float:
        """A lower bound on M (F + B) + AR of layers [start, stop) on `devices` devices
        in the configurations the stage solver gives them under any cap, given `work`,
        a lower bound on their F + B: the solver minimises F + B + AR (the stage's
        sub-problem's cost), so under a cap that is at least the unconstrained stage's,
        and M (F + B) + AR = (F + B + AR) + (M - 1)(F + B). Costs the unconstrained solve,
        which deciding whether the stage fits makes anyway. (`capped_least` bounds
        M (F + B) + AR over every configuration that fits instead, which is lower where
        the least of it lies in configurations with a heavy all-reduce that the solver,
        minimising F + B + AR, would not choose.)"""
        free = self._solved(start, stop, devices, microbatches, None, 1)
        assert free is not None
        return free.work + free.cost.allreduce + (microbatches - 1) * work

    def capped_least(self, start: int, stop: int, devices: int, microbatches: int,
                     in_flight: int, memory: float) -> tuple[float, float]:
        """Lower bounds on the F + B per micro-batch and on M (F + B) + AR of layers
        [start, stop) (a stage range: both ends positions) on `devices` devices in any
        configurations that fit in `memory` bytes per device holding `in_flight`
        micro-batches (inf if none does), before the range is solved under the cap.
        Each is a Lagrangian bound, max over λ >= 0 of (the sum over the range's
        segments of their least cost + λ memory) − λ cap, which holds because a stage's
        memory is the sum of its layers' and the edges between its segments cost no
        less than 0 (`_Hull`: each segment's least as a function of λ, exactly; the
        costs are `_segment_least`'s)."""
        return (self.capped_bound(start, stop, devices, microbatches, in_flight, memory, 0),
                self.capped_bound(start, stop, devices, microbatches, in_flight, memory, 1))

    def capped_bound(self, start: int, stop: int, devices: int, microbatches: int,
                     in_flight: int, memory: float, which: int) -> float:
        """`capped_least`'s bound on F + B (`which` 0) or on M (F + B) + AR (1) alone
        (each computed once)."""
        key = (start, stop, devices, microbatches, in_flight, memory, which)
        if key in self._capped:
            return self._capped[key]
        positions = [0, *self.cuts, len(self.layers)]
        a, b = positions.index(start), positions.index(stop)
        counts: dict[tuple, int] = {}  # structurally equal segments: one hull, counted
        for first, last in zip(positions[a:b], positions[a + 1:b + 1], strict=True):
            segment = (first, last, devices, microbatches)
            if segment not in self._signatures:
                self._segment_least(first, last, devices, microbatches)
            signature = self._signatures[segment]
            counts[signature] = counts.get(signature, 0) + 1
        self._capped[key] = _lagrangian_bound(
            [(self._segment_hull(signature, in_flight, which), count)
             for signature, count in counts.items()], memory)
        return self._capped[key]

    def _segment_hull(self, signature: tuple, in_flight: int, which: int) -> _Hull:
        """`_Hull` of the segments of `signature` (`_segment_least` solved them) for F + B
        (`which` 0) or M (F + B) + AR (1), holding `in_flight` micro-batches."""
        key = (signature, in_flight, which)
        if key not in self._hulls:
            work_graph, own_graph, problem, budget = self._work_graphs[signature]
            self._hulls[key] = _Hull.of(work_graph if which == 0 else own_graph,
                                        memory_vectors(problem, in_flight), budget)
        return self._hulls[key]

    def lower_bound(self, stages: int, microbatches: int) -> float:
        """A lower bound on the step of every plan with `stages` stages and M micro-batches
        (the graph's least compute per micro-batch, spread over the stages)."""
        least = self.least_compute(self.devices // stages, microbatches)
        return least[-1] * spread(microbatches, stages)

    def evaluate(self, bounds: Sequence[int], microbatches: int,
                 schedule: str) -> PipelinePlan:
        """The plan whose stages begin at `bounds` (0 first, the others among the
        cuts), simulated."""
        if not bounds or bounds[0] != 0 or not set(bounds[1:]) <= set(self.cuts):
            raise ValueError(f"stages must begin at 0 and at cuts, not at {list(bounds)}")
        plan = self._evaluate(bounds, microbatches, schedule, None)
        assert plan is not None
        return plan

    def _evaluate(self, bounds: Sequence[int], microbatches: int, schedule: str,
                  memory: float | None, beat: float = math.inf,
                  prefix: Sequence[SolvedStage] = ()) -> PipelinePlan | None:
        """`evaluate`, each stage fitting in `memory`; None if one cannot, or if the
        step is not less than `beat` (then the events are not recorded). `prefix` holds
        the first stages, solved already."""
        count = len(bounds)
        group = self.devices // count
        ends = [*bounds[1:], len(self.layers)]
        solved = list(prefix)
        for s, (start, stop) in enumerate(zip(bounds, ends, strict=True)):
            if s < len(prefix):
                continue
            stage = self.stage(start, stop, group, microbatches,
                               in_flight(schedule, count, microbatches, s), memory)
            if stage is None:
                return None
            solved.append(stage)
        send_f, send_b, once = self._transfers(bounds, solved, microbatches)
        forward = [p.cost.forward for p in solved]
        backward = [p.cost.backward for p in solved]
        allreduce = [p.cost.allreduce + extra for p, extra in zip(solved, once, strict=True)]
        if beat < math.inf:
            if _critical_path(forward, backward, microbatches, send_f, send_b,
                              allreduce) * (1 - SLACK) >= beat:
                return None
            if step_time(schedule, forward, backward, microbatches, send_f, send_b,
                         allreduce, beat) >= beat:
                return None
        sim = simulate(schedule, forward, backward, microbatches, send_f, send_b, allreduce)
        stages = tuple(StagePlan(start, stop, s * group, group, p.assignment, p.cost,
                                 p.parameter_bytes, p.activation_bytes,
                                 p.parameter_bytes + p.activation_bytes * sim.in_flight[s],
                                 p.gap)
                       for s, (start, stop, p) in enumerate(zip(bounds, ends, solved,
                                                                strict=True)))
        return PipelinePlan(stages, microbatches, schedule, sim.step, sim.bubble,
                            max(stage.memory for stage in stages), sim)

    def _spanning(self) -> list[tuple[int, int, int]]:
        """(index, producer, consumer) of the edges whose layers are in different
        segments: the only ones a stage boundary can cut."""
        if self._spans is None:
            positions = [0, *self.cuts]
            self._spans = [(i, e.producer, e.consumer) for i, e in enumerate(self.edges)
                           if bisect_right(positions, e.producer)
                           != bisect_right(positions, e.consumer)]
        return self._spans

    def _crossing(self, index: int, u: int, v: int, solved: Sequence[SolvedStage],
                  microbatches: int) -> tuple[float, float]:
        """`boundary_seconds` of edge `index` from stage u to stage v of `solved`."""
        group = self.devices // len(solved)
        per_node = self.machine.devices_per_node
        # The seconds depend on the two stages' configurations and whether their
        # groups are on other nodes: the same for many candidate plans.
        key = (index, id(solved[u]), id(solved[v]),
               u * group // per_node != v * group // per_node)
        if key not in self._crossings:
            micro = self.micro(microbatches)
            edge = micro.edges[index]
            self._crossings[key] = boundary_seconds(
                edge, solved[u].assignment[micro.layers[edge.producer].name],
                solved[v].assignment[micro.layers[edge.consumer].name], u * group,
                v * group, self.machine)
        return self._crossings[key]

    def _moves(self, bounds: Sequence[int], solved: Sequence[SolvedStage],
               microbatches: int) -> list[float]:
        """`_transfers`' moves of shared parameters once per step, per stage, alone."""
        once = [0.0] * len(bounds)
        if self._carried is None:
            self._carried = [span for span in self._spanning()
                             if carries_param(self.edges[span[0]])]
        for index, producer, consumer in self._carried:
            u = bisect_right(bounds, producer) - 1
            v = bisect_right(bounds, consumer) - 1
            if u != v:
                ahead, back = self._crossing(index, u, v, solved, microbatches)
                once[v] += ahead
                once[u] += back
        return once

    def _transfers(self, bounds: Sequence[int], solved: Sequence[SolvedStage],
                   microbatches: int) -> tuple[list[float], list[float], list[float]]:
        """Per boundary the forward and backward seconds per micro-batch of the tensors
        crossing it, and per stage the moves of shared parameters once per step."""
        count = len(bounds)
        send_f = [0.0] * (count - 1)
        send_b = [0.0] * (count - 1)
        once = [0.0] * count
        for index, producer, consumer in self._spanning():
            u = bisect_right(bounds, producer) - 1
            v = bisect_right(bounds, consumer) - 1
            if u == v:
                continue
            ahead, back = self._crossing(index, u, v, solved, microbatches)
            if carries_param(self.edges[index]):  # once per step: into the consumer, back
                once[v] += ahead
                once[u] += back
                continue
            # A tensor skipping stages arrives with the last boundary it crosses.
            send_f[v - 1] += ahead
            send_b[v - 1] += back
        return send_f, send_b, once

    def search(self, stage_counts: Sequence[int], micro_counts: Sequence[int],
               schedule: str, memory: float | None = None, method: str = "dp"
               ) -> tuple[PipelinePlan | None, float]:
        """The plan with the least step over every S in `stage_counts` and M in
        `micro_counts` that fits in `memory`, ties going to the first S, then the first
        M, in the order given (and within one (S, M) as `best` breaks them); with the
        least memory per device any plan needs when none fits (`least_memory`; inf if
        one does, or if there is no plan at all). Under `memory`, an (S, M) whose plans
        all need more is skipped, and the plans whose stages all fit with their
        unconstrained configurations are searched first: the best of them is a bound
        that prunes the others before their stages are solved under the cap.

        The (S, M) are searched in the order of their lower bounds (S = 1, M = 1 first:
        pase-search's strategy), so that a good plan is found early and prunes the
        others; each (S, M) keeps its plans whose step is at most the least found so far,
        so the result is the one the order given would find. A low bound can belong to a
        costly walk (many stages, many cuts), which a plan found elsewhere would prune:
        each (S, M) first gets `FIRST_EFFORT` steps of the walk (`best`'s `effort`), and
        those that use them up are searched again afterwards, in rounds of four times
        more (the stages solved meanwhile are kept), until every one has finished.
        """
        pairs = [(stages, micro) for stages in stage_counts for micro in micro_counts]
        if memory is not None and isinstance(self.solve_stage, StageSolver):
            fitting = [pair for pair in pairs if self.least_memory(*pair, schedule) <= memory]
            if not fitting:
                return None, min(self.least_memory(*pair, schedule) for pair in pairs)
            pairs = fitting

        def rank(pair: tuple[int, int]) -> tuple[int, float]:
            stages, micro = pair
            if (stages, micro) == (1, 1):
                return (0, 0.0)
            cheap = self.lower_bound(stages, micro)
            tight = self.segment_bounds(stages, micro) \
                if method == "dp" and stages > 1 else None
            return (1, max(cheap, tight.whole(stages)) if tight is not None else cheap)

        waiting = sorted(range(len(pairs)), key=lambda i: (*rank(pairs[i]), i))
        found: dict[int, PipelinePlan] = {}
        least = math.inf
        if memory is not None and isinstance(self.solve_stage, StageSolver) \
                and not self._free_only:
            # First the plans whose stages all fit unconstrained (no stage solved under
            # the cap, each of which takes many solves): the best of them prunes the rest.
            self._free_only = True
            try:
                free, _ = self.search(stage_counts, micro_counts, schedule, memory, method)
            finally:
                self._free_only = False
            if free is not None:
                least = free.step
        effort: int | None = FIRST_EFFORT
        rounds = 1
        while waiting:
            again = []
            for done, i in enumerate(waiting):
                stages, micro = pairs[i]
                if self.progress is not None:
                    best_yet = f", best step {least:.4g} s" if least < math.inf else ""
                    self._status = (f"S={stages} M={micro}, {done + 1} of {len(waiting)} "
                                    f"(S, M) in round {rounds}{best_yet}")
                    self.progress.message(self._status)
                try:
                    plan = self.best(stages, micro, schedule, memory, method,
                                     math.nextafter(least, math.inf), effort,
                                     ranges=effort != FIRST_EFFORT)
                except EffortSpent:
                    again.append(i)
                    continue
                if plan is not None:
                    found[i] = plan
                    least = min(least, plan.step)
            waiting = again
            rounds += 1
            effort = effort * 4 if effort is not None and len(again) > 1 else None
        if found:
            return min(found.items(), key=lambda item: (item[1].step, item[0]))[1], math.inf
        if memory is None or not isinstance(self.solve_stage, StageSolver):
            return None, math.inf
        return None, min(self.least_memory(stages, micro, schedule)
                         for stages, micro in pairs)

    def least_memory(self, stages: int, microbatches: int, schedule: str) -> float:
        """The least memory per device any plan with `stages` stages of `microbatches`
        needs (bytes): a device's memory is a sum of per-layer terms, each fixed by the
        layer's configuration and the micro-batches its stage holds (`in_flight`), so
        each layer's least is taken alone, and a DP over the cut positions finds the
        cuts with the least largest stage. Every cap at least this has a plan (the
        layers in those configurations); none below it does. Needs a `StageSolver`
        (inf if there is no such plan)."""
        if stages > len(self.cuts) + 1:
            return math.inf
        solver = self.solve_stage
        assert isinstance(solver, StageSolver)
        group = self.devices // stages
        micro = self.micro(microbatches)
        assert micro.kinds is not None
        lists = Problem.from_layers(micro.layers, micro.edges, group, self.machine,
                                    batch=self.batch, min_shard=solver.min_shard,
                                    tables=solver.tables, kinds=micro.kinds).config_lists
        holds = [in_flight(schedule, stages, microbatches, s) for s in range(stages)]
        sums = {held: [0.0] for held in set(holds)}
        for layer, kind, configs in zip(micro.layers, micro.kinds[0], lists, strict=True):
            key = (kind, group)
            if key not in self._layer_memory:  # (parameters, activations) per config
                self._layer_memory[key] = (
                    np.array([parameter_bytes([layer], {layer.name: c}) for c in configs]),
                    np.array([activation_bytes([layer], {layer.name: c}) for c in configs]))
            params, acts = self._layer_memory[key]
            for held, prefix in sums.items():
                prefix.append(prefix[-1] + float((params + held * acts).min()))
        positions = [0, *self.cuts, len(self.layers)]
        last = len(positions) - 1
        # rest[i]: the least largest stage of stages s.. covering [positions[i], end).
        prefix = sums[holds[-1]]
        rest = [prefix[-1] - prefix[positions[i]] for i in range(last)] + [math.inf]
        for s in reversed(range(stages - 1)):
            prefix = sums[holds[s]]
            rest = [min((max(prefix[positions[j]] - prefix[positions[i]], rest[j])
                         for j in range(i + 1, last)), default=math.inf)
                    for i in range(last)] + [math.inf]
        return rest[0]

    def best(self, stages: int, microbatches: int, schedule: str,
             memory: float | None = None, method: str = "dp",
             bound: float = math.inf, effort: int | None = None,
             ranges: bool = False) -> PipelinePlan | None:
        """The plan with the least step among those with `stages` contiguous stages
        that fit in `memory` bytes per device, or None if none fits.

        `method="exhaustive"` simulates every choice of stage beginnings among the cuts;
        `method="dp"` walks the same choices depth-first, stage by stage, and skips a
        prefix once a lower bound on the step of all its plans (module docstring: the
        stages so far, the next one alone, the rest spread) reaches the best step found,
        trying its least-compute bound before solving the next stage: the same optimum,
        with ties broken alike (the first in the order). A stage that cannot fit in
        `memory` with the micro-batches its position holds ends the prefix too. With
        `bound` (a step already reached elsewhere, for example with another S or M),
        only plans strictly faster than it are returned. With `effort`, raises
        `EffortSpent` once the walk has visited that many prefixes, a plan evaluated
        counting as `LEAF_EFFORT` and S M / 4 more (roughly its cost in time). With
        `ranges`, every stage range is solved first and prunes with `range_bounds`.
        """
        if stages > len(self.cuts) + 1:
            return None
        if method == "dp" and self.lower_bound(stages, microbatches) * (1 - SLACK) >= bound:
            return None
        # (One stage is solved at once: its bounds would cost more than they save.)
        # (One stage is solved at once: its bounds would cost more than they save, but
        # where it is solved under the cap, which takes many solves.)
        capped_alone = stages == 1 and memory is not None and not self._fits(
            0, len(self.layers), self.devices, microbatches,
            in_flight(schedule, 1, microbatches, 0), memory)
        tight = self.segment_bounds(stages, microbatches) \
            if method == "dp" and (stages > 1 or capped_alone) else None
        if tight is not None and tight.whole(stages) * (1 - SLACK) >= bound:
            return None
        if tight is not None and ranges:
            tight = self.range_bounds(stages, microbatches, schedule, memory)
            assert tight is not None
            if tight.whole(stages) * (1 - SLACK) >= bound:
                return None
        group = self.devices // stages
        least = self.least_compute(group, microbatches)
        last = len(self.layers)
        best: list[PipelinePlan | None] = [None]

        def reached() -> float:
            return best[0].step if best[0] is not None else bound

        def consider(bounds: list[int], prefix: Sequence[SolvedStage] = ()) -> None:
            plan = self._evaluate(bounds, microbatches, schedule, memory, reached(), prefix)
            if plan is None or (memory is not None and plan.memory > memory):
                return
            if plan.step < reached():
                best[0] = plan

        def pruned(done: float, first: float, work: float, rest: float, left: int) -> bool:
            """Whether every plan whose stages so far did `done` seconds of work per
            micro-batch (the first's all-reduce `first`), the next `work`, and whose
            remaining `left` stages share at least `rest`, reaches the best step."""
            step = done + first + max(microbatches * work,
                                      work + rest * spread(microbatches, left))
            return step * (1 - SLACK) >= reached()

        def beaten(step: float) -> bool:
            return step * (1 - SLACK) >= reached()

        capped_bounds = memory is not None and isinstance(self.solve_stage, StageSolver) \
            and not self._free_only

        def capped_check(stages_after: int, start: int, stop: int, done: float,
                         first: float, done_forward: float, index: int
                         ) -> tuple[bool, Callable[[float], bool] | None]:
            """For the plans whose next stage, `index`, is [start, stop) (`rest`'s
            arguments, `SegmentBounds.next_stage`): whether they all reach the best step
            if it is solved under the cap, and if not, when its solve may end (`stage`'s
            `enough`: on a bound on its F + B + AR). Never pruned where the stage fits
            unconstrained. First with `objective_own`, which costs nothing more, then
            with `capped_least`'s Lagrangian bounds."""
            assert memory is not None
            assert tight is not None
            holds = in_flight(schedule, stages, microbatches, index)
            if self._fits(start, stop, group, microbatches, holds, memory):
                return False, None

            def reaches(work: float, own: float) -> bool:
                return beaten(tight.next_stage(stages_after, start, stop, done, first,
                                               done_forward, work, own))

            least_work = tight.least_work(start, stop)
            if reaches(least_work, self.objective_own(start, stop, group, microbatches,
                                                      least_work)):
                return True, None
            # Each hull costs DP solves on every distinct segment: F + B's first.
            work = max(least_work,
                       self.capped_bound(start, stop, group, microbatches, holds, memory, 0))
            own = self.objective_own(start, stop, group, microbatches, work)
            if reaches(work, own):
                return True, None
            own = max(own, self.capped_bound(start, stop, group, microbatches, holds,
                                             memory, 1))
            if reaches(work, own):
                return True, None
            rest = (microbatches - 1) * work

            def enough(cost: float) -> bool:  # the solver's F + B + AR is at least cost
                return reaches(work, max(own, cost + rest))

            return False, enough

        visits = [0]

        def spend(steps: int = 1) -> None:
            visits[0] += steps
            if effort is not None and visits[0] > effort:
                raise EffortSpent
            if self.progress is not None and visits[0] & 1023 < steps:
                self.progress.message(f"{self._status}: {visits[0]:,} choices of cuts")

        def walk(bounds: list[int], after: int, done: float, first: float,
                 chained: float, done_forward: float, prefix: list[SolvedStage]) -> None:
            """Choose the stages after `bounds` (stage beginnings; the last begins at
            `after`): the stages so far did `done` seconds of F + B per micro-batch,
            `chained` with the least sends into them (`done_forward` their F and
            forward sends), the first all-reducing `first`."""
            spend()
            index = len(bounds) - 1  # the stage [after, cut) about to be chosen
            if len(bounds) == stages:
                if method == "dp" and pruned(done, first, least[last] - least[after],
                                             0.0, 0):
                    return
                if tight is not None:
                    if beaten(tight.next_stage(0, after, last, chained, first, done_forward)):
                        return
                    enough = None
                    if capped_bounds:
                        cut_off, enough = capped_check(0, after, last, chained, first,
                                                       done_forward, index)
                        if cut_off:
                            return
                    try:
                        stage = self.stage(after, last, group, microbatches,
                                           in_flight(schedule, stages, microbatches, index),
                                           memory, enough)
                    except BoundReached:
                        return
                    if stage is None or beaten(tight.solved_stage(
                            0, after, last, chained, first, done_forward, stage.work,
                            stage.cost.forward, stage.cost.allreduce)):
                        return
                    prefix = [*prefix, stage]
                    # The critical path with the least sends, before the sends themselves.
                    sends = [tight.into(start, stop, s)
                             for s, (start, stop) in enumerate(
                                 zip(bounds[1:], [*bounds[2:], last], strict=True), 1)]
                    moves = self._moves(bounds, prefix, microbatches)
                    if beaten(_critical_path(
                            [p.cost.forward for p in prefix],
                            [p.cost.backward for p in prefix], microbatches,
                            [ahead for ahead, _ in sends], [back for _, back in sends],
                            [p.cost.allreduce + moved
                             for p, moved in zip(prefix, moves, strict=True)])):
                        return
                spend(LEAF_EFFORT + stages * microbatches // 4)  # the simulation
                consider(bounds, prefix)
                return
            left = stages - len(bounds)
            if tight is not None and beaten(tight.rest(left + 1, after, chained, first,
                                                       done_forward)):
                return
            choices = [c for c in self.cuts if c > after]
            holds = in_flight(schedule, stages, microbatches, index)
            for k, cut in enumerate(choices):
                if len(choices) - k < left:
                    break
                work = done
                ar = first
                chain = chained
                forward = done_forward
                solved = prefix
                if method == "dp":
                    rest = least[last] - least[cut]
                    if pruned(done, first, least[cut] - least[after], rest, left):
                        continue
                    if tight is not None and beaten(tight.next_stage(
                            left, after, cut, chained, first, done_forward)):
                        continue
                    enough = None
                    if tight is not None and capped_bounds:
                        cut_off, enough = capped_check(left, after, cut, chained, first,
                                                       done_forward, index)
                        if cut_off:
                            continue
                    try:
                        stage = self.stage(after, cut, group, microbatches, holds, memory,
                                           enough)
                    except BoundReached:
                        continue
                    if stage is None:
                        continue
                    ar = stage.cost.allreduce if index == 0 else first
                    alone = microbatches * stage.work + stage.cost.allreduce
                    if alone >= reached() or pruned(done, ar, stage.work, rest, left):
                        continue
                    if tight is not None:
                        if beaten(tight.solved_stage(left, after, cut, chained, ar,
                                                     done_forward, stage.work,
                                                     stage.cost.forward,
                                                     stage.cost.allreduce)):
                            continue
                        if index == 0:  # its moves of shared parameters, once per step
                            ar += tight.moved(after, cut, 0)
                        ahead, back = tight.into(after, cut, index)
                        chain = chained + ahead + back + stage.work
                        forward = done_forward + ahead + stage.cost.forward
                    work = done + stage.work
                    solved = [*prefix, stage]
                walk([*bounds, cut], cut, work, ar, chain, forward, solved)

        if stages == 1:
            if method == "dp" and pruned(0.0, 0.0, least[last], 0.0, 0):
                return None
            if tight is not None and capped_bounds:
                cut_off, enough = capped_check(0, 0, last, 0.0, 0.0, 0.0, 0)
                if cut_off:
                    return None
                try:  # (solved here to end its capped search early; `consider` reuses it)
                    self.stage(0, last, group, microbatches,
                               in_flight(schedule, 1, microbatches, 0), memory, enough)
                except BoundReached:
                    return None
            consider([0])
        else:
            walk([0], 0, 0.0, 0.0, 0.0, 0.0, [])
        return best[0]


HULL_TOLERANCE = 1e-12
"""A strategy below the line through two points of a `_Hull` by no more than this
(relative) is taken as on it."""


@dataclass(frozen=True)
class _Hull:
    """The least F + B + λ memory of a segment as a function of λ >= 0: the lower-left
    convex hull of its strategies' (F + B, memory), by Eisner and Severance's method
    (solve at λ = 0 and with each layer at its least memory; then at the λ where two
    neighbouring points tie, until no strategy is below their line). Each point is a
    strategy's exact F + B and memory, and the function is the least over the points
    of work + λ memory, exact for every λ: between two neighbours the true function
    is concave and equal to the points' line at both ends' ties."""

    work: np.ndarray
    """Ascending."""
    memory: np.ndarray
    """Descending (strictly, but where work ties)."""

    @classmethod
    def of(cls, graph: CostGraph, weights: Sequence[np.ndarray],
           budget: MemoryBudget) -> _Hull:
        def point(rate: float, allowed: Sequence[np.ndarray] | None = None
                  ) -> tuple[float, float]:
            costs = priced(graph.vertex_costs, list(weights), rate,
                           None if allowed is None else list(allowed))
            used = budget.used
            try:
                choice = solve_graph(CostGraph(graph.names, costs, dict(graph.edge_costs)),
                                     budget=budget).choice
            finally:
                budget.release(budget.used - used)
            return (graph.total_cost(choice),
                    sum(float(weight[c]) for weight, c in zip(weights, choice, strict=True)))

        left = point(0.0)
        right = point(0.0, one_array_each([weight == weight.min() for weight in weights]))
        points = [left]
        if right[1] < left[1]:
            pending = [(left, right)]
            inner = []
            while pending:  # depth first, left to right: the points come in order
                a, b = pending.pop()
                rate = (b[0] - a[0]) / (a[1] - b[1])
                line = a[0] + rate * a[1]
                c = point(rate)
                if c[0] + rate * c[1] >= line - HULL_TOLERANCE * abs(line) or \
                        not b[1] < c[1] < a[1]:
                    inner.append(b)
                    continue
                pending.append((c, b))
                pending.append((a, c))
            points.extend(inner)
        return cls(np.array([p[0] for p in points]), np.array([p[1] for p in points]))

    def least(self, rate: float) -> float:
        """The least work + `rate` memory."""
        return float((self.work + rate * self.memory).min())


def _lagrangian_bound(hulls: Sequence[tuple[_Hull, int]], cap: float) -> float:
    """max over λ >= 0 of sum(count * hull.least(λ)) − λ cap for (hull, count) pairs, or
    inf if even their least memory exceeds `cap` (the sum is concave in λ: its maximum
    is at the first λ, among the hulls' ties, past which it no longer rises)."""
    if sum(count * float(hull.memory[-1]) for hull, count in hulls) > cap:
        return math.inf
    slope = sum(count * float(hull.memory[0]) for hull, count in hulls) - cap
    rate = 0.0
    if slope > 0:
        ties = []
        for hull, count in hulls:
            drops = hull.memory[:-1] - hull.memory[1:]
            ties.append(np.stack([(hull.work[1:] - hull.work[:-1]) / np.where(
                drops > 0, drops, 1.0), count * drops]))
        joined = np.concatenate(ties, axis=1)
        order = np.argsort(joined[0], kind="stable")
        falls = slope - np.cumsum(joined[1][order])
        at = int(np.argmax(falls <= 0))  # some tie brings it to <= 0: the least fits
        rate = float(joined[0][order][at])
    total = sum(count * hull.least(rate) for hull, count in hulls) - rate * cap
    return total * (1 - SLACK)


def _possible(a: int, b: int, size: int, stages: int) -> bool:
    """Whether [p_a, p_b) of `size` positions is a stage of some plan of `stages`
    stages: the first begins at p_0, the last ends at p_{size - 1}, and every stage
    holds at least one segment."""
    last = size - 1
    if stages == 1:
        return a == 0 and b == last
    if b == last:
        return a >= stages - 1
    if a == 0:
        return b <= last - (stages - 1)
    # As stage s, 1 <= s <= S - 2: s <= a, and S - 1 - s stages after b.
    return max(1, b - last + stages - 1) <= min(a, stages - 2)


def _critical_path(forward: Sequence[float], backward: Sequence[float], microbatches: int,
                   send_forward: Sequence[float], send_backward: Sequence[float],
                   allreduce: Sequence[float]) -> float:
    """A lower bound on the simulated step (module docstring) with the transfers: stage
    s starts when micro-batch 0 arrives, works M (F_s + B_s), and its last gradient goes
    back to stage 0 before that all-reduces; or stage s all-reduces itself."""
    bound = arrival = back = 0.0
    for s in range(len(forward)):
        end = arrival + microbatches * (forward[s] + backward[s])
        bound = max(bound, end + back + allreduce[0], end + allreduce[s])
        if s + 1 < len(forward):
            arrival += forward[s] + send_forward[s]
            back += backward[s] + send_backward[s]
    return bound
