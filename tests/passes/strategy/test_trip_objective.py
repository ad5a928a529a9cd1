"""The round trip's own objective, (M - f + 1) F + M B + AR, bounded per stage range under
a memory cap (`CappedWhole.trip`), never exceeds its least over every assignment of the
range's layers that fits (the brute force: every configuration of every layer, costed
by `stage_cost` as the plans are); the bounds that take it (`RoundTrips.least`) never
exceed a plan's step and rise above the round-trip formula's somewhere; and the least
backward seconds (`least_backward`, now also the cost model's per layer) never exceed a
solved stage's B."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from stage_plans import GPT_TRAINING, gpt_partitioner, partitioner, random_source

from pase.passes.strategy import Partitioner
from pase.passes.strategy.pipeline.roundtrip import least_backward
from pase.passes.strategy.pipeline.stages import stage_cost
from tests.passes.strategy.test_round_trips import SLACK, check_every_plan, with_trips

BRUTE_FORCE = 1_000
"""Ranges with at most this many assignments are checked against every one."""


def least_trip(plans: Partitioner, start: int, stop: int, devices: int, micro: int,
               forwards: int, held: int, cap: float) -> tuple[float, int]:
    """The least (M - f + 1) F + M B + AR of layers [start, stop) over every assignment
    whose memory (its layers' bytes holding `held`) is within `cap` (inf if none), and
    how many assignments there are."""
    table = plans.least.table
    part = table.cut(start, stop, micro)
    problem = table.solver.problem(part, devices, micro)
    weights = plans.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
    lists = problem.config_lists
    least, memo = math.inf, {}
    for choice in itertools.product(*(range(len(configs)) for configs in lists)):
        if sum(float(w[c]) for w, c in zip(weights, choice, strict=True)) > cap:
            continue
        assignment = {layer.name: lists[i][c]
                      for i, (layer, c) in enumerate(zip(part.layers, choice, strict=True))}
        cost = stage_cost(part.layers, part.edges, assignment, devices, table.machine,
                          memo, part.kinds, problem.model)
        least = min(least, (micro - forwards + 1) * cost.forward + micro * cost.backward
                    + cost.allreduce)
    return least, math.prod(len(configs) for configs in lists)


def memory_span(plans: Partitioner, start: int, stop: int, devices: int, micro: int,
                held: int) -> tuple[float, float]:
    """The least and the largest memory of layers [start, stop) holding `held`."""
    table = plans.least.table
    part = table.cut(start, stop, micro)
    problem = table.solver.problem(part, devices, micro)
    weights = plans.least.layer_memory_vectors(problem, part.kinds[0], devices, held)
    return (sum(float(w.min()) for w in weights), sum(float(w.max()) for w in weights))


@pytest.mark.parametrize("seed", range(4))
def test_trip_bound_is_at_most_every_assignment_that_fits(seed: int) -> None:
    plans = partitioner(random_source(seed, chain=seed % 2 == 1), 8,
                        "a100-80gb-dgx" if seed % 2 else "v100-nvlink",
                        training=GPT_TRAINING if seed % 2 else None)
    positions = [0, *plans.cuts, len(plans.layers)]
    micro, devices = 4, 4
    checked = 0
    for a, b in itertools.combinations(range(len(positions)), 2):
        if b - a > 2:
            continue
        start, stop = positions[a], positions[b]
        for held, forwards in ((1, 1), (2, 4)):
            low, high = memory_span(plans, start, stop, devices, micro, held)
            for share in (0.0, 0.4):
                cap = low + share * (high - low)
                exact, size = least_trip(plans, start, stop, devices, micro, forwards,
                                         held, cap)
                if size > BRUTE_FORCE:
                    break
                bound = plans.capped.trip(start, stop, devices, micro, forwards, held, cap)
                assert bound <= exact * (1 + 1e-9), (start, stop, held, forwards, cap)
                checked += 1
            # Below the least memory nothing fits: inf.
            assert plans.capped.trip(start, stop, devices, micro, 2, held,
                                     low * 0.99) == math.inf
    assert checked >= 8


def test_trip_bounds_hold_for_every_plan_and_raise_the_gpt(tmp_path: Path) -> None:
    # `capped_whole`'s bounds with the round trips' own objectives bounded: at most the
    # step of every plan that fits, at least the bound without them, above it on the
    # GPT at S = 4 somewhere (its stage 0 runs 4 warm-up forwards). (Both schedules and
    # random graphs go through them in test_round_trips.py's capped test too.)
    raised = False
    for plans in (gpt_partitioner(tmp_path / "gpt.dnn"),):
        for schedule, stages, micro in (("1f1b", 4, 2), ("1f1b", 4, 8), ("gpipe", 2, 8)):
            free = plans.best(stages, micro, schedule)
            assert free is not None
            lowest = plans.least_memory(stages, micro, schedule)
            for share in (0.3, 0.7):
                cap = lowest + share * (free.memory - lowest)
                capped = plans.capped_whole(stages, micro, schedule, cap)
                assert capped.trips is not None
                assert capped.trips.least is not None
                least = check_every_plan(plans, capped, micro, schedule, cap)
                formula = with_trips(plans, capped, schedule)  # (`least` left out)
                assert formula.whole(stages) <= capped.whole(stages) <= least * (1 + SLACK)
                raised |= capped.whole(stages) > formula.whole(stages) * (1 + 1e-9)
    assert raised


def test_least_backward_is_at_most_every_solved_stage(tmp_path: Path) -> None:
    # The cost model's least backward per layer, summed over a range, is at most the B
    # of each of the range's solved stages (its layers' and edges' backward seconds).
    plans = gpt_partitioner(tmp_path / "gpt.dnn")
    for stages, micro in ((2, 2), (4, 8)):
        assert plans.best(stages, micro, "1f1b") is not None
    solved = [(key, stage) for key, stage in plans.table._stages.items()
              if stage is not None]
    assert len(solved) > 10
    for (start, stop, devices, micro, _, _), stage in solved:
        least = least_backward(plans, devices, micro)
        assert least[stop] - least[start] <= stage.cost.backward * (1 + 1e-9)
