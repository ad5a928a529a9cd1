"""A bound on a whole (S, M) under a memory cap from each layer alone, without a DP solve.

A stage's objective (`stages.StageProblem`: F + B + AR / M of its layers, plus its edges'
seconds, never negative) and its F + B are sums over its layers of a term fixed by the
layer's configuration, plus edges >= 0; so is its memory holding h micro-batches (each
layer's parameters + h times its activations, `microbatch.layer_bytes`: the terms
`Partitioner.least_bytes` bounds a stage's memory with). For every λ >= 0 and every
configuration of the layers [p_a, p_b) that fits in the cap C,

    cost >= sum over the layers of min over c of (cost_l(c) + λ memory_l(c)) − λ C,

the edges left out and λ (memory − C) <= 0 added. Each layer's minimum is a vector over
a fixed set of λ (`RATES`), so every stage range's bound at every λ is a difference of
prefix sums, and the best λ of each range one `max`: the whole (S, M) bounded under the
cap at the cost of numpy over the layers' configurations, no DP solve. It is weaker
than `capped_whole.CappedWhole`'s (LARAC on each range's graph, its edges seen), but
where the cap binds on layers alone it prunes (S, M) before those bounds are made: at
P = 64 on v100-nvlink under 0.25 GiB, the Transformer's S = 4, M = 4 (0.0369 s against
its segments' 0.0227 s) and S = 8, M = 8 (0.0678 s against 0.0258 s), both beaten by
the 0.031 s plans found first. Any λ gives a bound, so a coarse set of them costs
tightness, never exactness.

    >>> costs = [np.array([1.0, 3.0]), np.array([1.0, 2.0])]  # two layers, two configs
    >>> memory = [np.array([4.0, 1.0]), np.array([4.0, 1.0])]
    >>> round(float(range_least(costs, memory, [0, 1, 2], 5.0)[0, 2]), 6)  # the least
    3.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pase.passes.strategy.pipeline.bounds import SLACK, SegmentBounds

RATES = np.concatenate([[0.0], np.logspace(-20.0, 0.0, 401)])
"""The λ (seconds per byte) each range's bound is the best of: 0, and 20 a decade from
1e-20 to 1 (a layer's seconds over its bytes lie well inside)."""


def range_least(costs: Sequence[np.ndarray], memory: Sequence[np.ndarray],
                positions: Sequence[int], cap: float) -> np.ndarray:
    """[a][b]: a lower bound on the sum of `costs` (one vector over its configurations
    per layer) over the layers [positions[a], positions[b]) in any configurations whose
    `memory` (likewise) sums to at most `cap`: the best over `RATES` of the layers'
    least cost + λ memory, less λ `cap` (module docstring), lowered by `SLACK`; -inf
    where a layer's costs are not all finite (no bound) and for a >= b."""
    size = len(positions)
    least = np.zeros((len(RATES), len(costs)))
    for layer, (cost, held) in enumerate(zip(costs, memory, strict=True)):
        least[:, layer] = (cost[None, :] + RATES[:, None] * held[None, :]).min(axis=1)
    if not np.isfinite(least).all():
        return np.full((size, size), -np.inf)
    sums = np.concatenate([np.zeros((len(RATES), 1)), np.cumsum(least, axis=1)],
                          axis=1)[:, list(positions)]
    bound = (sums[:, None, :] - sums[:, :, None] - RATES[:, None, None] * cap).max(axis=0)
    bound = bound - SLACK * np.abs(bound)
    return np.where(np.triu(np.ones((size, size), dtype=bool), 1), bound, -np.inf)


def layerwise_bounds(tight: SegmentBounds, work: Sequence[np.ndarray],
                     objective: Sequence[np.ndarray], fixed: Sequence[np.ndarray],
                     kept: Sequence[np.ndarray], holds: Sequence[int],
                     cap: float) -> SegmentBounds:
    """`tight` (the segments' bounds of S = len(`holds`) stages) with each stage
    range's F + B per micro-batch at least `range_least` of the layers' `work`
    (F + B) and its M (F + B) + AR at least M times that of their `objective`
    (F + B + AR / M), as stage s holding `holds[s]` micro-batches: each layer's
    memory `fixed` + held `kept` (parameters and activations, per configuration)."""
    stages, size = len(holds), len(tight.positions)
    micro = tight.microbatches
    own = np.array(np.broadcast_to(tight.own_least, (stages, size, size)))
    least = np.array(np.broadcast_to(tight.work_at, (stages, size, size)))
    made: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for s, held in enumerate(holds):
        if held not in made:
            memory = [params + held * acts for params, acts in zip(fixed, kept,
                                                                    strict=True)]
            made[held] = (range_least(work, memory, tight.positions, cap),
                          range_least(objective, memory, tight.positions, cap))
        ranged_work, ranged_objective = made[held]
        least[s] = np.maximum(least[s], ranged_work)
        own[s] = np.maximum(own[s], micro * np.maximum(ranged_work, ranged_objective))
    return SegmentBounds.of_ranges(tight.positions, tight.forward, tight.work, own,
                                   micro, stages, tight.into_forward,
                                   tight.into_backward, tight.shared, tight.opening,
                                   least)


def one_segment_capped(base: SegmentBounds, segments: SegmentBounds,
                       capped: dict[int, np.ndarray], holds: Sequence[int]) -> SegmentBounds:
    """`base` (bounds of S = len(`holds`) stages) with each stage range's M (F + B) + AR as
    stage s at least its segments' least (`segments`, unconstrained: `of`'s prefix
    sums) with one segment's least put in place by `capped[holds[s]][j]`, a lower bound
    on that segment's M (F + B) + AR in any configurations that fit the cap holding
    `holds[s]` micro-batches (`CappedWhole.objective` of the segment alone, M times):
    the stage's configurations fit, so that segment's do (its bytes are a part of the
    stage's), each other segment costs at least its least, and the edges between them
    at least 0. The best segment of each range is taken (inf where one fits in no
    configurations).

        >>> segments = SegmentBounds.of([0, 1, 2, 3], forward=[0.0, 0.0, 0.0, 0.0],
        ...                             work=[0.0, 1.0, 2.0, 3.0],
        ...                             own=[0.0, 1.0, 2.0, 3.0], microbatches=1, stages=2)
        >>> raised = one_segment_capped(segments, segments,
        ...                             {2: np.array([1.0, 4.0, 1.0]),
        ...                              1: np.array([1.0, 1.0, 1.0])}, [2, 1])
        >>> float(raised.own_least[0][0][2]), float(raised.own_least[1][1][3])
        (5.0, 2.0)
    """
    stages, size = len(holds), len(base.positions)
    own = np.array(np.broadcast_to(base.own_least, (stages, size, size)))
    sums = segments.own_least[0]
    alone = np.diagonal(sums, 1)  # each segment's own least
    made: dict[int, np.ndarray] = {}
    for s, held in enumerate(holds):
        if held not in made:
            gain = np.maximum(capped[held] - alone, 0.0)
            most = np.full((size, size), -np.inf)
            for a in range(size - 1):
                most[a, a + 1:] = np.maximum.accumulate(gain[a:])
            upper = np.triu(np.ones((size, size), dtype=bool), 1)
            made[held] = np.where(upper, sums + most, -np.inf)
        own[s] = np.maximum(own[s], made[held])
    return SegmentBounds.of_ranges(base.positions, base.forward, base.work, own,
                                   base.microbatches, stages, base.into_forward,
                                   base.into_backward, base.shared, base.opening,
                                   base.work_at)
