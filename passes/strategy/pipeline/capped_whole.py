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
bound on the whole (S, M) before any stage is solved under the cap, which `search`
orders and prunes the (S, M) with and `walk.Walk` prunes its prefixes with.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import preset, read_graph, stage_solver, Partitioner
    >>> from pase.passes.strategy.memory import GIB
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> machine = preset("v100-nvlink")
    >>> plans = Partitioner(mlp.layers, mlp.edges, mlp.batch, 8, machine, [1, 2, 3],
    ...                     stage_solver(machine, mlp.batch))
    >>> free = plans.segment_bounds(2, 4).whole(2)
    >>> capped = plans.capped_whole(2, 4, "1f1b", 0.01 * GIB).whole(2)
    >>> capped >= free
    True
"""

from __future__ import annotations

import math

import numpy as np

from pase.core.schedule import in_flight
from pase.passes.strategy.pipeline.bounds import SLACK, SegmentBounds, possible
from pase.passes.strategy.pipeline.least import LeastCosts, larac_bound

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
        self._bounds: dict[tuple, tuple[float, SegmentBounds]] = {}
        """Per (S, M, schedule, cap): the `beat` it was made for, and the bounds."""

    def objective(self, start: int, stop: int, devices: int, microbatches: int,
                  held: int, memory: float, reach: float = math.inf) -> float:
        """A lower bound on F + B + AR / M of layers [start, stop) on `devices` devices
        in any configurations that fit in `memory` bytes per device holding `held`
        micro-batches (inf if none does; module docstring). LARAC stops once the bound
        reaches `reach` (then it may be less than LARAC's best)."""
        table = self.least.table
        part = table.cut(start, stop, microbatches)
        key = (*part.signature, devices, microbatches, held, memory)
        found = self._objectives.get(key)
        if found is not None and (found[1] or found[0] >= reach):
            return found[0]
        solver = table.solver
        problem = solver.problem(part, devices, microbatches)
        budget = solver.budget()
        graph = problem.cost_graph(budget)
        weights = self.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
        if sum(float(weight.min()) for weight in weights) > memory * (1 + 1e-9):
            bound = math.inf
        else:
            bound = larac_bound(graph, weights, memory, budget, WHOLE_SOLVES, reach)[0]
        # (Complete where LARAC did not stop at `reach`: a later, lower one takes it.)
        self._objectives[key] = (bound - SLACK * abs(bound) if math.isfinite(bound)
                                 else bound, bound < reach)
        return self._objectives[key][0]

    def bounds(self, stages: int, microbatches: int, schedule: str, memory: float,
               beat: float = math.inf) -> SegmentBounds:
        """`least.segment_bounds(stages, microbatches)` with each stage range's bound on
        M (F + B) + AR as stage s raised to M `objective` at stage s's in-flight count
        (the sends, the forward and F + B bounds unchanged). Only the ranges whose
        segments' bound is below `beat` (a step to beat) are bounded under the cap: a
        plan with any other stage reaches `beat` anyway, and so any step below it."""
        key = (stages, microbatches, schedule, memory)
        made = self._bounds.get(key)
        if made is not None and beat <= made[0]:
            return made[1]
        tight = self.least.segment_bounds(stages, microbatches)
        positions = tight.positions
        size = len(positions)
        group = self.least.table.devices // stages
        own = np.array(np.broadcast_to(tight.own_least, (stages, size, size)))
        for a in range(size - 1):
            for b in range(a + 1, size):
                if not possible(a, b, size, stages):
                    continue
                for s in stage_indices(a, b, size, stages):
                    if own[s][a][b] * (1 - SLACK) >= beat:
                        continue
                    held = in_flight(schedule, stages, microbatches, s)
                    # First its segments' Lagrangian bound (hulls shared by every range
                    # that holds the segment), then, where that is below `beat`, its own.
                    own[s][a][b] = max(own[s][a][b], self.least.capped_bound(
                        positions[a], positions[b], group, microbatches, held, memory, 1))
                    if own[s][a][b] * (1 - SLACK) >= beat:
                        continue
                    bound = microbatches * self.objective(
                        positions[a], positions[b], group, microbatches, held, memory,
                        beat / microbatches)
                    own[s][a][b] = max(own[s][a][b], bound)
        capped = SegmentBounds.of_ranges(positions, tight.forward, tight.work, own,
                                         microbatches, stages, tight.into_forward,
                                         tight.into_backward, tight.shared, tight.opening)
        self._bounds[key] = (beat, capped)
        return capped


def at_least(ranged: SegmentBounds, capped: SegmentBounds) -> SegmentBounds:
    """`ranged` (`least.LeastCosts.range_bounds`: some ranges solved exactly) with each
    range's bound on M (F + B) + AR as stage s at least `capped`'s (`CappedWhole.bounds`
    of the same S and M): both are lower bounds, so their larger is one."""
    stages = ranged.stages
    size = len(ranged.positions)
    own = np.maximum(np.broadcast_to(ranged.own_least, (stages, size, size)),
                     capped.own_least)
    return SegmentBounds.of_ranges(ranged.positions, ranged.forward, ranged.work, own,
                                   ranged.microbatches, stages, ranged.into_forward,
                                   ranged.into_backward, ranged.shared, ranged.opening)


def stage_indices(a: int, b: int, size: int, stages: int) -> range:
    """The indices s for which [p_a, p_b) of `size` positions is stage s of some plan
    of `stages` stages (`bounds.possible`): s stages before it, each holding a segment,
    and S - 1 - s after it.

        >>> list(stage_indices(0, 1, 5, 3)), list(stage_indices(2, 4, 5, 3))
        ([0], [2])
        >>> list(stage_indices(1, 2, 5, 3)), list(stage_indices(1, 2, 5, 1))
        ([1], [])
    """
    last = size - 1
    if stages == 1:
        return range(0, 1) if (a, b) == (0, last) else range(0)
    if a == 0:
        return range(0, 1) if b <= last - (stages - 1) else range(0)
    if b == last:
        return range(stages - 1, stages) if a >= stages - 1 else range(0)
    return range(max(1, b - last + stages - 1), min(a, stages - 2) + 1)
