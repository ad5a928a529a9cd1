"""A pass option a new user mistypes gets the reason with the error: the option meant
(`Devices`, `device`), and why xDSL's lexer stopped in a value (`export=x.json`: a file
path is quoted; `factor=.5`: a number starts with a digit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli import run_tool

from pase.tools import pase_opt

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")


@pytest.mark.parametrize(("option", "meant"), [
    ("Devices", "devices"), ("device", "devices"), ("min_shards", "min-shard"),
    ("DEVICE-MEMORY-GIB", "device-memory-gib")])
def test_an_unknown_option_names_the_one_meant(option: str, meant: str,
                                               capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_opt.main, [MLP, "-p", f"pase-search{{{option}=4}}"],
                                capsys)
    assert (status, out) == (1, "")
    assert err.startswith(f"pase-opt: error: pase-search: unknown option '{option}'; did "
                          f"you mean '{meant}'? its options are devices, machine, ")


def test_an_unknown_option_far_from_any_lists_them(capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_opt.main, [MLP, "-p", "pase-annotate-configs{gpus=2}"],
                                capsys)
    assert (status, out, err) == (1, "", "pase-opt: error: pase-annotate-configs: unknown "
                                  "option 'gpus'; its options are devices, min-shard\n")


@pytest.mark.parametrize(("pipeline", "caret", "reason"), [
    ("pase-search{devices=4 export=x.json}", "                             ^^^^^^",
     "the value x.json holds '.': quote it, \"x.json\" (a file path is quoted)"),
    ("pase-search{devices=4 machine=/m.toml report=true}", " " * 30 + "^" * 7,
     "the value /m.toml holds '/': quote it, \"/m.toml\" (a file path is quoted)"),
    ("pase-scale{factor=-.5}", " " * 18 + "^^^", "a number starts with a digit: -0.5"),
    ("pase-search{devices=4;}", " " * 21 + "^", "Unknown token")])
def test_a_value_xdsl_cannot_read_says_why(pipeline: str, caret: str, reason: str,
                                           capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_opt.main, [MLP, "-p", pipeline], capsys)
    column = len(caret) - len(caret.lstrip()) + 1
    assert (status, out) == (1, "")
    assert err == (f"pase-opt: error: Error parsing pass pipeline specification:\n"
                   f"pass-pipeline:1:{column}\n{pipeline}\n{caret}\n"
                   f"{' ' * (column - 1)}{reason}\n\n")
