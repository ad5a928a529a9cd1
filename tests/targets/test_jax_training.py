"""The `-t jax` program's training step under `pase.training` (targets/jax_training.py):
the ZeRO layouts and the recomputed layers as the program shows them, and one run of
Adam in bf16 with ZeRO and recomputation against pase's runtime on one device."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from cli import run_tool
from xdsl.context import Context
from xdsl.dialects.builtin import UnitAttr

from pase.dialect.training_options import RECOMPUTE_ATTR_NAME, StepOptions, set_training
from pase.frontend import parse_file, parse_text
from pase.passes.search import PaseSearchPass
from pase.targets.jax import jax_program
from pase.tools.pase_run import main
from pase.tools.run.load import forward_graph, with_configs

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "models" / "mlp.dnn")


def program(options: StepOptions, recomputed: tuple[str, ...] = ()) -> str:
    """The mlp's program with its batch split 2 ways and h 2 ways on 4 devices."""
    module = with_configs(parse_file(MLP), {"h": {"b": 2, "h": 2}, "a": {"b": 2, "h": 2},
                                            "z": {"b": 2, "h": 2}, "l": {"b": 2}})
    graph = forward_graph(module)
    set_training(graph, options)
    for layer, name in graph.layer_names().items():
        if name in recomputed:
            layer.attributes[RECOMPUTE_ATTR_NAME] = UnitAttr()
    return jax_program(module, 4)


def table(source: str, name: str) -> dict[str, tuple]:
    """The program's table `NAME = {  # comment ... }`, as a dict."""
    start = source.index(f"\n{name} = {{")
    body = source[source.index("\n", start + 1):source.index("\n}", start)]
    return ast.literal_eval("{" + body + "}")


@pytest.mark.parametrize(("zero", "precision", "state", "grads", "params", "master"), [
    (0, "fp32", (None, "m1"), (None, "m1"), (None, "m1"), (None, "m1")),
    (1, "fp32", ("m0", "m1"), ("m0", "m1"), (None, "m1"), (None, "m1")),
    (1, "bf16", ("m0", "m1"), ("m0", "m1"), (None, "m1"), ("m0", "m1")),
    (2, "fp32", ("m0", "m1"), ("m0", "m1"), (None, "m1"), (None, "m1")),
    (3, "fp32", ("m0", "m1"), ("m0", "m1"), ("m0", "m1"), ("m0", "m1"))])
def test_zero_shards_state_grads_and_params_over_the_replicas(
        zero: int, precision: str, state: tuple, grads: tuple, params: tuple,
        master: tuple) -> None:
    # w1 [d, h] is held split over h (m1) and replicated over the batch's axis m0. The
    # gradients are reduce-scattered from ZeRO 1 on; under bf16 the fp32 master params
    # are part of the sharded optimizer state (docs/cost-model.md, "The training step").
    source = program(StepOptions(optimizer="adam", precision=precision, zero=zero))
    assert table(source, "STATE_LAYOUTS")["w1"] == state
    assert table(source, "GRAD_LAYOUTS")["w1"] == grads
    assert table(source, "PARAM_LAYOUTS")["w1"] == params
    assert table(source, "MASTER_LAYOUTS")["w1"] == master


def test_recompute_auto_checkpoints_the_marked_layers_only() -> None:
    source = program(StepOptions(recompute="auto"), recomputed=("h", "a"))
    assert source.count("jax.checkpoint(") == 1
    assert "# recomputed in the backward (jax.checkpoint): h, a\n" in source
    assert "    a, = jax.checkpoint(recomputed_1)(x, w1)\n" in source
    full = program(StepOptions(recompute="full"))
    assert "# recomputed in the backward (jax.checkpoint): h, a, z, l\n" in full


RESIDUAL = """
graph @residual(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w1 = param [d, h]
  %h = einsum %x, %w1 -> [b, h]
  %a = relu %h
  %w2 = param [h, d]
  %y = einsum %a, %w2 -> [b, d]
  %r = add %x, %y
  %l = reduce mean %r over [b, d]
  return %l
}
"""


