"""Every stage range's least F + B under a memory cap, as each stage index, at once.

The walk's bounds before a stage is solved see a range's F + B through the segments'
(or ranges') unconstrained least costs. Where the cap binds (a GPT of 310B parameters
on 120 devices a stage: every stage's unconstrained configurations need more than
80 GiB), the stage solved under the cap is slower than that by a tenth or more, so the
bounds of the stages after a prefix (`roundtrip.RoundTrip.rest`) see heavy stages as
cheap, and the walk tries every prefix of light stages that a heavy stage later would
have to make up for. `capped_works` gives each range [p_a, p_b), as stage s of S
(holding `in_flight(s)` micro-batches), the Lagrangian lower bound on the F + B of
any configurations of its layers that fit in the cap (`LeastCosts.capped_bound`'s:
max over λ of the sum over its segments of their least F + B + λ memory, less λ cap;
inf where none fit), the stage solver's among them. A range's bound depends only on how
many segments of each structure it holds (the blocks of a transformer), so each
distinct count is bounded once per stage index. Where the segments mostly do not repeat
(fewer than two a structure on average) the ranges' counts are nearly all distinct, each
a Lagrangian hull of its own, and making them costs more than the walk saves (the
Transformer at P = 64 under 0.25 GiB: 128 of its first 150 s of CPU); there the bound is
0 (still a lower bound) and the walk keeps the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pase.core.schedule import in_flight
from pase.passes.strategy.pipeline.hull import lagrangian_bound

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.search import Partitioner


def stage_spans(size: int, stages: int, stage: int) -> tuple[range, int]:
    """The first positions a (of `size`) stage `stage` of `stages` can begin at, and the
    last position index its end can have (each stage holds a segment at least).

        >>> stage_spans(6, 3, 0), stage_spans(6, 3, 1), stage_spans(6, 3, 2)
        ((range(0, 1), 3), (range(1, 4), 4), (range(2, 5), 5))
    """
    last = size - 1
    begins = range(0, 1) if stage == 0 else range(stage, last - (stages - 1 - stage))
    return begins, last - (stages - 1 - stage)


def capped_works(plans: Partitioner, stages: int, microbatches: int, schedule: str,
                 memory: float, positions: tuple[int, ...],
                 wanted: np.ndarray | None = None) -> np.ndarray:
    """[s, a, b]: at least the F + B of layers [p_a, p_b) as stage s under `memory`
    (module docstring; 0 where [p_a, p_b) is no stage s of any plan), for the entries
    `wanted` ([s, a, b], default all) and those an earlier call made (0 elsewhere):
    only the segments' hulls those ranges hold are made."""
    key = (stages, microbatches, schedule, memory)
    found = plans.capped_works.get(key)
    if found is None:
        found = plans.capped_works[key] = CappedWorks.of(plans, stages, microbatches,
                                                         positions)
    return found.made(plans, schedule, memory, wanted)


class CappedWorks:
    """`capped_works`' entries made so far for one (S, M, schedule, cap), and each
    range's segment kinds (which of its structures it holds, how many times)."""

    def __init__(self, kinds: list[tuple], counts: np.ndarray, stages: int,
                 microbatches: int):
        self.kinds = kinds
        self.counts = counts
        """counts[i]: how many segments of each kind lie before position i."""
        self.microbatches = microbatches
        size = len(counts)
        self.works = np.zeros((stages, size, size))
        self.done = np.zeros((stages, size, size), dtype=bool)
        self.bounds: list[dict[tuple[int, ...], float]] = [{} for _ in range(stages)]
        """Per stage index, the bound per count of each kind held."""

    @classmethod
    def of(cls, plans: Partitioner, stages: int, microbatches: int,
           positions: tuple[int, ...]) -> CappedWorks:
        least = plans.least
        group = plans.devices // stages
        signatures: dict[tuple, int] = {}
        ids = []
        for first, last in zip(positions, positions[1:], strict=False):
            ids.append(signatures.setdefault(least.segment_signature(first, last, group,
                                                                     microbatches),
                                             len(signatures)))
        kinds = list(signatures)
        counts = np.zeros((len(positions), len(kinds)), dtype=np.int64)
        for index, kind in enumerate(ids):
            counts[index + 1] = counts[index]
            counts[index + 1, kind] += 1
        works = cls(kinds, counts, stages, microbatches)
        if 2 * len(kinds) > len(positions) - 1:  # (segments that mostly do not repeat)
            works.done[:] = True  # (no bound made: 0)
        return works

    def made(self, plans: Partitioner, schedule: str, memory: float,
             wanted: np.ndarray | None) -> np.ndarray:
        """The works with the `wanted` entries (default all) made."""
        stages, size = len(self.works), len(self.counts)
        least = plans.least
        for stage in range(stages):
            held = in_flight(schedule, stages, self.microbatches, stage)
            bounds = self.bounds[stage]
            begins, end = stage_spans(size, stages, stage)
            for a in begins:
                ends = range(a + 1, end + 1) if stage < stages - 1 else range(end, end + 1)
                for b in ends:
                    if self.done[stage, a, b] or \
                            (wanted is not None and not wanted[stage, a, b]):
                        continue
                    held_counts = tuple((self.counts[b] - self.counts[a]).tolist())
                    bound = bounds.get(held_counts)
                    if bound is None:
                        bound = bounds[held_counts] = lagrangian_bound(
                            [(least.segment_hull(self.kinds[kind], held), count)
                             for kind, count in enumerate(held_counts) if count],
                            memory * (1 + 1e-9))  # (a shade over: stages that just fit)
                    self.works[stage, a, b] = bound
                    self.done[stage, a, b] = True
        return self.works
