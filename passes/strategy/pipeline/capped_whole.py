"""A lower bound on the step of every plan of one (S, M) that sees the memory cap.

Without a cap, `bounds.SegmentBounds.whole` bounds a whole (S, M) from the segments'
least costs. Under a cap those are the unconstrained optima, far below what a stage that
must fit costs: at P = 64 on v100-nvlink under 0.25 GiB the Transformer's S = 4, M = 8
is bounded by 0.0220 s though its best plan steps 0.0538 s, so its walk solves hundreds
of stages under the cap to learn that the best known plan (0.0346 s) beats it.

`CappedWhole` puts in place of each stage range's bound on M (F + B) + AR, as stage s
of the S (so holding `in_flight(s)` micro-batches), M times a Lagrangian lower bound on
the objective the stage solver minimises under the cap, F + B + AR / M
(`stages.StageProblem`): L(λ) = min over all configurations of (objective + λ memory)
− λ cap, at LARAC's best λ (`least.larac_bound`: pase's DP solves of the range's own
graph). It bounds every configuration of the range that fits (for every λ >= 0 and
such a configuration, objective >= objective + λ (memory − cap)), so the solver's
stage, the least objective that fits, too; and a range that fits in no configuration
gets inf. Each range is bounded once per (devices, M, in flight, cap) and structurally
equal ranges share it (the blocks of a transformer). Then `SegmentBounds.of_ranges`'s DP
over the cut positions gives the least over the cuts of the largest stage's bound: a
bound on the whole (S, M) before any stage is solved under the cap, with which
`search.Partitioner.best` skips the (S, M) and `walk.Walk` prunes its prefixes. Only the
ranges that matter are bounded: those of the cuts the DP's bound comes from (`cheapest`),
again while it is below the step to beat.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from pase.core.schedule import in_flight
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.memory import one_array_each
from pase.passes.strategy.pipeline.bounds import SLACK, RoundTrips, SegmentBounds
from pase.passes.strategy.pipeline.hull import larac_steps
from pase.passes.strategy.pipeline.least import LeastCosts, larac_bound, priced_least
from pase.passes.strategy.pipeline.transfers import carries_param

if TYPE_CHECKING:
    from pase.passes.strategy.layer_costs import LayerCosts
    from pase.passes.strategy.pipeline.stages import StageProblem, Subgraph

WHOLE_SOLVES = 12
"""LARAC's DP solves at most per range in `CappedWhole.objective` (it usually ends
sooner, at the best λ)."""


class CappedWhole:
    """Cap-aware `SegmentBounds` per (S, M, schedule, cap) of one graph (`least`)."""

    def __init__(self, least: LeastCosts):
        self.least = least
        self._objectives: dict[tuple, tuple[float, bool]] = {}
        """Per range signature, devices, M, in flight and cap: the bound, and whether
        LARAC ended without reaching the `reach` it was given."""
        self._works: dict[tuple, tuple[float, bool]] = {}
        """`work`'s, as `_objectives`."""
        self._trips: dict[tuple, tuple[float, bool]] = {}
        """`trip`'s (over M - f + 1), as `_objectives`, f before the in-flight count."""
        self._rates: dict[tuple, float] = {}
        """The last range's best λ per (which bound, devices, M, in flight, cap)."""
        self._own: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray,
                                     list[set[tuple[int, int, int]]]]] = {}
        """Per (S, M, schedule, cap): the ranges' bounds on M (F + B) + AR, on F + B and
        on the round trip's (M - f_s + 1) F + M B + AR (0 where not made) as stage s,
        [s][a][b], and the (s, a, b) bounded under the cap so far for each."""

    def objective(self, start: int, stop: int, devices: int, microbatches: int,
                  held: int, memory: float, reach: float = math.inf) -> float:
        """A lower bound on F + B + AR / M of layers [start, stop) on `devices` devices
        in any configurations that fit in `memory` bytes per device holding `held`
        micro-batches (inf if none does; module docstring). LARAC stops once the bound
        reaches `reach` (then it may be less than LARAC's best)."""
        table = self.least.table
        part = table.cut(start, stop, microbatches)
        key = (*part.signature, devices, microbatches, held, memory)
        found = self._found(self._objectives, key, reach)
        if found is not None:
            return found
        solver = table.solver
        problem = solver.problem(part, devices, microbatches)
        budget = solver.budget()
        graph = problem.cost_graph(budget)
        weights = self.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
        return self._kept(self._objectives, key, graph, weights, memory, budget, reach,
                          ("objective", devices, microbatches, held, memory))

    def work(self, start: int, stop: int, devices: int, microbatches: int, held: int,
             memory: float, reach: float = math.inf) -> float:
        """A lower bound on the F + B per micro-batch of layers [start, stop) on
        `devices` devices in any configurations that fit in `memory` bytes per device
        holding `held` micro-batches (inf if none does), so on the stage the solver
        gives them (it fits): LARAC's best Lagrangian bound on the range's own F + B
        graph (every layer's F + B, every edge but those that move a parameter, which
        run once per step, in AR), stopping once it reaches `reach`."""
        table = self.least.table
        part = table.cut(start, stop, microbatches)
        key = (*part.signature, devices, microbatches, held, memory)
        found = self._found(self._works, key, reach)
        if found is not None:
            return found
        problem, budget, layer_costs = self._costs(part, devices, microbatches)
        vertices = [costs.forward + costs.backward for costs in layer_costs]
        graph = CostGraph([layer.name for layer in part.layers], vertices)
        for index, edge in enumerate(part.edges):
            if not carries_param(edge):
                graph.add_edge(edge.producer, edge.consumer, problem.edge_table(index))
        weights = self.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
        return self._kept(self._works, key, graph, weights, memory, budget, reach,
                          ("work", devices, microbatches, held, memory))

    def trip(self, start: int, stop: int, devices: int, microbatches: int, forwards: int,
             held: int, memory: float, reach: float = math.inf) -> float:
        """A lower bound on (M - f + 1) F + M B + AR, with f = `forwards` (a stage's
        forwards before its first backward, `bounds.RoundTrips.first`), of layers
        [start, stop) on `devices` devices in any configurations that fit in `memory`
        bytes per device holding `held` micro-batches (inf if none does): what the
        stage runs from micro-batch 0's arrival but for its wait on the round trip
        (`bounds.RoundTrips`). LARAC's best Lagrangian bound on a graph of that
        objective over (M - f + 1): each layer's F + M / (M - f + 1) B +
        AR / (M - f + 1), each edge's seconds as they are (an edge's forward and
        backward seconds, each at least 0, count M - f + 1 and M times: at least
        M - f + 1 times their sum), those that move a parameter (once per step, in
        AR) over M - f + 1. Stops once the bound reaches `reach`."""
        runs = microbatches - forwards + 1
        table = self.least.table
        part = table.cut(start, stop, microbatches)
        key = (*part.signature, devices, microbatches, forwards, held, memory)
        found = self._found(self._trips, key, reach / runs)
        if found is not None:
            return runs * found
        problem, budget, layer_costs = self._costs(part, devices, microbatches)
        vertices = [costs.forward + (microbatches / runs) * costs.backward
                    + costs.param_communication / runs for costs in layer_costs]
        graph = CostGraph([layer.name for layer in part.layers], vertices)
        for index, edge in enumerate(part.edges):
            edge_table = problem.edge_table(index)
            graph.add_edge(edge.producer, edge.consumer,
                           edge_table / runs if carries_param(edge) else edge_table)
        weights = self.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
        return runs * self._kept(self._trips, key, graph, weights, memory, budget,
                                 reach / runs, ("trip", devices, microbatches, forwards,
                                                held, memory))

    def _costs(self, part: Subgraph, devices: int, microbatches: int
               ) -> tuple[StageProblem, MemoryBudget, list[LayerCosts]]:
        """The stage problem of `part` (its edge tables made, shared), its budget and
        its layers' cost vectors (from the solver's cache where it has one): what `work`
        and `trip` build their graphs from."""
        table = self.least.table
        solver = table.solver
        problem = solver.problem(part, devices, microbatches)
        budget = solver.budget()
        problem.cost_graph(budget)  # (the edge tables, shared)
        costs = [problem.model.layer_costs(layer, configs, table.machine)
                 if solver.cache is None
                 else solver.cache.costs(layer, kind, devices, configs, table.machine)
                 for layer, kind, configs in zip(part.layers, part.kinds[0],
                                                 problem.config_lists, strict=True)]
        return problem, budget, costs

    def _found(self, kept: dict[tuple, tuple[float, bool]], key: tuple, reach: float
               ) -> float | None:
        """The bound kept under `key` (signature, devices, M, held, cap) if it is complete
        or reaches `reach`; else one kept for the same range holding fewer micro-batches
        that reaches `reach` (a configuration that fits holding `held` fits holding fewer:
        each layer's memory is its parameters plus held times its activations, so the
        bound there is one here too), kept under `key` as not complete; else None."""
        found = kept.get(key)
        if found is not None and (found[1] or found[0] >= reach):
            return found[0]
        *signature, held, memory = key
        for fewer in range(held - 1, 0, -1):
            below = kept.get((*signature, fewer, memory))
            if below is not None and below[0] >= reach:
                kept[key] = (below[0], False)
                return below[0]
        return None

    def _kept(self, kept: dict[tuple, tuple[float, bool]], key: tuple, graph: CostGraph,
              weights: list[np.ndarray], memory: float, budget: MemoryBudget,
              reach: float, rate_key: tuple) -> float:
        """`graph`'s Lagrangian bound within `memory` (inf where even the least memory
        of every layer is over it), lowered by `SLACK` and kept in `kept` under `key`
        with whether it is complete (LARAC did not stop at `reach`: a later, lower
        `reach` takes it)."""
        if sum(float(weight.min()) for weight in weights) > memory * (1 + 1e-9):
            bound = math.inf
        else:
            bound = self._lagrangian(graph, weights, memory, budget, reach, rate_key)
        kept[key] = (bound - SLACK * abs(bound) if math.isfinite(bound) else bound,
                     bound < reach)
        return kept[key][0]

    def _lagrangian(self, graph: CostGraph, weights: list[np.ndarray], memory: float,
                    budget: MemoryBudget, reach: float, rate_key: tuple) -> float:
        """A Lagrangian lower bound on the least cost of `graph`'s strategies within
        `memory`: LARAC's best (`larac_bound`), stopping once it reaches `reach`,
        started at the best λ of the last range bounded alike (`rate_key`: neighbouring
        ranges' are close; `warm_larac`), whose own best λ is kept for the next."""
        rate = self._rates.get(rate_key)
        if rate is None:
            bound, best = larac_bound(graph, weights, memory, budget, WHOLE_SOLVES, reach)
        else:
            bound, best = warm_larac(graph, weights, memory, budget, rate, WHOLE_SOLVES,
                                     reach)
        if best is not None and best > 0:
            self._rates[rate_key] = best
        return bound

    def bounds(self, stages: int, microbatches: int, schedule: str, memory: float,
               beat: float = math.inf, chain: bool = False,
               trips: RoundTrips | None = None) -> SegmentBounds:
        """`least.segment_bounds(stages, microbatches)` with stage ranges' bounds on
        M (F + B) + AR as stage s raised to M `objective`, and on F + B to `work`, at
        stage s's in-flight count (the sends and the forward bounds unchanged), lazily:
        while the whole bound is below `beat` (a step to beat), a range of the cuts
        that give the own side (`cheapest`) not bounded yet is, the one whose bound is
        largest, and the cuts are chosen again, until it reaches `beat` or every range
        of those cuts is (each range once per S, M and cap; a later call goes on); with
        `chain`, then likewise along the chain side's (`cheapest_chain`, `work`). Which
        ranges are bounded changes only how tight the bounds are: each is a lower bound.
        (The chain side is not the search's: on the Transformer at P = 64 under 0.25
        GiB its LARACs took half of the bounds' DP solves, and no (S, M) it was made
        for was pruned by it or walked faster; docs/cost-model.md, `capped12`.) With
        `trips`, the own bounds see the round trips (`bounds.RoundTrips`), and once the
        own side's cuts are all bounded, their stages that run warm-up forwards before
        their first backward get the round trip's own objective bounded too (`trip`, in
        `RoundTrips.least`), the path's largest own bound first."""
        key = (stages, microbatches, schedule, memory)
        tight = self.least.segment_bounds(stages, microbatches)
        positions = tight.positions
        size = len(positions)
        if key not in self._own:
            self._own[key] = (np.array(np.broadcast_to(tight.own_least,
                                                       (stages, size, size))),
                              np.array(np.broadcast_to(tight.work, (stages, size, size))),
                              np.zeros((stages, size, size)), [set(), set(), set()])
        own, work, trip_at, (done, worked, tripped) = self._own[key]
        group = self.least.table.devices // stages
        while True:
            seen = None if trips is None else replace(trips, least=trip_at)
            capped = SegmentBounds.of_ranges(positions, tight.forward, tight.work, own,
                                             microbatches, stages, tight.into_forward,
                                             tight.into_backward, tight.shared,
                                             tight.opening, work, seen)
            if capped.whole(stages) * (1 - SLACK) >= beat:
                return capped
            below = float(capped.own[stages, 0]) * (1 - SLACK) < beat
            todo = [stage for stage in cheapest(capped, stages) if stage not in done] \
                if below else []
            # (Then the round trips of those cuts' stages, where a stage runs warm-up
            # forwards before its first backward: the objective's bound counts them.)
            trip_todo = [stage for stage in cheapest(capped, stages)
                         if stage not in tripped and seen is not None
                         and seen.first[stage[0]] > 1] if below and not todo else []
            # (The chain side once the own side's cuts are all bounded: either side
            # reaching `beat` is enough, and the own side alone often does.)
            chained = [stage for stage in cheapest_chain(capped, stages)
                       if stage not in worked] if chain and not todo and not trip_todo \
                and float(capped.chain[stages, 0]) * (1 - SLACK) < beat else []
            if not todo and not trip_todo and not chained:
                return capped
            # One range at a time, the path's largest bound first (its bottleneck), the
            # cuts chosen again after each: a path whose bottleneck rises past another
            # path's bound is left, its other ranges not bounded for it.
            for s, a, b in largest(todo, own):
                done.add((s, a, b))
                held = in_flight(schedule, stages, microbatches, s)
                own[s][a][b] = max(own[s][a][b], microbatches * self.objective(
                    positions[a], positions[b], group, microbatches, held, memory,
                    beat / microbatches))
            for s, a, b in largest(trip_todo, capped.own_term):
                assert seen is not None
                tripped.add((s, a, b))
                held = in_flight(schedule, stages, microbatches, s)
                rest = float(seen.after(capped.work_at)[s][b])
                if math.isfinite(rest):
                    trip_at[s][a][b] = max(trip_at[s][a][b], self.trip(
                        positions[a], positions[b], group, microbatches, seen.first[s],
                        held, memory, beat - rest))
            for s, a, b in largest(chained, work):
                worked.add((s, a, b))
                held = in_flight(schedule, stages, microbatches, s)
                least = self.work(positions[a], positions[b], group, microbatches, held,
                                  memory, beat / microbatches)
                work[s][a][b] = max(work[s][a][b], least)
                # (M (F + B) + AR is at least M (F + B): AR >= 0.)
                own[s][a][b] = max(own[s][a][b], microbatches * least)


