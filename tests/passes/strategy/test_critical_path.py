"""`bounds.critical_path` with the schedule: micro-batch 0's round trip through the stages
after each stage counted before the plan is simulated. It never exceeds the simulated
step, it is at least the bound without the round trip, and the walk that prunes with it
finds the same plans, simulating fewer."""

from __future__ import annotations

import random

import pytest
from stage_plans import partitioner, random_source

from pase.core.schedule import simulate
from pase.passes.strategy.pipeline import bounds, evaluate
from pase.passes.strategy.pipeline.bounds import critical_path


def test_the_round_trip_never_exceeds_the_simulated_step() -> None:
    # Random stages, sends and all-reduces under both schedules: the bound with the round
    # trip is at least the one without and at most the simulated step, and above the
    # one without on some.
    rng = random.Random(0)
    above = 0
    for _ in range(3000):
        stages, micro = rng.randint(1, 6), rng.randint(1, 8)
        schedule = rng.choice(("1f1b", "gpipe"))
        forward = [rng.choice((0.0, rng.uniform(0.0, 5.0))) for _ in range(stages)]
        backward = [rng.uniform(0.0, 8.0) for _ in range(stages)]
        ahead = [rng.uniform(0.0, 2.0) for _ in range(stages - 1)]
        back = [rng.uniform(0.0, 2.0) for _ in range(stages - 1)]
        reduce = [rng.uniform(0.0, 4.0) for _ in range(stages)]
        plain = critical_path(forward, backward, micro, ahead, back, reduce)
        trip = critical_path(forward, backward, micro, ahead, back, reduce, schedule)
        step = simulate(schedule, forward, backward, micro, ahead, back, reduce).step
        assert plain <= trip <= step * (1 + 1e-12)
        above += trip > plain * (1 + 1e-9)
    assert above > 300


def test_the_round_trip_is_the_step_of_a_bottleneck_after_light_stages() -> None:
    # A heavy stage 2 of 4 between light ones (a pipeline's decoder): 1F1B waits for
    # micro-batch 0's round trip through stage 3 (0.5 + 2 + 3 + 0.5, more than the one
    # forward it runs meanwhile) once, then runs without a gap, so the bound is the
    # simulated step itself (the plain one is 2 below it).
    forward, backward = [1.0, 1.0, 4.0, 2.0], [1.0, 1.0, 8.0, 3.0]
    args = (forward, backward, 8, [0.5] * 3, [0.5] * 3, [0.0, 0.0, 2.0, 0.0])
    step = simulate("1f1b", *args).step
    assert critical_path(*args, schedule="1f1b") == step == 104.0
    assert critical_path(*args) == 102.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_walk_finds_the_same_plans_simulating_fewer(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The search over every S and M (1F1B) with the round trip and with the plain bound
    # (the schedule dropped): the same plan, and no more simulations (`replayed`).
    simulated = []
    step_time = evaluate.replayed

    def counted(*args: object, **kwargs: object) -> float:
        simulated.append(1)
        return step_time(*args, **kwargs)  # type: ignore[arg-type]

    path = bounds.critical_path

    def without(*args: object, schedule: str | None = None) -> float:
        return path(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "replayed", counted)
    found = []
    for plain in (False, True):
        if plain:
            monkeypatch.setattr(evaluate, "critical_path", without)
        simulated.clear()
        plans = partitioner(random_source(seed, chain=seed % 2 == 0), devices=8)
        plan, _ = plans.search([1, 2, 4], [1, 2, 4, 8], "1f1b")
        found.append((plan, len(simulated)))
    (trip, trip_runs), (plain, plain_runs) = found
    assert trip == plain
    assert trip_runs <= plain_runs
