"""A bound on the step that sees the stages after a stage: micro-batch 0's round trip.

The walk's chain bound (`bounds`: w_0 + ... + w_{s-1} + M w_s + AR_0) counts the
stages before stage s and none after it. With many stages and few micro-batches per
stage that misses much: at 35 stages of 280 micro-batches a stage a tenth heavier than
the others passes it, though its plans step a tenth slower, so the walk tries every
mix of heavier and lighter stages. Stage s cannot start its first backward before
micro-batch 0 has gone forward through it and every stage after it and its gradient
has come back (R_s: their F + B and the sends between them); until then it can only
run the forwards its schedule puts before that backward (`stage_order`: f_s of them,
micro-batch 0's included), and everything after it in its order, (M - f_s) forwards
and M backwards, follows. Then the last gradient goes back to stage 0, which
all-reduces. So every plan steps at least

    sum_{t<s} (F_t + B_t + sends) + (M - f_s + 1) F_s + M B_s + R_s + AR_0,

for every s: the chain bound with (f_s - 1) F_s taken off and R_s added, which is
larger wherever the stages after s do more than s's warm-up forwards. R_s is at least
the segments' least F + B over the layers after the stage (`LeastCosts.segment_bounds`:
a sum of stages' F + B is at least the sum of their segments' least). `RoundTrip.solved`
gives it for a stage just solved (its F and B known), where `walk.Walk.extend` prunes.

    >>> from pase.core.schedule import simulate
    >>> forward, backward = [2.0, 1.0, 1.0], [4.0, 2.0, 2.0]  # stage 0 twice the others
    >>> f = forwards_first("1f1b", 3, 4)
    >>> f
    [3, 2, 1]
    >>> chain = 4 * (forward[0] + backward[0])  # its chain bound, the largest of the three
    >>> trip = (4 - f[0] + 1) * forward[0] + 4 * backward[0] + (1.0 + 2.0 + 1.0 + 2.0)
    >>> chain, trip, simulate("1f1b", forward, backward, 4).step
    (24.0, 26.0, 26.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pase.core.schedule import stage_order
from pase.passes.strategy.pipeline.plan import SolvedStage

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.walk import Walk


def forwards_first(schedule: str, stages: int, microbatches: int) -> list[int]:
    """Per stage, the forwards its order (`stage_order`) runs before its first
    backward (micro-batch 0's forward included)."""
    return [stage_order(schedule, stages, microbatches, s).index(("backward", 0))
            for s in range(stages)]


class RoundTrip:
    """The round-trip bound (module docstring) for one walk's stages."""

    def __init__(self, walk: Walk):
        self.microbatches = walk.microbatches
        self.first = forwards_first(walk.schedule, walk.stages, walk.microbatches)
        segments = walk.plans.least.segment_bounds(walk.stages, walk.microbatches)
        last = len(segments.positions) - 1
        self.after = {position: float(segments.work[a, last]) if a < last else 0.0
                      for position, a in segments.index.items()}
        """Per position, at least the F + B of the layers after it, whatever the stages."""

    def solved(self, index: int, stop: int, stage: SolvedStage, before: float) -> float:
        """At least the step of every plan whose stage `index`, ending at `stop`, is
        `stage`, where `before` is at least the F + B and sends of the stages before
        it, the sends into it and stage 0's all-reduce (`Walk.extend`'s chain)."""
        micro = self.microbatches
        return before + (micro - self.first[index] + 1) * stage.cost.forward \
            + micro * stage.cost.backward + self.after[stop]