def largest(ranges: list[tuple[int, int, int]], bounds: np.ndarray
            ) -> list[tuple[int, int, int]]:
    """The range (s, a, b) of `ranges` whose entry of `bounds` [s][a][b] is largest
    (the first such), alone: `CappedWhole.bounds` bounds it next.

        >>> bounds = np.zeros((2, 3, 3))
        >>> bounds[0, 0, 1], bounds[1, 1, 2] = 1.0, 3.0
        >>> largest([(0, 0, 1), (1, 1, 2)], bounds)
        [(1, 1, 2)]
        >>> largest([], np.zeros((1, 2, 2)))
        []
    """
    if not ranges:
        return []
    return [max(ranges, key=lambda stage: float(bounds[stage]))]


def warm_larac(graph: CostGraph, weights: list[np.ndarray], cap: float,
               budget: MemoryBudget, rate: float, solves: int, stop_at: float = math.inf
               ) -> tuple[float, float | None]:
    """`larac_bound` started at λ = `rate` > 0 (a neighbouring range's best): L(rate)
    first, kept if it reaches `stop_at`; else its strategy stands in LARAC's first pair
    on its side of the cap, for the unconstrained optimum where it is over the cap (that
    one is over too: the least memory at a λ only falls as λ grows) or for the
    least-memory strategy where it fits (then the unconstrained optimum is solved, and
    is the answer, exactly, where it fits too). One DP solve fewer than `larac_bound`,
    from a pair nearer the best λ; any pair is a valid start (`hull.larac_steps`), and
    every value is L at some λ >= 0, a lower bound. Below, `larac_bound`'s example
    started at λ = 1 ends at its best, λ = 0.5:

        >>> graph = CostGraph(["a", "b"], [np.array([1.0, 3.0]), np.array([1.0, 2.0])])
        >>> graph.add_edge(0, 1, np.array([[0.0, 5.0], [5.0, 0.0]]))
        >>> memory = [np.array([4.0, 1.0]), np.array([4.0, 1.0])]
        >>> warm_larac(graph, memory, 5.0, MemoryBudget(1 << 30), 1.0, 12)
        (3.5, 0.5)
        >>> warm_larac(graph, memory, 8.0, MemoryBudget(1 << 30), 1.0, 12)
        (2.0, None)
    """
    def solve(at: float, allowed: list[np.ndarray] | None = None
              ) -> tuple[float, float, float]:
        return priced_least(graph, weights, at, budget, allowed)

    value, cost, weight = solve(rate)
    bound, best = value - rate * cap, rate
    if bound >= stop_at:
        return bound, best
    if weight <= cap:
        fits = (cost, weight)
        _, cost, weight = solve(0.0)
        if weight <= cap:
            return cost, None
        over = (cost, weight)
        if cost > bound:
            bound, best = cost, 0.0  # L(0)
            if bound >= stop_at:
                return bound, best
    else:
        over = (cost, weight)
        least = [w.min() for w in weights]
        _, cost, weight = solve(0.0, one_array_each(
            [w == value for w, value in zip(weights, least, strict=True)]))
        fits = (cost, weight)
    return larac_steps(solve, cap, fits, over, bound, best, solves - 2, stop_at)


