"""`capped_whole`'s Lagrangian bounds under a memory cap started warm: each range's
LARAC from the neighbouring range's best λ (`warm_larac`) ends at the same bound as
LARAC from λ = 0 (`least.larac_bound`), below the capped optimum, in fewer DP solves,
and the walk it bounds finds the same plan."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from stage_plans import GPT_TRAINING, partitioner, random_source

from pase.frontend import parse_file
from pase.passes.strategy import build_problem, memory, solve
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.memory import memory_vectors, solve_capped, strategy_memory
from pase.passes.strategy.pipeline import capped_whole, least
from pase.passes.strategy.pipeline.capped_whole import warm_larac
from pase.passes.strategy.pipeline.least import larac_bound
from pase.passes.strategy.pipeline.plan import PipelinePlan
from tests.models.test_generate import generate

SOLVES = 60
"""Enough DP solves for LARAC to end at its best λ on these graphs."""


@pytest.mark.parametrize(("model", "devices"), [("mlp", 8), ("alexnet", 4), ("rnnlm", 4)])
def test_warm_larac_ends_at_larac_bound(model: str, devices: int) -> None:
    # From any λ (the best, below it, far above it), the same best L(λ) as LARAC from
    # λ = 0, and at most the least cost that fits (solve_capped's, proven); where the
    # unconstrained optimum fits, its cost and no λ, as `larac_bound`.
    problem = build_problem(parse_file(f"models/{model}.dnn"), devices=devices)
    budget = MemoryBudget(4 << 30)
    graph = problem.cost_graph(budget)
    weights = memory_vectors(problem)
    least_memory = sum(float(vector.min()) for vector in weights)
    free = strategy_memory(problem, solve(problem).assignment)
    bound_somewhere = False
    for share in (0.1, 0.4, 0.8, 1.0, 1.5):
        cap = least_memory + share * (free - least_memory)
        cold, best = larac_bound(graph, weights, cap, budget, SOLVES)
        optimum = solve_capped(problem, cap, effort=None)
        assert optimum.proven
        assert cold <= optimum.cost * (1 + 1e-9)
        if best is None:
            assert cap >= free
            for start in (1e-12, 1.0, 1e6):
                assert warm_larac(graph, weights, cap, budget, start, SOLVES) == (cold, None)
            continue
        bound_somewhere |= best > 0
        for start in (best, best / 3, best * 3, best * 50):
            warm, rate = warm_larac(graph, weights, cap, budget, start, SOLVES)
            assert warm == pytest.approx(cold, rel=1e-9)
            assert warm <= optimum.cost * (1 + 1e-9)
            assert rate is not None
            assert rate >= 0
    assert bound_somewhere


def test_warm_larac_stops_at_its_reach() -> None:
    # Started at the best λ with a `stop_at` below the bound there: that first L(λ),
    # after one DP solve.
    problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    budget = MemoryBudget(4 << 30)
    graph = problem.cost_graph(budget)
    weights = memory_vectors(problem)
    least_memory = sum(float(vector.min()) for vector in weights)
    free = strategy_memory(problem, solve(problem).assignment)
    cap = (least_memory + free) / 2
    bound, best = larac_bound(graph, weights, cap, budget, SOLVES)
    assert best is not None
    assert best > 0
    warm, rate = warm_larac(graph, weights, cap, budget, best, SOLVES, bound / 2)
    assert (warm, rate) == (pytest.approx(bound, rel=1e-9), best)


def counted_solves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-element count of the DP solves the range bounds make (`priced_least`,
    as `capped_whole` and `least` call it)."""
    count = [0]
    solve_priced = least.priced_least

    def counting(*args: object, **kwargs: object) -> tuple[float, float, float]:
        count[0] += 1
        return solve_priced(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(least, "priced_least", counting)
    monkeypatch.setattr(capped_whole, "priced_least", counting)
    return count


def cold_larac(graph: object, weights: list[np.ndarray], cap: float, budget: MemoryBudget,
               rate: float, solves: int, stop_at: float = math.inf
               ) -> tuple[float, float | None]:
    """`warm_larac` without its start: LARAC from λ = 0, the neighbour's λ ignored."""
    return larac_bound(graph, weights, cap, budget, solves, stop_at)  # type: ignore[arg-type]


def searched_two_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                      ways: tuple[object, object]
                      ) -> tuple[list[PipelinePlan | None], list[int], list[float], float]:
    """An 8-block GPT under a cap that binds, S = 4, M = 8, searched with a step to beat
    (so the ranges are bounded under the cap first, `Partitioner.best`) with
    `capped_whole`'s function `name` each of `ways` in turn: the plans, the DP solves
    of the range bounds, their whole bounds, and the plan's step without the cap."""
    generate().main(["--layers", "8", "--hidden", "256", "--heads", "4", "--sequence",
                     "256", "--vocabulary", "128", "--batch", "16", "-o",
                     str(tmp_path / "gpt.dnn")])
    source = (tmp_path / "gpt.dnn").read_text()
    found, solves, wholes = [], [], []
    free_step = math.inf
    for way in ways:
        plans = partitioner(source, 8, "a100-80gb-dgx", every_cut=False,
                            training=GPT_TRAINING)
        free = plans.best(4, 8, "1f1b")
        assert free is not None
        free_step, cap = free.step, free.memory * 0.7
        monkeypatch.setattr(capped_whole, name, way)
        count = counted_solves(monkeypatch)
        wholes.append(plans.capped_whole(4, 8, "1f1b", cap, free.step * 1.2,
                                         chain=True).whole(4))
        solves.append(count[0])
        monkeypatch.undo()
        found.append(plans.best(4, 8, "1f1b", cap, bound=free.step * 1.2))
    return found, solves, wholes, free_step


