"""What README.md tells a new user holds: the passes' option lists are every option the
passes take, with their defaults, and the Python API examples run and give the values
their comments show (issues 32 and 33: the table lacked effort and the training options,
and the API section showed no training step or memory cap)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from cli import run_tool

from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.search import PaseSearchPass
from pase.tools.pase_run import main as pase_run

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def table_options(pass_name: str) -> dict[str, str]:
    """The `name=default` pairs of the README's passes table row of `pass_name`."""
    rows = re.findall(rf"^\| `{re.escape(pass_name)}\{{([^}}]*)\}}`", README, re.MULTILINE)
    assert len(rows) == 1, rows
    return dict(item.split("=", 1) for item in rows[0].split())


@pytest.mark.parametrize("pass_class", [PaseSearchPass, PartitionStagesPass])
def test_the_passes_table_lists_every_option_with_its_default(
        pass_class: type[PaseSearchPass] | type[PartitionStagesPass]) -> None:
    listed = table_options(pass_class.name)
    fields = {field.name.replace("_", "-"): field.default
              for field in dataclasses.fields(pass_class)}
    assert sorted(listed) == sorted(fields)
    for option, default in fields.items():
        if option == "devices":
            assert listed[option] == "P"  # required
        elif isinstance(default, bool):
            assert listed[option] == str(default).lower(), option
        else:
            shown = f"{default:g}" if isinstance(default, float) else str(default)
            assert listed[option] == shown, option


def python_blocks() -> list[str]:
    """The ```python blocks of the README's "Python API" section."""
    section = README.split("### Python API", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_the_pase_run_synopsis_lists_every_flag_of_its_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_tool(pase_run, ["--help"], capsys)
    assert status == 0
    flags = set(re.findall(r"^  (--[a-z0-9-]+|-h)", out, re.MULTILINE)) - {"-h", "--help"}
    section = README.split("### Running a strategy: pase-run", 1)[1]
    synopsis = re.findall(r"```sh\n(pase-run MODEL.*?)```", section, re.DOTALL)[0]
    assert flags
    assert flags == set(re.findall(r"--[a-z0-9-]+[a-z0-9]", synopsis))


def test_the_python_api_examples_run_as_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    blocks = python_blocks()
    assert len(blocks) == 2
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)  # noqa: S102
    solution, problem = namespace["solution"], namespace["problem"]
    assert solution.assignment["fc6"] == {"g6": 4, "f": 8}
    shown = re.search(r'problem\.configs\("fc6"\) +# \[(.*?), \.\.\., (.*?), \.\.\.\]',
                      blocks[0])
    assert shown is not None
    assert str(problem.configs("fc6")[:3])[1:-1] == shown[1]
    assert str(problem.configs("fc6")).count(shown[2]) == 1
    exec(compile(blocks[1], "README.md", "exec"), namespace)  # noqa: S102
    best, capped = namespace["best"], namespace["capped"]
    assert f"{solution.cost:.3g}" == "0.00366"
    assert f"{best.cost:.4g}" == "0.0004356"
    assert (f"{capped.cost:.4g}", capped.proven) == ("0.0004392", True)
    memory_parts, problem, gib = (namespace[name] for name in ("memory_parts", "problem", "GIB"))
    assert f"{memory_parts(problem, best.assignment).parts['total'] / gib:.4g}" \
        == "0.1551"
    total = memory_parts(problem, capped.assignment).parts["total"]
    assert f"{total:.4g}" == "1.609e+08"
    assert total <= 0.15 * gib


def test_the_passes_table_has_a_row_for_every_pass_of_pase_opts_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    from pase.tools.pase_opt import main as pase_opt

    status, out, _ = run_tool(pase_opt, ["--help"], capsys)
    assert status == 0
    passes = re.findall(r"^  (pase-[a-z-]+)", out, re.MULTILINE)
    assert "pase-scale" in passes  # (was missing from the table)
    rows = set(re.findall(r"^\| `(pase-[a-z-]+)", README, re.MULTILINE))
    assert set(passes) <= rows, sorted(set(passes) - rows)


def exported(options: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """The strategy JSON `pase-search{devices=8 OPTIONS export=...}` writes for the MLP."""
    from pase.tools.pase_opt import main as pase_opt

    path = tmp_path / "strategy.json"
    status, _, err = run_tool(pase_opt, [str(ROOT / "models" / "mlp.dnn"), "-o", os.devnull,
                                         "-p", f'pase-search{{devices=8 {options} '
                                               f'export="{path}"}}'], capsys)
    assert status == 0, err
    return json.loads(path.read_text())


def test_the_strategy_json_examples_are_what_the_export_writes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The two ```json blocks after "Strategy JSON": the MLP's default export (every key,
    # and its memory), then what training options add (every key, and the MLP's parts).
    section = README.split("Strategy JSON (", 1)[1].split("\n### ", 1)[0]
    plain, extra = re.findall(r"```json\n(.*?)```", section, re.DOTALL)
    plain, extra = json.loads(plain), json.loads("{" + extra + "}")
    default = exported("", tmp_path, capsys)
    assert set(plain) == set(default)
    assert plain["memory"] == default["memory"]
    assert set(plain["layers"][0]) == set(default["layers"][0])
    training = exported("machine=a100-80gb-dgx optimizer=adam precision=bf16 recompute=auto "
                        "zero=auto", tmp_path, capsys)
    assert set(plain) | set(extra) == set(training)
    assert extra["memory_parts"] == training["memory_parts"]
    assert extra["training"] == training["training"]
    assert set(extra["layers"][0]) == set(training["layers"][0])
    assert f"{training['flops_per_device']:.3g}" == f"{extra['flops_per_device']:.3g}"
