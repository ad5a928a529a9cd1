"""The problem API end to end: `.dnn` source in, an optimal strategy out.

The DP must equal exhaustive search on random small graphs written as `.dnn` source
(chains, diamonds, skip connections, multi-input layers), under every elimination
order; pinned layers keep their configurations; the data-parallel baseline is in the
search space; and the paper's models have the dependent sets and strategies PaSE
reports.
"""

from __future__ import annotations

import re
from collections import Counter
from math import prod
from pathlib import Path

import numpy as np
import pytest
from random_graphs import DIMS, LAYER_KINDS, RandomGraph

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import Problem, SearchError, SearchOptions, build_problem, solve
from pase.passes.strategy.orders import ORDER_METHODS

MODELS = Path(__file__).resolve().parents[3] / "models"

STRATEGY_LIMIT = 100_000


def random_source(seed: int) -> str:
    """A random graph of 3-7 layers over small dims, as `.dnn` source."""
    rng = np.random.default_rng(seed)
    graph = RandomGraph(rng)
    graph.lines.append("  %x = input [b, d]")
    graph.values.append(("x", ("b", "d")))
    chain = seed % 3 == 0
    target = int(rng.integers(3, 8))
    with_loss = seed % 4 == 1
    while graph.layers < target - with_loss:
        kind = LAYER_KINDS[int(rng.integers(len(LAYER_KINDS)))]
        graph.add_layer(kind, chain)
    if with_loss:
        name, dims = graph.values[-1]
        if len(dims) == 2 and dims[0] == "b":
            graph.lines.append("  %labels = input [b] : i32")
            graph.emit(f"softmax_cross_entropy %{name}, %labels over {dims[1]}", (), name)
    outputs = [name for name, _ in graph.values if name not in graph.used and name != "x"]
    header = ", ".join(f"{dim} = {size}" for dim, size in DIMS.items())
    body = "\n".join(graph.lines)
    return f"graph @random{seed}({header}) {{\n{body}\n  return %{', %'.join(outputs)}\n}}\n"


def small_min_shard(source: str, devices: int, compat: str = "") -> int:
    """The smallest min-shard that keeps exhaustive search small."""
    module = parse_text(source)
    for min_shard in (1, 2, 4, 8, 16, 32):
        problem = build_problem(module, devices,
                                options=SearchOptions(min_shard=min_shard, compat=compat))
        if prod(len(problem.configs(name)) for name in problem.layers) <= STRATEGY_LIMIT:
            return min_shard
    raise AssertionError("no min-shard keeps the search space small")


def small_problem(source: str, devices: int, compat: str = "") -> Problem:
    min_shard = small_min_shard(source, devices, compat)
    return build_problem(parse_text(source), devices,
                         options=SearchOptions(min_shard=min_shard, compat=compat))


def test_random_sources_cover_the_layer_kinds() -> None:
    sources = "".join(random_source(seed) for seed in range(50))
    for statement in ("einsum", "concat", "embedding", "layernorm", "softmax ", "add",
                      "reshape", "softmax_cross_entropy", "relu"):
        assert statement in sources
    problems = [build_problem(parse_text(random_source(seed)), 2) for seed in range(50)]
    assert {len(problem.layers) for problem in problems} == set(range(3, 8))
    # not only chains: some value feeds two layers, some graph has an undirected cycle
    assert any(max(Counter(edge.producer for edge in problem.edges).values(), default=0) > 1
               for problem in problems)
    assert any(solve(problem).stats.max_dependent_set > 1 for problem in problems)


@pytest.mark.parametrize("seed", range(50))
def test_dp_equals_exhaustive_on_random_graphs(seed: int) -> None:
    source = random_source(seed)
    for devices in (2, 4, 8):
        problem = small_problem(source, devices)
        expected = solve(problem, SearchOptions(method="exhaustive"))
        assert problem.cost(expected.assignment) == pytest.approx(expected.cost, rel=1e-9)
        for order in ORDER_METHODS:
            solution = solve(problem, SearchOptions(method="dp", order=order))
            assert solution.cost == pytest.approx(expected.cost, rel=1e-9), (order, source)
            assert problem.cost(solution.assignment) == pytest.approx(solution.cost, rel=1e-9)
            for name in problem.layers:
                assert solution.assignment[name] in problem.configs(name)
        assert expected.cost <= problem.cost(problem.data_parallel()) * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(0, 50, 5))
