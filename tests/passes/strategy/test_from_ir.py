"""`from_ir`: a `dnn.graph` read into plain layers, edges, the batch dim and the pins."""

from __future__ import annotations

import pytest

from pase.dialect.dnn import GraphOp
from pase.frontend import parse_text
from pase.passes.strategy import build_problem, read_graph

SOURCE = """
graph @pinned(b = 8, d = 16, h = 32) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h] config {b = 4, h = 1}
  %a = relu %y
  %v = param [h, d]
  %z = einsum %a, %v -> [b, d]
  return %z
}
"""


def test_a_graph_reads_into_layers_edges_batch_and_pins() -> None:
    graph = read_graph(parse_text(SOURCE))
    assert graph.name == "pinned"
    assert [(layer.name, layer.kind) for layer in graph.layers] == [
        ("y", "einsum"), ("a", "relu"), ("z", "einsum")]
    assert [(edge.producer, edge.consumer) for edge in graph.edges] == [(0, 1), (1, 2)]
    assert graph.batch == "b"
    assert graph.pins == {"y": {"b": 4}}  # (pase.config keeps no factor of 1)


def test_the_pins_of_the_source_are_kept_unless_overridden() -> None:
    module = parse_text(SOURCE)
    assert build_problem(module, 4).configs("y") == [{"b": 4}]
    assert build_problem(module, 4, pinned={"y": {"h": 2}}).configs("y") == [{"h": 2}]
    assert build_problem(module, 4, pinned={"a": {"b": 2}}).configs("y") == [{"b": 4}]


def test_a_module_of_two_graphs_needs_the_graph_op() -> None:
    module = parse_text(SOURCE + SOURCE.replace("@pinned", "@again"))
    with pytest.raises(ValueError, match="expected one dnn.graph, found 2; pass the graph op"):
        read_graph(module)
    second = list(module.ops)[1]
    assert isinstance(second, GraphOp)
    assert read_graph(second).name == "again"
