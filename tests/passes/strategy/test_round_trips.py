"""The own bounds that see micro-batch 0's round trip (`bounds.RoundTrips`) never
exceed the simulated step of a plan they cover: every plan's, its cuts tried one by one
(the brute force), with the segments' bounds and with every range solved exactly, under
both schedules, with and without a memory cap; and they are tighter than the own bounds
without it somewhere."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from stage_plans import gpt_partitioner, partitioner, random_source

from pase.passes.strategy import Partitioner
from pase.passes.strategy.pipeline.bounds import SegmentBounds
from pase.passes.strategy.pipeline.trips import round_trips

SLACK = 1e-12


def with_trips(plans: Partitioner, bounds: SegmentBounds, schedule: str,
               trips: bool = True) -> SegmentBounds:
    """`bounds` made again with the round trips of its (S, M) under `schedule` (or
    without any)."""
    stages, micro = bounds.stages, bounds.microbatches
    return SegmentBounds.of_ranges(
        bounds.positions, bounds.forward, bounds.work, bounds.own_least, micro, stages,
        bounds.into_forward, bounds.into_backward, bounds.shared, bounds.opening,
        bounds.work_at, round_trips(plans, stages, micro, schedule) if trips else None)


def check_every_plan(plans: Partitioner, bounds: SegmentBounds, micro: int,
                     schedule: str, memory: float | None = None) -> float:
    """Each plan's step is at least `bounds`' whole bound and its own side's `rest`
    after each of its stages (the walk's prefixes); the least step (inf if none)."""
    stages = bounds.stages
    least = float("inf")
    for cuts in itertools.combinations(plans.cuts, stages - 1):
        starts = [0, *cuts]
        plan = plans.plan_within(starts, micro, schedule, memory)
        if plan is None:
            continue
        least = min(least, plan.step)
        limit = plan.step * (1 + SLACK)
        assert bounds.whole(stages) <= limit
        forward = 0.0
        for index, start in enumerate(starts):
            assert bounds.rest(stages - index, start, 0.0, 0.0, forward) <= limit
            ahead, _ = bounds.into(start, [*starts[1:], len(plans.layers)][index], index)
            forward += ahead + plan.stages[index].cost.forward
    return least


@pytest.mark.parametrize("seed", range(4))
def test_round_trip_bounds_hold_for_every_plan(seed: int) -> None:
    # Random graphs (their all-reduces outweigh their compute: the round trips rarely
    # raise the bounds here, but must hold), both kinds of bounds, both schedules.
    plans = partitioner(random_source(seed, chain=seed % 2 == 0), devices=8)
    for schedule in ("1f1b", "gpipe"):
        for stages, micro in itertools.product((2, 3, 4), (1, 2, 4)):
            if stages > len(plans.cuts) + 1:
                continue
            for bounds in (plans.segment_bounds(stages, micro),
                           plans.range_bounds(stages, micro, schedule)):
                seen = with_trips(plans, bounds, schedule)
                check_every_plan(plans, seen, micro, schedule)
                assert seen.whole(stages) >= bounds.whole(stages)


def test_round_trips_raise_a_gpt_bound_to_its_optimum(tmp_path: Path) -> None:
    # The 4-block GPT (compute-bound stages) at S = 4: with every range solved the
    # whole bound rises with the round trips, at M = 8 under 1F1B to the optimum
    # itself (so no plan need be simulated to prove it), and holds for every plan.
    plans = gpt_partitioner(tmp_path / "gpt.dnn")
    wholes = {}
    for schedule, micro in itertools.product(("1f1b", "gpipe"), (2, 8)):
        bounds = plans.range_bounds(4, micro, schedule)
        seen = with_trips(plans, bounds, schedule)
        least = check_every_plan(plans, seen, micro, schedule)
        wholes[schedule, micro] = (bounds.whole(4), seen.whole(4), least)
    for plain, seen, least in wholes.values():
        assert plain <= seen <= least * (1 + SLACK)
    plain, seen, least = wholes["1f1b", 8]
    assert plain < least * 0.99
    assert seen == pytest.approx(least, rel=1e-12)


def test_capped_round_trip_bounds_hold_for_every_plan(tmp_path: Path) -> None:
    # Under a cap between each (S, M)'s least memory and its unconstrained plan's,
    # `Partitioner.capped_whole`'s bounds see the round trips; its whole bound is at
    # most every plan's step that fits and at least the bound without the round trips,
    # above it somewhere (the GPT's S = 4).
    raised = False
    for plans in (partitioner(random_source(1, chain=False), devices=8),
                  gpt_partitioner(tmp_path / "gpt.dnn")):
        for schedule, stages, micro in itertools.product(("1f1b", "gpipe"), (2, 4), (2, 8)):
            free = plans.best(stages, micro, schedule)
            assert free is not None
            lowest = plans.least_memory(stages, micro, schedule)
            for share in (0.3, 0.7):
                cap = lowest + share * (free.memory - lowest)
                capped = plans.capped_whole(stages, micro, schedule, cap)
                assert capped.trips is not None
                least = check_every_plan(plans, capped, micro, schedule, cap)
                plain = with_trips(plans, capped, schedule, trips=False)
                assert plain.whole(stages) <= capped.whole(stages) <= least * (1 + SLACK)
                raised |= capped.whole(stages) > plain.whole(stages)
    assert raised
