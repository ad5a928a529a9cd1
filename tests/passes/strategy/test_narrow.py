"""The search narrowed by layer costs (`strategy/narrow.py`) returns the whole search's plan
and cost, bit for bit, whether its first guess of the gap holds or not."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, build_problem, exact, solve
from pase.passes.strategy.edge_prices import EdgePrices
from pase.passes.strategy.narrow import layer_excess, layer_least, restricted, solve_narrowed
from pase.passes.strategy.narrow_blocks import group_problem, layer_groups, star_excess
from pase.passes.strategy.options import TrainingOptions
from pase.passes.strategy.problem import Problem
from tests.models.test_generate import generate

MODELS = Path(__file__).resolve().parents[3] / "models"


def tiny_gpt(tmp_path: Path) -> Problem:
    """Four transformer blocks on 8 devices of a DGX, with the training step of the
    benchmarks (Adam, bf16, full recomputation, ZeRO-1)."""
    path = tmp_path / "gpt.dnn"
    generate().main(["--layers", "4", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", "128", "--batch", "8", "-o", str(path)])
    training = TrainingOptions(optimizer="adam", precision="bf16", recompute="full", zero="1")
    return build_problem(parse_file(str(path)), 8, "a100-80gb-dgx",
                         options=SearchOptions(training=training))


@pytest.mark.parametrize("guess", [0.0, 1e-3, math.inf])
@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_narrowed_search_is_the_whole_search(model: str, guess: float,
                                             tmp_path: Path) -> None:
    def problem() -> Problem:
        if model == "gpt":
            return tiny_gpt(tmp_path)
        return build_problem(parse_file(str(MODELS / "mlp.dnn")), devices=8)

    whole = solve(problem())
    rounds: list[int] = []

    def counted(narrowed: Problem) -> object:
        rounds.append(sum(len(configs) for configs in narrowed.config_lists))
        return solve(narrowed)

    narrowed = solve_narrowed(problem(), counted, guess)  # type: ignore[arg-type]
    assert narrowed.cost == whole.cost
    assert narrowed.assignment == whole.assignment
    assert narrowed.stats is not None
    assert whole.stats is not None
    assert narrowed.stats.choice == whole.stats.choice
    assert rounds == sorted(rounds)  # each round's gap at least the last one's
    if guess == 0.0 and model == "gpt":
        assert len(rounds) == 2  # the guess failed: the second round proves the optimum
    if guess == math.inf:
        assert rounds == [sum(len(configs) for configs in problem().config_lists)]


def test_edge_prices_kept_across_rounds_are_fresh_prices(tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    least, excess = layer_excess(problem)
    prices = EdgePrices()
    # Growing, then shrinking: entries priced for new rows and columns, then sliced.
    for gap in (1e-3 * least, 1e-1 * least, 1e-2 * least):
        priced, kept = restricted(problem, excess, gap, prices)
        fresh, fresh_kept = restricted(problem, excess, gap)
        assert [k.tolist() for k in kept] == [k.tolist() for k in fresh_kept]
        for number in range(len(problem.edges)):
            assert np.array_equal(priced.edge_table(number), fresh.edge_table(number))


def test_narrowing_drops_configurations_and_matches_brute_force() -> None:
    problem = build_problem(parse_file(str(MODELS / "mlp.dnn")), devices=8)
    least, excess = layer_excess(problem)
    whole = solve(problem)
    narrowed, kept = restricted(problem, excess, whole.cost - least)
    assert sum(map(len, kept)) < sum(map(len, problem.config_lists))
    assert solve(narrowed, SearchOptions(method="exhaustive")).cost == \
        solve(problem, SearchOptions(method="exhaustive")).cost == whole.cost


def test_solve_narrows_large_problems(monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    whole = solve(problem)
    monkeypatch.setattr(exact, "NARROW_MIN_ENTRIES", 0)
    called: list[bool] = []
    real = exact.solve_narrowed

    def spy(*args: object, **kwargs: object) -> object:
        called.append(True)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(exact, "solve_narrowed", spy)
    narrowed = solve(problem)
    assert called
    assert (narrowed.cost, narrowed.assignment) == (whole.cost, whole.assignment)
    assert solve(problem, SearchOptions(bounding=False)).cost == whole.cost
    assert len(called) == 1  # bounding=False searches the whole problem


@pytest.mark.parametrize("guess", [0.0, 0.1])
def test_narrowing_by_blocks_is_the_whole_search(guess: float, tmp_path: Path) -> None:
    problem = tiny_gpt(tmp_path)
    groups = layer_groups(problem)
    assert groups is not None
    assert [len(group) for group in groups] == [3, 15, 15, 15, 15, 3]  # head, 4 blocks, tail
    whole = solve(problem)  # small enough for the un-narrowed DP
    rounds: list[int] = []

    def counted(narrowed: Problem) -> object:
        rounds.append(len(narrowed.layer_data))
        return solve(narrowed)

    narrowed = solve_narrowed(tiny_gpt(tmp_path), counted, guess, blocks=True)  # type: ignore[arg-type]
    assert (narrowed.cost, narrowed.assignment) == (whole.cost, whole.assignment)
    assert narrowed.stats is not None
    assert whole.stats is not None
    assert narrowed.stats.choice == whole.stats.choice
    # Each distinct group solved once (the four blocks alike; at most two rounds each),
    # then the whole: narrowed as the guess says, and again where that did not hold.
    assert rounds.count(15) <= 2
    assert rounds[-1] == len(problem.layer_data) == 66
    assert rounds.count(66) == (2 if guess == 0.0 else 1)


def test_star_bound_never_passes_a_configurations_least_cost(tmp_path: Path) -> None:
    """`star_excess` raises the layer excesses of a block, and each stays at or below what
    the cheapest strategy of the block with that configuration costs above L_g (found by
    the DP with the layer pinned), so no optimal configuration is ever dropped."""
    problem = tiny_gpt(tmp_path)
    groups = layer_groups(problem)
    assert groups is not None
    part = group_problem(problem, groups[1])
    least, excess = layer_least(part)
    prices = EdgePrices()
    priced, _ = restricted(part, excess, 0.05 * math.fsum(least), prices)  # some entries
    priced.cost_graph()
    raised = star_excess(part, excess, prices)
    assert any(bool((r > e).any()) for r, e in zip(raised, excess, strict=True))
    for layer, (over, configs) in enumerate(zip(raised, part.config_lists, strict=True)):
        assert (over >= excess[layer]).all()
        # The configuration raised the most: where a bound too high would show first.
        for index in [int(np.argmax(over - excess[layer]))] * bool((over > excess[layer]).any()):
            pinned = replace(part, config_lists=[[configs[index]] if i == layer else c
                                                 for i, c in enumerate(part.config_lists)])
            cheapest = solve(pinned).cost - math.fsum(least)
            assert over[index] <= cheapest * (1 + 1e-12)
