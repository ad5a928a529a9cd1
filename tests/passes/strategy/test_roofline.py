"""The roofline of `TrainingCost` (docs/cost-model.md, "The roofline"): a memory-bound
layer's time is the bytes it moves over the HBM bandwidth, a large GEMM's its FLOPs
over the peak, and `PaseCost` (and a machine without an HBM bandwidth) keeps the
FLOP-only charge."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pase.frontend import parse_text
from pase.passes.strategy import PRESETS, TrainingOptions
from pase.passes.strategy.cost_models import PASE_COST
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.training_cost import TrainingCost

# One block's kinds at a size where the GEMM is compute-bound on an A100.
BLOCK = """
graph @block(b = 1024, d = 1024, h = 1024) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  %g = param [h]
  %beta = param [h]
  %n = layernorm %y, %g, %beta over h
  %p = softmax %n over h
  return %p
}
"""
MACHINE = PRESETS["a100-80gb-dgx"]
N = 1024 * 1024  # elements of an activation
BF16 = TrainingCost(TrainingOptions(precision="bf16"))


@pytest.fixture(scope="module")
def layers():
    return {layer.name: layer for layer in read_graph(parse_text(BLOCK)).layers}


Q = N // 4  # its block split 4 ways


@pytest.mark.parametrize(("name", "forward", "backward", "parameters"), [
    # layernorm split b 4 ways: x, g, beta read and y written; dy, x, g, beta read and
    # dx, dg, dbeta written (g and beta whole)
    ("n", 2 * (Q + 2 * 1024 + Q), 2 * (Q + 2 * (Q + 2 * 1024)), 2 * 1024),
    # softmax: x read, y written; dy and y read, dx written
    ("p", 2 * (Q + Q), 2 * (Q + Q + Q), 0),
])
def test_memory_bound_layer_moves_its_blocks_at_hbm_bandwidth(layers, name, forward,
                                                              backward, parameters):
    costs = BF16.layer_costs(layers[name], [{"b": 4}], MACHINE)
    bandwidth = MACHINE.hbm_bandwidth
    assert costs.forward_compute[0] == forward / bandwidth
    update = 12 * parameters / bandwidth  # sgd's update, 12 bytes a parameter element
    assert costs.compute[0] == pytest.approx(forward / bandwidth + backward / bandwidth
                                             + update, rel=1e-12)
    # The FLOP-only charge, which the roofline replaces, is far below.
    space = layers[name].space
    flops = space.points * (space.flops_forward + space.flops_backward) / 4
    assert flops / MACHINE.bf16_flops < costs.compute[0] / 10


def test_large_gemm_is_compute_bound(layers):
    gemm = layers["y"]
    costs = BF16.layer_costs(gemm, [{}, {"b": 2}], MACHINE)
    flops = 2 * 1024**3  # forward; the backward's dw twice that (x needs no gradient)
    assert costs.forward_compute.tolist() == [flops / 312e12, flops / 2 / 312e12]
    update = 12 * 1024**2 / MACHINE.hbm_bandwidth
    assert costs.compute[0] == pytest.approx(3 * flops / 312e12 + update, rel=1e-12)


def test_pase_cost_and_no_hbm_bandwidth_keep_the_flop_charge(layers):
    softmax = layers["p"]
    plain = PASE_COST.layer_costs(softmax, [{}], MACHINE)
    assert plain.compute[0] == (5.0 + 4.0) * N / MACHINE.flops  # fp32 peak, no roofline
    unknown = replace(MACHINE, hbm_bandwidth=0.0)
    assert BF16.layer_costs(softmax, [{}], unknown).compute[0] == 9.0 * N / 312e12