def test_compat_pase_dp_equals_exhaustive(seed: int) -> None:
    problem = small_problem(random_source(seed), 4, compat="pase")
    expected = solve(problem, SearchOptions(method="exhaustive"))
    for order in ORDER_METHODS:
        assert solve(problem, SearchOptions(method="dp",
                                            order=order)).cost == pytest.approx(expected.cost,
                                                                                rel=1e-9)


def pin_first_batch_layer(source: str) -> tuple[str, str]:
    """The source with `config {b = 2}` on its first layer that may split the batch."""
    module = parse_text(source)
    problem = build_problem(module, 2)
    for layer in problem.layer_data:
        if "b" in layer.space.names and layer.space.dim("b").splittable:
            pinned = re.sub(rf"^(  %{layer.name} = .*)$", r"\1 config {b = 2}", source,
                            count=1, flags=re.MULTILINE)
            assert pinned != source
            return pinned, layer.name
    raise AssertionError("no layer over the batch")


@pytest.mark.parametrize("seed", range(0, 50, 4))
def test_pinned_configurations_are_kept(seed: int) -> None:
    source = random_source(seed)
    pinned_source, name = pin_first_batch_layer(source)
    min_shard = small_min_shard(source, 4)
    free = build_problem(parse_text(source), 4, options=SearchOptions(min_shard=min_shard))
    problem = build_problem(parse_text(pinned_source), 4,
                            options=SearchOptions(min_shard=min_shard))
    assert problem.configs(name) == [{"b": 2}]
    assert free.layers == problem.layers
    exhaustive = solve(problem, SearchOptions(method="exhaustive"))
    assert exhaustive.assignment[name] == {"b": 2}
    for order in ORDER_METHODS:
        solution = solve(problem, SearchOptions(method="dp", order=order))
        assert solution.assignment[name] == {"b": 2}
        assert solution.cost == pytest.approx(exhaustive.cost, rel=1e-9)
    # Pinning never beats the free optimum, and costs exactly the free problem's best
    # strategy with that layer fixed.
    assert solve(free).cost <= exhaustive.cost * (1 + 1e-9)
    assert free.cost(exhaustive.assignment) == pytest.approx(exhaustive.cost, rel=1e-12)


@pytest.mark.parametrize("seed", range(1, 50, 4))
def test_pinned_argument_overrides_the_search(seed: int) -> None:
    source = random_source(seed)
    min_shard = small_min_shard(source, 8)
    problem = build_problem(parse_text(source), 8, options=SearchOptions(min_shard=min_shard))
    optimum = solve(problem)
    rng = np.random.default_rng(seed)
    choices = [(name, config) for name in problem.layers for config in problem.configs(name)
               if config != optimum.assignment[name]]
    name, choice = choices[int(rng.integers(len(choices)))]
    pinned = build_problem(parse_text(source), 8, pinned={name: choice},
                           options=SearchOptions(min_shard=min_shard))
    assert pinned.configs(name) == [choice]
    solution = solve(pinned)
    assert solution.assignment[name] == choice
    assert solution.cost == pytest.approx(solve(pinned, SearchOptions(method="exhaustive")).cost,
                                          rel=1e-9)
    assert solution.cost >= optimum.cost * (1 - 1e-9)
    # A factor of 1 in a pin is the same as leaving the dim out.
    ones = {dim: 1 for dim in problem.layer_data[problem.index(name)].space.names}
    with_ones = build_problem(parse_text(source), 8, pinned={name: {**ones, **choice}},
                              options=SearchOptions(min_shard=min_shard))
    assert with_ones.configs(name) == [choice]


# --- the data-parallel baseline -----------------------------------------------------------

DATA_PARALLEL = """
graph @dp(b = 8, d = 16, h = 32, c = 16) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  %a = relu %y
  %w2 = param [h, c]
  %z = einsum %a, %w2 -> [b, c]
  %g = einsum %a, %a -> [h]
  %t = input [b] : i32
  %l = softmax_cross_entropy %z, %t over c
  return %l, %g
}
"""


