"""Dense blocks reduced by counting (`strategy/dense_blocks.py`): the reduced graph's optimum,
expanded, is the whole graph's, on random blocks against the DP over the whole graph, and a
real dense block is searched within a memory budget the whole DP's tables exceed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pase.frontend.dnn import parse_text
from pase.passes.strategy import (
    SearchMemoryError,
    SearchOptions,
    build_problem,
    dense_blocks,
    solve,
)
from pase.passes.strategy.budget import as_budget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dense_blocks import find_dense_blocks, reduce_dense_blocks
from pase.passes.strategy.dp import solve_dp


def random_block(seed: int, layers: int, path_length: int) -> CostGraph:
    """A dense block of `layers` layers between an input and an output vertex, random
    integer costs (ties abound), two configurations of the concatenations alike."""
    rng = np.random.default_rng(seed)
    names: list[str] = []
    costs: list[np.ndarray] = []
    edges: list[tuple[int, int, np.ndarray]] = []

    def vertex(name: str, size: int) -> int:
        names.append(name)
        costs.append(rng.integers(0, 5, size).astype(float))
        return len(names) - 1

    def edge(u: int, v: int, table: np.ndarray | None = None) -> None:
        if table is None:
            table = rng.integers(0, 5, (costs[u].size, costs[v].size)).astype(float)
        edges.append((u, v, table))

    source_table = rng.integers(0, 6, (3, 4)).astype(float)
    stem_table = rng.integers(0, 6, (2, 4)).astype(float)
    source_table[:, 1], stem_table[:, 1] = source_table[:, 0], stem_table[:, 0]
    stem = vertex("p", 2)
    edge(vertex("in", 2), stem)
    sources: list[int] = []
    start = stem
    for j in range(1, layers + 1):
        if j > 1:
            start = vertex(f"g{j}", 4)
            edge(stem, start, stem_table)
            for source in sources:
                edge(source, start, source_table)
        for step in range(path_length):
            following = vertex(f"path{j}_{step}", 3)
            edge(start, following)
            start = following
        sources.append(vertex(f"x{j}", 3))
        edge(start, sources[-1])
    final = vertex("F", 4)
    edge(stem, final, stem_table)
    for source in sources:
        edge(source, final, source_table)
    edge(final, vertex("out", 2))
    graph = CostGraph(names, costs)
    for u, v, table in edges:
        graph.add_edge(u, v, table)
    return graph


@pytest.mark.parametrize(("seed", "layers", "path_length", "chunk"),
                         [(0, 4, 1, 1 << 16), (1, 5, 2, 1 << 16), (2, 6, 3, 2)])
def test_reduced_optimum_is_the_whole_graphs(seed: int, layers: int, path_length: int,
                                             chunk: int, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """(The last case forms its sums 2 count vectors at a time.)"""
    monkeypatch.setattr(dense_blocks, "CHUNK_STATES", chunk)
    graph = random_block(seed, layers, path_length)
    whole = solve_dp(graph)
    (block,) = find_dense_blocks(graph)
    assert len(block.sources) == layers
    reduction = reduce_dense_blocks(graph, as_budget(1 << 30))
    assert reduction is not None
    assert len(reduction.graph.names) == 4  # in, p, F, out
    result = solve_dp(reduction.graph)
    assert result.cost == whole.cost  # integers: exact sums
    assert graph.total_cost(reduction.expand(result.choice)) == whole.cost


def dense_block_dnn(layers: int) -> str:
    """DenseNet's dense block of `layers` layers (norm, relu, 1x1 conv, relu, 3x3 conv,
    each reading the concatenation of every earlier output), tiny, in `.dnn`."""
    sizes = ["b = 8", "c = 3", "h = 8", "w = 8", "c0 = 8", "kh = 3", "kw = 3", "oh = 1",
             "ow = 1", "m = 8", "n = 10", *(f"c{j} = {8 + 4 * j}" for j in range(1, layers + 1)),
             *(f"g{j} = 4" for j in range(1, layers + 1))]
    lines = ["%image = input [b, c, h, w]", "%labels = input [b] : i64",
             "%w0 = param [c0, c, kh, kw]",
             "%x0 = conv2d %image, %w0 stride 1 padding 1 -> [b, c0, h, w]"]
    outputs = ["%x0"]
    for j in range(1, layers + 1):
        channels = f"c{j - 1}"
        if j > 1:
            lines.append(f"%cat{j} = concat {', '.join(outputs)} -> [b, {channels}, h, w]")
        lines += [f"%s{j} = param [{channels}]", f"%t{j} = param [{channels}]",
                  f"%bn{j} = batchnorm {'%x0' if j == 1 else f'%cat{j}'}, %s{j}, %t{j} "
                  "over [b, h, w]",
                  f"%r{j} = relu %bn{j}", f"%u{j} = param [m, {channels}, oh, ow]",
                  f"%v{j} = conv2d %r{j}, %u{j} stride 1 padding 0 -> [b, m, h, w]",
                  f"%q{j} = relu %v{j}", f"%z{j} = param [g{j}, m, kh, kw]",
                  f"%y{j} = conv2d %q{j}, %z{j} stride 1 padding 1 -> [b, g{j}, h, w]"]
        outputs.append(f"%y{j}")
    lines += [f"%out = concat {', '.join(outputs)} -> [b, c{layers}, h, w]",
              "%pooled = reduce mean %out over [h, w]", f"%head = param [n, c{layers}]",
              "%logits = einsum %pooled, %head -> [b, n]",
              "%loss = softmax_cross_entropy %logits, %labels over n", "return %loss"]
    body = "\n".join(f"  {line}" for line in lines)
    return f"graph @dense({', '.join(sizes)}) {{\n{body}\n}}\n"


def test_dense_block_searched_within_a_budget_the_whole_dp_exceeds() -> None:
    """Six layers on 4 devices: the whole DP's tables take 6.6 MB; searched in 2 MiB."""
    problem = build_problem(parse_text(dense_block_dnn(6)), devices=4)
    graph = problem.cost_graph()
    assert [len(block.sources) for block in find_dense_blocks(graph)] == [6]
    whole = solve_dp(graph)
    with pytest.raises(SearchMemoryError):
        solve_dp(graph, memory_budget=2 << 20)
    solution = solve(build_problem(parse_text(dense_block_dnn(6)), devices=4),
                     SearchOptions(memory_budget=2 << 20))
    assert math.isclose(solution.cost, whole.cost, rel_tol=1e-12)
    assert solution.stats is not None
    assert solution.stats.dense_blocks == (6,)
    assert math.isclose(problem.cost(solution.assignment), whole.cost, rel_tol=1e-12)
