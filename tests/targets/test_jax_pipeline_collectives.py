"""A pipelined `-t jax` program moves, per stage, the words the plan charges the stage
(docs/jax.md, "Pipeline plans"): each forward hands its residuals to its backward (no
forward recomputed, so no forward collective twice), and a stage's parameter gradients
that are partial sums over replicas stay one copy per replica across the micro-batches
(`targets/jax_stacked.py`), summed once by the update, where XLA all-reduced them in
every micro-batch's backward.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pase.dialect.training_options import StepOptions
from pase.frontend import parse_file
from pase.targets.jax import jax_program
from pase.tools.run.jax import train_jax
from pase.tools.run.jax_pipeline import PipelineCompiled
from pase.tools.run.load import Stages, strategy_and_scale

MODELS = Path(__file__).resolve().parents[2] / "models"


def pipelined(model: str, microbatches: int, ways: int,
              options: StepOptions | None = None) -> object:
    """`model`'s plan of 2 stages on 8 devices (4 each), `microbatches`, the batch split
    `ways` ways in every layer (0: searched), at 1/8 scale, as pase-run plans it."""
    return strategy_and_scale(parse_file(str(MODELS / f"{model}.dnn")), 8, 0.125,
                              "a100-nvlink", stages=Stages(2, microbatches),
                              one_mesh=True, ways=ways, options=options)


def test_each_stage_moves_the_words_the_plan_charges_it() -> None:
    # The mlp at t x p x d = 2 x 2 x 2, 2 micro-batches: w1 [d, h] (stage 0) and w2 [h, c]
    # (stage 1) split over h (m1), the batch over m0, so each gradient is a partial sum
    # over m0; stage 1's second einsum sums over h, an all-reduce over m1 in the forward.
    # Before, each backward recomputed its stage's forward (that all-reduce twice) and
    # all-reduced the gradients over m0 in each micro-batch: 2x and more the plan's words.
    report = train_jax(pipelined("mlp", 2, 2), 8, steps=1)  # type: ignore[arg-type]
    assert report.training.passed()
    compiled = report.compiled
    assert isinstance(compiled, PipelineCompiled)
    for stage in compiled.stages:
        words = sum(runs * collective.words() for collective, runs in stage.collectives)
        # Exact: the ring formulas of the same collectives the plan prices.
        assert words == pytest.approx(stage.predicted_layer + stage.predicted_edge,
                                      rel=1e-12), stage.index
        assert words > 0
    for boundary in compiled.boundaries:
        assert boundary.forward == boundary.predicted_forward
        assert boundary.backward == boundary.predicted_backward


def test_zero3_stages_move_the_words_the_plan_charges_them() -> None:
    # The same plan under Adam and ZeRO 3: each stage gathers its params' shards before
    # every micro-batch's forward and, where the backward reads the param (w2, not the
    # first layer's w1), again before its backward; it reduce-scatters the gradient sums
    # once a step. Stage 0: w1's block [32, 64] of 2,048 elements, 1,024 gathered from
    # the other replica in each of the 2 micro-batches and 1,024 reduce-scattered: 3,072
    # words, where the plan's words were the plain step's (its all-reduce, 2,048).
    options = StepOptions(optimizer="adam", zero=3)
    report = train_jax(pipelined("mlp", 2, 2, options), 8, steps=1)  # type: ignore[arg-type]
    assert report.training.passed()
    compiled = report.compiled
    assert isinstance(compiled, PipelineCompiled)
    moved = [sum(runs * collective.words() for collective, runs in stage.collectives)
             for stage in compiled.stages]
    assert moved[0] == 3072
    for stage, words in zip(compiled.stages, moved, strict=True):
        assert words == pytest.approx(stage.predicted_layer + stage.predicted_edge,
                                      rel=1e-12), stage.index


def stacked(source: str) -> list[dict[str, tuple[str, ...]]]:
    start = source.index("\nSTACKED = [")
    return ast.literal_eval("[" + source[source.index("\n", start + 1):
                                         source.index("\n]", start)] + "]")


def test_a_mixed_stage_keeps_apart_only_what_its_blocks_give() -> None:
    # AlexNet, 2 stages of 4 devices, 4 micro-batches: stage 0 (convolutions) splits
    # only the batch; stage 1 splits the batch of conv4 and conv5 over both its axes and
    # the fully connected layers' features. A conv's weight gradient is a partial sum over
    # the batch's axes that each device's blocks give; fc6's weight, split over its input
    # features, takes no sum; fc7's and the logits' weights are whole per device.
    source = jax_program(pipelined("alexnet", 4, 0))  # type: ignore[arg-type]
    tables = stacked(source)
    assert tables[1] == {"conv4_w": ("m0", "m1"), "conv5_w": ("m0", "m1")}
    assert set(tables[0]) == {"conv1_w", "conv2_w", "conv3_w"}
    assert "DATA_AXES = [(), ()]" in source  # (every param kept apart by its layer: no chunks)
    assert "params.get('conv4_w#stack')" in source
