"""Lower bounds on a pipeline plan's step from its segments, before its stages are solved.

The stage search (`search.Partitioner.best`, its walk `walk.Walk`) must solve a stage
range (pase's search on its sub-problem) to know its times. It skips ranges and whole
(S, M) with lower bounds on the simulated step, so the tighter they are before solving, the fewer
solves it makes. With w_t = F_t + B_t a stage's seconds per micro-batch (its edges inside
included) and AR_t what it runs once per step, the simulated step of every plan is at
least, for every stage s (docs/cost-model.md, "Pipelines"):

    chain:  w_0 + ... + w_{s-1} + M w_s + AR_0
    own:    F_0 + ... + F_{s-1} + M w_s + AR_s

(stage s starts when micro-batch 0 has gone forward through the stages before it, does
M micro-batches of work, and then either its last gradient goes back to stage 0, which
all-reduces, or it all-reduces itself). Both are sums over stages of quantities that are
themselves least costs of PaSE problems on the stage's layers: w_s is at least the least
F + B of the stage in any configurations, and M w_s + AR_s at least the least
M (F + B) + AR. A least cost is superadditive over disjoint parts of a graph (the
cost of the whole is the parts' costs plus the edges between them, which are never
negative), so the least of a stage is at least the sum of the least of its segments
(the layers between two consecutive cuts). `SegmentBounds` holds those sums as prefix
sums over the cut positions, each segment's least costs found once by pase's DP on the
segment with vertex costs F + B (edges that move a shared parameter left out: they run
once per step) and M (F + B) + AR (every edge once, which is at most what it costs:
M >= 1), and per layer the least forward seconds. The sends between stages delay the
chain too: a stage receives the tensors of the layers before it that its layers read,
each consumer device at least its block under the consumer's most split configuration
(and the gradient's producer device its block under the producer's), over the inter-node
link where the stage at the other end must be on another node (the producer of a tensor
in segment j is in stage j at the latest: each stage holds a segment), else the fastest;
so these depend on the stage's index s. `LeastCosts.range_bounds` puts exact values of
solved stage ranges in place of the segments' sums (`of_ranges`: the same bounds, per
range). Then a small DP over the cut positions gives, for
k stages covering the layers from a position to the end, the least over the choices of
cuts of the largest stage bound: `chain[k][a]` and `own[k][a]`. `rest`, `next_stage` and
`solved_stage` are the bounds the stage walk prunes with.

    >>> import numpy as np
    >>> bounds = SegmentBounds.of([0, 2, 4], forward=[0.0, 1.0, 2.0], work=[0.0, 2.0, 4.0],
    ...                           own=[0.0, 3.0, 6.0], microbatches=2, stages=2)
    >>> float(bounds.chain[2][0]), float(bounds.own[2][0])
    (6.0, 4.0)
    >>> bounds.whole(2), bounds.whole(1)
    (6.0, 8.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from pase.core.schedule import stage_order
from pase.passes.strategy.configs import split_factors
from pase.passes.strategy.vertices import Layer

SLACK = 1e-9
"""Bounds are lowered by this, relative, before they prune: the simulated step adds the
same seconds in another order, so an exact tie must not be pruned by a rounding."""


@dataclass(frozen=True)
class SegmentBounds:
    """Bounds for S stages of M micro-batches over the positions 0 = p_0 < ... < p_m =
    layers (the cuts). For each stage [p_a, p_b) (entry [a][b] of each matrix; a >= b
    unused): at least its forward seconds per micro-batch (`forward`), its F + B (`work`),
    as stage s its M (F + B) + AR (`own_least`, entry [s][a][b]); as stage s (entry
    [s][a][b]) at least the seconds per micro-batch of the tensors it receives forward
    (`into_forward`) and sends back (`into_backward`) from the stages before it, and the
    seconds it moves once per step of parameters that layers of other stages share with its
    own (`shared`, part of its all-reduce; as stage s, for the links between groups depend
    on where they are); and as the first stage [p_0, p_b), at least its all-reduce
    (`opening[b]`, 0 where unknown). And for k = 1..S stages covering [p_a, p_m) (the last k
    of the S), `chain[k][a]` and `own[k][a]`: the least over the choices of cuts of the
    largest chain (own) bound, counted from the end of the stages before p_a, the
    sends into the stage beginning at p_a included."""

    positions: tuple[int, ...]
    index: dict[int, int]
    forward: np.ndarray
    work: np.ndarray
    own_least: np.ndarray
    into_forward: np.ndarray
    into_backward: np.ndarray
    shared: np.ndarray
    opening: np.ndarray
    microbatches: int
    chain: np.ndarray
    own: np.ndarray
    work_at: np.ndarray
    """At least the F + B per micro-batch of each stage [p_a, p_b) as stage s ([s][a][b];
    under a cap, what fits depends on the micro-batches stage s holds): at least
    `work`, which holds at every s."""
    own_term: np.ndarray
    """Each stage's own bound as the DP `own` takes it ([s][a][b]): `own_least` and the
    moves of shared parameters (`shared`), at least the round trip's with `trips`."""
    chain_term: np.ndarray
    """Each stage's chain bound as the DP `chain` takes it ([s][a][b]): M `work_at`, at
    least the round trip's with `trips`."""
    trips: RoundTrips | None = None
    """The round trips the own and chain bounds see (`RoundTrips`), if any."""

    @classmethod
    def of(cls, positions: Sequence[int], forward: Sequence[float], work: Sequence[float],
           own: Sequence[float], microbatches: int, stages: int,
           into_forward: np.ndarray | None = None,
           into_backward: np.ndarray | None = None,
           shared: np.ndarray | None = None) -> SegmentBounds:
        """The bounds of the segments' prefix sums at `positions` (`forward`, `work`,
        `own`: one entry per position, 0 at the first; a stage's bound is the sum over
        its segments) and the sends into each stage (none if not given) for `stages`
        stages of `microbatches`."""
        def ranges(prefix: Sequence[float]) -> np.ndarray:
            sums = np.asarray(prefix, dtype=np.float64)
            return sums[None, :] - sums[:, None]

        return cls.of_ranges(positions, ranges(forward), ranges(work), ranges(own),
                             microbatches, stages, into_forward, into_backward, shared)

    @classmethod
    def of_ranges(cls, positions: Sequence[int], forward: np.ndarray, work: np.ndarray,
                  own: np.ndarray, microbatches: int, stages: int,
                  into_forward: np.ndarray | None = None,
                  into_backward: np.ndarray | None = None,
                  shared: np.ndarray | None = None,
                  opening: np.ndarray | None = None,
                  work_at: np.ndarray | None = None,
                  trips: RoundTrips | None = None) -> SegmentBounds:
        """The bounds of per-stage bounds (class docstring: matrices [a][b], the sends
        [s][a][b]; none if not given) for `stages` stages of `microbatches`. `own` may
        also be given per stage index, [s][a][b] (a range's bound as stage s: under a
        cap, what it holds depends on s), and so may the F + B, `work_at` (`work` at
        every s if not given). With `trips`, each stage's own bound is also at least
        its round trip's (`RoundTrips.own`)."""
        size = len(positions)
        own = np.broadcast_to(own, (stages, size, size))
        per_stage = np.broadcast_to(work if work_at is None else work_at,
                                    (stages, size, size))
        zeros = np.zeros((stages, size, size))
        ahead = zeros if into_forward is None else into_forward
        back = zeros if into_backward is None else into_backward
        moved = zeros if shared is None else shared
        first = np.zeros(size) if opening is None else opening
        # Stage [p_a, p_b) for a < b < m (it is not the last): inf elsewhere.
        inner = np.triu(np.ones((size, size), dtype=bool), 1)
        inner[:, -1] = False
        work_ab = np.where(inner[None], per_stage, np.inf)
        forward_ab = np.where(inner, forward, np.inf)
        # Each stage's own bound, M (F + B) + AR and the moves of shared parameters.
        own_term = own + moved
        # And its chain bound, M (F + B).
        chain_term = microbatches * per_stage
        if trips is not None:
            own_term = np.maximum(own_term, trips.own(own_term, per_stage, microbatches))
            chain_term = np.maximum(chain_term, trips.chain(per_stage, microbatches))
        own_ab = np.where(inner[None], own_term, np.inf)
        chain_ab = np.where(inner[None], chain_term, np.inf)
        chain = np.full((stages + 1, size), np.inf)
        own_dp = np.full((stages + 1, size), np.inf)
        for k in range(1, stages + 1):
            s = stages - k  # the first of the last k stages
            # A chain bound adds the sends into each stage and the first one's all-reduce.
            chain_add = ahead[s] + back[s]
            if s == 0:
                chain_add[0] += first + moved[0][0]
            if k == 1:
                chain[1, :-1] = chain_add[:-1, -1] + chain_term[s][:-1, -1]
                own_dp[1, :-1] = ahead[s][:-1, -1] + own_term[s][:-1, -1]
                continue
            # The first of k stages is [p_a, p_b) for some b < m; k - 1 cover the rest.
            chain[k] = (chain_add + np.maximum(chain_ab[s],
                                               work_ab[s] + chain[k - 1][None, :])
                        ).min(axis=1)
            own_dp[k] = (ahead[s] + np.maximum(own_ab[s],
                                               forward_ab + own_dp[k - 1][None, :])
                         ).min(axis=1)
        return cls(tuple(positions), {p: i for i, p in enumerate(positions)}, forward,
                   work, own, ahead, back, moved, first, microbatches, chain, own_dp,
                   per_stage, own_term, chain_term, trips)

    @property
    def stages(self) -> int:
        return len(self.into_forward)

    def whole(self, stages: int) -> float:
        """A lower bound on the step of every plan with `stages` stages (all of them)."""
        return max(float(self.chain[stages, 0]), float(self.own[stages, 0]))

    def into(self, start: int, stop: int, stage: int) -> tuple[float, float]:
        """At least the forward and backward seconds per micro-batch of the tensors
        stage `stage`, [start, stop), receives from the stages before it."""
        a, b = self.index[start], self.index[stop]
        return float(self.into_forward[stage, a, b]), float(self.into_backward[stage, a, b])

    def moved(self, start: int, stop: int, stage: int) -> float:
        """At least the seconds stage `stage`, [start, stop), moves once per step of
        parameters shared with layers of other stages."""
        return float(self.shared[stage][self.index[start]][self.index[stop]])

    def least_work(self, start: int, stop: int) -> float:
        """At least the F + B per micro-batch of the stage [start, stop) (positions)."""
        return float(self.work[self.index[start]][self.index[stop]])

    def rest(self, stages: int, start: int, done: float, first: float,
             done_forward: float) -> float:
        """A lower bound on the step of every plan whose stages before layer `start` (a
        position) and the sends into them took `done` seconds forward and backward and
        `done_forward` forward per micro-batch, the first stage all-reducing `first`,
        and the last `stages` stages cover the rest."""
        a = self.index[start]
        return max(done + first + float(self.chain[stages, a]),
                   done_forward + float(self.own[stages, a]))

    def next_stage(self, stages_after: int, start: int, stop: int, done: float,
                   first: float, done_forward: float, work: float = 0.0,
                   own: float = 0.0) -> float:
        """`rest` for the plans whose next stage is [start, stop), at its bounds, with
        `stages_after` stages after it (0: it is the last); `work` and `own` are other
        lower bounds on its F + B and M (F + B) + AR (a stage under a memory cap:
        `LeastCosts.capped_least`)."""
        s = self.stages - 1 - stages_after
        a, b = self.index[start], self.index[stop]
        work = max(float(self.work_at[s, a, b]), work)
        chain = self.microbatches * work
        own = max(float(self.own_least[s, a, b]), own) + float(self.shared[s, a, b])
        if stages_after:
            chain = max(chain, work + float(self.chain[stages_after, b]))
            own = max(own, float(self.forward[a, b]) + float(self.own[stages_after, b]))
        ahead, back = float(self.into_forward[s, a, b]), float(self.into_backward[s, a, b])
        if s == 0:
            first += float(self.opening[b] + self.shared[0, 0, b])
        return max(done + first + ahead + back + chain, done_forward + ahead + own)

    def solved_stage(self, stages_after: int, start: int, stop: int, done: float,
                     first: float, done_forward: float, work: float, forward: float,
                     allreduce: float) -> float:
        """`rest` for the plans whose next stage, [start, stop), has been solved: `work`
        F + B and `forward` F per micro-batch, `allreduce` once per step (`first` is the
        first stage's all-reduce, this one's if it is the first, the moves of shared
        parameters not included in either)."""
        s = self.stages - 1 - stages_after
        a, b = self.index[start], self.index[stop]
        moved = float(self.shared[s, a, b])
        chain = self.microbatches * work
        own = self.microbatches * work + allreduce + moved
        if s == 0:
            first += moved
        if stages_after:
            chain = max(chain, work + float(self.chain[stages_after, b]))
            own = max(own, forward + float(self.own[stages_after, b]))
        ahead, back = float(self.into_forward[s, a, b]), float(self.into_backward[s, a, b])
        return max(done + first + ahead + back + chain, done_forward + ahead + own)


