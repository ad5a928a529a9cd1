"""pase-partition-stages: S = 1, M = 1 is pase-search; auto never loses to it; export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from xdsl.context import Context

from pase.core.diagnostics import Diagnostic
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import ConfigAttr, PipelineAttr, StageAttr
from pase.frontend import parse_file
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import Partitioner, SearchMemoryError


def configs(module: object) -> dict[str, dict[str, int]]:
    graph = next(op for op in module.walk() if isinstance(op, GraphOp))  # type: ignore[attr-defined]
    names = graph.layer_names()
    result = {}
    for op in graph.layers:
        attr = op.attributes["pase.config"]
        assert isinstance(attr, ConfigAttr)
        result[names[op]] = attr.splits
    return result


@pytest.mark.parametrize(("model", "devices"), [("mlp", 8), ("alexnet", 8), ("rnnlm", 4)])
def test_one_stage_one_microbatch_is_pase_search(model: str, devices: int) -> None:
    searched = parse_file(f"models/{model}.dnn")
    PaseSearchPass(devices=devices, machine="v100-nvlink").apply(Context(), searched)
    staged = parse_file(f"models/{model}.dnn")
    PartitionStagesPass(devices=devices, stages=1, microbatches=1,
                        machine="v100-nvlink").apply(Context(), staged)
    assert configs(staged) == configs(searched)
    graph = next(op for op in staged.walk() if isinstance(op, GraphOp))
    pipeline = graph.attributes["pase.pipeline"]
    assert isinstance(pipeline, PipelineAttr)
    strategy = next(op for op in searched.walk() if isinstance(op, GraphOp)).strategy
    assert strategy is not None
    assert pipeline.step.data == pytest.approx(strategy.total.data, rel=1e-12)
    assert all(isinstance(op.attributes["pase.stage"], StageAttr) for op in graph.layers)


def test_auto_never_loses_to_one_stage_and_exports_the_plan(tmp_path: Path) -> None:
    one = parse_file("models/alexnet.dnn")
    PartitionStagesPass(devices=8, stages=1, microbatches=1,
                        machine="v100-nvlink").apply(Context(), one)
    best = parse_file("models/alexnet.dnn")
    out = tmp_path / "plan.json"
    PartitionStagesPass(devices=8, machine="v100-nvlink", export=str(out)).apply(Context(),
                                                                                best)
    steps = [next(op for op in m.walk() if isinstance(op, GraphOp))
             .attributes["pase.pipeline"] for m in (one, best)]
    assert isinstance(steps[0], PipelineAttr)
    assert isinstance(steps[1], PipelineAttr)
    assert steps[1].step.data <= steps[0].step.data
    plan = json.loads(out.read_text())
    assert plan["pipeline"]["stages"] == steps[1].stages.data
    assert sum(len(stage["layers"]) for stage in plan["stages"]) == 20
    assert [stage["offset"] for stage in plan["stages"]] == \
        [s * 8 // steps[1].stages.data for s in range(steps[1].stages.data)]


def test_a_stage_over_the_cap_is_solved_under_it() -> None:
    # AlexNet scaled by 1/8 on 8 devices: PaSE's strategy for one stage needs more than
    # 2.8 MiB per device, so a search that only checked it against the cap found no
    # one-stage plan; the stage solved under the cap fits, at pase-search's capped
    # optimum (the same cost model: one stage, one micro-batch).
    from pase.passes.scale import scale_module
    from pase.passes.strategy import build_problem
    from pase.passes.strategy.memory import solve_capped, strategy_memory

    cap = 2.8 / 1024  # GiB
    free = scale_module(parse_file("models/alexnet.dnn"), 0.125)
    PartitionStagesPass(devices=8, stages=1, microbatches=1).apply(Context(), free)
    unconstrained = next(op for op in free.walk() if isinstance(op, GraphOp)) \
        .attributes["pase.pipeline"]
    assert isinstance(unconstrained, PipelineAttr)
    assert unconstrained.memory.data > cap * (1 << 30)
    module = scale_module(parse_file("models/alexnet.dnn"), 0.125)
    PartitionStagesPass(devices=8, stages=1, microbatches=1,
                        device_memory_gib=cap).apply(Context(), module)
    pipeline = next(op for op in module.walk() if isinstance(op, GraphOp)) \
        .attributes["pase.pipeline"]
    assert isinstance(pipeline, PipelineAttr)
    assert pipeline.memory.data <= cap * (1 << 30)
    problem = build_problem(scale_module(parse_file("models/alexnet.dnn"), 0.125), 8)
    capped = solve_capped(problem, cap * (1 << 30))
    assert capped.proven
    assert configs(module) == capped.assignment
    assert pipeline.step.data == pytest.approx(capped.cost, rel=1e-12)
    assert pipeline.memory.data == strategy_memory(problem, capped.assignment)
    assert pipeline.step.data > unconstrained.step.data


def test_a_memory_cap_keeps_every_stage_within_it() -> None:
    # Two stages of 8 micro-batches under the same cap: each stage holds its own
    # micro-batches in flight (1F1B: 2 on the first, 1 on the second) and fits.
    from pase.passes.scale import scale_module

    cap = 2.8 / 1024  # GiB
    module = scale_module(parse_file("models/alexnet.dnn"), 0.125)
    PartitionStagesPass(devices=8, stages=2, microbatches=8,
                        device_memory_gib=cap).apply(Context(), module)
    graph = next(op for op in module.walk() if isinstance(op, GraphOp))
    pipeline = graph.attributes["pase.pipeline"]
    assert isinstance(pipeline, PipelineAttr)
    assert pipeline.stages.data == 2
    assert pipeline.memory.data <= cap * (1 << 30)


def test_a_stage_solve_over_the_memory_budget_is_one_diagnostic(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage range whose DP would pass the search's memory budget (GPT-3-sized stages
    solved under a cap) stops the pass with the budget's message, not an internal error."""
    message = "the DP table of layer 'q' spans 10 entries, over the memory budget of 1 B"

    def over_budget(*args: object, **kwargs: object) -> None:
        raise SearchMemoryError(message)

    monkeypatch.setattr(Partitioner, "search", over_budget)
    module = parse_file("models/mlp.dnn")
    with pytest.raises(Diagnostic) as raised:
        PartitionStagesPass(devices=4, stages=2, microbatches=2).apply(Context(), module)
    assert str(raised.value) == f"error: pase-partition-stages on @mlp: {message}"


