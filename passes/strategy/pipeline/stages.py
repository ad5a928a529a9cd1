"""A pipeline stage: a layer range cut out of the graph, its times, and its solving.

`cut` is the one way a range [start, stop) of a (micro-batch) graph is cut out, with
the one structural `Subgraph.signature` (layers equal but for their names, the same
edges between them: the blocks of a transformer share it). `stage_cost` gives a stage's
seconds under given configurations. `StageSolver` is pase's search on a stage's
sub-problem, each distinct signature solved once (`table.StageTable` keeps, for one graph
on P devices, every stage range solved for the search, `search.Partitioner`).

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> solver = StageSolver(preset("v100-nvlink"), mlp.batch)
    >>> part = cut(mlp.layers, mlp.edges, solver.kinds(mlp.layers, mlp.edges), 1, 3)
    >>> [layer.name for layer in part.layers], len(part.edges)
    (['a', 'z'], 1)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pase.passes.strategy.budget import MemoryBudget, as_budget
from pase.passes.strategy.cost import Config, edge_costs
from pase.passes.strategy.cost_models import CostModel
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.layer_costs import LayerCosts, layer_cost
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.memory import DEFAULT_EFFORT, BoundReached, MemoryCapError, layers_memory
from pase.passes.strategy.options import DEFAULT_OPTIONS, SearchOptions
from pase.passes.strategy.pipeline.microbatch import (
    stage_bytes,
)
from pase.passes.strategy.pipeline.plan import SolvedStage, StageCost
from pase.passes.strategy.pipeline.transfers import carries_param
from pase.passes.strategy.pipeline.warm import WarmStarts
from pase.passes.strategy.problem import Problem, SharedTables
from pase.passes.strategy.training_cost import choices_key, combine, copy_config, unheld
from pase.passes.strategy.vertices import Edge, Layer, edges_among

Kinds = tuple[list[int], list[int]]
"""`SharedTables.layer_kind` of each layer and `edge_kind` of each edge."""


@dataclass(frozen=True)
class Subgraph:
    """Layers [start, stop) of a graph and the edges between them (numbered from 0),
    with their kinds; `inside` are those edges' indices in the whole graph."""

    layers: list[Layer]
    edges: list[Edge]
    kinds: Kinds
    inside: list[int]

    @property
    def signature(self) -> tuple:
        """Equal for structurally equal ranges (names aside)."""
        return (tuple(self.kinds[0]),
                tuple((kind, edge.producer, edge.consumer)
                      for kind, edge in zip(self.kinds[1], self.edges, strict=True)))


def cut(layers: Sequence[Layer], edges: Sequence[Edge], kinds: Kinds, start: int,
        stop: int) -> Subgraph:
    """Layers [start, stop) of the graph (`kinds` its layers' and edges' kinds)."""
    inside = edges_among(edges, range(start, stop))
    return Subgraph(list(layers[start:stop]), [edge for _, edge in inside],
                    (kinds[0][start:stop], [kinds[1][i] for i, _ in inside]),
                    [i for i, _ in inside])


def stage_cost(layers: Sequence[Layer], edges: Sequence[Edge],
               assignment: Mapping[str, Config], devices: int,
               machine: Machine, memo: dict | None = None,
               kinds: Kinds | None = None, model: CostModel | None = None) -> StageCost:
    """The times of a stage whose `layers` (micro-batch shapes) run under `assignment`
    on `devices` devices; `edges` are those between two of its layers, numbered
    within `layers`. `memo` keeps each layer's and edge's seconds under its
    configurations for the next call (the same layers recur in many stage ranges);
    with `kinds` (a number per layer and per edge, equal where only names differ, as
    `SharedTables` gives them) repeated blocks share those entries too."""
    memo = {} if memo is None else memo
    forward = backward = allreduce = 0.0
    configs = [copy_config(assignment[layer.name]) for layer in layers]
    frozen = [_frozen(config) for config in configs]
    for index, (layer, config) in enumerate(zip(layers, configs, strict=True)):
        key: tuple = ((kinds[0][index],) if kinds is not None else (layer.name, layer.space)
                      ) + (frozen[index],)
        if key not in memo:
            cost = (layer_cost(layer, config, machine) if model is None
                    else model.layer_costs(layer, [config], machine)[0])
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
                                      configs[edge.consumer], devices, machine, model)
        ahead, back = memo[key]
        if carries_param(edge):
            allreduce += ahead + back
            continue
        forward += ahead
        backward += back
    return StageCost(forward, backward, allreduce)


