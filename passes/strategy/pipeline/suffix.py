"""A bound on a plan's step from its stages after the bottleneck, simulated once for many.

At P = 64 under 0.25 GiB the Transformer's best plan at S = 8, M = 32 has one heavy stage
(the decoder, 141 layers) after six light ones, and tens of thousands of plans split
the light layers otherwise before the same heavy stage and the same last one. Their
steps differ by a few per mille, less than the critical path (`bounds.critical_path`)
misses, so each used to be simulated. But the stages from the bottleneck k on set the
step once micro-batch 0 reaches them: simulated with every stage before k taking no
time at all (and no sends into stage k), they step T_k, and the plan steps at least

    A_k + T_k,    A_k = F_0 + ... + F_{k-1} + the sends forward into stages 1..k,

micro-batch 0's arrival at stage k. (By induction over the operations in the order the
simulation runs them: each operation of stage t of the plan ends at least c_t after the
same one with the stages before k emptied, c_t = F_0 + send_0 + ... + F_t for t < k and
A_k from k on: its inputs come from stages no later in c, its stage's previous
operation was too, and it takes no less time. The plan's step is the largest stage
end plus all-reduce, at least stage k's on.) Everything else only makes T_k smaller:
the sends between stages k.. at their least (`SegmentBounds.into`), the all-reduces
without the moves of shared parameters, the sends forward into 1..k at their least
too. T_k depends on the stages from k on alone, so one simulation serves every plan
that ends alike; `SuffixBounds` simulates a suffix the second time it is asked (once
seen twice, it tends to recur), and prunes the plan before its transfers and its own
simulation are made.

    >>> from pase.core.schedule import step_time
    >>> light, heavy = [1.0, 1.0, 6.0, 2.0], [2.0, 2.0, 12.0, 4.0]
    >>> step = step_time("1f1b", light, heavy, 8, [0.0] * 3, [0.0] * 3, [0.0] * 4)
    >>> emptied = step_time("1f1b", [0.0, 0.0, 6.0, 2.0], [0.0, 0.0, 12.0, 4.0], 8,
    ...                     [0.0] * 3, [0.0] * 3, [0.0] * 4)
    >>> (light[0] + light[1]) + emptied <= step
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from pase.passes.strategy.pipeline.plan import SolvedStage
from pase.passes.strategy.pipeline.replay import replayed


class SuffixBounds:
    """`A_k + T_k` (module docstring) for the plans of one walk (`schedule`, M), each
    suffix simulated once, the second time it is asked."""

    def __init__(self, schedule: str, microbatches: int):
        self.schedule = schedule
        self.microbatches = microbatches
        self.steps: dict[tuple, float] = {}
        """T_k per (k, the suffix's stage beginnings)."""
        self.seen: set[tuple] = set()
        """The suffixes asked once (not simulated yet)."""

    def bound(self, bounds: Sequence[int], solved: Sequence[SolvedStage],
              ahead: Sequence[float], back: Sequence[float]) -> float:
        """At least the step of the plan of `solved` stages beginning at `bounds`, the
        least sends into stages 1.. being `ahead` forward and `back` backward (0 where
        its suffix is asked the first time: no bound yet)."""
        works = [stage.work for stage in solved]
        k = works.index(max(works))
        if k == 0:
            return 0.0  # (the plain critical path sees a heavy first stage)
        key = (k, *bounds[k:])
        step = self.steps.get(key)
        if step is None:
            if key not in self.seen:
                self.seen.add(key)
                return 0.0
            none = [0.0] * k
            step = self.steps[key] = replayed(
                self.schedule, none + [stage.cost.forward for stage in solved[k:]],
                none + [stage.cost.backward for stage in solved[k:]], self.microbatches,
                none + list(ahead[k:]), none + list(back[k:]),
                none + [stage.cost.allreduce for stage in solved[k:]])
        arrival = sum(stage.cost.forward for stage in solved[:k]) + sum(ahead[:k])
        return arrival + step