def test_a_plan_among_stage_solves_the_effort_stopped_is_not_called_proven(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The walk compares plans with their stages at the cost its capped solves found: where
    # the effort stopped some before their proofs, the plan is not proven the least even
    # when its own stages are proven, and the warning (or report) says so; the proof
    # note's first part, the plan's own stages' gaps, is as before.
    from pase.passes.partition_stages import gap_note, proof_note
    from pase.passes.strategy.pipeline.plan import PipelinePlan, StageCost, StagePlan

    module = parse_file("models/transformer.dnn")
    PartitionStagesPass(devices=8, stages=2, microbatches=4, machine="pase-default",
                        device_memory_gib=0.9, effort=1).apply(Context(), module)
    warning = capsys.readouterr().err
    assert "warning: stage 1 solved under device-memory-gib not proven optimal" in warning
    assert "; the plan is not proven the least: effort stopped " in warning
    assert " capped stage solves of the search before their proofs, its step within " \
        in warning
    assert warning.endswith(" of the proven lower bound on every plan's (effort=0 "
                            "searches until proven)\n")
    stage = StagePlan(0, 1, 0, 8, {}, StageCost(1.0, 1.0, 0.0), 0.0, 0.0, 1.0)
    proven = PipelinePlan((stage,), 1, "1f1b", 2.0, 0.0, 1.0)
    assert proof_note(proven, 1.0) == "; device-memory-gib=1: optimal under the cap (proven)"
    assert proof_note(proven, 1.0, 1) == (
        "; the plan is not proven the least: effort stopped 1 capped stage solve of the "
        "search before its proof (effort=0 searches until proven)")
    assert gap_note(proven) == ""


def test_the_exported_gap_is_the_steps_over_a_proven_bound_on_every_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Effort stopped capped stage solves: the plan's "pipeline" "gap" is its step over a
    # lower bound on every plan's step that no stopped solve enters (it was the largest
    # stage's gap, a bound on one stage's objective, not on the step). True: the proven
    # optimum (effort=0) steps at least step / (1 + gap); and the warning states it.
    def plan(effort: int) -> dict:
        module = parse_file("models/transformer.dnn")
        PartitionStagesPass(devices=8, stages=2, microbatches=4, machine="pase-default",
                            device_memory_gib=0.9, effort=effort,
                            export=str(tmp_path / "plan.json")).apply(Context(), module)
        return json.loads((tmp_path / "plan.json").read_text())

    stopped = plan(1)
    warning = capsys.readouterr().err
    optimum = plan(0)["pipeline"]
    assert optimum["gap"] == 0.0
    assert "warning" not in capsys.readouterr().err
    pipeline = stopped["pipeline"]
    assert 0.0 < pipeline["gap"] < 1.0
    assert pipeline["step"] / (1 + pipeline["gap"]) <= optimum["step"] <= pipeline["step"]
    assert f"its step within {pipeline['gap']:.2%} of the proven lower bound" in warning
    assert max(stage["gap"] for stage in stopped["stages"]) > 0.0  # (the stages' own)


def test_a_pinned_one_stage_plan_the_effort_stopped_keeps_its_gap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # S = 1, M = 1 with a source pin is pase-search's capped solve: stopped by the effort
    # before its proof, the plan says how far above the bound it may be (it was called
    # proven, the solve's gap dropped).
    from pase.frontend import parse_text

    text = Path("models/transformer.dnn").read_text().replace(
        "%source_embedded = embedding %source_ids, %source_embedding\n",
        "%source_embedded = embedding %source_ids, %source_embedding config {}\n")
    module = parse_text(text, "pinned.dnn")
    PartitionStagesPass(devices=8, stages=1, microbatches=1, device_memory_gib=2.4,
                        effort=1).apply(Context(), module)
    assert capsys.readouterr().err.startswith(
        "pase-partition-stages on @transformer: warning: stage 0 solved under "
        "device-memory-gib not proven optimal: within ")
