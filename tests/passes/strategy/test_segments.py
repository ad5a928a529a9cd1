"""Segments: clean cuts are those with the fewest crossing tensors."""

from __future__ import annotations

import pytest

from pase.frontend import parse_file, parse_text
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.pipeline.segments import crossings, segments

TIED = """
graph @tied(b = 8, t = 16, v = 64, d = 32) {
  %ids = input [b, t] : i32
  %labels = input [b, t] : i32
  %wte = param [v, d]
  %x = embedding %ids, %wte
  %y = relu %x
  %z = relu %y
  %logits = einsum %z, %wte -> [b, t, v]
  %loss = softmax_cross_entropy %logits, %labels over v
  return %loss
}
"""

DIAMOND = """
graph @diamond(b = 8, d = 16) {
  %x = input [b, d]
  %a = relu %x
  %p = relu %a
  %q = tanh %a
  %s = add %p, %q
  %t = relu %s
  return %t
}
"""


def test_a_tied_parameter_does_not_hide_the_chain() -> None:
    graph = read_graph(parse_text(TIED))
    assert crossings(graph.layers, graph.edges) == [1, 1, 1, 1]
    assert segments(graph.layers, graph.edges) == [0, 1, 2, 3, 4]


def test_branches_stay_in_one_segment() -> None:
    graph = read_graph(parse_text(DIAMOND))
    # a | p q s t: a crosses; a p | q: p and a; a p q | s: p and q; s | t: s.
    assert crossings(graph.layers, graph.edges) == [1, 2, 2, 1]
    assert segments(graph.layers, graph.edges) == [0, 1, 1, 1, 2]


@pytest.mark.parametrize("name", ["alexnet", "transformer", "inception_v3", "gpt2_small"])
def test_segments_are_contiguous_and_numbered_from_zero(name: str) -> None:
    graph = read_graph(parse_file(f"models/{name}.dnn"))
    index = segments(graph.layers, graph.edges)
    assert index[0] == 0
    assert all(b - a in (0, 1) for a, b in zip(index, index[1:], strict=False))
    counts = crossings(graph.layers, graph.edges)
    fewest = min(counts)
    assert [i for i, c in enumerate(counts) if c == fewest] == \
        [i for i in range(len(index) - 1) if index[i + 1] != index[i]]
