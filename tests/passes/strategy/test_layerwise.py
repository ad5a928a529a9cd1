"""`Partitioner.layerwise`: each layer's least cost + λ memory bounds a whole (S, M) under a
cap without a DP solve; it never exceeds a stage the solver gives under the cap, and it
prunes an (S, M) before the capped bounds are made."""

from __future__ import annotations

import itertools
import math

import pytest
from stage_plans import partitioner, random_source

from pase.core.schedule import in_flight
from pase.passes.strategy import Partitioner
from pase.passes.strategy.pipeline.bounds import SegmentBounds

SLACK = 1e-12


def capped_partitioner(seed: int, share: float) -> tuple[Partitioner, float]:
    """A random graph's plans on 8 devices and a cap `share` of its best plan's memory."""
    plans = partitioner(random_source(seed, chain=seed % 2 == 0), devices=8)
    free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    assert free is not None
    return plans, free.memory * share


def check_under_cap(plans: Partitioner, bounds: SegmentBounds, stages: int, micro: int,
                    cap: float) -> None:
    """Every stage range as every stage index s (holding its micro-batches), solved
    under the cap: its F + B and M (F + B) + AR are at least `bounds`'; the whole
    (S, M)'s bound is at most its best plan's step (every cut tried)."""
    best = plans.best(stages, micro, "1f1b", cap, "exhaustive")
    if best is not None:
        assert bounds.whole(stages) <= best.step * (1 + SLACK)
    positions = bounds.positions
    group = plans.devices // stages
    for s in range(stages):
        held = in_flight("1f1b", stages, micro, s)
        for a, b in itertools.combinations(range(len(positions)), 2):
            stage = plans.stage(positions[a], positions[b], group, micro, held, cap)
            if stage is None:
                continue
            assert bounds.work_at[s][a][b] <= stage.work * (1 + SLACK)
            assert bounds.own_least[s][a][b] <= \
                (micro * stage.work + stage.cost.allreduce) * (1 + SLACK)


@pytest.mark.parametrize(("seed", "share"), [(0, 0.7), (1, 0.5), (2, 0.7)])
def test_layerwise_bounds_every_stage_solved_under_a_cap(seed: int, share: float) -> None:
    # Every stage range as every stage index s (holding its micro-batches), solved under
    # the cap: its F + B and M (F + B) + AR are at least the bounds; the whole (S, M)'s
    # bound is at most its best plan's step (every cut tried).
    plans, cap = capped_partitioner(seed, share)
    for stages, micro in itertools.product((2, 4), (1, 2, 4)):
        if stages > len(plans.cuts) + 1:
            continue
        check_under_cap(plans, plans.layerwise(stages, micro, "1f1b", cap), stages, micro,
                        cap)


def test_an_s_m_the_layers_alone_prune_is_pruned_before_any_solve(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A step to beat between the segments' bound and the layerwise one: `best` returns
    # no plan before it solves a stage or makes the capped bounds (`capped_whole`), and
    # every plan of that (S, M) under the cap, every cut tried, is indeed no faster.
    pruned = 0
    for seed, share in itertools.product(range(4), (0.5, 0.7)):
        plans, cap = capped_partitioner(seed, share)
        for stages, micro in itertools.product((2, 4), (1, 2, 4)):
            if stages > len(plans.cuts) + 1:
                continue
            layered = plans.layerwise(stages, micro, "1f1b", cap).whole(stages)
            segments = plans.segment_bounds(stages, micro).whole(stages)
            if not math.isfinite(layered) or layered <= segments * (1 + 1e-6):
                continue
            bound = (layered + segments) / 2
            fresh, _ = capped_partitioner(seed, share)
            solves = fresh.solver.solves

            def unmade(*args: object, **kwargs: object) -> None:
                raise AssertionError("the capped bounds were made")

            monkeypatch.setattr(fresh, "capped_whole", unmade)
            assert fresh.best(stages, micro, "1f1b", cap, bound=bound) is None
            assert fresh.solver.solves == solves
            monkeypatch.undo()
            best = plans.best(stages, micro, "1f1b", cap, "exhaustive")
            assert best is None or best.step >= bound
            pruned += 1
    assert pruned > 0


@pytest.mark.parametrize(("seed", "share"), [(0, 0.7), (1, 0.5), (3, 0.6)])
def test_each_segment_alone_bounds_every_stage_solved_under_a_cap(seed: int,
                                                                 share: float) -> None:
    # `Partitioner.segments_alone` (one segment's Lagrangian bound under the cap in place
    # of its unconstrained least): every stage range as every stage index, solved under
    # the cap, costs at least its bound; the whole (S, M)'s bound is at most its best
    # plan's step (every cut tried); and it is at least the layers' own bound.
    plans, cap = capped_partitioner(seed, share)
    raised = 0
    for stages, micro in itertools.product((2, 4), (1, 2, 4)):
        if stages > len(plans.cuts) + 1:
            continue
        layered = plans.layerwise(stages, micro, "1f1b", cap)
        bounds = plans.segments_alone(stages, micro, "1f1b", cap, math.inf, layered)
        assert (bounds.own_least >= layered.own_least).all()
        raised += int((bounds.own_least > layered.own_least * (1 + 1e-9)).sum())
        check_under_cap(plans, bounds, stages, micro, cap)
    assert raised > 0
