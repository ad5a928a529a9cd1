"""The compiled replay of a schedule (`pipeline.replay`): `step_time`'s float, bit for bit."""

import random

import pytest

from pase.core.schedule import SCHEDULES, step_time
from pase.passes.strategy.pipeline import replay
from pase.passes.strategy.pipeline.replay import operations, replayed, replayer


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("stages", "microbatches"),
                         [(1, 1), (1, 4), (2, 1), (3, 2), (4, 8), (8, 32), (5, 3)])
def test_the_replay_is_the_simulated_step_bit_for_bit(schedule: str, stages: int,
                                                      microbatches: int) -> None:
    rng = random.Random(stages * 100 + microbatches)
    run = replayer(schedule, stages, microbatches)
    for _ in range(200):
        # Times of every scale, zeros and ties among them (a tie takes either branch).
        def times(count: int) -> list[float]:
            return [rng.choice([0.0, 1.0, rng.random(), rng.random() * 1e-5,
                                rng.expovariate(1.0)]) for _ in range(count)]
        args = (times(stages), times(stages), times(stages - 1), times(stages - 1),
                times(stages))
        step = step_time(schedule, args[0], args[1], microbatches, *args[2:])
        assert run(*args) == step
        assert replayed(schedule, args[0], args[1], microbatches, *args[2:]) == step
        # Under a step to beat, both decide alike: the step is at least it, or not.
        beat = step * rng.choice([0.5, 1.0, 1.0 + 1e-12, 2.0])
        assert (step_time(schedule, args[0], args[1], microbatches, *args[2:], beat)
                >= beat) == (run(*args) >= beat)


def test_every_operation_once_after_what_it_waits_for() -> None:
    for schedule in SCHEDULES:
        ops = operations(schedule, 4, 6)
        assert len(ops) == 2 * 4 * 6
        for i, (_, _, waits, gradient) in enumerate(ops):
            assert waits < i
            assert gradient < i


def test_large_schedules_are_simulated_by_step_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "MOST_OPERATIONS", 10)

    def compiled(*_: object) -> None:
        raise AssertionError("a schedule of 16 operations compiled over a limit of 10")

    monkeypatch.setattr(replay, "replayer", compiled)
    args = ([1.0, 2.0], [2.0, 3.0], 4, [0.5], [0.5], [1.0, 0.0])
    assert replayed("1f1b", *args) == step_time("1f1b", *args)
