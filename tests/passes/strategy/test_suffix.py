"""The bound from a plan's stages after its bottleneck (`pipeline.suffix`): never above
the simulated step, and the walk finds the same plans with it, simulating fewer."""

from __future__ import annotations

import random

import pytest
from stage_plans import partitioner, random_source

from pase.core.schedule import SCHEDULES, step_time
from pase.passes.strategy.pipeline import evaluate, suffix
from pase.passes.strategy.pipeline.plan import SolvedStage, StageCost
from pase.passes.strategy.pipeline.suffix import SuffixBounds


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
        simulated.clear()
        plans = partitioner(source, devices=8)
        found = [plans.search([2, 4, 8], micro, schedule)[0] for schedule in SCHEDULES]
        runs.append((found, len(simulated)))
    (with_bound, fewer), (without, more) = runs
    assert with_bound == without
    assert fewer <= more
    if source.startswith("graph @c("):  # (its plans end in the heavy block and the last)
        assert fewer < more
