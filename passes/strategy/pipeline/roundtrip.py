"""A bound on the step that sees the stages after a stage: micro-batch 0's round trip.

The walk's chain bound (`bounds`: w_0 + ... + w_{s-1} + M w_s + AR_0) counts the
stages before stage s and none after it. With many stages and few micro-batches per
stage that misses much: at 35 stages of 280 micro-batches a stage a tenth heavier than
the others passes it, though its plans step a tenth slower, so the walk tries every
mix of heavier and lighter stages. Stage s cannot start its first backward before
micro-batch 0 has gone forward through it and every stage after it and its gradient
has come back (R_s: their F + B and the sends between them); until then it can only
run the forwards its schedule puts before that backward (`stage_order`: f_s of them,
micro-batch 0's included), and everything after it in its order, (M - f_s) forwards
and M backwards, follows. Then the last gradient goes back to stage 0, which
all-reduces. So every plan steps at least

    sum_{t<s} (F_t + B_t + sends) + (M - f_s + 1) F_s + M B_s + R_s + AR_0,

for every s: the chain bound with (f_s - 1) F_s taken off and R_s added, which is
larger wherever the stages after s do more than s's warm-up forwards. R_s is at least
the segments' least F + B over the layers after the stage (`LeastCosts.segment_bounds`:
a sum of stages' F + B is at least the sum of their segments' least). `RoundTrip.solved`
gives it for a stage just solved (its F and B known), where `walk.Walk.extend` prunes.

    >>> from pase.core.schedule import simulate
    >>> forward, backward = [2.0, 1.0, 1.0], [4.0, 2.0, 2.0]  # stage 0 twice the others
    >>> f = forwards_first("1f1b", 3, 4)
    >>> f
    [3, 2, 1]
    >>> chain = 4 * (forward[0] + backward[0])  # its chain bound, the largest of the three
    >>> trip = (4 - f[0] + 1) * forward[0] + 4 * backward[0] + (1.0 + 2.0 + 1.0 + 2.0)
    >>> chain, trip, simulate("1f1b", forward, backward, 4).step
    (24.0, 26.0, 26.0)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from pase.core.schedule import stage_order
from pase.passes.strategy.layer_bytes import least_seconds, roofline_bandwidth
from pase.passes.strategy.pipeline.bounds import most_devices
from pase.passes.strategy.pipeline.capped_work import capped_works
from pase.passes.strategy.pipeline.choices import beyond
from pase.passes.strategy.pipeline.plan import SolvedStage
from pase.passes.strategy.training_cost import at_precision

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.search import Partitioner
    from pase.passes.strategy.pipeline.walk import Walk


def forwards_first(schedule: str, stages: int, microbatches: int) -> list[int]:
    """Per stage, the forwards its order (`stage_order`) runs before its first
    backward (micro-batch 0's forward included)."""
    return [stage_order(schedule, stages, microbatches, s).index(("backward", 0))
            for s in range(stages)]


def least_backward(plans: Partitioner, devices: int, microbatches: int) -> list[float]:
    """Prefix sums over the layers of their least backward seconds per micro-batch on
    `devices` devices: the backward FLOPs over the most devices any configuration uses,
    at the training precision's peak, and the roofline's bytes where it is charged
    (`layer_bytes.least_seconds`, as `LeastCosts.least_compute`'s, the backward alone:
    a layer's backward is its backward compute, a recomputed forward and collectives,
    none less than 0), and the forward FLOPs too where every configuration of the layer
    recomputes its forward (`recompute=full`: a layer with a backward that is not a
    checkpoint); or, where larger, the least over the layer's configurations of the
    cost model's own backward seconds (`LayerCosts.backward`, the very terms a stage's
    B sums: the stage's B is its layers' and its edges' backward seconds, each edge's at
    least 0), with the devices P / S of a stage's problem (`devices` a divisor of P)."""
    solver = plans.table.solver
    training = solver.options.training
    peak = plans.machine.peak(training.precision)
    hbm = roofline_bandwidth(plans.machine, training)
    recomputed = training.recompute_choices == (True,)
    modelled = modelled_backward(plans, devices, microbatches)
    sums = [0.0]
    for index, layer in enumerate(plans.micro(microbatches).layers):
        seconds = 0.0
        if layer.backward:
            most = most_devices(layer, devices, solver.min_shard, plans.batch)
            forward, backward = least_seconds(at_precision(layer, training.element_bytes),
                                              most, peak, hbm)
            seconds = backward + (forward if recomputed and not layer.checkpoint else 0.0)
        sums.append(sums[-1] + max(seconds, modelled[index]))
    return sums


def modelled_backward(plans: Partitioner, devices: int, microbatches: int) -> list[float]:
    """Per layer at micro-batch shapes, the least over its configurations on `devices`
    devices (a stage's problem's: `Partitioner.config_lists`) of the cost model's
    backward seconds (`LayerCosts.backward`, as `stages.stage_cost` sums them); 0 for
    every layer where `devices` does not divide P into stages."""
    micro = plans.micro(microbatches)
    if devices < 1 or plans.devices % devices or micro.kinds is None:
        return [0.0] * len(micro.layers)
    solver = plans.solver
    cache = solver.cache
    least = []
    for layer, kind, configs in zip(micro.layers, micro.kinds[0],
                                    plans.config_lists(plans.devices // devices,
                                                       microbatches), strict=True):
        costs = solver.options.model.layer_costs(layer, configs, plans.machine) \
            if cache is None else cache.costs(layer, kind, devices, configs, plans.machine)
        least.append(max(0.0, float(costs.backward.min())))
    return least


class RoundTrip:
    """The round-trip bound (module docstring) for one walk's stages: after a stage is
    solved (`solved`), and before, for the stages after a prefix (`rest`) and for a
    next stage at each of its ends (`next_stages`), with the walk's bounds on each
    range's F + B (`tight.work`) and the least backward seconds of its layers."""

    def __init__(self, walk: Walk):
        self.microbatches = micro = walk.microbatches
        self.first = forwards_first(walk.schedule, walk.stages, walk.microbatches)
        self.after: dict[int, float] = {}
        """Per position, at least the F + B of the layers after it, whatever the stages."""
        self.tight = tight = walk.tight
        self.trip: np.ndarray | None = None
        self.rests: np.ndarray | None = None
        self.waiting = False
        """Whether the cap's bounds wait for a step to beat (`capped`)."""
        if tight is None:  # (no bounds to prune with: none made)
            return
        plans = walk.plans
        segments = plans.least.segment_bounds(walk.stages, walk.microbatches)
        positions = segments.positions
        last = len(positions) - 1
        self.after = {position: float(segments.work[a, last]) if a < last else 0.0
                      for position, a in segments.index.items()}
        self.backward = np.asarray(least_backward(plans, walk.group, micro))[list(positions)]
        self.after_at = np.array([self.after[position] for position in positions])
        # works[s, a, b]: at least the F + B of [p_a, p_b) as stage s.
        works = np.broadcast_to(tight.work_at, (walk.stages, last + 1, last + 1))
        self.works = works
        trip = self._trip(works)
        if walk.capped_bounds:  # (not in the first pass, whose stages fit unconstrained)
            beat = walk.reached()
            self.waiting = beat == math.inf
            if not self.waiting:
                trip = self.capped(walk, trip, beat)
        self.trip = trip
        self.rests = self._rests(trip)

    def _trip(self, works: np.ndarray) -> np.ndarray:
        """trip[s, a, b]: the stage [p_a, p_b) as stage s, its chain bound or its round
        trip, whichever is larger (both at least what it adds to the step), its F + B
        at least `works`."""
        micro = self.microbatches
        backward, after = self.backward, self.after_at
        trip = np.empty(works.shape)
        for stage, forwards in enumerate(self.first):
            trip[stage] = np.maximum(
                micro * works[stage],
                (micro - forwards + 1) * works[stage]
                + (forwards - 1) * (backward[None, :] - backward[:, None]) + after[None, :])
        return trip

    def capped(self, walk: Walk, trip: np.ndarray, beat: float) -> np.ndarray:
        """`trip` with the ranges' F + B under the cap (`capped_works`), for the
        ranges whose bound without it does not already reach `beat` (the walk's step to
        beat, which only falls): every bound the walk and `Choices` take through a
        range is at least its `trip` plus terms >= 0, so where that reaches `beat`
        (as `choices.beyond` sees it) they prune alike with or without the cap's bound,
        and its hulls need not be made."""
        assert walk.memory is not None
        assert self.tight is not None
        self.works = works = np.maximum(self.works, capped_works(
            walk.plans, walk.stages, self.microbatches, walk.schedule, walk.memory,
            self.tight.positions, ~beyond(trip, beat)))
        return self._trip(works)

    def _rests(self, trip: np.ndarray) -> np.ndarray:
        """`rests[k, a]`: at least, over the choices of cuts, the largest of the last k
        stages' bounds over [p_a, end) (`trip`, the sends into each and the works of
        those before it added), as `SegmentBounds.chain` is made of the chain bounds."""
        tight = self.tight
        assert tight is not None
        stages, size = tight.stages, len(tight.positions)
        inner = np.triu(np.ones((size, size), dtype=bool), 1)
        inner[:, -1] = False
        rests = np.full((stages + 1, size), np.inf)
        for k in range(1, stages + 1):
            s = stages - k
            work = np.where(inner, self.works[s], np.inf)
            add = tight.into_forward[s] + tight.into_backward[s]
            if s == 0:
                add = add.copy()
                add[0] += tight.opening + tight.shared[0][0]
            if k == 1:
                rests[1, :-1] = add[:-1, -1] + trip[s][:-1, -1]
                continue
            rests[k] = (add + np.maximum(np.where(inner, trip[s], np.inf),
                                         work + rests[k - 1][None, :])).min(axis=1)
        return rests

    def rest(self, stages: int, start: int, done: float, first: float) -> float:
        """At least the step of every plan whose stages before `start` took `done`
        (`Prefix.chained`), the first all-reducing `first`, and whose last `stages`
        stages cover the rest (`SegmentBounds.rest`'s chain side, round trips seen)."""
        if self.rests is None or self.tight is None:
            return 0.0
        return done + first + float(self.rests[stages, self.tight.index[start]])

    def next_stages(self, stages_after: int, start: int, ends: np.ndarray, done: float,
                    first: float) -> np.ndarray:
        """`rest` for the plans whose next stage is [start, p_e) for each position
        index e of `ends`, `stages_after` stages after it (`SegmentBounds.next_stage`'s
        chain side)."""
        tight, trip, rests = self.tight, self.trip, self.rests
        assert tight is not None
        assert trip is not None
        assert rests is not None
        s = tight.stages - 1 - stages_after
        a = tight.index[start]
        bound = trip[s, a, ends]
        if stages_after:
            bound = np.maximum(bound, self.works[s, a, ends] + rests[stages_after, ends])
        add = tight.into_forward[s, a, ends] + tight.into_backward[s, a, ends]
        if s == 0:
            add = add + tight.opening[ends] + tight.shared[0, 0, ends]
        return done + first + add + bound

    def next_stage(self, stages_after: int, start: int, stop: int, done: float,
                   first: float) -> float:
        """`next_stages` at one end, `stop` (a position)."""
        tight = self.tight
        assert tight is not None
        ends = np.array([tight.index[stop]])
        return float(self.next_stages(stages_after, start, ends, done, first)[0])

    def solved(self, index: int, stop: int, stage: SolvedStage, before: float,
               stages_after: int) -> float:
        """At least the step of every plan whose stage `index`, ending at `stop`, is
        `stage`, where `before` is at least the F + B and sends of the stages before
        it, the sends into it and stage 0's all-reduce (`Walk.extend`'s chain), and
        `stages_after` stages follow it."""
        micro = self.microbatches
        bound = before + (micro - self.first[index] + 1) * stage.cost.forward \
            + micro * stage.cost.backward + self.after[stop]
        if stages_after and self.rests is not None and self.tight is not None:
            bound = max(bound, before + stage.work
                        + float(self.rests[stages_after, self.tight.index[stop]]))
        return bound