def _frozen(config: Config) -> tuple[object, ...]:
    return tuple(sorted(config.items())) + choices_key(config)


def _edge_seconds(edge: Edge, producer: Layer, producer_config: Config, consumer: Layer,
                  consumer_config: Config, devices: int, machine: Machine,
                  model: CostModel | None = None) -> tuple[float, float]:
    """(forward, backward) redistribution seconds of an edge inside a stage."""
    costs = edge_costs if model is None else model.edge_costs
    both = float(costs(edge, producer, [producer_config], consumer, [consumer_config],
                       devices, machine)[0, 0])
    if not edge.backward:
        return both, 0.0
    ahead = float(costs(replace(edge, backward=False), producer, [producer_config],
                        consumer, [consumer_config], devices, machine)[0, 0])
    return ahead, both - ahead


@dataclass
class StageProblem(Problem):
    """A stage's sub-problem, whose DP minimises what the pipelined step charges the
    stage: each micro-batch's F + B M times and its all-reduce AR once, that is
    M (F + B) + AR, here divided by M (the same argmin, and the shared edge tables
    kept as they are): the cost graph's vertices are F + B + AR / M of each layer and
    its edges' seconds, those that carry a parameter (`carries_param`: they run once
    per step, in AR) divided by M (docs/cost-model.md, "The stage's objective"). With
    M = 1 it is `Problem`'s graph, F + B + AR, unchanged.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> from pase.passes.strategy.machines import preset
        >>> mlp = read_graph(parse_file("models/mlp.dnn"))
        >>> problem = StageProblem.from_layers(mlp.layers, mlp.edges, 4, preset("v100-nvlink"),
        ...                                    batch=mlp.batch)
        >>> problem.microbatches = 4
        >>> plain = Problem.from_layers(mlp.layers, mlp.edges, 4, preset("v100-nvlink"),
        ...                             batch=mlp.batch).cost_graph()
        >>> bool((problem.cost_graph().vertex_costs[1] <= plain.vertex_costs[1]).all())
        True
    """

    microbatches: int = 1
    cache: StageCache | None = field(default=None, repr=False)
    """Vectors shared with the other stage problems of one search (`StageCache`)."""
    _objective: CostGraph | None = field(default=None, repr=False)

    def cost_graph(self, memory_budget: int | MemoryBudget | None = None) -> CostGraph:
        graph = super().cost_graph(memory_budget)
        if self.microbatches == 1:
            return graph
        if self._objective is None:
            vertices = [self._objective_vertex(i, total)
                        for i, total in enumerate(graph.vertex_costs)]
            objective = CostGraph(self.layers, vertices)
            tables = self._edge_tables  # as `Problem.cost_graph` gave them to its graph
            for edge, table in zip(self.edges, tables, strict=True):
                objective.add_edge(edge.producer, edge.consumer,
                                   table / self.microbatches if carries_param(edge) else table)
            if memory_budget is not None:
                as_budget(memory_budget).count(
                    sum(vertex.nbytes for vertex in vertices)
                    + sum(table.nbytes for edge, table in zip(self.edges, tables, strict=True)
                          if carries_param(edge)))
            self._objective = objective
        return self._objective

    def layer_memory(self, index: int, in_flight: int) -> np.ndarray:
        """Layer `index`'s bytes per device under each of its configurations holding
        `in_flight` micro-batches (`memory.memory_vectors`), from `cache` where a
        problem computed them already (by kind, devices and `in_flight`)."""
        layer, configs = self.layer_data[index], self.config_lists[index]
        if self.cache is None or self._kind_numbers is None:
            return self.model.memory(layer, configs, in_flight)
        key = (self._kind_numbers[0][index], self.devices, in_flight)
        vector = self.cache.memory.get(key)
        if vector is None:
            vector = self.cache.memory[key] = self.model.memory(layer, configs, in_flight)
        return vector

    def _objective_vertex(self, index: int, total: np.ndarray) -> np.ndarray:
        """Layer `index`'s F + B + AR / M: its vertex vector `total` (F + B + AR) less
        (1 - 1/M) AR; from `cache` where a problem built it already."""
        shrink = 1.0 - 1.0 / self.microbatches
        if self.cache is None or self._kind_numbers is None:
            layer = self.layer_data[index]
            once = self.model.layer_costs(layer, self.config_lists[index],
                                          self.machine).param_communication
            return total - shrink * once if once.any() else total
        kind = self._kind_numbers[0][index]
        key = (kind, self.devices, self.microbatches)
        vertex = self.cache.objective.get(key)
        if vertex is None:
            once = self.cache.costs(self.layer_data[index], kind, self.devices,
                                    self.config_lists[index],
                                    self.machine).param_communication
            vertex = total - shrink * once if once.any() else total
            self.cache.objective[key] = vertex
        return vertex


