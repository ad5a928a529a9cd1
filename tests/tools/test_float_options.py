"""Float options that a float does not hold, in pass options and pase-run's flags: one
diagnostic, exit 1. `device-memory-gib=1e-400` read as 0, which is no cap at all; a cap
of less than one byte, `1_000` (Python's `float` takes it) and `1e400` (inf) likewise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli import run_tool

from pase.core.numbers import float_literal, too_many_gib
from pase.tools import pase_opt, pase_run

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")
UNDERFLOW = "not 0, but a float reads it as 0 (the least positive float is about 4.9e-324)"
OVERFLOW = "a float reads it as infinity (the largest float is about 1.8e308)"


@pytest.mark.parametrize(("text", "value"), [
    ("1e-3", 1e-3), ("4", 4.0), ("-0", -0.0), ("0e-400", 0.0), ("0.000e9999", 0.0),
    ("5e-324", 5e-324), ("+2.5E1", 25.0), ("1.", 1.0)])
def test_a_float_literal_reads_as_float_does(text: str, value: float) -> None:
    assert float_literal(text) == value


@pytest.mark.parametrize(("text", "reason"), [
    ("1e-400", UNDERFLOW), ("-0.1e-330", UNDERFLOW), ("1e400", OVERFLOW),
    ("9" * 400, OVERFLOW), ("1_000", "not a decimal number"), ("0x10", "not a decimal number"),
    ("", "not a decimal number"), (" 1", "not a decimal number")])
def test_a_float_literal_a_float_does_not_hold_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(reason)}$"):
        float_literal(text)


def test_a_memory_option_of_less_than_one_byte_is_refused() -> None:
    assert too_many_gib("device-memory-gib", 1e-10) == (
        "device-memory-gib=1e-10 is less than one byte (2^-30 GiB, 9.3e-10, is the least)")
    assert too_many_gib("device-memory-gib", 2.0 ** -30) is None
    assert too_many_gib("device-memory-gib", 0.0) is None  # no cap


@pytest.mark.parametrize("pass_name", ["pase-search", "pase-partition-stages"])
@pytest.mark.parametrize(("value", "message"), [
    ("1e-400", f"option 'device-memory-gib' takes a number, got \"1e-400\": {UNDERFLOW}"),
    ("1e400", f"option 'device-memory-gib' takes a number, got \"1e400\": {OVERFLOW}"),
    ("1_000", "option 'device-memory-gib' takes a number, got \"1_000\""),
    ("1e-320", "device-memory-gib=1e-320 is less than one byte (2^-30 GiB, 9.3e-10, is the "
     "least)")])
def test_a_cap_that_is_not_a_byte_count_is_refused(pass_name: str, value: str, message: str,
                                                   capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(
        pase_opt.main, [MLP, "-p", f"{pass_name}{{devices=4 device-memory-gib={value}}}"],
        capsys)
    assert (status, out) == (1, "")
    assert err.endswith(f"{pass_name}: {message}\n")
    assert err.count("\n") == 1


@pytest.mark.parametrize(("option", "value"), [
    ("pase-search{devices=4 memory-gib=%s}", "1e-999"),
    ("pase-scale{factor=%s}", "1e-400"),
    ("pase-autodiff{lr=%s}", "1e-400")])
def test_every_float_pass_option_refuses_an_underflow(option: str, value: str,
                                                      capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_opt.main, [MLP, "-p", option % value], capsys)
    assert (status, out) == (1, "")
    assert err.endswith(f"takes a number, got \"{value}\": {UNDERFLOW}\n")


@pytest.mark.parametrize(("flags", "message"), [
    (["--memory-gib", "1e-400"], f"argument --memory-gib: expected a number, got '1e-400': "
     f"{UNDERFLOW}"),
    (["--stages", "2", "--device-memory-gib", "1e-400"], "argument --device-memory-gib: "
     f"expected a number, got '1e-400': {UNDERFLOW}"),
    (["--memory-gib", "1e-12"], "--memory-gib=1e-12 is less than one byte (2^-30 GiB, "
     "9.3e-10, is the least)"),
    (["--stages", "2", "--device-memory-gib", "1e-20"], "--device-memory-gib=1e-20 is less "
     "than one byte (2^-30 GiB, 9.3e-10, is the least)"),
    (["--scale", "1_0"], "argument --scale: expected a number, got '1_0': not a decimal "
     "number"),
    (["--timeout", "1e400"], f"argument --timeout: expected a number, got '1e400': {OVERFLOW}")])
def test_pase_run_refuses_a_float_flag_a_float_does_not_hold(
        flags: list[str], message: str, capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_run.main, [MLP, "--devices", "2", *flags], capsys)
    assert (status, out, err) == (1, "", f"pase-run: error: {message}\n")


def test_an_empty_stage_count_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    for option in ("stages", "microbatches"):
        status, out, err = run_tool(
            pase_opt.main, [MLP, "-p", f'pase-partition-stages{{devices=4 {option}=""}}'],
            capsys)
        assert (status, out) == (1, "")
        assert err.endswith(", got an empty value\n")
