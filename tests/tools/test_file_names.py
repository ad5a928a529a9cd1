"""File names no terminal should print as they are (an ESC, a line break, a quote): every
diagnostic shows them escaped, one line, and pase-run hands them to its passes intact."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli import run_tool
from xdsl.passes import PassPipeline

from pase.tools import pase_opt, pase_run
from pase.tools.run.load import pipeline_spec
from pase.universe import PASE

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")
NAME = "a\x1b[31mred\nb"
SHOWN = "a\\x1b[31mred\\nb"


def test_a_diagnostic_escapes_the_file_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The name was printed as it is: the ESC coloured the terminal, the line break split
    the diagnostic in two."""
    bad = tmp_path / f"{NAME}.dnn"
    bad.write_text("garbage\n")
    assert run_tool(pase_opt.main, [str(bad)], capsys) == (
        1, "", f"{tmp_path}/{SHOWN}.dnn:1:1: error: unexpected 'garbage'; expected 'graph'\n"
               "garbage\n^^^^^^^\n")
    missing = tmp_path / f"{NAME}.dnn.missing"
    assert run_tool(pase_opt.main, [str(missing)], capsys) == (
        1, "", f"pase-opt: error: cannot open {tmp_path}/{SHOWN}.dnn.missing: No such file "
               "or directory\n")
    assert run_tool(pase_opt.main, [MLP, "-o", f"{tmp_path}/no/{NAME}"], capsys) == (
        1, "", f"pase-opt: error: cannot write {tmp_path}/no/{SHOWN}: No such file or "
               "directory\n")
    status, out, err = run_tool(pase_run.main, [MLP, "--devices", "2", "--stages", "2",
                                                "--timeline", f"/no/{NAME}.svg"], capsys)
    assert (status, out) == (1, "")
    assert err == f"pase-run: error: --timeline /no/{SHOWN}.svg: its folder /no does not exist\n"


@pytest.mark.parametrize("name", ['a"b.json', "a\\b.json", "a\nb\x1b.json"])
def test_pase_runs_passes_take_any_file_name(name: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A quote, a backslash or a line break in `--strategy`'s name broke the pass pipeline
    pase-run writes: `pase-run: error: Error parsing pass pipeline specification`."""
    spec = pipeline_spec(2, strategy=name, machine=name)
    search = PassPipeline.parse_spec(PASE.all_passes, spec).passes[0]
    assert (search.strategy, search.machine) == (name, name)  # type: ignore[attr-defined]
    status, out, err = run_tool(pase_run.main, [MLP, "--devices", "2", "--strategy",
                                                str(tmp_path / name)], capsys)
    assert (status, out) == (1, "")
    assert err.endswith(": error: cannot read the strategy file: No such file or directory\n")


def test_a_name_no_pass_option_holds_is_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tool(pase_run.main, [MLP, "--devices", "2", "--strategy", "a\rb.json"],
                    capsys) == (1, "", "pase-run: error: the file name a\\rb.json holds a "
                                "carriage return, form feed or vertical tab, which pase's "
                                "pass options cannot hold; rename the file\n")
