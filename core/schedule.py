"""Synchronous pipeline schedules (GPipe and 1F1B), simulated exactly.

A pipeline of S stages runs M micro-batches per training step. Stage s (0-based) takes
`forward[s]` seconds for one micro-batch's forward and `backward[s]` for its backward;
handing a micro-batch's activations from stage s to s + 1 takes `send_forward[s]` and
handing its gradient back from s + 1 to s takes `send_backward[s]` (the link is not the
stage's compute: a transfer delays its consumer, it does not occupy either stage). After
its last backward, stage s all-reduces its weight gradients once per step
(`allreduce[s]`, which includes the update). The step time is the critical path of that
schedule, found by running it: every operation starts as soon as its stage is free and its
inputs have arrived.

    sim = simulate("1f1b", forward=[1.0, 1.0], backward=[2.0, 2.0], microbatches=4)
    sim.step        # 15.0 = (M + S - 1) * (F + B) for equal stages and free transfers
    sim.bubble      # 0.2 = (S - 1) / (M + S - 1)

Per stage, the order of work is fixed by the schedule (`stage_order`):
- "gpipe": all M forwards, then all M backwards (micro-batch 0 first in both), so every
  stage keeps the activations of all M micro-batches at once.
- "1f1b" (PipeDream-Flush): min(S - 1 - s, M) warm-up forwards, then one forward and one
  backward alternately, then the remaining backwards; stage s keeps at most
  min(S - s, M) micro-batches' activations.

The bubble is the idle share of the stages' compute time before the gradient all-reduce:
1 - sum_s M (F_s + B_s) / (S T), where T is the end of the last backward; with equal stages
and free transfers it is (S - 1) / (M + S - 1) for both schedules.

pase-partition-stages charges `step` and `in_flight`; pase-lower-spmd orders each device's
program by `stage_order` and the start times in `events`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["forward", "backward", "send-forward", "send-backward", "allreduce"]
SCHEDULES = ("1f1b", "gpipe")


@dataclass(frozen=True)
class Event:
    """One operation of the simulated step: on `stage` (for a send, the sending stage),
    for micro-batch `microbatch` (-1 for the all-reduce), from `start` to `end` seconds."""

    stage: int
    kind: Kind
    microbatch: int
    start: float
    end: float


@dataclass(frozen=True)
class Simulation:
    """A simulated step: its time, the bubble fraction, every event in start order,
    and per stage the most micro-batches whose activations are held at once."""

    step: float
    bubble: float
    events: tuple[Event, ...]
    in_flight: tuple[int, ...]


def ideal_bubble(stages: int, microbatches: int) -> float:
    """The bubble of S equal stages and M micro-batches, (S - 1) / (M + S - 1)."""
    return (stages - 1) / (microbatches + stages - 1)


def stage_order(schedule: str, stages: int, microbatches: int,
                stage: int) -> list[tuple[Kind, int]]:
    """Stage `stage`'s work in order: ("forward", m) and ("backward", m) pairs."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule '{schedule}'; use one of {', '.join(SCHEDULES)}")
    if not 0 <= stage < stages or microbatches < 1:
        raise ValueError(f"no stage {stage} of {stages} with {microbatches} micro-batches")
    forward: list[tuple[Kind, int]] = [("forward", m) for m in range(microbatches)]
    backward: list[tuple[Kind, int]] = [("backward", m) for m in range(microbatches)]
    if schedule == "gpipe":
        return forward + backward
    warmup = min(stages - 1 - stage, microbatches)
    order = forward[:warmup]
    for m in range(microbatches - warmup):
        order += [forward[warmup + m], backward[m]]
    return order + backward[microbatches - warmup:]


def in_flight(schedule: str, stages: int, microbatches: int, stage: int) -> int:
    """The most micro-batches whose activations `stage` holds at once under `schedule`
    (a forward keeps them until that micro-batch's backward): M under GPipe, and
    min(S - s, M) under 1F1B (its warm-up forwards and the one before the first
    backward), as `stage_order` runs them."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule '{schedule}'; use one of {', '.join(SCHEDULES)}")
    if not 0 <= stage < stages or microbatches < 1:
        raise ValueError(f"no stage {stage} of {stages} with {microbatches} micro-batches")
    return microbatches if schedule == "gpipe" else min(stages - stage, microbatches)


def step_time(schedule: str, forward: Sequence[float], backward: Sequence[float],
              microbatches: int, send_forward: Sequence[float],
              send_backward: Sequence[float], allreduce: Sequence[float],
              beat: float = math.inf) -> float:
    """`simulate(...).step` without the events: the same sums and maxima in the same
    order, so the same float, at a fraction of the cost (the stage search simulates
    many candidate plans and keeps the events only of the best). It stops, returning
    inf, as soon as an operation ends at `beat` or later (the step cannot be less)."""
    stages = len(forward)
    orders = _orders(schedule, stages, microbatches)
    forward_end = [[-1.0] * microbatches for _ in range(stages)]
    backward_end = [[-1.0] * microbatches for _ in range(stages)]
    position = [0] * stages
    free = [0.0] * stages
    remaining = stages * 2 * microbatches
    last = stages - 1
    while remaining:
        for s in range(stages):
            order = orders[s]
            while position[s] < len(order):
                ahead, m = order[position[s]]
                if ahead:
                    if s == 0:
                        ready = 0.0
                    else:
                        produced = forward_end[s - 1][m]
                        if produced < 0:
                            break
                        ready = produced + send_forward[s - 1]
                    start = free[s] if free[s] > ready else ready
                    free[s] = forward_end[s][m] = start + forward[s]
                    if free[s] >= beat:
                        return math.inf
                else:
                    own = forward_end[s][m]
                    if own < 0:
                        break
                    if s == last:
                        ready = own
                    else:
                        produced = backward_end[s + 1][m]
                        if produced < 0:
                            break
                        arrival = produced + send_backward[s]
                        ready = own if own >= arrival else arrival
                    start = free[s] if free[s] > ready else ready
                    free[s] = backward_end[s][m] = start + backward[s]
                    if free[s] >= beat:
                        return math.inf
                position[s] += 1
                remaining -= 1
    step = 0.0
    for s in range(stages):
        step = max(step, free[s] + allreduce[s])
    return step


_ORDERS: dict[tuple[str, int, int], list[list[tuple[bool, int]]]] = {}


def _orders(schedule: str, stages: int, microbatches: int) -> list[list[tuple[bool, int]]]:
    """Every stage's `stage_order`, as (is a forward, micro-batch) pairs, made once."""
    key = (schedule, stages, microbatches)
    if key not in _ORDERS:
        _ORDERS[key] = [[(kind == "forward", m) for kind, m in
                         stage_order(schedule, stages, microbatches, s)]
                        for s in range(stages)]
    return _ORDERS[key]


