"""An LSTM's weight gradient is reduced once a step by the `-t jax` program
(`targets/jax_recurrent.py`), and the collectives of a scan are counted once per step
(`pase.tools.run.jax.collectives`): left to the layouts, XLA all-reduced the weight's
gradient block inside the backward's scan, in every step of each layer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pase.dialect.training_options import StepOptions, set_training
from pase.targets.jax import jax_program
from pase.tools.run.jax import collectives, partitioned
from pase.tools.run.load import (
    forward_graph,
    layer_configs,
    load_model,
    strategy_and_scale,
    with_configs,
)

ROOT = Path(__file__).resolve().parents[2]
LOOP = """\
HloModule m, num_partitions=4

%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %g = f32[8]{0} all-reduce(%x), replica_groups={{0,1,2,3}}, to_apply=%add
}

%cond (p: (s32[], f32[8])) -> pred[] {
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%add (a: f32[], b: f32[]) -> f32[] {
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %w = (s32[], f32[8]) while(%t), condition=%cond, body=%body
  %r = f32[8]{0} all-gather(%a), replica_groups={{0,1}}, dimensions={0}
}
"""


def test_a_loops_collectives_run_its_trip_count_times() -> None:
    found = Counter((c.kind, c.group) for c in collectives(LOOP))
    assert found == {("all-reduce", 4): 5, ("all-gather", 2): 1}


@pytest.fixture(scope="module")
def rnnlm_steps(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Counter[tuple]]:
    """The rnnlm's step under Adam at ZeRO 0 and 1, on 8 devices at 1/8 scale, its batch 2
    ways (the LSTM splits its batch over m0 and its gates' units 4 ways over m1): per
    (kind, group size, elements), how often the partitioned step runs each collective."""
    steps = {}
    for zero in (0, 1):
        options = StepOptions(optimizer="adam", zero=zero)
        loaded, _ = load_model(str(ROOT / "models" / "rnnlm.dnn"))
        module = strategy_and_scale(loaded, 8, 0.125, "a100-nvlink", options=options,
                                    one_mesh=True, ways=2)
        graph = forward_graph(module)
        set_training(graph, options)
        assert layer_configs(graph)["y"] == {"b": 2, "n": 4}
        hlo = partitioned(jax_program(with_configs(module, layer_configs(graph)), 8), 8,
                          tmp_path_factory.mktemp(f"zero{zero}"))["jit_step"]
        steps[zero] = Counter((c.kind, c.group, c.elements) for c in collectives(hlo))
    return steps


def test_the_lstm_weight_gradient_is_reduced_once_a_step(rnnlm_steps) -> None:
    # w [2, 512, 1024] at 1/8 scale, its gate columns split 4 ways: a block of 262,144
    # elements per device, replicated over the batch's 2 ways. Its gradient was
    # all-reduced in each of the 32 steps of both layers' backward scans (64 times).
    block = 2 * 512 * 1024 // 4
    assert rnnlm_steps[0][("all-reduce", 2, block)] == 1
    assert rnnlm_steps[1][("all-reduce", 2, block)] == 0
    assert rnnlm_steps[1][("reduce-scatter", 2, block // 2)] == 1  # into its ZeRO shard
