"""The public interfaces DESIGN.md fixes, each as DESIGN.md spells it (the project's design
page; README.md documents the same names): the passes and their options, the machine
presets, the strategy JSON's keys, the Python API for embedding, and the flags of pase-opt
and pase-run. Other tests check what each does in depth; these check that what DESIGN.md
promises a user exists under the name it gives, so a rename fails here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from cli import run_tool
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from pase.dialect import dnn
from pase.frontend import parse_file
from pase.passes import get_all_passes
from pase.passes.strategy import PRESETS, build_problem, solve
from pase.targets import get_all_targets
from pase.tools.pase_opt import main as pase_opt
from pase.tools.pase_run import main as pase_run

ROOT = Path(__file__).resolve().parents[1]
MLP = str(ROOT / "models" / "mlp.dnn")

# DESIGN.md, "Passes (names and options are public API)", and the training step's options
# ("on both pase-search and pase-partition-stages").
TRAINING = "optimizer=adam precision=bf16 recompute=auto zero=auto data-parallel=2"
DESIGN_PASSES = [
    "pase-annotate-configs{devices=8 min-shard=4}",
    'pase-search{devices=8 machine=pase-default order=genseq method=dp strategy="s.json" '
    'export="e.json"}',
    "pase-search{devices=8 method=exhaustive order=bfs}",
    "pase-search{devices=8 order=minfill}",
    f"pase-search{{devices=8 machine=a100-80gb-dgx {TRAINING}}}",
    "pase-merge-layers",
    "pase-partition-stages{devices=8 stages=auto microbatches=auto schedule=1f1b "
    "device-memory-gib=16}",
    "pase-partition-stages{devices=8 stages=2 microbatches=4 schedule=gpipe}",
    f"pase-partition-stages{{devices=8 machine=h100-80gb-dgx {TRAINING}}}",
    "pase-autodiff{lr=0.01}",
    "pase-lower-spmd",
]


@pytest.mark.parametrize("spec", DESIGN_PASSES)
def test_the_design_pass_specs_parse(spec: str) -> None:
    """Each pass and option DESIGN.md names is taken by `-p` as written (parsed into the
    pass, with each option's value; not run)."""
    passes = get_all_passes()
    pipeline = PassPipeline.parse_spec({name: passes[name] for name in passes}, spec)
    (parsed,) = pipeline.passes
    fields = {field.name for field in dataclasses.fields(parsed)}  # type: ignore[arg-type]
    for option, value in re.findall(r"([a-z-]+)=(\S+?)[ }]", spec):
        field = option.replace("-", "_")
        assert field in fields, option
        given = value.strip('"')
        taken = getattr(parsed, field)
        assert (taken == float(given) if isinstance(taken, float) else str(taken) == given), \
            (option, taken)


def test_the_design_machine_presets_exist() -> None:
    for name in ("pase-default", "a100-80gb-dgx", "h100-80gb-dgx", "v100-nvlink", "a100-nvlink",
                 "h100-nvlink", "1080ti-pcie", "2080ti-pcie"):
        assert name in PRESETS, name


def test_the_python_api_as_design_writes_it() -> None:
    """`parse_file(path) -> ModuleOp`; `build_problem(graph, devices, machine=...)` with
    `problem.layers` (names), `problem.configs(name)` ({dim: factor}, factors of 1 left
    out, product at most P), `problem.cost(assignment)` (total seconds); `solve(problem,
    method=..., order=...) -> Solution(assignment, cost)`."""
    module = parse_file(MLP)
    assert isinstance(module, ModuleOp)
    graph = next(op for op in module.walk() if isinstance(op, dnn.GraphOp))
    problem = build_problem(graph, 4, machine="pase-default")
    assert problem.layers == ["h", "a", "z", "l"]
    configs = problem.configs("h")
    assert {} in configs
    assert {"b": 4} in configs
    for config in configs:
        assert all(isinstance(dim, str) and factor > 1 for dim, factor in config.items())
        assert 1 <= _product(config) <= 4
    for method, order in (("dp", "genseq"), ("dp", "bfs"), ("dp", "minfill"),
                          ("exhaustive", "genseq")):
        solution = solve(problem, method=method, order=order)
        assignment, cost = solution.assignment, solution.cost
        assert set(assignment) == set(problem.layers)
        assert problem.cost(assignment) == pytest.approx(cost, rel=1e-12)
    assert problem.cost({name: {} for name in problem.layers}) > cost  # seconds, not 0


def _product(config: dict[str, int]) -> int:
    product = 1
    for factor in config.values():
        product *= factor
    return product


def test_the_strategy_json_has_designs_keys_and_reads_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export=` writes DESIGN.md's keys (`graph`, `devices`, `machine`, `cost` with its
    four parts, `data_parallel_cost`, `layers` of `name`, `op`, `config`, `cost`), and
    `strategy=` reads a file of only `graph` and `layers` with their `config`s (a user's
    expert strategy) and prices it."""
    path = tmp_path / "strategy.json"
    status, _, err = run_tool(pase_opt, [MLP, "-o", os.devnull, "-p",
                                         f'pase-search{{devices=8 export="{path}"}}'], capsys)
    assert status == 0, err
    exported = json.loads(path.read_text())
    assert {"graph", "devices", "machine", "cost", "data_parallel_cost", "layers"} \
        <= set(exported)
    assert (exported["graph"], exported["devices"]) == ("mlp", 8)
    assert set(exported["cost"]) >= {"total", "compute", "communication", "redistribution"}
    parts = exported["cost"]
    assert parts["total"] == pytest.approx(parts["compute"] + parts["communication"]
                                           + parts["redistribution"], rel=1e-12)
    for layer in exported["layers"]:
        assert {"name", "op", "config", "cost"} <= set(layer)
    minimal = tmp_path / "expert.json"
    minimal.write_text(json.dumps({"graph": "mlp", "layers": [
        {"name": layer["name"], "op": layer["op"], "config": layer["config"]}
        for layer in exported["layers"]]}))
    again = tmp_path / "again.json"
    status, _, err = run_tool(pase_opt, [MLP, "-o", os.devnull, "-p",
                                         f'pase-search{{devices=8 strategy="{minimal}" '
                                         f'export="{again}"}}'], capsys)
    assert status == 0, err
    assert json.loads(again.read_text())["cost"] == exported["cost"]


def test_the_design_tool_flags_are_in_their_help(capsys: pytest.CaptureFixture[str]) -> None:
    """DESIGN.md, "Tools": pase-opt's `-p -t -o` and the xdsl-opt flags it names, its
    targets mlir, jax and dnn; pase-run's flags."""
    status, out, _ = run_tool(pase_opt, ["--help"], capsys)
    assert status == 0
    for flag in ("-p", "-t", "-o", "--split-input-file", "--verify-diagnostics",
                 "--print-op-generic"):
        assert re.search(rf"(^|[\s\[,]){re.escape(flag)}[\s,\]]", out), flag
    assert {"jax", "dnn"} <= set(get_all_targets())
    assert "mlir" in re.search(r"Available targets are:\s*([\w,\s-]+)", out)[1]  # type: ignore[index]
    status, out, _ = run_tool(pase_run, ["--help"], capsys)
    assert status == 0
    for flag in ("--devices", "--strategy", "--stages", "--microbatches", "--engine",
                 "--steps", "--seed", "--check"):
        assert re.search(rf"^\s+{flag}\b", out, re.MULTILINE), flag
    assert "jax" in out.split("--engine", 1)[1].split("\n  --", 1)[0]


def test_the_plan_json_keeps_step_and_memory(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A `pase-partition-stages` export's `"pipeline"` keeps `"step"` (seconds) and
    `"memory"` (bytes per device) and, with a training option, adds the memory breakdown
    and FLOP/s per device (DESIGN.md: defaults keep today's behaviour, so the default
    export is today's, without them)."""
    plans = []
    for options in ("", "optimizer=momentum"):
        path = tmp_path / "plan.json"
        status, _, err = run_tool(pase_opt, [MLP, "-o", os.devnull, "-p",
                                             "pase-partition-stages{devices=4 stages=2 "
                                             f'microbatches=2 {options} export="{path}"}}'],
                                  capsys)
        assert status == 0, err
        plans.append(json.loads(path.read_text())["pipeline"])
    default, trained = plans
    for pipeline in plans:
        assert (pipeline["stages"], pipeline["microbatches"]) == (2, 2)
        assert pipeline["step"] > 0
        assert pipeline["memory"] > 0
    assert "memory_parts" not in default
    assert "flops_per_device" not in default
    assert trained["memory_parts"]["total"] == pytest.approx(trained["memory"], rel=1e-12)
    assert trained["flops_per_device"] > 0