def simulate(schedule: str, forward: Sequence[float], backward: Sequence[float],
             microbatches: int, send_forward: Sequence[float] | None = None,
             send_backward: Sequence[float] | None = None,
             allreduce: Sequence[float] | None = None) -> Simulation:
    """Run one step of `schedule` on len(forward) stages (see the module docstring).

    `send_forward` and `send_backward` have one entry per boundary (S - 1); missing
    transfer and all-reduce times are 0. Raises ValueError on inconsistent lengths.
    """
    stages = len(forward)
    sends_f = list(send_forward) if send_forward is not None else [0.0] * (stages - 1)
    sends_b = list(send_backward) if send_backward is not None else [0.0] * (stages - 1)
    reduce = list(allreduce) if allreduce is not None else [0.0] * stages
    if stages < 1 or len(backward) != stages or len(reduce) != stages or \
            len(sends_f) != stages - 1 or len(sends_b) != stages - 1:
        raise ValueError(f"{stages} stages need {stages} forward, backward and all-reduce "
                         f"times and {stages - 1} transfer times per direction")
    orders = [stage_order(schedule, stages, microbatches, s) for s in range(stages)]
    done: dict[tuple[Kind, int, int], float] = {}   # (kind, stage, m) -> its end
    events: list[Event] = []
    position = [0] * stages
    free = [0.0] * stages
    remaining = stages * 2 * microbatches
    while remaining:
        progressed = False
        for s in range(stages):
            while position[s] < len(orders[s]):
                kind, m = orders[s][position[s]]
                ready = _ready(kind, s, m, stages, done, sends_f, sends_b, events)
                if ready is None:
                    break
                start = max(free[s], ready)
                end = start + (forward[s] if kind == "forward" else backward[s])
                events.append(Event(s, kind, m, start, end))
                done[(kind, s, m)] = end
                free[s] = end
                position[s] += 1
                remaining -= 1
                progressed = True
        assert progressed, "a pipeline schedule waits on itself"
    last_backward = max(free)
    step = 0.0
    for s in range(stages):
        events.append(Event(s, "allreduce", -1, free[s], free[s] + reduce[s]))
        step = max(step, free[s] + reduce[s])
    busy = sum(microbatches * (forward[s] + backward[s]) for s in range(stages))
    bubble = 1.0 - busy / (stages * last_backward) if last_backward > 0 else 0.0
    events.sort(key=lambda e: (e.start, e.stage, e.kind, e.microbatch))
    return Simulation(step, max(bubble, 0.0), tuple(events),
                      tuple(in_flight(schedule, stages, microbatches, s)
                            for s in range(stages)))


def _ready(kind: Kind, s: int, m: int, stages: int,
           done: dict[tuple[Kind, int, int], float], sends_f: list[float],
           sends_b: list[float], events: list[Event]) -> float | None:
    """When the inputs of (kind, s, m) have arrived, or None if one is not yet made.
    Records the transfer that brings them as an event, the first time it is asked."""
    if kind == "forward":
        if s == 0:
            return 0.0
        produced = done.get(("forward", s - 1, m))
        if produced is None:
            return None
        return _arrival(events, s - 1, "send-forward", m, produced, sends_f[s - 1], done)
    own = done.get(("forward", s, m))
    if own is None:
        return None
    if s == stages - 1:
        return own
    produced = done.get(("backward", s + 1, m))
    if produced is None:
        return None
    return max(own, _arrival(events, s + 1, "send-backward", m, produced, sends_b[s],
                              done))


def _arrival(events: list[Event], stage: int, kind: Kind, m: int, start: float,
             seconds: float, done: dict[tuple[Kind, int, int], float]) -> float:
    """The end of the transfer `kind` of micro-batch m from `stage`, started at `start`."""
    key = (kind, stage, m)
    if key not in done:
        done[key] = start + seconds
        events.append(Event(stage, kind, m, start, start + seconds))
    return done[key]
