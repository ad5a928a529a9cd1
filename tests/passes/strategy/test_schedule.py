"""The pipeline schedule simulator: bubbles, memory in flight, dependencies."""

from __future__ import annotations

import math
import random

import pytest

from pase.core.schedule import (
    SCHEDULES,
    Event,
    ideal_bubble,
    in_flight,
    simulate,
    stage_order,
    step_time,
)

SHAPES = [(1, 1), (1, 4), (2, 1), (2, 4), (3, 5), (4, 4), (4, 8), (8, 3)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("stages", "micro"), SHAPES)
def test_equal_stages_have_the_ideal_bubble(schedule: str, stages: int, micro: int) -> None:
    sim = simulate(schedule, [1.0] * stages, [2.0] * stages, micro)
    assert sim.step == pytest.approx((micro + stages - 1) * 3.0)
    assert sim.bubble == pytest.approx(ideal_bubble(stages, micro))


@pytest.mark.parametrize(("stages", "micro"), SHAPES)
def test_activations_in_flight(stages: int, micro: int) -> None:
    for schedule in SCHEDULES:
        for s in range(stages):
            held = peak = 0
            for kind, _ in stage_order(schedule, stages, micro, s):
                held += 1 if kind == "forward" else -1
                peak = max(peak, held)
            assert in_flight(schedule, stages, micro, s) == peak
    assert [in_flight("gpipe", stages, micro, s) for s in range(stages)] == [micro] * stages
    assert [in_flight("1f1b", stages, micro, s) for s in range(stages)] == \
        [min(stages - s, micro) for s in range(stages)]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("stages", "micro"), SHAPES)
def test_each_stage_runs_every_micro_batch_once(schedule: str, stages: int,
                                                micro: int) -> None:
    for s in range(stages):
        order = stage_order(schedule, stages, micro, s)
        assert sorted(order) == sorted([(k, m) for k in ("forward", "backward")
                                        for m in range(micro)])
        assert all(order.index(("forward", m)) < order.index(("backward", m))
                   for m in range(micro))


def _check_dependencies(sim_events: tuple[Event, ...], stages: int, micro: int,
                        sends_f: list[float], sends_b: list[float]) -> None:
    end = {(e.kind, e.stage, e.microbatch): e.end for e in sim_events}
    start = {(e.kind, e.stage, e.microbatch): e.start for e in sim_events}
    eps = 1e-12
    for s in range(stages):
        for m in range(micro):
            if s > 0:
                assert start[("forward", s, m)] >= end[("forward", s - 1, m)] + \
                    sends_f[s - 1] - eps
            assert start[("backward", s, m)] >= end[("forward", s, m)] - eps
            if s < stages - 1:
                assert start[("backward", s, m)] >= end[("backward", s + 1, m)] + \
                    sends_b[s] - eps
        work = sorted((e for e in sim_events if e.stage == s and
                       e.kind in ("forward", "backward")), key=lambda e: e.start)
        assert all(a.end <= b.start + eps for a, b in zip(work, work[1:], strict=False))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_random_stages_respect_every_dependency(schedule: str) -> None:
    rng = random.Random(7)
    for _ in range(40):
        stages, micro = rng.randint(1, 6), rng.randint(1, 7)
        forward = [rng.uniform(0.1, 3) for _ in range(stages)]
        backward = [rng.uniform(0.1, 3) for _ in range(stages)]
        sends_f = [rng.uniform(0, 1) for _ in range(stages - 1)]
        sends_b = [rng.uniform(0, 1) for _ in range(stages - 1)]
        reduce = [rng.uniform(0, 1) for _ in range(stages)]
        sim = simulate(schedule, forward, backward, micro, sends_f, sends_b, reduce)
        _check_dependencies(sim.events, stages, micro, sends_f, sends_b)
        # No stage finishes before its own work could, nor the step before its slowest.
        assert sim.step >= max(micro * (f + b) + r for f, b, r in
                               zip(forward, backward, reduce, strict=True)) * (1 - 1e-12)
        assert 0.0 <= sim.bubble < 1.0
        # Fixed orders with as-early-as-possible starts are monotone: shrinking a
        # stage's work never makes the step longer.
        faster = simulate(schedule, [f / 2 for f in forward], backward, micro,
                          sends_f, sends_b, reduce)
        assert faster.step <= sim.step + 1e-12
        # The search's step without events is the same float.
        assert step_time(schedule, forward, backward, micro, sends_f, sends_b,
                         reduce) == sim.step
        # Stopped early (inf) or not, a step of at least `beat` is reported as such.
        assert step_time(schedule, forward, backward, micro, sends_f, sends_b, reduce,
                         beat=sim.step) >= sim.step
        assert step_time(schedule, forward, backward, micro, sends_f, sends_b, reduce,
                         beat=sim.step / 2) == math.inf
        assert step_time(schedule, forward, backward, micro, sends_f, sends_b, reduce,
                         beat=sim.step * (1 + 1e-9)) == sim.step


def test_one_stage_is_sequential_training() -> None:
    for schedule in SCHEDULES:
        sim = simulate(schedule, [1.5], [2.5], 4, allreduce=[0.75])
        assert sim.step == pytest.approx(4 * 4.0 + 0.75)
        assert sim.bubble == 0.0


def test_transfers_delay_the_next_stage() -> None:
    sim = simulate("gpipe", [1.0, 1.0], [1.0, 1.0], 1, [0.5], [0.25])
    assert sim.step == pytest.approx(1 + 0.5 + 1 + 1 + 0.25 + 1)
    kinds = [(e.kind, e.stage) for e in sim.events if e.kind.startswith("send")]
    assert kinds == [("send-forward", 0), ("send-backward", 1)]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown schedule 'zigzag'"):
        stage_order("zigzag", 2, 2, 0)
    with pytest.raises(ValueError, match="2 stages need"):
        simulate("1f1b", [1.0, 1.0], [1.0], 2)
