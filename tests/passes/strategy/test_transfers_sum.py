"""`Transfers.transfers` sums each edge that crosses a stage boundary, in the edges' order:
the same floats as the rule written out edge by edge (`bisect` per edge)."""

from __future__ import annotations

import random
from bisect import bisect_right

import pytest
from stage_plans import partitioner, random_source

from pase.passes.strategy.pipeline.transfers import carries_param


@pytest.mark.parametrize("seed", range(4))
def test_the_sums_are_the_rule_edge_by_edge(seed: int) -> None:
    plans = partitioner(random_source(seed, chain=seed % 2 == 0), devices=8)
    rng = random.Random(seed)
    micro = plans.micro(2)
    crossed = 0
    for _ in range(20):
        count = rng.randint(1, min(4, len(plans.cuts) + 1))
        bounds = [0, *sorted(rng.sample(plans.cuts, count - 1))]
        ends = [*bounds[1:], len(plans.layers)]
        solved = [plans.stage(start, stop, 8 // count, 2)
                  for start, stop in zip(bounds, ends, strict=True)]
        send_f, send_b, once = [0.0] * (count - 1), [0.0] * (count - 1), [0.0] * count
        for index, producer, consumer in plans.transfers.spans:
            u, v = bisect_right(bounds, producer) - 1, bisect_right(bounds, consumer) - 1
            if u == v:
                continue
            crossed += 1
            ahead, back = plans.transfers.crossing(index, u, v, solved, micro)
            if carries_param(plans.edges[index]):
                once[v] += ahead
                once[u] += back
            else:
                send_f[v - 1] += ahead
                send_b[v - 1] += back
        assert plans.transfers.transfers(bounds, solved, micro) == (send_f, send_b, once)
    assert crossed > 0