@pytest.mark.parametrize(("devices", "factor"), [(1, 1), (2, 2), (4, 4), (8, 8), (16, 8),
                                                 (6, 4), (3, 2)])
def test_data_parallel_splits_the_batch_as_far_as_it_divides(devices: int,
                                                             factor: int) -> None:
    problem = build_problem(parse_text(DATA_PARALLEL), devices)
    batch = {"b": factor} if factor > 1 else {}
    # %g contracts the batch away, but b is still one of its iteration dims.
    assert problem.data_parallel() == {"y": batch, "a": batch, "z": batch, "g": batch,
                                       "l": batch}


@pytest.mark.parametrize("devices", [2, 4, 8])
def test_data_parallel_is_in_the_search_space(devices: int) -> None:
    # min-shard 8 rules out b = 2 and more on b = 8; the baseline is added anyway
    problem = build_problem(parse_text(DATA_PARALLEL), devices, options=SearchOptions(min_shard=8))
    for name, config in problem.data_parallel().items():
        assert config in problem.configs(name)
    optimum = solve(problem)
    assert optimum.cost <= problem.cost(problem.data_parallel()) * (1 + 1e-12)


@pytest.mark.parametrize(("source", "expected"), [
    # without an input there is no batch dim
    ("graph @noinput(d = 16, h = 8) {\n  %w = param [d, h]\n  %y = relu %w\n  return %y\n}",
     {}),
    # min-shard leaves only the unsplit configuration; the baseline is searched anyway
    ("graph @tiny(b = 4, d = 4) {\n  %x = input [b, d]\n  %y = relu %x\n  return %y\n}",
     {"b": 4}),
])
def test_data_parallel_of_a_small_graph(source: str, expected: dict[str, int]) -> None:
    problem = build_problem(parse_text(source), 4)
    assert problem.data_parallel() == {"y": expected}
    assert expected in problem.configs("y")
    assert solve(problem).cost <= problem.cost(problem.data_parallel())


# --- errors ------------------------------------------------------------------------------


def test_unknown_method_and_order() -> None:
    problem = build_problem(parse_text(DATA_PARALLEL), 2)
    with pytest.raises(SearchError, match="unknown method 'greedy'"):
        solve(problem, SearchOptions(method="greedy"))
    with pytest.raises(ValueError, match="unknown elimination order 'dfs'"):
        solve(problem, SearchOptions(method="dp", order="dfs"))


def test_assignment_must_name_every_layer() -> None:
    problem = build_problem(parse_text(DATA_PARALLEL), 2)
    with pytest.raises(KeyError, match="no configuration for layer 'a'"):
        problem.cost({"y": {}})


# --- the paper's models ------------------------------------------------------------------


@pytest.mark.parametrize(("model", "largest"), [
    ("alexnet", 1), ("rnnlm", 1), ("inception_v3", 2), ("resnet101", 2), ("transformer", 3),
])
def test_genseq_dependent_sets_of_the_models(model: str, largest: int) -> None:
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), 4)
    solution = solve(problem, SearchOptions(method="dp", order="genseq"))
    assert solution.stats is not None
    assert solution.stats.max_dependent_set == largest
    assert problem.cost(solution.assignment) == pytest.approx(solution.cost, rel=1e-9)
    assert solution.cost <= problem.cost(problem.data_parallel()) * (1 + 1e-12)


FULLY_CONNECTED = {"fc6": ("g6", "f"), "fc7": ("g7", "g6"), "logits": ("k", "g7")}


@pytest.mark.parametrize("compat", ["", "pase"])
def test_alexnet_strategy_at_32_devices(compat: str) -> None:
    # PaSE, Table II: convolutions data parallel, fully connected layers model parallel.
    problem = build_problem(parse_file(str(MODELS / "alexnet.dnn")), 32,
                            options=SearchOptions(compat=compat))
    solution = solve(problem)
    assert solution.assignment["conv1"] == {"b": 32}
    assert solution.assignment["conv2"] == {"b": 32}
    for layer, (output, contracted) in FULLY_CONNECTED.items():
        assert {output, contracted} <= set(solution.assignment[layer]), layer
    assert solution.cost < problem.cost(problem.data_parallel())


