"""The bound from a plan's stages after its bottleneck (`pipeline.suffix`): never above
the simulated step, and the walk finds the same plans with it, simulating fewer."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from stage_plans import partitioner, random_source

from pase.core.schedule import SCHEDULES, step_time
from pase.passes.strategy.pipeline import evaluate, suffix
from pase.passes.strategy.pipeline.plan import SolvedStage, StageCost
from pase.passes.strategy.pipeline.suffix import SuffixBounds
from pase.passes.strategy.pipeline.walk import Walk


def stage(forward: float, backward: float, allreduce: float) -> SolvedStage:
    return SolvedStage({}, StageCost(forward, backward, allreduce), 0.0, 0.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_never_above_the_simulated_step(schedule: str) -> None:
    rng = random.Random(7)
    tight = 0
    for _ in range(3000):
        stages, micro = rng.randint(2, 6), rng.choice([1, 2, 3, 4, 8, 16])
        heavy = rng.randrange(stages)
        forward = [rng.random() * (20.0 if s == heavy else 1.0) for s in range(stages)]
        backward = [2 * f * rng.random() for f in forward]
        ahead = [rng.random() * 0.3 for _ in range(stages - 1)]
        back = [rng.random() * 0.3 for _ in range(stages - 1)]
        allreduce = [rng.random() for _ in range(stages)]
        step = step_time(schedule, forward, backward, micro, ahead, back, allreduce)
        bounds = SuffixBounds(schedule, micro)
        solved = [stage(*times) for times in zip(forward, backward, allreduce, strict=True)]
        starts = list(range(stages))
        assert bounds.bound(starts, solved, ahead, back) == 0.0  # (the first time)
        found = bounds.bound(starts, solved, ahead, back)
        assert found <= step * (1 + 1e-12)
        tight += found >= step * (1 - 1e-9)
    assert tight > 100  # (the bound is the step itself on many plans)


def heavy_late(light: int) -> str:
    """A chain of `light` light blocks, a block 16 times wider, then a light one."""
    lines = ["graph @c(b = 64, d = 256, f = 256, e = 4096) {", "  %x0 = input [b, d]"]
    for i in range(light + 2):
        wide = "e" if i == light else "f"
        lines += [f"  %w{i} = param [d, {wide}]",
                  f"  %y{i} = einsum %x{i}, %w{i} -> [b, {wide}]",
                  f"  %v{i} = param [{wide}, d]",
                  f"  %x{i + 1} = einsum %y{i}, %v{i} -> [b, d]"]
    return "\n".join([*lines, f"  return %x{light + 2}", "}"]) + "\n"


@pytest.mark.parametrize(("source", "micro"), [(heavy_late(8), [4, 8, 16]),
                                             (random_source(0, chain=True), [2, 4, 8]),
                                             (random_source(1, chain=False), [2, 4, 8])])
def test_the_walk_finds_the_same_plans_simulating_fewer(
        source: str, micro: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    simulated = []
    replayed = evaluate.replayed

    def counted(*args: object) -> float:
        simulated.append(1)
        return replayed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "replayed", counted)
    runs = []
    for off in (False, True):
        if off:
            monkeypatch.setattr(suffix.SuffixBounds, "bound", lambda *_: 0.0)
            monkeypatch.setattr(suffix.SuffixBounds, "ahead", lambda *_: 0.0)
        simulated.clear()
        plans = partitioner(source, devices=8)
        found = [plans.search([2, 4, 8], micro, schedule)[0] for schedule in SCHEDULES]
        runs.append((found, len(simulated)))
    (with_bound, fewer), (without, more) = runs
    assert with_bound == without
    assert fewer <= more
    if source.startswith("graph @c("):  # (its plans end in the heavy block and the last)
        assert fewer < more


@pytest.mark.parametrize(("seed", "chain", "share"), [(0, True, None), (1, False, None),
                                                      (2, True, 0.8), (3, False, 0.7)])
def test_a_prefix_bound_never_above_any_plan_after_it(
        seed: int, chain: bool, share: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """`SuffixBounds.ahead` (each prefix's least completion, its stages before the next
    emptied) plus the prefix's forward arrival is at most the step of every plan whose
    next stage begins there, every cut tried; and the search finds the same plans with
    it as without it."""
    asked = []
    ahead = suffix.SuffixBounds.ahead

    def recorded(self: SuffixBounds, walk: Walk, index: int, after: int) -> float:
        value = ahead(self, walk, index, after)
        asked.append((walk, index, after, value))
        return value

    plans = partitioner(random_source(seed, chain), devices=8)
    memory = None
    if share is not None:
        free = plans.best(2, 4, "1f1b")
        assert free is not None
        memory = free.memory * share
    found = []
    for off in (True, False):
        monkeypatch.setattr(suffix.SuffixBounds, "ahead",
                            (lambda *_: 0.0) if off else recorded)
        plans = partitioner(random_source(seed, chain), devices=8)
        found.append([plans.best(stages, micro, schedule, memory)
                      for stages in (2, 4) for micro in (2, 4, 8) for schedule in SCHEDULES])
    assert found[0] == found[1]
    checked = 0
    for walk, index, after, value in asked:
        if not value:
            continue
        tight = walk.tight
        assert tight is not None
        for cuts in combinations(plans.cuts, walk.stages - 1):
            bounds = [0, *cuts]
            if bounds[index] != after:
                continue
            plan = plans.plan_within(bounds, walk.microbatches, walk.schedule, memory)
            if plan is None:
                continue
            ends = [*bounds[1:], walk.last]
            arrival = sum(stage.cost.forward for stage in plan.stages[:index]) + sum(
                tight.into(bounds[s], ends[s], s)[0] for s in range(1, index))
            assert arrival + value <= plan.step * (1 + 1e-12)
            checked += 1
    assert checked > 10
