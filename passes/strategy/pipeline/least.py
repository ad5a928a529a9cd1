"""Lower bounds on stages before they are solved: what the walk prunes with.

`LeastCosts` holds, for one graph on P devices (a `StageTable`), the least compute of
the layers (`least_compute`), each segment's least costs by pase's DP and the least bytes
of the transfers into a stage (`segment_bounds`), every stage range solved exactly
(`range_bounds`), and under a cap the Lagrangian bounds of a range (`capped_least`, over
`hull.Hull`s of its segments). `bounds.SegmentBounds` turns them into the walk's bounds
(module docstring there and in `search`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pase.core.schedule import in_flight
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.cost import local_elements
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.layer_bytes import least_seconds, roofline_bandwidth
from pase.passes.strategy.memory import memory_vectors, one_array_each, priced
from pase.passes.strategy.pipeline.bounds import (
    SLACK,
    SegmentBounds,
    most_devices,
    possible,
    spread,
)
from pase.passes.strategy.pipeline.hull import Hull, lagrangian_bound, larac_steps
from pase.passes.strategy.pipeline.table import StageTable
from pase.passes.strategy.pipeline.transfers import carries_param
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.training_cost import at_precision


@dataclass
class Bytes:
    """At least the bytes of one edge between segments each stage [p_a, p_b) receives
    (`LeastCosts.least_bytes`): `ahead` per micro-batch, or once per step if
    `carried`; `back` its gradient."""

    producer: int
    consumer: int
    carried: bool
    ahead: np.ndarray
    back: np.ndarray

class LeastCosts:
    """Lower bounds on the stages of one graph's plans (`table`), whose stages begin
    at 0 and among `cuts`; each computed once."""

    def __init__(self, table: StageTable, cuts: Sequence[int],
                 spans: Sequence[tuple[int, int, int]]):
        self.table = table
        self.cuts = list(cuts)
        self.spans = list(spans)
        """`transfers.spanning`: the edges between segments."""
        self._least: dict[tuple[int, int], list[float]] = {}
        self._bounds: dict[tuple[int, int], SegmentBounds] = {}
        self._ranges: dict[tuple, SegmentBounds] = {}
        self._segments: dict[tuple, tuple[float, float, float]] = {}
        self._work_graphs: dict[tuple, tuple[CostGraph, CostGraph, Problem,
                                              MemoryBudget]] = {}
        self._hulls: dict[tuple, Hull] = {}
        self._capped: dict[tuple, float] = {}
        self._signatures: dict[tuple[int, int, int, int], tuple] = {}
        self._stage_bounds: dict[tuple, float] = {}
        self._layer_memory: dict[tuple[int, int, int], np.ndarray] = {}
        self._rates: dict[tuple, float] = {}
        """`stage_bound`'s last multiplier per (devices, M, cap), for the next range's
        bound."""

    def least_compute(self, devices: int, microbatches: int) -> list[float]:
        """Prefix sums of the layers' least compute seconds per micro-batch on `devices`
        devices (FLOPs over the most devices any configuration uses, at the training
        precision's peak, and the roofline's bytes where it is charged:
        `layer_bytes.least_seconds`): entry i bounds from below the F + B of layers
        [0, i) in any configurations."""
        key = (devices, microbatches)
        if key not in self._least:
            min_shard = self.table.solver.min_shard
            # The peak the layers compute at (bf16/fp16 under those precisions).
            training = self.table.solver.options.training
            peak = self.table.machine.peak(training.precision)
            hbm = roofline_bandwidth(self.table.machine, training)
            sums = [0.0]
            for layer in self.table.micro(microbatches).layers:
                most = most_devices(layer, devices, min_shard, self.table.batch)
                forward, backward = least_seconds(
                    at_precision(layer, training.element_bytes), most, peak, hbm)
                sums.append(sums[-1] + forward + backward)
            self._least[key] = sums
        return self._least[key]

    def segment_bounds(self, stages: int, microbatches: int) -> SegmentBounds:
        """The segments' least costs for `stages` stages of `microbatches`
        (`bounds.SegmentBounds`)."""
        key = (stages, microbatches)
        if key not in self._bounds:
            group = self.table.devices // stages
            positions = [0, *self.cuts, len(self.table.layers)]
            forward, work, own = [0.0], [0.0], [0.0]
            for start, stop in zip(positions, positions[1:], strict=False):
                least = self._segment_least(start, stop, group, microbatches)
                forward.append(forward[-1] + least[0])
                work.append(work[-1] + least[1])
                own.append(own[-1] + least[2])
            ahead, back, shared = self.sends(positions, stages,
                                             self.least_bytes(positions, group,
                                                              microbatches))
            self._bounds[key] = SegmentBounds.of(positions, forward, work, own,
                                                 microbatches, stages, ahead, back, shared)
        return self._bounds[key]

    def range_bounds(self, stages: int, microbatches: int, schedule: str,
                     memory: float | None = None, beat: float = math.inf
                     ) -> SegmentBounds:
        """`segment_bounds` with every stage range a plan of `stages` stages can have
        solved first: its F, F + B and M (F + B) + AR exactly, the tensors it receives
        forward and the parameters it shares with other stages moved under its own
        configurations, and as the first stage its all-reduce. Solving them costs what
        a long walk costs, so `search` builds these only for the (S, M) whose walk with
        segment bounds ran out of effort. Under `memory`, a range whose configurations
        would not fit holding the most micro-batches a stage holds keeps its segments'
        bounds (it may be solved under the cap instead). So does a range whose segments'
        bounds already show that every plan holding it steps at least `beat` (the walk's
        bound: the step of a plan found): its M (F + B) + AR, or the least F + B of the
        layers before it plus M times its own (`next_stage` is at least both), reaches
        it, so the walk prunes it at those bounds as at its exact ones. Every entry is
        a lower bound either way: the walk, which prunes only with them, finds the same
        plan; `beat` only spares the solves (and the bounds made are kept for the next
        call, whose `beat`, a step found since, is no larger)."""
        tight = self.segment_bounds(stages, microbatches)
        key = (stages, microbatches, schedule, memory)
        if key in self._ranges:
            return self._ranges[key]
        positions = tight.positions
        size = len(positions)
        group = self.table.devices // stages
        holds = in_flight(schedule, stages, microbatches, 0)
        forward = tight.forward.copy()
        work = tight.work.copy()
        own = tight.own_least[0].copy()  # (the segments' sums: the same at every s)
        # Per stage index, where the range as that stage is known exactly (under a cap).
        own_at = np.array(np.broadcast_to(own, (stages, size, size)))
        work_at = np.array(np.broadcast_to(work, (stages, size, size)))
        opening = np.zeros(size)
        micro = self.table.micro(microbatches)
        parts = self.least_bytes(positions, group, microbatches)
        for a in range(size - 1):
            for b in range(a + 1, size):
                if not possible(a, b, size, stages) or \
                        max(tight.own_least[0][a][b],
                            tight.work[0][a] + microbatches * tight.work[a][b]) \
                        * (1 - SLACK) >= beat:
                    continue
                start, stop = positions[a], positions[b]
                stage = self.table.free(start, stop, group, microbatches)
                if memory is not None and \
                        stage.parameter_bytes + holds * stage.activation_bytes > memory:
                    self._known_stages(a, b, positions, stages, microbatches, schedule,
                                       memory, own_at, work_at, opening)
                    continue
                forward[a][b] = stage.cost.forward
                work[a][b] = work_at[:, a, b] = stage.work
                own[a][b] = own_at[:, a, b] = microbatches * stage.work \
                    + stage.cost.allreduce
                if a == 0:
                    opening[b] = stage.cost.allreduce
                for (index, producer, consumer), part in zip(self.spans, parts,
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
        ahead, back, shared = self.sends(positions, stages, parts)
        bounds = SegmentBounds.of_ranges(positions, forward, work, own_at, microbatches,
                                         stages, ahead, back, shared, opening, work_at)
        self._ranges[key] = bounds
        return bounds

    def _known_stages(self, a: int, b: int, positions: Sequence[int], stages: int,
                      microbatches: int, schedule: str, memory: float, own: np.ndarray,
                      work: np.ndarray, opening: np.ndarray) -> None:
        """`range_bounds`' entries [s][a][b] of `own` (M (F + B) + AR) and `work`
        (F + B) for the range [p_a, p_b) whose unconstrained configurations do not fit
        holding the most micro-batches a stage holds: as each stage s at which it has
        been solved already (`StageTable.solved`: it fits unconstrained holding
        in_flight(s), or its solve under the cap is kept), the stage the walk gets
        there, exactly (inf where it cannot fit); and as the first stage, its
        all-reduce (`opening`). The others keep their bounds."""
        group = self.table.devices // stages
        for s in range(stages):
            known, stage = self.table.solved(positions[a], positions[b], group,
                                             microbatches,
                                             in_flight(schedule, stages, microbatches, s),
                                             memory)
            if not known:
                continue
            if stage is None:
                own[s, a, b] = work[s, a, b] = math.inf
                continue
            work[s, a, b] = stage.work
            own[s, a, b] = microbatches * stage.work + stage.cost.allreduce
            if s == 0 and a == 0:
                opening[b] = stage.cost.allreduce

    def least_bytes(self, positions: Sequence[int], devices: int, microbatches: int
                    ) -> list[Bytes]:
        """For each edge between segments (`_spanning`), at least the bytes each stage
        [p_a, p_b) between two positions receives of it: its block forward where the
        stage holds the consumer and not the producer (a tensor skipping stages comes
        with the last boundary it crosses) and the gradient it sends back for it; for
        an edge that carries a parameter (`carries_param`: once per step) the gradient
        where the stage holds the producer and not the consumer. Each block is the
        least under its consumer's (for a gradient, its producer's) most split
        configuration on `devices` devices; the lists come from `_segment_least`'s
        problems."""
        solver = self.table.solver
        micro = self.table.micro(microbatches)
        assert micro.kinds is not None
        places = np.asarray(positions)
        parts = []
        for index, producer, consumer in self.spans:
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
            parts.append(Bytes(producer, consumer, carried, ahead * receives, back))
        return parts

    def sends(self, positions: Sequence[int], stages: int, parts: Sequence[Bytes]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The seconds of `parts`' bytes (`least_bytes`) per stage index s and range
        [a][b]: forward and backward per micro-batch (a tensor into stage s and its
        gradient), and once per step (a shared parameter into stage s, or its gradient
        to the producer's stage s). A link is the inter-node one where the other stage
        is on another node whatever the cuts (the stage holding the other end of the
        edge is at most, or at least, the one its segment's position allows), else the
        fastest two groups of P/S devices can have."""
        group = self.table.devices // stages
        per_node = self.table.machine.devices_per_node
        fastest = self._fastest(group)
        inter = self.table.machine.inter_node_bandwidth
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
        if devices >= self.table.machine.devices_per_node:
            return self.table.machine.inter_node_bandwidth
        return max(self.table.machine.intra_node_bandwidth, self.table.machine.inter_node_bandwidth)

    def _segment_least(self, start: int, stop: int, devices: int, microbatches: int
                       ) -> tuple[float, float, float]:
        """Layers [start, stop) on `devices` devices at micro-batch shapes: the sum of
        their least forward seconds, the least F + B of the whole (pase's DP; edges that
        move a shared parameter left out) and the least M (F + B) + AR (every edge once).
        Structurally equal ranges are solved once."""
        solver = self.table.solver
        part = self.table.cut(start, stop, microbatches)
        layers, edges = part.layers, part.edges
        signature = (*part.signature, devices, microbatches)
        self._signatures[(start, stop, devices, microbatches)] = signature
        if signature in self._segments:
            return self._segments[signature]
        problem = solver.problem(part, devices)
        budget = solver.budget()
        problem.cost_graph(budget)  # the tables, shared with the stages solved later
        forward_least = 0.0
        work_vectors, own_vectors = [], []
        for layer, kind, configs in zip(layers, part.kinds[0], problem.config_lists,
                                        strict=True):
            # The stage problems' costs (the training step's: its precision's peak,
            # recomputation, optimizer), so that these bound the stages solved from below.
            costs = problem.model.layer_costs(layer, configs, self.table.machine) \
                if solver.cache is None \
                else solver.cache.costs(layer, kind, devices, configs, self.table.machine)
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
        a lower bound on their F + B: the solver minimises M (F + B) + AR
        (`StageProblem`), so under a cap it is at least the unconstrained stage's, and
        at least M `work`. Costs the unconstrained solve, which deciding whether the
        stage fits makes anyway. (`capped_least` bounds M (F + B) + AR over every
        configuration that fits, by Lagrangian relaxation.)"""
        free = self.table.free(start, stop, devices, microbatches)
        return max(microbatches * free.work + free.cost.allreduce, microbatches * work)

    def capped_least(self, start: int, stop: int, devices: int, microbatches: int,
                     in_flight: int, memory: float) -> tuple[float, float]:
        """Lower bounds on the F + B per micro-batch and on M (F + B) + AR of layers
        [start, stop) (a stage range: both ends positions) on `devices` devices in any
        configurations that fit in `memory` bytes per device holding `in_flight`
        micro-batches (inf if none does), before the range is solved under the cap.
        Each is a Lagrangian bound, max over λ >= 0 of (the sum over the range's
        segments of their least cost + λ memory) − λ cap, which holds because a stage's
        memory is the sum of its layers' and the edges between its segments cost no
        less than 0 (`Hull`: each segment's least as a function of λ, exactly; the
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
        positions = [0, *self.cuts, len(self.table.layers)]
        a, b = positions.index(start), positions.index(stop)
        counts: dict[tuple, int] = {}  # structurally equal segments: one hull, counted
        for first, last in zip(positions[a:b], positions[a + 1:b + 1], strict=True):
            segment = (first, last, devices, microbatches)
            if segment not in self._signatures:
                self._segment_least(first, last, devices, microbatches)
            signature = self._signatures[segment]
            counts[signature] = counts.get(signature, 0) + 1
        self._capped[key] = lagrangian_bound(
            [(self._segment_hull(signature, in_flight, which), count)
             for signature, count in counts.items()], memory)
        return self._capped[key]

    def stage_bound(self, start: int, stop: int, devices: int, microbatches: int,
                    in_flight: int, memory: float) -> float:
        """A lower bound on the objective F + B + AR / M (`stages.StageProblem`'s, what
        the stage solver minimises) of layers [start, stop) on `devices` devices in any
        configurations that fit in `memory` bytes per device holding `in_flight`
        micro-batches (inf if none does), before the range is solved under the cap: the
        Lagrangian L(λ) = min over all configurations of (objective + λ memory) − λ cap,
        which bounds every configuration that fits for any λ >= 0, at one DP solve. λ is
        the last one found for a range of the same devices, M and cap (neighbouring
        ranges share their best λ closely); the first range's comes from
        LARAC's first steps (`STAGE_BOUND_SOLVES` DP solves at most). Structurally
        equal ranges share their bound."""
        at = (start, stop, devices, microbatches, in_flight, memory)
        found = self._stage_bounds.get(at)
        if found is not None:
            return found
        key = (*self.table.shape(start, stop, microbatches)[0], devices, microbatches,
               in_flight, memory)
        found = self._stage_bounds.get(key)
        if found is not None:
            self._stage_bounds[at] = found
            return found
        part = self.table.cut(start, stop, microbatches)
        solver = self.table.solver
        problem = solver.problem(part, devices, microbatches)
        budget = solver.budget()
        graph = problem.cost_graph(budget)
        weights = self.layer_memory_vectors(problem, part.kinds[0], devices, in_flight)
        rate_key = (devices, microbatches, memory)
        rate = self._rates.get(rate_key)
        if sum(float(weight.min()) for weight in weights) > memory * (1 + 1e-9):
            bound = math.inf
        elif rate is None:
            bound, rate = larac_bound(graph, weights, memory, budget)
        else:
            bound = priced_least(graph, weights, rate, budget)[0] - rate * memory
        if rate is not None:
            self._rates[rate_key] = rate
        bound -= SLACK * abs(bound) if math.isfinite(bound) else 0.0
        self._stage_bounds[key] = self._stage_bounds[at] = bound
        return bound

    def layer_memory_vectors(self, problem: Problem, kinds: Sequence[int], devices: int,
                        in_flight: int) -> list[np.ndarray]:
        """`memory.memory_vectors(problem, in_flight)`, each layer's vector computed once
        per kind (`kinds`, the shared tables' numbers of `problem`'s layers, which fix
        their shapes and configurations on `devices` devices) and in-flight count."""
        vectors = []
        for layer, kind, configs in zip(problem.layer_data, kinds, problem.config_lists,
                                        strict=True):
            key = (kind, devices, in_flight)
            vector = self._layer_memory.get(key)
            if vector is None:
                vector = problem.model.memory(layer, configs, in_flight)
                self._layer_memory[key] = vector
            vectors.append(vector)
        return one_array_each(vectors)

    def segment_signature(self, start: int, stop: int, devices: int, microbatches: int
                          ) -> tuple:
        """The signature the segment [start, stop) is solved under (`_segment_least`,
        which solves it if it is new): equal for structurally equal segments."""
        segment = (start, stop, devices, microbatches)
        if segment not in self._signatures:
            self._segment_least(start, stop, devices, microbatches)
        return self._signatures[segment]

    def segment_hull(self, signature: tuple, in_flight: int) -> Hull:
        """`_segment_hull` of the segments' F + B (`capped_work.capped_works`)."""
        return self._segment_hull(signature, in_flight, 0)

    def _segment_hull(self, signature: tuple, in_flight: int, which: int) -> Hull:
        """`Hull` of the segments of `signature` (`_segment_least` solved them) for F + B
        (`which` 0) or M (F + B) + AR (1), holding `in_flight` micro-batches."""
        key = (signature, in_flight, which)
        if key not in self._hulls:
            work_graph, own_graph, problem, budget = self._work_graphs[signature]
            self._hulls[key] = Hull.of(work_graph if which == 0 else own_graph,
                                        memory_vectors(problem, in_flight), budget)
        return self._hulls[key]

    def lower_bound(self, stages: int, microbatches: int) -> float:
        """A lower bound on the step of every plan with `stages` stages and M micro-batches
        (the graph's least compute per micro-batch, spread over the stages)."""
        least = self.least_compute(self.table.devices // stages, microbatches)
        return least[-1] * spread(microbatches, stages)


STAGE_BOUND_SOLVES = 6
"""`LeastCosts.stage_bound`'s first range runs LARAC for at most this many DP solves."""


def priced_least(graph: CostGraph, weights: list[np.ndarray], rate: float,
                  budget: MemoryBudget, allowed: list[np.ndarray] | None = None
                  ) -> tuple[float, float, float]:
    """The least cost + `rate` memory of `graph` (its configurations `allowed`, default
    all) by pase's DP, and that strategy's cost and memory."""
    used = budget.used
    try:
        choice = solve_graph(CostGraph(graph.names, priced(graph.vertex_costs, weights, rate,
                                                           allowed),
                                       dict(graph.edge_costs)), budget=budget).choice
    finally:
        budget.release(budget.used - used)
    cost = graph.total_cost(choice)
    weight = math.fsum(float(w[c]) for w, c in zip(weights, choice, strict=True))
    return cost + rate * weight, cost, weight


def larac_bound(graph: CostGraph, weights: list[np.ndarray], cap: float,
                budget: MemoryBudget, solves: int = STAGE_BOUND_SOLVES,
                stop_at: float = math.inf) -> tuple[float, float | None]:
    """LARAC's best Lagrangian bound on the least cost of `graph`'s strategies within
    `cap` (some fits) in at most `solves` DP solves, or sooner once it reaches
    `stop_at`, and its λ (None where
    the unconstrained optimum fits: then the bound is its cost, exactly). Below, the
    least cost within 5 bytes is 5 (both layers at their second configuration):

        >>> graph = CostGraph(["a", "b"], [np.array([1.0, 3.0]), np.array([1.0, 2.0])])
        >>> graph.add_edge(0, 1, np.array([[0.0, 5.0], [5.0, 0.0]]))
        >>> memory = [np.array([4.0, 1.0]), np.array([4.0, 1.0])]
        >>> larac_bound(graph, memory, 5.0, MemoryBudget(1 << 30))
        (3.5, 0.5)
        >>> larac_bound(graph, memory, 8.0, MemoryBudget(1 << 30))
        (2.0, None)
    """
    _, cost, weight = priced_least(graph, weights, 0.0, budget)
    if weight <= cap:
        return cost, None
    over = (cost, weight)
    if cost >= stop_at:
        return cost, 0.0  # L(0)
    least = [w.min() for w in weights]
    lean = one_array_each([w == value for w, value in zip(weights, least, strict=True)])
    _, cost, weight = priced_least(graph, weights, 0.0, budget, lean)
    fits = (cost, weight)
    return larac_steps(lambda rate: priced_least(graph, weights, rate, budget), cap, fits,
                       over, over[0], 0.0, solves - 2, stop_at)  # (from L(0))
