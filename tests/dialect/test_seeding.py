"""The seeding rule: fan-in from the reading layer's contracted dims, ids within the dim
they select, a norm's scale near one, other params small."""

from __future__ import annotations

from math import sqrt

from pase.dialect import dnn
from pase.dialect.dnn.seeding import Seed, seeds
from pase.frontend.dnn import parse_text

GRAPH = """
graph @g(b = 2, c = 3, k = 4, h = 8, w = 8, r = 3, s = 3, v = 11, e = 6, n = 5) {
  %image = input [b, c, h, w]
  %filter = param [k, c, r, s]
  %y = conv2d %image, %filter padding 1 -> [b, k, h, w]
  %ids = input [b] : i32
  %table = param [v, e]
  %embedded = embedding %ids, %table
  %scale = param [e]
  %bias = param [e]
  %normed = layernorm %embedded, %scale, %bias over e
  %weight = param [e, n]
  %logits = einsum %normed, %weight -> [b, n]
  %labels = input [b] : i32
  %loss = softmax_cross_entropy %logits, %labels over n
  return %loss
}
"""


def test_each_tensor_is_seeded_by_how_its_reader_uses_it() -> None:
    graph = next(op for op in parse_text(GRAPH).ops if isinstance(op, dnn.GraphOp))
    by_name = {value.name_hint: seed for value, seed in seeds(graph).items()}
    assert by_name == {
        "image": Seed("normal", 1.0),
        "filter": Seed("normal", 1 / sqrt(3 * 3 * 3)),  # c·r·s, not k·c·r
        "ids": Seed("ints", 11.0),  # the vocabulary the ids select
        "table": Seed("normal", 1.0),  # one row read, no sum: fan-in 1
        "scale": Seed("normal+1", 0.1),
        "bias": Seed("normal", 0.1),
        "weight": Seed("normal", 1 / sqrt(6)),
        "labels": Seed("ints", 5.0),  # the classes
    }


RESIDUAL = """
graph @r(b = 2, d = 4, f = 8, c = 3) {
  %x = input [b, d]
  %w1 = param [d, f]
  %up = einsum %x, %w1 -> [b, f]
  %w2 = param [f, d]
  %down = einsum %up, %w2 -> [b, d]
  %res = add %x, %down
  %w3 = param [d, f]
  %up2 = einsum %res, %w3 -> [b, f]
  %w4 = param [f, d]
  %down2 = einsum %up2, %w4 -> [b, d]
  %res2 = add %res, %down2
  %bias = param [d]
  %shifted = add %res2, %bias
  %wc = param [d, c]
  %logits = einsum %shifted, %wc -> [b, c]
  %t = input [b] : i32
  %loss = softmax_cross_entropy %logits, %t over c
  return %loss
}
"""


def test_a_residual_branchs_last_weight_is_scaled_by_the_branch_count() -> None:
    graph = next(op for op in parse_text(RESIDUAL).ops if isinstance(op, dnn.GraphOp))
    by_name = {value.name_hint: seed.scale for value, seed in seeds(graph).items()}
    # two residual adds (a bias added is none): w2 and w4 end a branch, w1, w3, wc do not
    assert by_name["w2"] == by_name["w4"] == 1 / sqrt(8) / sqrt(2)
    assert by_name["w1"] == by_name["w3"] == by_name["wc"] == 1 / sqrt(4)
