"""A schedule's step, replayed in straight-line code: `schedule.step_time`'s float, faster.

The stage search simulates every plan its bounds do not prune (`evaluate.assemble`): at
P = 64 under 0.25 GiB the Transformer's S = 8, M = 32 simulates some 77,000 plans, a
sixth of the search's CPU in `schedule.step_time`'s loop. That loop runs each stage's
operations in its order (`stage_order`) as far as their inputs are made, again and again
until all are; which operation it can run next depends only on which are done, never on
the times. So the order in which it runs them is one list per (schedule, S, M), and the
step is a fixed sequence of sums and maxima over it: `replayer` writes that sequence out
once as a Python function of the times (one local per operation's end) and compiles it.
Each operation is computed as `step_time` computes it, the same sums and comparisons in
the same order (ready = the input's end + its send, the later of its own forward and the
gradient for a backward; start = the stage's last end if later, else ready; end = start
+ its time), so the step is the same float, bit for bit; the replay only skips the loop's
bookkeeping (a sixth of the time). It does not stop at a step to beat: its caller
compares the exact step with it, which decides as `step_time`'s early stop does (an
operation ending at `beat` or later makes the step at least `beat`).

    >>> from pase.core.schedule import step_time
    >>> args = ([2.0, 5.0], [6.0, 1.0], 4, [0.5], [0.25], [1.0, 3.0])
    >>> replayer("1f1b", 2, 4)(*args[:2], *args[3:]) == step_time("1f1b", *args)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from pase.core.schedule import stage_order, step_time

Replay = Callable[[Sequence[float], Sequence[float], Sequence[float], Sequence[float],
                   Sequence[float]], float]
"""(forward, backward, send_forward, send_backward, allreduce) -> the step."""

MOST_OPERATIONS = 8192
"""`replayer` writes out schedules of at most this many operations (2 S M); `replayed`
simulates larger ones with `step_time` (their code would take long to compile)."""


def operations(schedule: str, stages: int, microbatches: int
               ) -> list[tuple[int, bool, int, int]]:
    """The operations in the order `step_time` runs them: (stage, whether a forward,
    the operation whose end it waits for (its forward for a backward; -1 for none),
    the gradient's backward it waits for (-1 for none)), as indices into this list."""
    orders = [stage_order(schedule, stages, microbatches, s) for s in range(stages)]
    forward_op = [[-1] * microbatches for _ in range(stages)]
    backward_op = [[-1] * microbatches for _ in range(stages)]
    position = [0] * stages
    ops: list[tuple[int, bool, int, int]] = []
    last = stages - 1
    while len(ops) < 2 * stages * microbatches:
        for s in range(stages):
            order = orders[s]
            while position[s] < len(order):
                kind, m = order[position[s]]
                if kind == "forward":
                    if s > 0 and forward_op[s - 1][m] < 0:
                        break
                    forward_op[s][m] = len(ops)
                    ops.append((s, True, forward_op[s - 1][m] if s > 0 else -1, -1))
                else:
                    if forward_op[s][m] < 0 or (s < last and backward_op[s + 1][m] < 0):
                        break
                    backward_op[s][m] = len(ops)
                    ops.append((s, False, forward_op[s][m],
                                backward_op[s + 1][m] if s < last else -1))
                position[s] += 1
    return ops


@cache
def replayer(schedule: str, stages: int, microbatches: int) -> Replay:
    """The compiled replay of `schedule` on `stages` stages of `microbatches` (module
    docstring), made once."""
    lines = ["def replay(F, B, SF, SB, AR):"]
    latest: list[int | None] = [None] * stages  # each stage's last operation so far
    for i, (s, ahead, waits, gradient) in enumerate(operations(schedule, stages,
                                                               microbatches)):
        if ahead:
            lines.append(f"    r = {'0.0' if waits < 0 else f'e{waits} + SF[{s - 1}]'}")
        elif gradient < 0:
            lines.append(f"    r = e{waits}")
        else:
            lines.append(f"    a = e{gradient} + SB[{s}]")
            lines.append(f"    r = e{waits} if e{waits} >= a else a")
        free = "0.0" if latest[s] is None else f"e{latest[s]}"
        lines.append(f"    e{i} = ({free} if {free} > r else r) + {'F' if ahead else 'B'}[{s}]")
        latest[s] = i
    lines.append("    step = 0.0")
    lines += [f"    step = max(step, e{i} + AR[{s}])" for s, i in enumerate(latest)]
    lines.append("    return step")
    space: dict = {}
    exec(compile("\n".join(lines), f"<replay {schedule} S={stages} M={microbatches}>",
                 "exec"), space)
    return space["replay"]


def replayed(schedule: str, forward: Sequence[float], backward: Sequence[float],
             microbatches: int, send_forward: Sequence[float],
             send_backward: Sequence[float], allreduce: Sequence[float]) -> float:
    """`step_time(schedule, ...)` without a step to beat: the same float, by the
    compiled replay where the schedule has at most `MOST_OPERATIONS` operations."""
    stages = len(forward)
    if 2 * stages * microbatches > MOST_OPERATIONS:
        return step_time(schedule, forward, backward, microbatches, send_forward,
                         send_backward, allreduce)
    return replayer(schedule, stages, microbatches)(forward, backward, send_forward,
                                                    send_backward, allreduce)