@dataclass(frozen=True)
class RoundTrips:
    """Stage s's own bound with micro-batch 0's round trip. Its first backward waits
    until micro-batch 0 has gone forward through it and every stage after it and its
    gradient has come back (R_s, at least the F + B of the stages after it); until then
    it runs only the f_s forwards its schedule puts first (`first`, micro-batch 0's
    included), and (M - f_s) forwards and M backwards follow; then it all-reduces. So
    from micro-batch 0's arrival (the own side's prefix of forwards) it takes at least
    (M - f_s + 1) F_s + M B_s + R_s + AR_s (`critical_path`'s own side). With X_s =
    M (F_s + B_s) + AR_s that is X_s - (f_s - 1) F_s, and F_s = w_s - B_s with
    w_s <= X_s / M (AR_s >= 0), so it is at least

        (M - f_s + 1) / M X_s + (f_s - 1) B_s + R_s,

    increasing in X_s, B_s and R_s, so their lower bounds give one: X_s's is the own
    bound (`own_least` and `shared`), B_s's the least backward of the range's layers
    (`backward`, [a][b]: `roundtrip.least_backward`'s), and R_s's the least sum over
    the cuts of the F + B of the stages after it (`after`: `work_at`, so the cap's).
    The own DP takes the larger of the two per stage: the walk's chain side sees the
    round trip (`roundtrip.RoundTrip`), and this gives the own side, all-reduces
    included, the same. Below, two stages of M = 4 (1F1B: f = 2, 1): stage 0 with F 2,
    B 4 and AR 4, stage 1 with F 1, B 5: stage 0's own bound is 4 (6) + 4 = 28, its
    round trip's (4 - 2 + 1) / 4 (28) + 4 + 6 = 31, the chain's w_0 + M w_1 = 30:

        >>> from pase.core.schedule import simulate
        >>> trips = RoundTrips((2, 1), np.array([[0.0, 4.0, 9.0], [0.0, 0.0, 5.0],
        ...                                       [0.0, 0.0, 0.0]]))
        >>> work = np.array([[0.0, 6.0, 12.0], [0.0, 0.0, 6.0], [0.0, 0.0, 0.0]])
        >>> forward = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
        >>> own = 4 * work + np.array([[0.0, 4.0, 4.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> plain = SegmentBounds.of_ranges([0, 1, 2], forward, work, own, 4, 2)
        >>> seen = SegmentBounds.of_ranges([0, 1, 2], forward, work, own, 4, 2,
        ...                                trips=trips)
        >>> float(plain.own[2][0]), plain.whole(2), float(seen.own[2][0]), seen.whole(2)
        (28.0, 30.0, 31.0, 31.0)
        >>> simulate("1f1b", [2.0, 1.0], [4.0, 5.0], 4, [0.0], [0.0], [4.0, 0.0]).step
        34.0
    """

    first: tuple[int, ...]
    backward: np.ndarray
    least: np.ndarray | None = None
    """[s][a][b], where known: a lower bound on (M - f_s + 1) F + M B + AR of the stage
    [p_a, p_b) as stage s itself (`capped_whole.CappedWhole.trip`: a Lagrangian bound
    of that objective over the configurations that fit; 0 where not made), which with
    R_s bounds the round trip directly, where the formula above bounds F_s by X_s / M
    less B_s's least."""

    def own(self, own: np.ndarray, work_at: np.ndarray, microbatches: int) -> np.ndarray:
        """[s][a][b]: the round trip's bound on the stage [p_a, p_b) as stage s whose
        own bound is `own` [s][a][b], its F + B `work_at`, from micro-batch 0's
        arrival (inf where the stages after it cannot cover the rest)."""
        scale = np.array([(microbatches - forwards + 1) / microbatches
                          for forwards in self.first])
        trip = scale[:, None, None] * own + self.waits(work_at)
        if self.least is None:
            return trip
        return np.maximum(trip, self.least + self.after(work_at)[:, None, :])

    def chain(self, work_at: np.ndarray, microbatches: int) -> np.ndarray:
        """[s][a][b]: the round trip's bound on the chain's part of the stage [p_a, p_b)
        as stage s, its F + B `work_at`: (M - f_s + 1) F_s + M B_s + R_s, which is
        (M - f_s + 1) w_s + (f_s - 1) B_s + R_s (`roundtrip.RoundTrip`'s, whose walk
        prunes with it; the chain DP takes it too)."""
        runs = np.array([microbatches - forwards + 1 for forwards in self.first])
        return runs[:, None, None] * work_at + self.waits(work_at)

    def waits(self, work_at: np.ndarray) -> np.ndarray:
        """[s][a][b]: (f_s - 1) B + R_s of the stage [p_a, p_b) as stage s, at their
        bounds (`backward`, `after`)."""
        after = self.after(work_at)
        return np.stack([(forwards - 1) * self.backward + after[s][None, :]
                         for s, forwards in enumerate(self.first)])

    @staticmethod
    def after(work_at: np.ndarray) -> np.ndarray:
        """[s][b]: the least over the cuts of the F + B (`work_at`, [t][a][b]) of the
        stages after stage s covering [p_b, end), each holding a segment at least (0
        for the last stage at the end; inf where they cannot).

            >>> work = np.zeros((2, 3, 3)) + np.array([[0.0, 1.0, 5.0], [0.0, 0.0, 3.0],
            ...                                          [0.0, 0.0, 0.0]])
            >>> RoundTrips.after(work).tolist()
            [[5.0, 3.0, inf], [inf, inf, 0.0]]
        """
        stages, size = work_at.shape[0], work_at.shape[1]
        upper = np.triu(np.ones((size, size), dtype=bool), 1)
        rest = np.full(size, np.inf)
        rest[-1] = 0.0
        after = np.full((stages, size), np.inf)
        after[stages - 1] = rest
        for t in range(stages - 1, 0, -1):  # stage t covers [p_b, p_c), then the rest
            rest = np.where(upper, work_at[t] + rest[None, :], np.inf).min(axis=1)
            after[t - 1] = rest
        return after


