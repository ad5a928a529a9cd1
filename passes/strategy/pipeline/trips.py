"""The round trips the own bounds see (`bounds.RoundTrips`) for one (S, M, schedule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.pipeline.bounds import RoundTrips
from pase.passes.strategy.pipeline.roundtrip import forwards_first, least_backward

if TYPE_CHECKING:
    from pase.passes.strategy.pipeline.search import Partitioner


def round_trips(plans: Partitioner, stages: int, microbatches: int,
                schedule: str) -> RoundTrips:
    """`RoundTrips` of `stages` stages of `microbatches` under `schedule` on `plans`'
    cut positions: each stage's warm-up forwards (`roundtrip.forwards_first`) and each
    range's least backward seconds per micro-batch (`roundtrip.least_backward`'s, on
    the devices of a stage)."""
    positions = list(plans.segment_bounds(stages, microbatches).positions)
    backward = np.asarray(least_backward(plans, plans.devices // stages,
                                         microbatches))[positions]
    return RoundTrips(tuple(forwards_first(schedule, stages, microbatches)),
                      np.maximum(backward[None, :] - backward[:, None], 0.0))