def edge_seconds(problem: Problem, assignment: dict[str, dict[str, int]], producer: str,
                 consumer: str) -> float:
    """The redistribution charged on the edge producer -> consumer."""
    total = 0.0
    for edge in problem.edges:
        if (problem.layers[edge.producer], problem.layers[edge.consumer]) == (producer,
                                                                               consumer):
            total += float(problem.model.edge_costs(
                edge, problem.layer_data[edge.producer], [assignment[producer]],
                problem.layer_data[edge.consumer], [assignment[consumer]], problem.devices,
                problem.machine)[0, 0])
    return total


def test_alexnet_compat_pase_relus_take_the_fc_layouts() -> None:
    problem = build_problem(parse_file(str(MODELS / "alexnet.dnn")), 32,
                            options=SearchOptions(compat="pase"))
    assignment = solve(problem).assignment
    assert edge_seconds(problem, assignment, "fc6", "relu6") == 0
    assert edge_seconds(problem, assignment, "fc7", "relu7") == 0


def test_alexnet_fused_relus_compat_pase_needs_no_redistribution_between_fc_layers() -> None:
    # The prototype fuses each ReLU into its FC layer; so does this variant of the model.
    # Its (n, c) splits then chain without redistribution under the prototype's estimate.
    source = (MODELS / "alexnet.dnn").read_text()
    source = source.replace("  %relu6   = relu %fc6\n", "").replace("%relu6, %fc7_w",
                                                                     "%fc6, %fc7_w")
    source = source.replace("  %relu7   = relu %fc7\n", "").replace("%relu7, %fc8_w",
                                                                     "%fc7, %fc8_w")
    problem = build_problem(parse_text(source), 32, options=SearchOptions(compat="pase"))
    solution = solve(problem)
    assignment = solution.assignment
    for layer, (output, contracted) in FULLY_CONNECTED.items():
        assert {output, contracted} <= set(assignment[layer]), layer
    assert edge_seconds(problem, assignment, "fc6", "fc7") == 0
    assert edge_seconds(problem, assignment, "fc7", "logits") == 0
    # per-edge costs add up to the breakdown's redistribution
    assert sum(edge_seconds(problem, assignment, problem.layers[e.producer],
                            problem.layers[e.consumer])
               for e in {(e.producer, e.consumer): e for e in problem.edges}.values()
               ) == pytest.approx(problem.breakdown(assignment).redistribution, rel=1e-9)


def test_cost_tables_over_the_memory_budget_stop_before_they_are_built() -> None:
    problem = build_problem(parse_file(str(MODELS / "transformer.dnn")), 64)
    with pytest.raises(SearchError, match=r"the cost tables of @transformer on 64 devices "
                       r"would take .* MiB \(the largest, edge .* is [0-9,]+ x [0-9,]+ "
                       r"configurations\), over the memory budget of 1.0 MiB"):
        solve(problem, memory_budget=1 << 20)
    assert problem._cost_graph is None


def test_repeated_blocks_share_their_edge_tables() -> None:
    # The Transformer's encoder layers are one block repeated: their edges, and what pruning
    # leaves of them, are the same arrays, not copies.
    problem = build_problem(parse_file(str(MODELS / "transformer.dnn")), 8)
    graph = problem.cost_graph()
    tables = list(graph.edge_costs.values())
    buffers = {table.__array_interface__["data"][0] for table in tables}
    assert len(buffers) < len(tables) / 2
    from pase.passes.strategy.prune import prune

    pruned, _ = prune(graph)
    kept = list(pruned.edge_costs.values())
    assert len({table.__array_interface__["data"][0] for table in kept}) < len(kept) / 2


def test_search_after_autodiff_sees_the_forward_layers() -> None:
    # pase-autodiff's gradient layers read dnn.vjp results; the search skips them.
    from xdsl.context import Context

    from pase.passes.autodiff import AutodiffPass

    module = parse_file(str(MODELS / "mlp.dnn"))
    AutodiffPass().apply(Context(), module)
    problem = build_problem(module, 4)
    assert problem.layers == build_problem(parse_file(str(MODELS / "mlp.dnn")), 4).layers
