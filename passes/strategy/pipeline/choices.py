"""The walk's cheap tests on every next cut at once: which cuts it need try.

At each prefix the walk (`walk.Walk.walk`) tries every cut after it as the end of the
next stage, and before it solves that stage it asks three questions of it, none of
which solves anything: can the stage, and the stages after it, fit in the cap at all
(`Walk.cannot_fit`); does the layers' least compute show that every such plan reaches
the best step (`Walk.pruned`); do the segments' (or ranges') bounds show it
(`SegmentBounds.next_stage`). Asked one cut at a time they were most of the walk's
time at 16 and 35 stages (some 200 cuts a prefix, a few of which survive). `Choices`
asks them of every cut at once with numpy, in the same arithmetic (the same sums in
the same order), so that the walk tries only the cuts that pass; it asks each of
those again before solving (`Walk.extend`), at the best step found by then.

Exact: a cut that fails here fails there too. `cannot_fit` does not depend on the
walk's state; the two bounds are compared here with the step to beat when the prefix
is entered, which only decreases while its cuts are tried, and a bound that reaches a
step reaches every smaller one. The comparisons here are made a part in 10^12 weaker
than the walk's (`MARGIN`), so that a rounding in the vector sums could only let a cut
through to the walk's own test, never drop one it would try.

    >>> import numpy as np
    >>> beyond(np.array([1.0, 5.0]), 2.0).tolist()   # a bound of 5 s reaches a 2 s step
    [False, True]
    >>> bool(beyond(np.array([2.0]), 2.0)[0])        # an exact tie is not pruned (SLACK)
    False
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.pipeline.bounds import SLACK, spread

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.walk import Prefix, Walk

MARGIN = 1e-12
"""How much weaker, relative, `Choices`' comparisons are than the walk's own."""


def beyond(steps: np.ndarray, reached: float) -> np.ndarray:
    """Where `steps` (lower bounds on a plan's step) reach `reached` as `Walk.beaten`
    sees it, a part in 10^12 weaker (module docstring)."""
    return steps * (1 - SLACK) >= reached * (1 + MARGIN)


class Choices:
    """The cuts one walk (`walk`) need try after a prefix (`after`)."""

    def __init__(self, walk: Walk):
        self.walk = walk
        plans = walk.plans
        self.cuts = np.asarray(plans.cuts, dtype=np.int64)
        self.cut_list = list(plans.cuts)
        self.least = np.asarray(walk.least, dtype=np.float64)
        """Prefix sums of the layers' least compute (`Walk.least`)."""
        self.spreads = [spread(walk.microbatches, left) for left in range(walk.stages + 1)]
        self.bytes: dict[int, np.ndarray] = {}
        self.fits: list[np.ndarray] = []
        if walk.memory is not None and walk.fitting is not None:
            self.bytes = {held: np.asarray(prefix, dtype=np.float64)
                          for held, prefix in walk.least_bytes.items()}
            self.fits = [np.array([fitting.get(int(cut), False) for cut in self.cuts],
                                  dtype=bool) for fitting in walk.fitting]
        tight = walk.tight
        self.index = None if tight is None else \
            np.array([tight.index[int(cut)] for cut in self.cuts], dtype=np.int64)

    def after(self, prefix: Prefix, index: int, left: int) -> list[int]:
        """The cuts after `prefix`'s last beginning that may end stage `index` (`left`
        stages after it, it included): each that leaves a cut to each later stage, and
        that none of the walk's three tests before a solve rules out."""
        walk = self.walk
        first = int(np.searchsorted(self.cuts, prefix.after, side="right"))
        # `Walk.walk` stops where fewer cuts remain than stages to begin.
        stop = len(self.cuts) - left + 1
        if stop <= first:
            return []
        cuts = self.cuts[first:stop]
        keep = np.ones(len(cuts), dtype=bool)
        if self.fits:
            memory = walk.memory
            assert memory is not None
            sums = self.bytes[walk.held[index]]
            keep &= ~(sums[cuts] - sums[prefix.after] > memory * (1 + 1e-9) * (1 + MARGIN))
            keep &= self.fits[index + 1][first:stop]
        reached = walk.reached()
        done, first_ar = prefix.done, prefix.first
        least = self.least
        work = least[cuts] - least[prefix.after]
        rest = least[walk.last] - least[cuts]
        micro = walk.microbatches
        steps = done + first_ar + np.maximum(micro * work, work + rest * self.spreads[left])
        keep &= ~beyond(steps, reached)
        tight = walk.tight
        if tight is not None and self.index is not None:
            ends = self.index[first:stop]
            keep &= ~beyond(self.next_stage(prefix, left, ends), reached)
            keep &= ~beyond(walk.roundtrip.next_stages(left, prefix.after, ends,
                                                       prefix.chained, prefix.first),
                            reached)
        return [self.cut_list[first + k] for k in np.flatnonzero(keep).tolist()]

    def next_stage(self, prefix: Prefix, stages_after: int, ends: np.ndarray) -> np.ndarray:
        """`SegmentBounds.next_stage(stages_after, prefix.after, end, ...)` for every
        end at position `ends` (the same sums, in the same order)."""
        tight = self.walk.tight
        assert tight is not None
        s = tight.stages - 1 - stages_after
        a = tight.index[prefix.after]
        work = np.maximum(tight.work_at[s, a, ends], 0.0)
        chain = tight.microbatches * work
        own = np.maximum(tight.own_least[s, a, ends], 0.0) + tight.shared[s, a, ends]
        if stages_after:
            chain = np.maximum(chain, work + tight.chain[stages_after, ends])
            own = np.maximum(own, tight.forward[a, ends] + tight.own[stages_after, ends])
        ahead, back = tight.into_forward[s, a, ends], tight.into_backward[s, a, ends]
        first = prefix.first
        if s == 0:
            first = first + (tight.opening[ends] + tight.shared[0, 0, ends])
        return np.maximum(prefix.chained + first + ahead + back + chain,
                          prefix.forward + ahead + own)
