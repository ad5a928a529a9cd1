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

import math
from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from pase.passes.strategy.pipeline.plan import SolvedStage
from pase.passes.strategy.pipeline.replay import replayed

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.walk import Walk

COMPLETIONS = 2048
"""`SuffixBounds.ahead` enumerates at most this many completions of a prefix (else no
bound: 0)."""

SPARE = 16384
"""`SuffixBounds.ahead` enumerates at most this many completions in all more than four
times the walk's visits so far (`Walk.visits`), so that its cost stays a share of the
walk's (a long pipeline's many beginnings each have hundreds of completions; one is a
few look-ups and at most one simulation)."""


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
        self.asked: set[tuple[int, int]] = set()
        """The (stage index, beginning) `ahead` was asked once (not made yet)."""
        self.completed: dict[tuple[int, int], tuple[float, int | None]] = {}
        """`ahead`'s bound per (stage index, beginning), and the stage solves made when
        it was (None once every completion's stages were known: final)."""
        self.enumerated = 0
        """The completions `ahead` has enumerated (`SPARE`)."""

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
            step = self.steps[key] = self.emptied(k, solved[k:], ahead[k:], back[k:])
        arrival = sum(stage.cost.forward for stage in solved[:k]) + sum(ahead[:k])
        return arrival + step

    def ahead(self, walk: Walk, index: int, after: int) -> float:
        """At least the step of every plan of `walk` whose stage `index` begins at
        `after`, less F_0 + ... + F_{index-1} and the least sends forward into stages
        1..index-1 (`walk.Prefix.forward`): the least, over every completion (the cuts
        of stages index.. to the end), of the least send forward into stage `index`
        plus T_index, the step with the stages before `index` emptied (module
        docstring: A_k + T_k holds at every k, not only the heaviest stage). A
        completion with a stage that cannot fit has no plan; one with a stage not
        solved yet counts, for T_index, the largest of its stages' round-trip bounds
        (`roundtrip.RoundTrip`: its `trip` for a stage not solved, `solved` for one
        that is; they hold in the emptied schedule as in the plan, micro-batch 0
        arriving at time 0 or later). 0 the first time (index, after) is asked, and
        where the completions are more than `COMPLETIONS` or the walk has not yet
        visited enough prefixes to pay for them (`SPARE`); made again once more stages
        are solved while one was unknown."""
        key = (index, after)
        solves = walk.plans.solver.solves
        found = self.completed.get(key)
        if found is not None and (found[1] is None or found[1] == solves):
            return found[0]
        if found is None and key not in self.asked:
            self.asked.add(key)
            return 0.0
        later = [cut for cut in walk.plans.cuts if cut > after]
        count = math.comb(len(later), walk.stages - 1 - index)
        if count > COMPLETIONS:
            self.completed[key] = (0.0, None)
            return 0.0
        if self.enumerated + count > 4 * walk.visits + SPARE:
            # (Not yet: asked again once the walk has done more; a bound made before
            # stays one.)
            return 0.0 if found is None else found[0]
        self.enumerated += count
        least, complete = math.inf, True
        stages: dict[tuple[int, int, int], tuple[bool, SolvedStage | None]] = {}
        for cuts in combinations(later, walk.stages - 1 - index):
            beginnings = (after, *cuts)
            value, known = self._completion(walk, index, beginnings, stages)
            least, complete = min(least, value), complete and known
        self.completed[key] = (least, None if complete else solves)
        return least

    def _completion(self, walk: Walk, index: int, beginnings: tuple[int, ...],
                    stages: dict[tuple[int, int, int], tuple[bool, SolvedStage | None]]
                    ) -> tuple[float, bool]:
        """`ahead`'s term for stages index.. beginning at `beginnings` (inf where one
        cannot fit), and whether every one of them is known."""
        tight = walk.tight
        assert tight is not None
        table, micro, trip = walk.plans.table, self.microbatches, walk.roundtrip
        ends = (*beginnings[1:], walk.last)
        solved: list[SolvedStage] = []
        least = 0.0  # (where a stage is unknown: at least each stage's own round trip)
        for s, (start, stop) in enumerate(zip(beginnings, ends, strict=True), index):
            at = (s, start, stop)
            if at not in stages:
                stages[at] = table.known(start, stop, walk.group, micro, walk.held[s],
                                         walk.memory)
            known, stage = stages[at]
            if known and stage is None:
                return math.inf, True
            if stage is not None:
                solved.append(stage)
                least = max(least, micro * stage.work, trip.solved(s, stop, stage, 0.0, 0))
            elif trip.trip is not None:
                least = max(least, float(trip.trip[s, tight.index[start], tight.index[stop]]))
            else:
                least = max(least, micro * float(
                    tight.work_at[s, tight.index[start], tight.index[stop]]))
        into = tight.into(beginnings[0], ends[0], index)[0]
        if len(solved) < len(beginnings):
            return into + least, False
        sends = [tight.into(start, stop, s)
                 for s, (start, stop) in enumerate(zip(beginnings[1:], ends[1:],
                                                       strict=True), index + 1)]
        key = (index, *beginnings)
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = self.emptied(index, solved,
                                                  [forward for forward, _ in sends],
                                                  [backward for _, backward in sends])
        return into + step, True

    def emptied(self, k: int, solved: Sequence[SolvedStage], ahead: Sequence[float],
                back: Sequence[float]) -> float:
        """T_k: the step with `solved` as stages k.. and every stage before them empty
        (no time, no sends into 1..k), `ahead` and `back` the sends into k + 1.."""
        none = [0.0] * k
        return replayed(self.schedule, none + [stage.cost.forward for stage in solved],
                        none + [stage.cost.backward for stage in solved], self.microbatches,
                        none + list(ahead), none + list(back),
                        none + [stage.cost.allreduce for stage in solved])

