"""The pipelined lowering (pase-partition-stages, pase-autodiff, pase-lower-spmd) and its
runs: every bundled model, scaled, trains on 8 workers in S stages of M micro-batches
with the single-device step's losses, gradients and updates, and moves exactly the
words the cost model predicts, stage boundaries included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.core.diagnostics import Diagnostic
from pase.dialect import dist
from pase.dialect.dnn.microbatch import loss_weight, microbatch_problem
from pase.formats.machine_toml import load_machine
from pase.frontend import parse_file
from pase.passes.autodiff import AutodiffPass
from pase.passes.lower_spmd import LowerSpmdPass
from pase.passes.partition_stages import PartitionStagesPass, plan_json
from pase.passes.scale import scale_module
from pase.passes.strategy import Partitioner, segments, stage_solver
from pase.passes.strategy.from_ir import read_graph
from pase.runtime.program import program_from_ir
from pase.tools.run.check import check_problems
from pase.tools.run.runtime import train

MODELS = Path(__file__).resolve().parents[2] / "models"


def planned(model: str, scale: float, stages: int, microbatches: int,
            schedule: str = "1f1b", devices: int = 8, search: bool = True,
            tmp_path: Path | None = None) -> ModuleOp:
    """The scaled model with its pipeline plan, planned on the scaled shapes. With
    `search` false the stages begin at evenly spaced cuts (each stage's configurations
    still PaSE's), read back through a plan file: the runs test the runtime, and
    test_partition.py the search."""
    module = parse_file(str(MODELS / f"{model}.dnn"))
    if scale < 1:
        module = scale_module(module, scale)
    if search:
        PartitionStagesPass(devices=devices, stages=stages, microbatches=microbatches,
                            schedule=schedule).apply(Context(), module)
        return module
    assert tmp_path is not None
    data = read_graph(module)
    assert data.batch is not None
    index = segments(data.layers, data.edges)
    cuts = [i for i in range(1, len(index)) if index[i] != index[i - 1]]
    bounds = [0, *(cuts[len(cuts) * k // stages] for k in range(1, stages))]
    machine = load_machine("pase-default")
    plan = Partitioner(data.layers, data.edges, data.batch, devices, machine, cuts,
                       stage_solver(machine, data.batch)).evaluate(bounds, microbatches,
                                                                   schedule)
    names = [layer.name for layer in data.layers]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_json(data.name, devices, machine, plan, names)))
    PartitionStagesPass(devices=devices, strategy=str(path)).apply(Context(), module)
    return module


def lowered(module: ModuleOp) -> ModuleOp:
    copy = module.clone()
    AutodiffPass().apply(Context(), copy)
    LowerSpmdPass().apply(Context(), copy)
    copy.verify()
    return copy


def test_the_program_of_a_two_stage_pipeline_of_two_micro_batches() -> None:
    module = lowered(planned("mlp", 1, stages=2, microbatches=2))
    [program] = [op for op in module.walk() if isinstance(op, dist.ProgramOp)]
    assert program.attributes["dist.stages"].value.data == 2  # type: ignore[attr-defined]
    ops = list(program.body.block.ops)
    grids = {op.sym_name.data: dist.first_device(op) for op in ops
             if op.name == "shard.grid"}  # type: ignore[attr-defined]
    assert sorted(set(grids.values())) == [0, 4]  # stage 1 starts at device 4
    inputs = [op for op in ops if isinstance(op, dist.InputOp)]
    # x and the labels t, each read in rows 0..31 and 32..63
    assert sorted((op.value_name.data, op.starts[0]) for op in inputs) == [
        ("t", 0), ("t", 32), ("x", 0), ("x", 32)]
    # each parameter enters once; each micro-batch's gradient adds into a running sum
    assert len([op for op in ops if isinstance(op, dist.ParamOp)]) == 2
    assert len([op for op in ops if isinstance(op, dist.AccumulateOp)]) == 3  # 2 grads, loss
    # the mean loss and its gradients are averaged over the micro-batches
    assert {op.factor.value.data for op in ops if isinstance(op, dist.ScaleOp)} == {0.5}
    program_data = program_from_ir(module)
    assert (program_data.stages, program_data.microbatches) == (2, 2)
    updates = [step for step in program_data.steps if step.phase == "update"]
    assert [step.kernel for step in updates if step.kind == "layer"] == ["dnn.sgd"] * 2


def test_a_parameter_gradient_is_all_reduced_once_per_step() -> None:
    # AlexNet's convolutions split the batch: their weight gradients are partial sums,
    # summed over the micro-batches before one all-reduce each.
    module = lowered(planned("alexnet", 1, stages=2, microbatches=4))
    program = program_from_ir(module)
    reduces = [step for step in program.steps if step.kind == "all_reduce"
               and step.phase == "update"]
    assert reduces
    tags = [step.tag for step in reduces]
    assert sorted(tags) == ["conv1", "conv2", "conv3", "conv4", "conv5"]
    assert all(step.microbatch == -1 for step in reduces)
    per_microbatch = [step.tag for step in program.steps if step.kind == "all_reduce"
                      and step.phase == "backward" and step.tag in tags]
    assert "conv1" not in per_microbatch  # its input needs no gradient: nothing else


# (model, scale, S, M, schedule, searched): the small models' plans are searched, the
# large ones' stages begin at evenly spaced cuts.
CASES = [
    ("mlp", 1, 2, 1, "1f1b", True), ("mlp", 1, 2, 4, "gpipe", True),
    ("mlp", 1, 4, 2, "1f1b", True), ("mlp", 1, 4, 4, "gpipe", True),
    ("alexnet", 0.125, 2, 2, "1f1b", True), ("alexnet", 0.125, 4, 4, "gpipe", False),
    ("alexnet", 0.125, 4, 1, "1f1b", False),
    ("rnnlm", 0.0625, 2, 2, "1f1b", False), ("rnnlm", 0.0625, 4, 4, "gpipe", False),
    # (four stages, GPipe and one micro-batch each, run with the mlp, alexnet and rnnlm)
    ("transformer", 0.0625, 2, 2, "1f1b", False), ("gpt2_small", 0.0625, 2, 2, "1f1b", False),
    # batch norm: one micro-batch per step (its statistics are over the whole batch)
    ("inception_v3", 0.0625, 2, 1, "1f1b", False), ("resnet101", 0.0625, 4, 1, "1f1b", False),
]


@pytest.mark.parametrize(("model", "scale", "stages", "microbatches", "schedule", "search"),
                         CASES, ids=[f"{m}-S{s}-M{n}-{k}" for m, _, s, n, k, _ in CASES])
def test_every_model_trains_as_a_pipeline_like_one_device(
        model: str, scale: float, stages: int, microbatches: int, schedule: str,
        search: bool, tmp_path: Path) -> None:
    module = planned(model, scale, stages, microbatches, schedule, search=search,
                     tmp_path=tmp_path)
    report = train(module, 8, float_type="f64")
    assert check_problems(report) == []
    assert report.max_error() <= 1e-9
    # the stage boundaries moved words, and the prediction counted them
    boundary = [row for row in report.words if row.kind == "edge" and row.measured]
    assert boundary


def test_gradient_accumulation_is_the_whole_batch_gradient_in_f32_too() -> None:
    report = train(planned("mlp", 1, stages=2, microbatches=4), 8)
    assert check_problems(report) == []
    assert report.losses == pytest.approx(report.reference_losses, rel=1e-6)


def test_micro_batches_that_would_change_the_math_are_refused() -> None:
    resnet = parse_file(str(MODELS / "resnet101.dnn")).ops.first
    problem = microbatch_problem(resnet, 2)  # type: ignore[arg-type]
    assert problem is not None
    assert "bn1" in problem
    assert "batch" in problem
    with pytest.raises(Diagnostic, match="computes statistics over the batch dim b"):
        planned("resnet101", 0.0625, stages=2, microbatches=2)
    assert microbatch_problem(resnet, 1) is None  # type: ignore[arg-type]
    # auto keeps one micro-batch for it
    module = parse_file(str(MODELS / "inception_v3.dnn"))
    PartitionStagesPass(devices=4, stages=1).apply(Context(), module)
    pipeline = module.ops.first.attributes["pase.pipeline"]  # type: ignore[attr-defined]
    assert pipeline.microbatches.data == 1  # type: ignore[attr-defined]


def test_the_loss_weight_of_a_mean_and_of_a_sum() -> None:
    graph = parse_file(str(MODELS / "mlp.dnn")).ops.first
    assert loss_weight(graph, 4) == 0.25  # type: ignore[arg-type]
    from pase.frontend import parse_text

    summed = parse_text("""
graph @g(b = 8, d = 4, e = 4) {
  %x = input [b, d]
  %w = param [d, e]
  %y = einsum %x, %w -> [b, e]
  %l = reduce sum %y over [b, e]
  return %l
}
""", "g.dnn").ops.first
    assert microbatch_problem(summed, 4) is None  # type: ignore[arg-type]
    assert loss_weight(summed, 4) == 1.0  # type: ignore[arg-type]
    gram = parse_text("""
graph @g(b = 8, d = 4, e = 4) {
  %x = input [b, d]
  %w = param [d, e]
  %y = einsum %x, %w -> [b, e]
  %g = einsum %y, %x -> [e, d]
  %l = reduce mean %g over [e, d]
  return %l
}
""", "g.dnn").ops.first
    assert microbatch_problem(gram, 2) is not None  # type: ignore[arg-type]
