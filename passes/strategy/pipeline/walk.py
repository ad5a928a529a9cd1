"""The branch-and-bound walk over the cuts for one (S, M): `Partitioner.best`'s core.

The walk chooses stage beginnings depth-first, stage by stage, and skips a prefix once a
lower bound on the step of all its plans reaches the best step found (`search`'s module
docstring): the stages so far, the next one alone, the rest spread (`bounds.spread`),
tighter with the segments' or ranges' least costs (`bounds.SegmentBounds`), with micro-batch
0's round trip through the stages after a stage (`roundtrip.RoundTrip`), and under a
cap with the Lagrangian bounds (`least.LeastCosts.capped_bound`), and at a leaf with its
stages from the bottleneck on simulated once for every plan ending alike
(`suffix.SuffixBounds`). The tests before a stage is solved are asked of every next cut
at once (`choices.Choices`). `method="exhaustive"`
walks every choice without pruning. Ties go to the first plan in the walk's order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pase.core.schedule import in_flight
from pase.passes.strategy.memory import BoundReached
from pase.passes.strategy.pipeline.bounds import SLACK, SegmentBounds, critical_path, spread
from pase.passes.strategy.pipeline.choices import Choices
from pase.passes.strategy.pipeline.plan import PipelinePlan, SolvedStage
from pase.passes.strategy.pipeline.roundtrip import RoundTrip
from pase.passes.strategy.pipeline.suffix import SuffixBounds

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.search import Partitioner


def over(least: float, memory: float) -> bool:
    """Whether `least` bytes (a sum of `Partitioner.least_bytes`) exceed `memory` beyond
    any rounding of the sums (a part in 10^9), so that nothing bounded below by them
    fits.

        >>> over(2.0, 1.0), over(1.0 + 1e-12, 1.0)
        (True, False)
    """
    return least > memory * (1 + 1e-9)

LEAF_EFFORT = 5
"""A plan's evaluation (its transfers) counts as this many steps of the walk in `best`'s
`effort`, plus S M / 4 for its simulation. Stage solves count nothing: they are kept
between rounds (counting them made the Transformer re-solve ranges a later plan prunes)."""


class EffortSpent(Exception):
    """`Partitioner.best` used up its `effort` before it finished; `plan` is the best
    plan it met by then (the seed's, or one the walk found; None if none), a plan of
    that (S, M) that fits, though not proven its best."""

    def __init__(self, plan: PipelinePlan | None = None):
        super().__init__()
        self.plan = plan


Enough = Callable[[float], bool] | None


@dataclass
class Prefix:
    """The stages chosen so far: their beginnings (`bounds`; the last begins at
    `after`), `done` seconds of F + B per micro-batch, `chained` with the least sends
    into them (`forward` their F and forward sends), the first all-reducing `first`,
    and (method dp) the stages solved."""

    bounds: list[int]
    after: int
    done: float
    first: float
    chained: float
    forward: float
    solved: list[SolvedStage]


@dataclass
class Walk:
    """One walk of `Partitioner.best` (its arguments as fields) and what it found."""

    plans: Partitioner
    stages: int
    microbatches: int
    schedule: str
    memory: float | None
    method: str
    bound: float
    effort: int | None
    tight: SegmentBounds | None
    best: PipelinePlan | None = None
    visits: int = 0
    group: int = field(init=False)
    least: list[float] = field(init=False)
    last: int = field(init=False)
    capped_bounds: bool = field(init=False)
    fitting: list[dict[int, bool]] | None = field(init=False)
    """Under a cap, `Partitioner.rest_fits`: where the stages after a cut can fit."""
    least_bytes: dict[int, list[float]] = field(init=False)
    held: list[int] = field(init=False)
    """The micro-batches each stage holds at once (`in_flight`)."""
    choices: Choices = field(init=False)
    """The cuts to try after a prefix (`choices.Choices`)."""
    roundtrip: RoundTrip = field(init=False)
    """The bound that sees the stages after a stage solved (`roundtrip.RoundTrip`)."""
    suffixes: SuffixBounds = field(init=False)
    """A plan's stages from its bottleneck on, simulated once (`suffix.SuffixBounds`)."""

    def __post_init__(self) -> None:
        self.held = [in_flight(self.schedule, self.stages, self.microbatches, index)
                     for index in range(self.stages)]
        self.group = self.plans.devices // self.stages
        self.least = self.plans.least.least_compute(self.group, self.microbatches)
        self.last = len(self.plans.layers)
        self.capped_bounds = self.memory is not None and not self.plans.table.free_only
        self.fitting = None
        if self.memory is not None:
            self.fitting = self.plans.rest_fits(self.stages, self.microbatches,
                                                self.schedule, self.memory)
            self.least_bytes = self.plans.least_bytes(self.stages, self.microbatches,
                                                      self.schedule)
        self.choices = Choices(self)
        self.roundtrip = RoundTrip(self)
        self.suffixes = SuffixBounds(self.schedule, self.microbatches)

    def cannot_fit(self, index: int, start: int, stop: int) -> bool:
        """Whether stage `index` = [start, stop), or the stages after it, can fit in
        the cap in no configurations (`Partitioner.rest_fits`): then no plan whose
        stage `index` it is has a stage solution, and it need not be solved."""
        if self.fitting is None or self.memory is None:
            return False
        prefix = self.least_bytes[self.holds(index)]
        return over(prefix[stop] - prefix[start], self.memory) or \
            not self.fitting[index + 1].get(stop, False)

    def reached(self) -> float:
        return self.best.step if self.best is not None else self.bound

    def beaten(self, step: float) -> bool:
        return step * (1 - SLACK) >= self.reached()

    def pruned(self, done: float, first: float, work: float, rest: float, left: int) -> bool:
        """Whether every plan whose stages so far did `done` seconds of work per
        micro-batch (the first's all-reduce `first`), the next `work`, and whose
        remaining `left` stages share at least `rest`, reaches the best step."""
        step = done + first + max(self.microbatches * work,
                                  work + rest * spread(self.microbatches, left))
        return step * (1 - SLACK) >= self.reached()

    def holds(self, index: int) -> int:
        return self.held[index]

    def consider(self, bounds: list[int], prefix: Sequence[SolvedStage] = ()) -> None:
        plan = self.plans.plan_within(bounds, self.microbatches, self.schedule, self.memory,
                                      self.reached(), prefix)
        if plan is None or (self.memory is not None and plan.memory > self.memory):
            return
        if plan.step < self.reached():
            self.best = plan
            if self.roundtrip.waiting:  # (its bounds under the cap, now with a step)
                self.roundtrip = RoundTrip(self)

    def spend(self, steps: int = 1) -> None:
        self.visits += steps
        if self.effort is not None and self.visits > self.effort:
            raise EffortSpent(self.best)
        progress = self.plans.progress
        if progress is not None and self.visits & 1023 < steps:
            progress.message(f"{self.plans.status}: {self.visits:,} choices of cuts")

    def capped_check(self, stages_after: int, start: int, stop: int, done: float,
                     first: float, done_forward: float, index: int) -> tuple[bool, Enough]:
        """For the plans whose next stage, `index`, is [start, stop) (`rest`'s
        arguments, `SegmentBounds.next_stage`): whether they all reach the best step
        if it is solved under the cap, and if not, when its solve may end (`stage`'s
        `enough`: on a bound on its F + B + AR / M). Never pruned where the stage fits
        unconstrained. First with `objective_own`, which costs nothing more, then
        with the stage's Lagrangian bound at one λ (`LeastCosts.stage_bound`: one DP
        solve) on M (F + B) + AR, then with the segments' hulls on F + B
        (`LeastCosts.capped_bound`)."""
        memory, tight, least = self.memory, self.tight, self.plans.least
        assert memory is not None
        assert tight is not None
        if self.reached() == math.inf:
            # Nothing to beat yet: no bound prunes, and the Lagrangian ones cost DP
            # solves on every segment (a stage that fits in no configurations has no
            # solution either way).
            return False, None
        group, micro, holds = self.group, self.microbatches, self.holds(index)
        if self.plans.table.fits(start, stop, group, micro, holds, memory):
            return False, None

        def reaches(work: float, own: float) -> bool:
            return self.beaten(tight.next_stage(stages_after, start, stop, done, first,
                                                done_forward, work, own))

        work = tight.least_work(start, stop)
        own = least.objective_own(start, stop, group, micro, work)
        if reaches(work, own):
            return True, None
        if self.stages > 1:
            # One DP solve: the stage's own Lagrangian bound at a neighbour's λ. (One
            # stage is the whole graph, whose capped solve proves the same bound, heard
            # by `enough`, in the same solves.)
            own = max(own, micro * least.stage_bound(start, stop, group, micro, holds,
                                                     memory))
            if reaches(work, own):
                return True, None
            # The segments' hulls bound F + B alone (each costs DP solves on every
            # distinct segment, shared by the ranges that hold it). (Their bound on
            # M (F + B) + AR never pruned after `stage_bound`'s: not made. One stage is
            # the whole graph, whose hulls no other range shares: its capped solve's own
            # Lagrangian bound, heard by `enough`, comes sooner.)
            work = max(work, least.capped_bound(start, stop, group, micro, holds, memory, 0))
            own = max(own, least.objective_own(start, stop, group, micro, work))
            if reaches(work, own):
                return True, None

        def enough(cost: float) -> bool:  # the solver's F + B + AR / M is at least cost
            return reaches(work, max(own, micro * cost))

        return False, enough

    def solve(self, start: int, stop: int, index: int, stages_after: int,
              prefix: Prefix) -> tuple[bool, SolvedStage | None]:
        """Stage `index` = [start, stop) after `prefix`, unless the capped bounds prune
        it first (then (True, None)) or its capped solve ends early (True, None too);
        (False, None) where it does not fit at all."""
        enough: Enough = None
        if self.tight is not None and self.capped_bounds:
            cut_off, enough = self.capped_check(stages_after, start, stop, prefix.chained,
                                                prefix.first, prefix.forward, index)
            if cut_off:
                return True, None
        try:
            stage = self.plans.table.stage(start, stop, self.group, self.microbatches,
                                           self.holds(index), self.memory, enough)
        except BoundReached:
            return True, None
        return False, stage

    def run(self) -> PipelinePlan | None:
        if self.stages == 1:
            if self.method == "dp" and self.pruned(0.0, 0.0, self.least[self.last], 0.0, 0):
                return None
            if self.tight is not None and self.capped_bounds:
                # (Solved here to end its capped search early; `consider` reuses it.)
                cut_off, stage = self.solve(0, self.last, 0, 0,
                                            Prefix([0], 0, 0.0, 0.0, 0.0, 0.0, []))
                if cut_off:
                    return None
            self.consider([0])
        else:
            self.walk(Prefix([0], 0, 0.0, 0.0, 0.0, 0.0, []))
        return self.best

    def walk(self, prefix: Prefix) -> None:
        """Choose the stages after `prefix`."""
        self.spend()
        if len(prefix.bounds) == self.stages:
            self.leaf(prefix)
            return
        index = len(prefix.bounds) - 1  # the stage [after, cut) about to be chosen
        left = self.stages - len(prefix.bounds)
        tight = self.tight
        if tight is not None and (
                self.beaten(tight.rest(left + 1, prefix.after, prefix.chained,
                                       prefix.first, prefix.forward))
                or self.beaten(self.roundtrip.rest(left + 1, prefix.after, prefix.chained,
                                                   prefix.first))
                or (index and self.method == "dp" and self.beaten(
                    prefix.forward + self.suffixes.ahead(self, index, prefix.after)))):
            return
        if self.method == "dp":
            # (Only the cuts the tests before a solve leave, asked of all at once.)
            for cut in self.choices.after(prefix, index, left):
                following = self.extend(prefix, cut, index, left)
                if following is not None:
                    self.walk(following)
            return
        choices = [c for c in self.plans.cuts if c > prefix.after]
        for k, cut in enumerate(choices):
            if len(choices) - k < left:
                break
            self.walk(Prefix([*prefix.bounds, cut], cut, prefix.done, prefix.first,
                             prefix.chained, prefix.forward, prefix.solved))

    def extend(self, prefix: Prefix, cut: int, index: int, left: int) -> Prefix | None:
        """`prefix` with stage `index` = [after, cut) solved, or None where the bounds
        prune every plan so."""
        after, done, first = prefix.after, prefix.done, prefix.first
        if self.cannot_fit(index, after, cut):
            return None
        tight = self.tight
        rest = self.least[self.last] - self.least[cut]
        if self.pruned(done, first, self.least[cut] - self.least[after], rest, left):
            return None
        if tight is not None and (
                self.beaten(tight.next_stage(left, after, cut, prefix.chained, first,
                                             prefix.forward))
                or self.beaten(self.roundtrip.next_stage(left, after, cut, prefix.chained,
                                                         first))):
            return None
        _, stage = self.solve(after, cut, index, left, prefix)
        if stage is None:
            return None
        ar = stage.cost.allreduce if index == 0 else first
        alone = self.microbatches * stage.work + stage.cost.allreduce
        if alone >= self.reached() or self.pruned(done, ar, stage.work, rest, left):
            return None
        chain, forward = prefix.chained, prefix.forward
        if tight is not None:
            if self.beaten(tight.solved_stage(left, after, cut, prefix.chained, ar,
                                              prefix.forward, stage.work,
                                              stage.cost.forward, stage.cost.allreduce)):
                return None
            if index == 0:  # its moves of shared parameters, once per step
                ar += tight.moved(after, cut, 0)
            ahead, back = tight.into(after, cut, index)
            if self.beaten(self.roundtrip.solved(index, cut, stage,
                                                 prefix.chained + ar + ahead + back, left)):
                return None
            chain = prefix.chained + ahead + back + stage.work
            forward = prefix.forward + ahead + stage.cost.forward
        return Prefix([*prefix.bounds, cut], cut, done + stage.work, ar, chain, forward,
                      [*prefix.solved, stage])

    def leaf(self, prefix: Prefix) -> None:
        """The last stage [after, end) of `prefix`'s plan, and the plan."""
        after, bounds, solved = prefix.after, prefix.bounds, prefix.solved
        tight, last = self.tight, self.last
        if self.method == "dp" and self.pruned(prefix.done, prefix.first,
                                               self.least[last] - self.least[after], 0.0, 0):
            return
        if tight is not None:
            if self.beaten(tight.next_stage(0, after, last, prefix.chained, prefix.first,
                                            prefix.forward)):
                return
            _, stage = self.solve(after, last, len(bounds) - 1, 0, prefix)
            if stage is None or self.beaten(tight.solved_stage(
                    0, after, last, prefix.chained, prefix.first, prefix.forward,
                    stage.work, stage.cost.forward, stage.cost.allreduce)):
                return
            solved = [*solved, stage]
            sends = [tight.into(start, stop, s)
                     for s, (start, stop) in enumerate(
                         zip(bounds[1:], [*bounds[2:], last], strict=True), 1)]
            ahead = [forward for forward, _ in sends]
            back = [backward for _, backward in sends]
            # The stages from the bottleneck on, simulated once for every plan ending
            # alike (`suffix.SuffixBounds`); then the critical path with the least sends;
            # both before the sends themselves and the simulation.
            if self.beaten(self.suffixes.bound(bounds, solved, ahead, back)):
                return
            moves = self.plans.moves(bounds, solved, self.microbatches)
            if self.beaten(critical_path(
                    [p.cost.forward for p in solved], [p.cost.backward for p in solved],
                    self.microbatches, ahead, back,
                    [p.cost.allreduce + moved for p, moved in zip(solved, moves,
                                                                  strict=True)],
                    self.schedule)):
                return
        self.spend(LEAF_EFFORT + self.stages * self.microbatches // 4)  # the simulation
        self.consider(bounds, solved)
