"""The pipelined `-t jax` program's training step under `pase.training`
(targets/jax_pipeline_training.py): each stage's ZeRO layouts and recomputed layers as
the program shows them, and runs of Adam, momentum and SGD in bf16, fp32 and fp16 with
ZeRO and recomputation against pase's runtime on one device, as a stage per process too.

The plan is the mlp's Megatron-style layout on 8 devices: 2 stages (p), the batch split
2 ways in every layer (d, `data-parallel=2`), the rest of each stage's 4 devices on the
hidden dim (t = 2): each stage's mesh is (2, 2), m0 the batch's axis, m1 the hidden's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from processes import run_two_processes
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from pase.dialect.dnn.seeding import LEARNING_RATES
from pase.dialect.training_options import RECOMPUTE_ATTR_NAME, StepOptions, set_training
from pase.frontend import parse_file
from pase.targets.jax import jax_program
from pase.tools.run.check import make_data
from pase.tools.run.jax import child_environment, collectives, partitioned, train_jax
from pase.tools.run.load import Stages, forward_graph, strategy_and_scale

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "models" / "mlp.dnn")


def plan(options: StepOptions, recomputed: tuple[str, ...] = (), ways: int = 2) -> ModuleOp:
    """The mlp's 2 x 2 x 2 pipeline plan (2 micro-batches) at 1/8 scale (`ways`=4: 1 x 2 x
    4, each stage data-parallel), its step `options`, the layers `recomputed` marked
    `pase.recompute` (as recompute=auto's search marks them)."""
    module = strategy_and_scale(parse_file(MLP), 8, 0.125, "a100-nvlink",
                                stages=Stages(2, 2), options=options, one_mesh=True, ways=ways)
    graph = forward_graph(module)
    set_training(graph, options)
    for layer, name in graph.layer_names().items():
        if name in recomputed:
            layer.attributes[RECOMPUTE_ATTR_NAME] = UnitAttr()
    return module


def table(source: str, name: str) -> dict[str, dict[int, tuple]]:
    """The program's table `NAME = {  # comment ... }`, as a dict."""
    start = source.index(f"\n{name} = {{")
    body = source[source.index("\n", start + 1):source.index("\n}", start)]
    return ast.literal_eval("{" + body + "}")


@pytest.mark.parametrize(("zero", "state", "grads", "params"), [
    (0, (None, "m1"), (None, "m1"), (None, "m1")),
    (1, ("m0", "m1"), ("m0", "m1"), (None, "m1")),
    (2, ("m0", "m1"), ("m0", "m1"), (None, "m1")),
    (3, ("m0", "m1"), ("m0", "m1"), ("m0", "m1"))])
def test_zero_shards_each_stages_state_over_its_data_parallel_replicas(
        zero: int, state: tuple, grads: tuple, params: tuple) -> None:
    # w1 [d, h] on stage 0 is held split over h (m1), replicated over the batch's m0;
    # w2 [h, c] on stage 1 over h too, so its state joins m0 to m1 on that dim.
    source = jax_program(plan(StepOptions(optimizer="adam", zero=zero)))
    assert table(source, "STATE_LAYOUTS") == {"w1": {0: state},
                                              "w2": {1: (("m1", "m0") if zero else "m1", None)}}
    assert table(source, "GRAD_LAYOUTS")["w1"] == {0: grads}
    assert table(source, "PARAM_LAYOUTS")["w1"] == {0: params}
    assert "STATE_KINDS = ('m', 'v', 't')" in source


@pytest.mark.parametrize(("precision", "zero", "master"), [
    ("bf16", 0, (None, "m1")), ("bf16", 1, ("m0", "m1")), ("fp32", 2, (None, "m1")),
    ("fp32", 3, ("m0", "m1"))])
def test_the_fp32_master_is_sharded_with_the_state_under_bf16(
        precision: str, zero: int, master: tuple) -> None:
    # Under bf16/fp16 the fp32 master params are part of the optimizer state, sharded
    # with it from ZeRO 1; under fp32 the master is the param, sharded at ZeRO 3.
    source = jax_program(plan(StepOptions(optimizer="adam", precision=precision, zero=zero)))
    assert table(source, "MASTER_LAYOUTS")["w1"] == {0: master}


def test_recompute_checkpoints_the_marked_layers_within_their_stage() -> None:
    source = jax_program(plan(StepOptions(recompute="auto"), recomputed=("a", "z")))
    stage1 = source[source.index("\ndef stage1("):source.index("\nSTAGE_FUNCTIONS = ")]
    assert source.count("jax.checkpoint(recomputed") == 1  # stage 1's (no chunks: stacked)
    assert "# recomputed in the backward (jax.checkpoint): a, z\n" in stage1
    assert "a, z = jax.checkpoint(" not in stage1  # only z leaves the run
    assert "    z, = jax.checkpoint(recomputed_1)(h, w2)\n" in stage1
    assert "(params.get('w2#stack'),))" in stage1  # its gradient sums kept per replica


def test_the_default_pipeline_has_no_training_tables() -> None:
    source = jax_program(plan(StepOptions()))
    assert "STATE_LAYOUTS" not in source
    assert "jax.checkpoint(" not in source
    assert "return {n: w - lr * RATE_SCALES.get(n, 1) * grads[n]" in source


# Each against pase's runtime on one device (`harness.check_training`: the reference
# runs without ZeRO and recomputation, which change no number). Tolerances: fp32 1e-4
# normwise (the sums' order only); bf16/fp16 twice the 1-device run's own distance from
# fp32, at least the format's unit roundoff (`check.tolerance`: both runs round the same
# values and differ only where an fp32 sum in another order crosses a rounding boundary).
STEPS = [StepOptions(optimizer="adam", precision="bf16", recompute="auto", zero=1),
         StepOptions(optimizer="momentum", recompute="auto", zero=3),
         StepOptions(precision="fp16", zero=2)]


@pytest.mark.parametrize("options", STEPS, ids=lambda o: f"{o.optimizer}-{o.precision}")
def test_the_pipeline_matches_one_device_and_learns(options: StepOptions) -> None:
    module = plan(options, recomputed=("a", "z"))
    report = train_jax(module, 8, steps=4, lr=LEARNING_RATES[options.optimizer]).training
    assert report.passed(), (report.loss_errors, report.gradient_error,
                             report.parameter_error, report.noise)
    assert report.element == {"fp32": "f32"}.get(options.precision, options.precision)
    losses = report.losses
    assert all(later < earlier for earlier, later in zip(losses, losses[1:], strict=False))


def test_a_stage_per_process_gives_the_losses_of_one_process(tmp_path: Path) -> None:
    # Adam in bf16 with ZeRO 1, each of 2 processes running one stage of 4 devices;
    # one process of 8 devices runs the same program.
    module = plan(StepOptions(optimizer="adam", precision="bf16", zero=1))
    program = tmp_path / "step.py"
    program.write_text(jax_program(module))
    np.savez(tmp_path / "data.npz", **make_data(forward_graph(module), 0))  # type: ignore[arg-type]
    args = ["--steps", "3", "--data", str(tmp_path / "data.npz")]
    single = subprocess.run([sys.executable, str(program), *args], capture_output=True,
                            text=True, env=child_environment(8), timeout=300, check=False)
    assert single.returncode == 0, single.stderr[-2000:]
    expected = [float(line.split()[3]) for line in single.stdout.splitlines()]
    losses = [float(words[3]) for words in run_two_processes(program, *args[2:], steps=3)]
    # Gloo's cross-process sums add in another order than XLA's in-process ones.
    assert losses == pytest.approx(expected, rel=1e-5)
    assert len(losses) == 3


@pytest.mark.parametrize("ways", [2, 4])
def test_under_bf16_the_stages_move_bf16_and_gather_the_copies_not_the_master(
        ways: int, tmp_path: Path) -> None:
    # Adam, bf16, ZeRO 1: the update reduces the gradients in bf16 into the shard (a
    # reduce-scatter written out, in a shard_map over the stage's whole mesh, where the
    # stage is all data-parallel and where it has a tensor-parallel axis too: each
    # device's replica's sums of its block; the partitioner's all-reduce and slice
    # before) and
    # updates the fp32 master there (no all-gather of it); the bf16 copies the forward
    # reads are gathered once a step (`copies`); the activations and their gradients
    # cross between the stages in bf16. Read from the HLO XLA's SPMD partitioner makes of
    # each program (its CPU backend then widens bf16 collectives to f32).
    modules = partitioned(jax_program(plan(StepOptions(
        optimizer="adam", precision="bf16", zero=1), ways=ways)), 8, tmp_path)
    kinds = {name: {(c.kind, c.bytes // c.elements) for c in collectives(hlo)}
             for name, hlo in modules.items()}
    assert kinds["jit_update"] == {("reduce-scatter", 2)}
    assert kinds["jit_copies"] == {("all-gather", 2)}
    assert kinds["jit_ppermute"] == {("collective-permute", 2)}
