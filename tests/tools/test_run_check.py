"""`pase.tools.run.check`: the tolerance pase-run --check applies, from errors given here.

Whether a real model loses more than 1e-4 to f32 rounding depends on the host's BLAS, so
these tests pick the errors themselves instead of running a model."""

from __future__ import annotations

import numpy as np
import pytest

from pase.tools.run.check import (
    DIVERGED,
    NOT_FINITE_AT_START,
    TrainingReport,
    WordsRow,
    check_problems,
    needs_rounding_reference,
    normwise_error,
    tolerance,
)


def report(element: str = "f32", error: float = 0.0, noise: float = 0.0,
           words: list[WordsRow] | None = None, diverged: bool = False) -> TrainingReport:
    return TrainingReport("g", 4, element, [1.0], [1.0], [error], error, error,
                          words or [], noise, diverged)


def test_f64_tolerance_is_1e_9_whatever_the_noise() -> None:
    assert tolerance("f64") == tolerance("f64", noise=1e-3) == 1e-9


@pytest.mark.parametrize(("noise", "expected"), [
    (0.0, 1e-4), (2e-5, 1e-4), (5e-5, 1e-4), (3e-4, 6e-4), (0.25, 0.5)])
def test_f32_tolerance_is_twice_the_reference_own_rounding_when_that_is_larger(
        noise: float, expected: float) -> None:
    assert tolerance("f32", noise) == pytest.approx(expected)


@pytest.mark.parametrize(("element", "errors", "diverged", "expected"), [
    ("f32", [5e-5, 1e-6], False, False),     # within 1e-4: no extra f64 run
    ("f32", [1e-4], False, False),           # the bound itself passes
    ("f32", [1e-6, 2e-4], False, True),      # any error above 1e-4
    ("f32", [float("nan")], False, True),    # a NaN error is not within the bound
    ("f32", [2e-4], True, False),            # diverged: rounding is not the question
    ("f64", [2e-4], False, False),           # f64 is its own reference
])
def test_the_rounding_reference_runs_only_when_f32_errors_exceed_1e_4(
        element: str, errors: list[float], diverged: bool, expected: bool) -> None:
    assert needs_rounding_reference(element, errors, diverged) is expected


def test_a_deep_model_passes_within_twice_its_own_rounding() -> None:
    # 3e-4 off the 1-device run, which f32 rounding alone moves by 2e-4: within 4e-4.
    assert report(error=3e-4, noise=2e-4).passed()
    assert not report(error=3e-4).passed()
    assert not report(error=5e-4, noise=2e-4).passed()


def test_check_problems_name_the_error_and_each_words_mismatch() -> None:
    rows = [WordsRow("y", "layer", 100.0, 100.0), WordsRow("x->y", "edge", 50.0, 10.0)]
    assert check_problems(report(error=5e-4, words=rows)) == [
        "relative error 5.00e-04 exceeds 1e-04", "x->y: measured 50 words, predicted 10.0"]
    assert check_problems(report(error=float("nan"), diverged=True)) == [DIVERGED]
    assert check_problems(report(error=5e-5)) == []


def test_a_first_loss_that_is_not_finite_is_not_blamed_on_the_learning_rate(
        tmp_path) -> None:
    """A NaN weight or scale makes the very first loss NaN: "try a smaller --lr" was
    wrong. pase-run refuses an ONNX initializer that is not finite before running."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    from pase.core.diagnostics import Diagnostic
    from pase.tools.run.load import load_model

    at_start = TrainingReport("g", 4, "f32", [float("nan")], [float("nan")], [0.0], 0.0,
                              0.0, [], 0.0, True)
    assert check_problems(at_start) == [NOT_FINITE_AT_START]
    weight = np.ones((4, 3), np.float32)
    weight[1, 2] = np.inf
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(weight, "w")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(Diagnostic, match=r"m.onnx: error: initializer 'w' holds 1 value "
                       r"that is not finite \(inf or nan\)"):
        load_model(str(path))


@pytest.mark.parametrize(("measured", "predicted", "rings", "matches"), [
    (16.0, 16.0, 0, True),      # a redistribution moves exactly what is predicted
    (17.0, 16.0, 0, False),     # ... so one word more is a mismatch
    (15.0, 16.0, 0, False),     # ... and one word less too
    (2.0, 1.5, 1, True),        # a ring all-reduce of 1 word on 4 devices: 1.5 predicted
    (3.5, 1.5, 1, False),       # 2 words above one all-reduce's average is more than chunks make
    (5.0, 1.5, 2, True),        # two all-reduces under one tag: under 4 words above
    (1.0, 1.5, 1, False),       # the most any device receives is never under the average
    (0.0, 0.0, 0, True),
])
def test_words_match_up_to_the_whole_element_chunks_of_ring_all_reduces(
        measured: float, predicted: float, rings: int, matches: bool) -> None:
    assert WordsRow("t", "layer", measured, predicted, rings).matches() is matches


def test_a_words_mismatch_under_all_reduces_names_what_they_may_add() -> None:
    rows = [WordsRow("l", "layer", 8.0, 6.0, rings=1)]
    assert check_problems(report(words=rows)) == [
        "l: measured 8 words, predicted 6.0 (at most 2 more for its 1 ring all-reduce)"]


def test_a_nan_in_any_tensor_makes_the_normwise_error_nan() -> None:
    finite = np.ones(3)
    broken = np.array([1.0, np.nan, 1.0])
    for order in (["a", "b"], ["b", "a"]):
        measured = dict(zip(order, [finite, broken], strict=True))
        reference = dict(zip(order, [finite, finite], strict=True))
        assert np.isnan(normwise_error(measured, reference))
        assert np.isnan(normwise_error(reference, measured))


def test_f32_errors_beyond_rounding_pass_only_if_the_f64_runs_agree() -> None:
    # Two f32 runs on opposite sides of a ReLU's kink: the f32 gradients differ by more
    # than twice the reference's own rounding, the f64 runs do not.
    beyond = report(error=2e-4, noise=1e-5)
    assert not beyond.passed()
    beyond.exact_error = 1e-12
    assert beyond.passed()
    beyond.exact_error = 1e-6
    assert not beyond.passed()
