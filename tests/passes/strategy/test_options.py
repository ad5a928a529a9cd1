"""The Python API's training step (`TrainingOptions`) given bad values: one ValueError
each, whose message names the value and what is allowed (a machine without the
precision's peak when the first cost is priced, the rest when the problem is built)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.frontend import parse_file
from pase.passes.strategy import Problem, SearchOptions, TrainingOptions, build_problem, solve

ROOT = Path(__file__).resolve().parents[3]


def problem_of(training: TrainingOptions, devices: int = 8,
               source: Path = ROOT / "models" / "mlp.dnn") -> Problem:
    options = SearchOptions(training=training)
    return build_problem(parse_file(str(source)), devices, options=options)


@pytest.mark.parametrize(("training", "message"), [
    (TrainingOptions(optimizer="lamb"), "unknown optimizer 'lamb'; use sgd, momentum or adam"),
    (TrainingOptions(precision="fp8"), "unknown precision 'fp8'; use fp32, bf16 or fp16"),
    (TrainingOptions(recompute="some"), "unknown recompute 'some'; use none, full or auto"),
    (TrainingOptions(zero="4"), "unknown zero '4'; use 0, 1, 2, 3 or auto"),
    (TrainingOptions(data_parallel=0), "data-parallel must be at least 1, got 0"),
    (TrainingOptions(data_parallel=3), "data-parallel=3 does not divide the 8 devices"),
    (TrainingOptions(precision="bf16"), "machine 'pase-default' has no bf16 peak")])
def test_a_bad_training_step_is_one_value_error(training: TrainingOptions,
                                                message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        solve(problem_of(training), SearchOptions(training=training))


def test_data_parallel_must_divide_the_batch(tmp_path: Path) -> None:
    source = tmp_path / "six.dnn"  # models/mlp.dnn with a batch of 6
    source.write_text((ROOT / "models" / "mlp.dnn").read_text().replace("b = 64", "b = 6"))
    with pytest.raises(ValueError, match=r"^layer 'h': data-parallel=4 does not divide its "
                                         r"batch b = 6$"):
        problem_of(TrainingOptions(data_parallel=4), 4, source=source)


def test_a_zero_stage_given_as_an_integer_is_that_stage() -> None:
    """As "training" in a strategy file writes it (was: "unknown zero '1'")."""
    assert TrainingOptions(zero=1) == TrainingOptions(zero="1")  # type: ignore[arg-type]
    as_json = TrainingOptions(optimizer="adam", zero="1").json()
    assert TrainingOptions(**as_json) == TrainingOptions(optimizer="adam", zero="1")  # type: ignore[arg-type]
    training = TrainingOptions(optimizer="adam", zero=1)  # type: ignore[arg-type]
    assignment = solve(problem_of(training), SearchOptions(training=training)).assignment
    assert {getattr(config, "zero", None) for config in assignment.values()} <= {0, 1}
