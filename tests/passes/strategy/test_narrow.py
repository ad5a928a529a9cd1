"""The search narrowed by layer costs (`strategy/narrow.py`) returns the whole search's plan
and cost, bit for bit, whether its first guess of the gap holds or not."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from pase.frontend import parse_file
from pase.passes.strategy import SearchOptions, build_problem, exact, narrow, solve
from pase.passes.strategy.narrow import layer_excess, restricted, solve_narrowed
from pase.passes.strategy.narrow_blocks import layer_groups
from pase.passes.strategy.options import TrainingOptions
from pase.passes.strategy.problem import Problem, Solution
from tests.models.test_generate import generate

MODELS = Path(__file__).resolve().parents[3] / "models"


def tiny_gpt(tmp_path: Path, devices: int = 8) -> Problem:
    """Four transformer blocks on `devices` devices of a DGX, with the training step of
    the benchmarks (Adam, bf16, full recomputation, ZeRO-1)."""
    path = tmp_path / "gpt.dnn"
    generate().main(["--layers", "4", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", "128", "--batch", "8", "-o", str(path)])
    training = TrainingOptions(optimizer="adam", precision="bf16", recompute="full", zero="1")
    return build_problem(parse_file(str(path)), devices, "a100-80gb-dgx",
                         options=SearchOptions(training=training))


def model_problem(model: str, tmp_path: Path) -> Problem:
    """The tiny GPT (`tiny_gpt`) or models/mlp.dnn on 8 devices, built afresh."""
    if model == "gpt":
        return tiny_gpt(tmp_path)
    return build_problem(parse_file(str(MODELS / "mlp.dnn")), devices=8)


def counted_solve(rounds: list[int], measure: Callable[[Problem], int]
                  ) -> Callable[[Problem], Solution]:
    """`solve`, noting `measure` of each problem it is given in `rounds`."""
    def counted(narrowed: Problem) -> Solution:
        rounds.append(measure(narrowed))
        return solve(narrowed)

    return counted


def configurations(problem: Problem) -> int:
    return sum(len(configs) for configs in problem.config_lists)


def assert_same_search(narrowed: Solution, whole: Solution) -> None:
    """The same cost, assignment and choice, bit for bit."""
    assert (narrowed.cost, narrowed.assignment) == (whole.cost, whole.assignment)
    assert narrowed.stats is not None
    assert whole.stats is not None
    assert narrowed.stats.choice == whole.stats.choice


@pytest.mark.parametrize("guess", [0.0, 1e-3, math.inf])
@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_narrowed_search_is_the_whole_search(model: str, guess: float,
                                             tmp_path: Path) -> None:
    whole = solve(model_problem(model, tmp_path))
    rounds: list[int] = []
    narrowed = solve_narrowed(model_problem(model, tmp_path),
                              counted_solve(rounds, configurations), guess)
    assert_same_search(narrowed, whole)
    # Each round keeps more than the last (its gap grows, by at most GROWTH times the
    # tables' entries while the last round's optimum is not proven: `narrow._next_gap`).
    assert rounds == sorted(set(rounds))
    if guess == 0.0 and model == "gpt":
        assert len(rounds) >= 2  # the guess failed: a later round proves the optimum
    if guess == math.inf:
        assert rounds == [configurations(model_problem(model, tmp_path))]


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
    narrowed = solve_narrowed(tiny_gpt(tmp_path),
                              counted_solve(rounds, lambda part: len(part.layer_data)),
                              guess, blocks=True)
    assert_same_search(narrowed, whole)
    # Each distinct group solved once (the four blocks alike, in rounds one after another),
    # then the whole: narrowed by the completed strategy (`narrow_ends.py`), certain, where
    # it costs no more than the guess; else as the guess says. With guess 0 no strategy
    # costs the groups' optima (the chain's bound is above them): no DP there, and the
    # round narrowed at the bound plus its lead over them (`narrow_chain.NEAR`) holds the
    # optimum, so it is the one whole DP (two before: a strategy, then a last round).
    blocks = [number for number, layers in enumerate(rounds) if layers == 15]
    assert blocks == list(range(blocks[0], blocks[0] + len(blocks)))  # one group's rounds
    assert rounds[-1] == len(problem.layer_data) == 66
    assert rounds.count(66) == 1


@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_rounds_grown_by_table_entries_are_the_whole_search(
        model: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # With GROWTH 1, a failed round's next gap keeps its tables' entries, or grows by the
    # fewest configurations: more rounds, each certain to keep or raise the gap.
    monkeypatch.setattr(narrow, "GROWTH", 1)

    whole = solve(model_problem(model, tmp_path))
    rounds: list[int] = []
    narrowed = solve_narrowed(model_problem(model, tmp_path),
                              counted_solve(rounds, configurations), 0.0)
    assert_same_search(narrowed, whole)
    assert len(rounds) > 2  # the growth limit held the second round back
    assert rounds == sorted(rounds)