def cheapest(bounds: SegmentBounds, stages: int) -> list[tuple[int, int, int]]:
    """The stages (s, a, b) of the cuts whose largest own bound (`SegmentBounds.own`'s
    DP) is least: the cuts `whole` bounds by it. Below, two stages over three segments:
    the first ends at position 1 or 2, and ending at 2 leaves the last stage less.

        >>> bounds = SegmentBounds.of([0, 1, 2, 3], forward=[0.0, 1.0, 2.0, 3.0],
        ...                           work=[0.0, 1.0, 2.0, 6.0],
        ...                           own=[0.0, 2.0, 4.0, 12.0], microbatches=2, stages=2)
        >>> cheapest(bounds, 2), float(bounds.own[2][0])
        ([(0, 0, 2), (1, 2, 3)], 10.0)
    """
    positions = len(bounds.positions)
    last = positions - 1
    path: list[tuple[int, int, int]] = []
    a = 0
    for k in range(stages, 1, -1):
        s = stages - k
        b = np.arange(positions)
        inner = (b > a) & (b < last)
        terms = bounds.into_forward[s][a] + np.maximum(
            bounds.own_term[s][a], bounds.forward[a] + bounds.own[k - 1])
        terms = np.where(inner, terms, np.inf)
        stop = int(np.argmin(terms))
        if not math.isfinite(float(terms[stop])):
            return path
        path.append((s, a, stop))
        a = stop
    path.append((stages - 1, a, last))
    return path