def spread(microbatches: int, stages: int) -> float:
    """The least max_s (w_0 + ... + w_{s-1} + M w_s) over work split into `stages`
    parts, per unit of work: 1 / (1 - (1 - 1/M)^r) (the weighted sum with weights
    (1 - 1/M)^(r-1-s) gives it; equal at w_s proportional to (1 - 1/M)^s).

        >>> spread(1, 4), spread(4, 1)
        (1.0, 4.0)
    """
    if stages < 1:
        return 0.0
    return 1.0 / (1.0 - (1.0 - 1.0 / microbatches) ** stages)


def most_devices(layer: Layer, devices: int, min_shard: int, batch: str | None) -> int:
    """The most devices any configuration of `layer` in pase's space on `devices`
    devices works on (the data-parallel configuration included)."""
    products = {1}
    for dim in layer.space.splittable:
        factors = split_factors(dim.size, devices, min_shard)
        products = {p * f for p in products for f in factors if p * f <= devices}
    most = max(products)
    if batch is not None and batch in layer.space.names and \
            layer.space.dim(batch).splittable:
        most = max(most, max(split_factors(layer.space.dim(batch).size, devices, 1)))
    return most


def possible(a: int, b: int, size: int, stages: int) -> bool:
    """Whether [p_a, p_b) of `size` positions is a stage of some plan of `stages`
    stages: the first begins at p_0, the last ends at p_{size - 1}, and every stage
    holds at least one segment."""
    last = size - 1
    if stages == 1:
        return a == 0 and b == last
    if b == last:
        return a >= stages - 1
    if a == 0:
        return b <= last - (stages - 1)
    # As stage s, 1 <= s <= S - 2: s <= a, and S - 1 - s stages after b.
    return max(1, b - last + stages - 1) <= min(a, stages - 2)