@dataclass
class StageCache:
    """What the stage problems of one search share besides `SharedTables`: each layer
    kind's cost vectors on a device count (`costs`: they depend on the layer's shapes at
    the micro-batch size, which its kind fixes, and on the devices, not on the stage it
    is in) and its objective vertex F + B + AR / M (`objective`, by kind, devices and
    M), so that a stage problem forms its objective (`StageProblem`) and `LeastCosts`
    its segments' F, F + B and M (F + B) + AR without pricing the layer again. `model`
    is the search's cost model. The values are those computed without it, bit for bit.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> from pase.passes.strategy.cost_models import PASE_COST
        >>> from pase.passes.strategy.machines import preset
        >>> mlp = read_graph(parse_file("models/mlp.dnn"))
        >>> cache, layer, machine = StageCache(PASE_COST), mlp.layers[1], preset("v100-nvlink")
        >>> configs = PASE_COST.configs(layer, 4, 4, mlp.batch)
        >>> cache.costs(layer, 0, 4, configs, machine) is cache.costs(layer, 0, 4, configs,
        ...                                                           machine)
        True
    """

    model: CostModel
    objective: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)
    memory: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)
    """Each layer kind's bytes per configuration by devices and micro-batches held
    (`StageProblem.layer_memory`)."""
    _costs: dict[tuple[int, int], LayerCosts] = field(default_factory=dict)

    def costs(self, layer: Layer, kind: int, devices: int, configs: Sequence[Config],
              machine: Machine) -> LayerCosts:
        """`model.layer_costs(layer, configs, machine)`, computed once per `kind` (the
        shared tables' number of `layer`, whose configurations on `devices` devices are
        `configs`) and `devices`."""
        key = (kind, devices)
        found = self._costs.get(key)
        if found is None:
            found = self.model.layer_costs(layer, configs, machine)
            self._costs[key] = found
        return found


def solved_stage(layers: Sequence[Layer], edges: Sequence[Edge],
                 assignment: dict[str, Config], devices: int, machine: Machine,
                 memo: dict, kinds: Kinds | None = None, gap: float = 0.0,
                 model: CostModel | None = None) -> SolvedStage:
    """A stage in `assignment`'s configurations: its times and bytes (`stage_cost`),
    charged by `model` (default: today's step, `PaseCost`'s formulas); with `kinds`,
    `model`'s bytes of each layer kept in `memo` too (`stage_bytes`' sums)."""
    cost = stage_cost(layers, edges, assignment, devices, machine, memo, kinds, model)
    breakdown = getattr(model, "memory_breakdown", None)
    if kinds is None or breakdown is None:
        return SolvedStage(assignment, cost, *stage_bytes(layers, assignment, model), gap)
    parts = []
    for layer, kind, own in zip(layers, kinds[0], unheld(layers), strict=True):
        config = assignment[layer.name]
        key = ("bytes", kind, _frozen(config), own)
        if key not in memo:
            memo[key] = breakdown(layer, config, own)
        parts.append(memo[key])
    whole = combine(parts, [layer.checkpoint for layer in layers])  # (as `stage_bytes`)
    return SolvedStage(assignment, cost, whole["total"] - whole["activations"],
                       whole["activations"], gap)


@dataclass(frozen=True)
class StageSolution:
    """A stage's configurations and, solved under a cap, how far above the least cost
    under it they may be (`CappedSolution.gap`: 0 when proven optimal)."""

    assignment: dict[str, Config]
    gap: float = 0.0