def cheapest_chain(bounds: SegmentBounds, stages: int) -> list[tuple[int, int, int]]:
    """As `cheapest`, for the chain DP (`SegmentBounds.chain`): the stages (s, a, b)
    of the cuts whose largest chain bound is least. Below, the first of two stages
    ends at position 1 (then w_0 + M w_1 is 1 + 2 * 5 = 11) or 2 (3 + 2 * 3 = 9).

        >>> bounds = SegmentBounds.of([0, 1, 2, 3], forward=[0.0, 1.0, 2.0, 3.0],
        ...                           work=[0.0, 1.0, 3.0, 6.0],
        ...                           own=[0.0, 2.0, 6.0, 12.0], microbatches=2, stages=2)
        >>> cheapest_chain(bounds, 2), float(bounds.chain[2][0])
        ([(0, 0, 2), (1, 2, 3)], 9.0)
    """
    positions = len(bounds.positions)
    last = positions - 1
    path: list[tuple[int, int, int]] = []
    a = 0
    for k in range(stages, 1, -1):
        s = stages - k
        b = np.arange(positions)
        inner = (b > a) & (b < last)
        work = bounds.work_at[s][a]
        terms = bounds.into_forward[s][a] + bounds.into_backward[s][a] + np.maximum(
            bounds.chain_term[s][a], work + bounds.chain[k - 1])
        if s == 0:  # (the first stage's all-reduce and moves, as the DP adds them)
            terms = terms + bounds.opening + bounds.shared[0][0]
        terms = np.where(inner, terms, np.inf)
        stop = int(np.argmin(terms))
        if not math.isfinite(float(terms[stop])):
            return path
        path.append((s, a, stop))
        a = stop
    path.append((stages - 1, a, last))
    return path


def at_least(ranged: SegmentBounds, capped: SegmentBounds) -> SegmentBounds:
    """`ranged` (`least.LeastCosts.range_bounds`: some ranges solved exactly) with each
    range's bound on M (F + B) + AR as stage s at least `capped`'s (`CappedWhole.bounds`
    of the same S and M): both are lower bounds, so their larger is one."""
    stages = ranged.stages
    size = len(ranged.positions)
    own = np.maximum(np.broadcast_to(ranged.own_least, (stages, size, size)),
                     capped.own_least)
    work = np.maximum(np.broadcast_to(ranged.work_at, (stages, size, size)),
                      capped.work_at)
    return SegmentBounds.of_ranges(ranged.positions, ranged.forward, ranged.work, own,
                                   ranged.microbatches, stages, ranged.into_forward,
                                   ranged.into_backward, ranged.shared, ranged.opening,
                                   work, ranged.trips or capped.trips)