def critical_path(forward: Sequence[float], backward: Sequence[float], microbatches: int,
                   send_forward: Sequence[float], send_backward: Sequence[float],
                   allreduce: Sequence[float], schedule: str | None = None) -> float:
    """A lower bound on the simulated step (module docstring) with the transfers: stage
    s starts when micro-batch 0 arrives, works M (F_s + B_s), and its last gradient goes
    back to stage 0 before that all-reduces; or stage s all-reduces itself.

    With `schedule`, stage s's work also waits for micro-batch 0's round trip: its first
    backward cannot start before micro-batch 0 has gone forward through it and every
    stage after it and its gradient has come back (R_s: their F + B and the sends
    between them, `roundtrip.RoundTrip`'s on solved stages), and after that backward the
    stage still runs its other M - 1 backwards and the M - f_s forwards its order
    (`stage_order`) puts after it, f_s those before it. So it ends at least
    (M - f_s + 1) F_s + M B_s + R_s after micro-batch 0 arrives, where the stage after
    it is slower than its warm-up forwards (the whole step when it is the bottleneck:
    the simulation waits so too). Below, stage 0 of two, after its first forward, waits
    5 + 1 for the second's round trip, in which it runs only one more forward:

        >>> from pase.core.schedule import simulate
        >>> args = ([2.0, 5.0], [6.0, 1.0], 4, [0.0], [0.0], [0.0, 0.0])
        >>> critical_path(*args), critical_path(*args, schedule="1f1b")
        (32.0, 36.0)
        >>> simulate("1f1b", *args[:3]).step
        36.0
    """
    stages = len(forward)
    first = _forwards_first(schedule, stages, microbatches) if schedule is not None \
        else (microbatches,) * stages
    trip = [0.0] * stages  # R_s (none counted without the schedule)
    for s in reversed(range(stages - 1) if schedule is not None else ()):
        trip[s] = trip[s + 1] + send_forward[s] + forward[s + 1] + backward[s + 1] \
            + send_backward[s]
    bound = arrival = back = 0.0
    for s in range(stages):
        end = arrival + max(microbatches * (forward[s] + backward[s]),
                            (microbatches - first[s] + 1) * forward[s] + trip[s]
                            + microbatches * backward[s])
        bound = max(bound, end + back + allreduce[0], end + allreduce[s])
        if s + 1 < len(forward):
            arrival += forward[s] + send_forward[s]
            back += backward[s] + send_backward[s]
    return bound


@cache
def _forwards_first(schedule: str, stages: int, microbatches: int) -> tuple[int, ...]:
    """Per stage, the forwards its `stage_order` runs before its first backward
    (micro-batch 0's included)."""
    return tuple(stage_order(schedule, stages, microbatches, s).index(("backward", 0))
                 for s in range(stages))