class StageSolver:
    """Pase's search on a stage's sub-problem, each structurally distinct sub-problem
    solved once, with cost tables and configuration lists shared between sub-problems
    (`SharedTables`, a quarter of `memory_budget`; each solve gets the rest).

    `solve` takes a `Subgraph` (its kinds from `kinds`) and, with `memory`, solves under
    that cap with `in_flight` micro-batches' activations held, each such solve's exact
    search bounded by `effort` (`solve_capped`'s: thousands of frontier points; None for
    no bound).
    """

    def __init__(self, machine: Machine, batch: str | None,
                 options: SearchOptions = DEFAULT_OPTIONS,
                 effort: int | None = DEFAULT_EFFORT, share: bool = True):
        self.machine = machine
        self.effort = effort
        self.batch = batch
        self.options = options
        self.min_shard = options.min_shard
        self.memory_budget = options.memory_budget
        self.model: CostModel | None = (None if options.training.is_default
                                        else options.model)
        """The training step's model (None: today's step, `stage_cost`'s own)."""
        self.tables = SharedTables(machine, batch, options.min_shard, options.model,
                                   limit=options.memory_budget // 4)
        self.cache: StageCache | None = StageCache(options.model) if share else None
        """The layers' cost vectors shared by the stage problems (None with `share`
        false: each problem prices its layers itself; the same results)."""
        self._solved: dict[tuple, tuple[tuple[Config, ...], float] | None] = {}
        self._floors: dict[tuple, float] = {}
        """A proven lower bound on the cost of a capped sub-problem whose search an
        `enough` ended (`solve`)."""
        self.solves = 0
        """How many sub-problems were solved (the others came from the cache)."""
        self._bounds: dict[tuple, float] = {}
        """The proven lower bound of each capped sub-problem solved."""
        self._held: dict[tuple, set[int]] = {}
        """The micro-batches held of the capped sub-problems tried, by `_flightless`."""
        self.warm = WarmStarts()
        """Each capped solve starts at LARAC's λ of the last on its devices, cap and M."""
        self.unproven = 0
        """The capped sub-problems whose search `effort` stopped before its proof: their
        strategies are the best found (`StageSolution.gap`), and a plan made of others
        is not proven the least either (`search.Partitioner.search`)."""

    def kinds(self, layers: Sequence[Layer], edges: Sequence[Edge]) -> Kinds:
        """`SharedTables.layer_kind` of each layer and `edge_kind` of each edge (edges
        index `layers`)."""
        layer_kinds = [self.tables.layer_kind(layer) for layer in layers]
        return layer_kinds, [self.tables.edge_kind(edge, layer_kinds[edge.producer],
                                                   layer_kinds[edge.consumer])
                             for edge in edges]

    def problem(self, part: Subgraph, devices: int, microbatches: int = 1) -> StageProblem:
        """The sub-problem of `part` on `devices` devices, on the shared tables, its
        objective that of a stage of a step of `microbatches` (`StageProblem`)."""
        problem = StageProblem.from_layers(part.layers, part.edges, devices, self.machine,
                                           batch=self.batch, min_shard=self.min_shard,
                                           tables=self.tables, kinds=part.kinds,
                                           model=self.options.model)
        assert isinstance(problem, StageProblem)  # (`from_layers` builds its `cls`)
        problem.microbatches = microbatches
        problem.cache = self.cache
        return problem

    def budget(self) -> MemoryBudget:
        """A fresh budget for one solve, the shared tables counted (held throughout)."""
        budget = MemoryBudget(self.memory_budget)
        budget.count(self.tables.nbytes)
        return budget

    def solve(self, part: Subgraph, devices: int, memory: float | None = None,
              in_flight: int = 1, enough: Callable[[float], bool] | None = None,
              microbatches: int = 1) -> StageSolution | None:
        """The stage's configurations (under `memory` bytes per device with `in_flight`
        micro-batches held, if given), or None if none fits under it: those of least
        M (F + B) + AR for a step of M = `microbatches` (`StageProblem`). Under
        `memory`, `enough` may end the search (`solve_capped`'s, on the stage's
        F + B + AR / M): then `BoundReached` is raised, and the bound is kept for the
        next call, which solves again only if its `enough` does not accept that bound."""
        signature = (*part.signature, devices, memory,
                     in_flight if memory is not None else 0, microbatches)
        if signature not in self._solved and memory is not None:
            self._from_fewer(part, signature, in_flight)
        if signature not in self._solved:
            floor = self._floor(signature, in_flight)
            if enough is not None and floor is not None and enough(floor):
                raise BoundReached(floor)
            try:
                self._solved[signature] = self._solve(part, devices, memory, in_flight,
                                                      enough, microbatches)
            except BoundReached as reached:
                self._floors[signature] = reached.bound if floor is None else \
                    max(reached.bound, floor)
                raise
            finally:
                if memory is not None:
                    self._held.setdefault(_flightless(signature), set()).add(in_flight)
        solved = self._solved[signature]
        if solved is None:
            return None
        configs, gap = solved
        return StageSolution({layer.name: copy_config(config)
                              for layer, config in zip(part.layers, configs, strict=True)},
                             gap)

    def _from_fewer(self, part: Subgraph, signature: tuple, in_flight: int) -> None:
        """Solve the capped sub-problem `signature` (`part` holding `in_flight`
        micro-batches) from one solved holding fewer, where one answers it exactly.
        Holding more only adds activations, so a strategy that fits holding `in_flight`
        fits holding fewer, and a lower bound holding fewer holds here too: where none
        fits holding fewer, none fits here; where the optimum proven holding fewer fits
        here, it is the optimum here (the least of a subset it is in)."""
        memory = signature[-3]
        for fewer in sorted(self._held.get(_flightless(signature), ()), reverse=True):
            if fewer >= in_flight:
                continue
            if _with_flight(signature, fewer) not in self._solved:
                continue  # (an `enough` ended its search: only its bound is known)
            other = self._solved[_with_flight(signature, fewer)]
            if other is None:
                self._solved[signature] = None
                return
            configs, gap = other
            if gap == 0.0 and layers_memory(self.options.model, part.layers, configs,
                                            in_flight) <= memory:
                self._solved[signature] = other
                self._bounds[signature] = self._bounds[_with_flight(signature, fewer)]
                return

    def _floor(self, signature: tuple, in_flight: int) -> float | None:
        """The greatest lower bound known on the capped sub-problem `signature`: an
        `enough` ended its search there, or its or a fewer-held one's was proven."""
        known = [bound for key in (signature, *(
                     _with_flight(signature, fewer)
                     for fewer in self._held.get(_flightless(signature), ())
                     if fewer < in_flight))
                 for bound in (self._floors.get(key), self._bounds.get(key))
                 if bound is not None]
        return max(known, default=None)

    def _solve(self, part: Subgraph, devices: int, memory: float | None, in_flight: int,
               enough: Callable[[float], bool] | None = None, microbatches: int = 1
               ) -> tuple[tuple[Config, ...], float] | None:
        self.solves += 1
        problem = self.problem(part, devices, microbatches)
        budget = self.budget()
        free = (*part.signature, devices, microbatches)
        if memory is None:
            assignment = self.warm.unconstrained(problem, self.options, free,
                                                 memory_budget=budget).assignment
            return tuple(assignment[layer.name] for layer in part.layers), 0.0
        try:
            capped = self.warm.solve(problem, memory, (devices, memory, microbatches), free,
                                     method=self.options.method, order=self.options.order,
                                     memory_budget=budget,
                                     in_flight=in_flight, enough=enough, effort=self.effort)
        except MemoryCapError:
            return None
        signature = (*part.signature, devices, memory, in_flight, microbatches)
        self._bounds[signature] = capped.lower_bound
        self.unproven += not capped.proven
        return (tuple(capped.assignment[layer.name] for layer in part.layers),
                0.0 if capped.proven else capped.gap)


def _flightless(signature: tuple) -> tuple:  # (`StageSolver.solve`'s, but the held)
    return (*signature[:-2], signature[-1])


def _with_flight(signature: tuple, in_flight: int) -> tuple:
    return (*signature[:-2], in_flight, signature[-1])


def stage_solver(machine: Machine, batch: str | None, min_shard: int = 4,
                 method: str = "dp", memory_budget: int = 4 << 30) -> StageSolver:
    """`StageSolver(machine, batch, SearchOptions(...))` with these options, the others
    their defaults (what the tests and benchmarks vary)."""
    return StageSolver(machine, batch, SearchOptions(method=method, min_shard=min_shard,
                                                     memory_budget=memory_budget))