def test_warm_started_range_bounds_walk_to_the_same_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same plan, stage for stage, with the ranges' LARAC started warm as cold, in
    # fewer DP solves.
    found, solves, _, free_step = searched_two_ways(tmp_path, monkeypatch, "warm_larac",
                                                    (warm_larac, cold_larac))
    assert found[0] is not None
    assert found[0] == found[1]
    assert found[0].step > free_step  # (the cap binds)
    assert 0 < solves[0] < solves[1]


def test_a_capped_stage_solve_takes_the_unconstrained_one_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A stage whose unconstrained optimum does not fit is solved under the cap with that
    # optimum (`WarmStarts.unconstrained`, solved just before) handed to `solve_capped`:
    # one DP solve fewer than solving it again, the same stage.
    stages = []
    solves = []
    for keep in (True, False):
        plans = partitioner(random_source(1, chain=False), devices=8)
        end = len(plans.layers)
        free = plans.table.free(0, end, 8, 2)
        cap = (free.parameter_bytes + 2 * free.activation_bytes) * 0.8
        if not keep:
            plans.solver.warm.free.clear()
        count = [0]
        solve_graph = memory.solve_graph

        def counting(*args: object, **kwargs: object) -> object:
            count[0] += 1  # noqa: B023 (each loop's own count, used within it)
            return solve_graph(*args, **kwargs)  # type: ignore[arg-type]  # noqa: B023

        monkeypatch.setattr(memory, "solve_graph", counting)
        stage = plans.table.stage(0, end, 8, 2, 2, cap)
        monkeypatch.undo()
        assert stage is not None
        assert stage.parameter_bytes + 2 * stage.activation_bytes <= cap
        stages.append(stage)
        solves.append(count[0])
    assert stages[0] == stages[1]
    assert solves[0] == solves[1] - 1


def every_range(ranges: list[tuple[int, int, int]], bounds: np.ndarray
                ) -> list[tuple[int, int, int]]:
    """`capped_whole.largest` as it was: every range of the cheapest cuts at once."""
    return ranges


def test_the_range_bounds_made_one_at_a_time_walk_to_the_same_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The ranges bounded one at a time, the cheapest cuts' largest first (`largest`):
    # a whole bound at most the plan's step, and the same plan, stage for stage, as
    # with every range of the cheapest cuts bounded at once, in fewer DP solves.
    found, solves, wholes, free_step = searched_two_ways(
        tmp_path, monkeypatch, "largest", (capped_whole.largest, every_range))
    assert found[0] is not None
    assert found[0] == found[1]
    assert found[0].step > free_step  # (the cap binds)
    assert max(wholes) <= found[0].step
    assert 0 < solves[0] < solves[1]


def test_a_range_bound_holding_fewer_micro_batches_serves_holding_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A range's Lagrangian bound holding one micro-batch bounds it holding two (what fits
    # holding two fits holding one): asked with a reach it meets, no DP solve is made and
    # it is returned; with a reach above it, LARAC runs for the range holding two, whose
    # bound stays at most the capped stage's objective (F + B + AR / M, edges in F, B).
    plans = partitioner(Path("models/mlp.dnn").read_text(), 8)
    stop = len(plans.layers)
    free = plans.stage(0, stop, 4, 4, 2)
    assert free is not None
    least_bytes = sum(float((params + 2 * acts).min())
                      for params, acts in plans.layer_bytes(2, 4))
    cap = (least_bytes + free.parameter_bytes + 2 * free.activation_bytes) / 2
    one = plans.capped.objective(0, stop, 4, 4, 1, cap)
    assert math.isfinite(one)
    count = counted_solves(monkeypatch)
    assert plans.capped.objective(0, stop, 4, 4, 2, cap, one) == one
    assert count[0] == 0
    two = plans.capped.objective(0, stop, 4, 4, 2, cap, math.nextafter(one, math.inf))
    assert count[0] > 0
    solved = plans.stage(0, stop, 4, 4, 2, cap)
    assert solved is not None
    assert one <= two <= solved.work + solved.cost.allreduce / 4
