"""Recomputation on pase's runtime: a recomputed layer keeps its inputs, not its saved
values, and its backward runs its forward kernel again; the numbers are bit-identical to
the run that keeps them, and no word moves that the plan does not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pase.frontend.dnn import parse_text
from pase.runtime import executor
from pase.runtime.program import Step
from pase.tools.run.check import make_data
from pase.tools.run.harness import with_step
from pase.tools.run.load import forward_graph, with_configs
from pase.tools.run.runtime import RuntimeBackend

GRAPH = """
graph @g(b = 8, d = 16, c = 4) {
  %x = input [b, d]
  %scale = param [d]
  %bias = param [d]
  %n = layernorm %x, %scale, %bias over d
  %w = param [d, c]
  %z = einsum %n, %w -> [b, c]
  %t = input [b] : i32
  %l = softmax_cross_entropy %z, %t over c
  return %l
}
"""


def test_recomputed_layers_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    module = with_configs(parse_text(GRAPH), {"n": {"b": 4}, "z": {"b": 4}, "l": {"b": 4}})
    data = make_data(forward_graph(module), seed=0)
    kept = RuntimeBackend(4).train(module, data, 2, 0.03, None)
    recomputations: list[str] = []

    class Counted(executor._Recompute):
        def __init__(self, step: Step, inputs: list[Any]) -> None:
            super().__init__(step, inputs)
            recomputations.append(step.tag)

    monkeypatch.setattr(executor, "_Recompute", Counted)
    again = RuntimeBackend(4).train(with_step(module, recompute="full"), data, 2, 0.03, None)
    # Most kernels save nothing (their backward reads inputs and result); the layer
    # norm's statistics are recomputed, the loss's saved softmax too.
    assert "n" in recomputations
    assert again.losses == kept.losses
    for name in kept.params:
        assert np.array_equal(again.params[name], kept.params[name])
        assert np.array_equal(again.grads[name], kept.grads[name])
    assert [(r.name, r.measured) for r in again.words] == [(r.name, r.measured)
                                                            for r in kept.words]
