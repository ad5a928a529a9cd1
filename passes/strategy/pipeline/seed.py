"""A first plan for the stage walk: the faster of a few evenly split plans, evaluated.

The walk (`walk.Walk`) prunes a prefix once a lower bound on its plans reaches the best
step found so far, and it finds plans depth-first in the order of the cuts: the first
ones it meets put a stage or two on the first layers and everything else on the last,
and until it has met a balanced plan it prunes little, so it solves (pase's search on
each stage range) hundreds of ranges that no good plan uses; on a 60-block GPT in 4
stages, some 240 of them before its best plan is even in sight.

`seed` evaluates a few plans first (`seed_cuts`): the cuts nearest to an equal split of
the layers' least compute (`balanced_cuts`), then of their count (equal blocks in each
stage, where the model is blocks between an embedding and a head: Megatron-LM's
layout), their stages solved as the walk would solve them. The least step, made a shade
larger (`math.nextafter`), is the bound the walk starts from, so it prunes from the
start, and the result is the same plan as without the seed, whichever plan the seed is:
the walk returns the first plan in its order of least step, that least is at most the
seed's step, which is below the bound, and the walk prunes only prefixes whose plans
all reach the bound or the best plan found (the same test as with any `bound` given to
`Partitioner.best`). Where no such plan fits the cap or beats the bound already given,
there is no seed and the walk starts as before. Where two tie, the first is the seed
(the walk's result does not depend on it; what the seed stands in for, a walk that
stops early, gets the plan of equal least compute, as before equal counts were tried).

    >>> balanced_cuts([0.0, 1.0, 2.0, 3.0, 4.0], [1, 2, 3], 2)
    [0, 2]
    >>> balanced_cuts([0.0, 5.0, 6.0, 7.0, 8.0], [1, 2, 3], 3)
    [0, 1, 2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pase.core.schedule import in_flight
from pase.passes.strategy.pipeline.plan import PipelinePlan
from pase.passes.strategy.pipeline.walk import over

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.search import Partitioner


def balanced_cuts(least: Sequence[float], cuts: Sequence[int], stages: int) -> list[int]:
    """Stage beginnings (0, then `stages` - 1 of `cuts`, increasing) whose stages split
    `least` (prefix sums over the layers: entry i is the layers [0, i)'s) most evenly:
    each beginning the cut nearest to its share of the total, leaving a cut for each
    stage after it (ties to the earlier cut)."""
    total = least[-1]
    bounds = [0]
    for s in range(1, stages):
        target = total * s / stages
        choices = [c for c in cuts if c > bounds[-1]]
        choices = choices[:len(choices) - (stages - 1 - s)]
        bounds.append(min(choices, key=lambda c: abs(least[c] - target)))
    return bounds


def seed(plans: Partitioner, stages: int, microbatches: int, schedule: str,
         memory: float | None, bound: float) -> PipelinePlan | None:
    """The fastest plan of `seed_cuts` (in their order, ties to the first), its stages
    solved as the walk solves them (under `memory` where they must fit in it, even in
    `Partitioner.search`'s first pass, which solves no stage under the cap): None where
    none has a solution, fits and beats `bound` (a stage solved under the cap stops as
    soon as its own bound shows that, `plan_within`'s `stop_at`; a later candidate must
    beat the earlier ones' step, so it stops as soon as it cannot)."""
    if stages < 2 or stages > len(plans.cuts) + 1:
        return None
    best = None
    for bounds in seed_cuts(plans, stages, microbatches):
        plan = evaluated(plans, bounds, microbatches, schedule, memory,
                         bound if best is None else best.step)
        if plan is not None:
            best = plan
    return best


def seed_cuts(plans: Partitioner, stages: int, microbatches: int) -> list[list[int]]:
    """The stage beginnings `seed` tries, each once: `balanced_cuts` by the least
    compute on P / `stages` devices, then by the count of layers. The first misses
    what the least compute does not see: the gradients' all-reduce (once per step,
    by the parameters) and the cap (the first stage holds the most micro-batches);
    in a model of equal blocks between an embedding and a head, equal counts of
    layers put equal blocks in each stage, as Megatron-LM lays them out."""
    group = plans.devices // stages
    layers = len(plans.layers)
    found: list[list[int]] = []
    for prefix in (plans.least.least_compute(group, microbatches),
                   [float(i) for i in range(layers + 1)]):
        bounds = balanced_cuts(prefix, plans.cuts, stages)
        if bounds not in found:
            found.append(bounds)
    return found


def evaluated(plans: Partitioner, bounds: list[int], microbatches: int, schedule: str,
              memory: float | None, bound: float) -> PipelinePlan | None:
    """The plan whose stages begin at `bounds`, solved as the walk solves them: None
    where it has no solution, does not fit or does not beat `bound`."""
    stages = len(bounds)
    if memory is not None:
        # (A stage that fits in no configurations would only be solved in vain.)
        for s, (start, stop) in enumerate(zip(bounds, [*bounds[1:], len(plans.layers)],
                                              strict=True)):
            sums = plans.least_bytes(stages, microbatches, schedule)[
                in_flight(schedule, stages, microbatches, s)]
            if over(sums[stop] - sums[start], memory):
                return None
    # Its stages solved under the cap where they must be, in the first pass under a cap
    # too (`Partitioner.search`, whose plans are only a bound for the second: this one
    # is one as good).
    free_only, plans.table.free_only = plans.table.free_only, False
    try:
        plan = plans.plan_within(bounds, microbatches, schedule, memory, bound,
                                 stop_at=bound)
    finally:
        plans.table.free_only = free_only
    if plan is None or (memory is not None and plan.memory > memory) or \
            not plan.step < bound:
        return None
    return plan


def seeded_bound(plan: PipelinePlan | None, bound: float) -> float:
    """The bound the walk starts from with `plan` (`seed`'s) found: a shade above its
    step, so that the walk still finds every plan as fast as it; else `bound`.

        >>> seeded_bound(None, 2.0), seeded_bound(None, math.inf)
        (2.0, inf)
    """
    return bound if plan is None else min(bound, math.nextafter(plan.step, math.inf))