@pytest.mark.parametrize(("source", "recomputed"), [
    (RESIDUAL, "# recomputed in the backward (jax.checkpoint): h, a, y\n"), (None, None)])
def test_recompute_full_checkpoints_the_segments_the_search_charged(
        source: str | None, recomputed: str | None) -> None:
    # The search keeps each segment's last layer (r, the residual stream; on the mlp's
    # chain every layer) and records the segments, so the program recomputes the rest
    # of each segment only: on the mlp, nothing.
    module = parse_text(source) if source else parse_file(MLP)
    PaseSearchPass(devices=4, recompute="full").apply(Context(), module)
    program = jax_program(module, 4)
    if recomputed is None:
        assert "jax.checkpoint(" not in program
    else:
        assert program.count("jax.checkpoint(") == 1
        assert recomputed in program


def test_the_default_step_is_the_plain_sgd_program() -> None:
    assert "STATE_LAYOUTS" not in program(StepOptions())


def test_adam_bf16_zero_and_recompute_on_jax_match_pase(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_tool(main, [
        MLP, "--devices", "4", "--machine", "a100-nvlink", "--scale", "0.125", "--engine", "jax",
        "--check", "--steps", "2", "--optimizer", "adam", "--precision", "bf16", "--zero", "1",
        "--recompute", "full"], capsys)
    assert (status, err) == (0, "")
    assert "(bf16)" in out
    assert "check passed" in out


def test_a_data_parallel_plan_writes_zeros_collectives_out() -> None:
    # Every layer's batch over the 4 devices: the step is a shard_map over the mesh with
    # ZeRO's reduce-scatter and gathers written out (pase.targets.jax_zero); the plan
    # with a tensor-parallel axis keeps the partitioner's layouts.
    module = with_configs(parse_file(MLP), {name: {"b": 4} for name in "hazl"})
    set_training(forward_graph(module), StepOptions(optimizer="adam", zero=3))
    source = jax_program(module, 4)
    assert "MANUAL = ('m0',)" in source
    assert "LOSS_WEIGHT = 0.25" in source
    assert "jax.checkpoint(weighted, policy=regathered)" in source
    assert "MANUAL = " not in program(StepOptions(optimizer="adam", zero=3))


@pytest.mark.parametrize("zero", ["1", "3"])
def test_zero_written_out_on_jax_matches_pase(zero: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_tool(main, [
        MLP, "--devices", "4", "--machine", "a100-nvlink", "--scale", "0.125", "--engine", "jax",
        "--check", "--steps", "2", "--optimizer", "adam", "--precision", "bf16", "--zero", zero,
        "--data-parallel"], capsys)
    assert (status, err) == (0, "")
    assert "reduce-scatter" in out
    assert "check passed" in out


@pytest.mark.parametrize("zero", ["1", "3"])
def test_a_tensor_parallel_plan_reduces_its_gradients_into_the_shard_on_jax(
        zero: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --data-parallel 2 on 4 devices: the batch over m0, the hidden dim over m1. The
    # program reduce-scatters each einsum's param gradient itself (targets/jax_reduced.py)
    # and pase-run's table reads the step as XLA's SPMD partitioner leaves it.
    status, out, err = run_tool(main, [
        MLP, "--devices", "4", "--machine", "a100-nvlink", "--scale", "0.125", "--engine", "jax",
        "--check", "--steps", "3", "--optimizer", "adam", "--precision", "bf16", "--zero", zero,
        "--data-parallel", "2"], capsys)
    assert (status, err) == (0, "")
    assert "collectives of the step as XLA's SPMD partitioner writes it" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith("  ") and line.split()[0] in ("reduce-scatter", "all-gather")}
    assert rows["reduce-scatter"][1] == "2"  # w1's and w2's gradients
    assert "check passed" in out
