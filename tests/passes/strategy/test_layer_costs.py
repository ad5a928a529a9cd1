"""`layer_costs` (every configuration at once) gives, field for field and bit for bit
(`==`), what the per-configuration reference `reference_layer_cost` gives: on every bundled
model, on random graphs, and on machines whose nodes hold 1, 2, 3 or 8 devices; and
`Problem.breakdown`, which reads the tables once they are built, gives what it computes
afresh without them."""

from __future__ import annotations

from dataclasses import astuple, replace
from math import prod
from pathlib import Path

import numpy as np
import pytest
from random_graphs import DIMS, LAYER_KINDS, RandomGraph

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import SearchOptions, build_problem, solve
from pase.passes.strategy.cost import (
    Collectives,
    Config,
    LayerCost,
    group_spans_nodes,
    hierarchical_bandwidth,
    local_elements,
)
from pase.passes.strategy.layer_costs import (
    _spans_nodes,
    _spans_nodes_of,
    factor_matrix,
    hierarchical_bandwidths,
    layer_costs,
)
from pase.passes.strategy.machines import PRESETS, Machine
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.vertices import Layer

MODELS = Path(__file__).resolve().parents[3] / "models"
MACHINES = [PRESETS["pase-default"], PRESETS["v100-nvlink"],
            replace(PRESETS["2080ti-pcie"], name="two-per-node", devices_per_node=2),
            replace(PRESETS["v100-nvlink"], name="three-per-node", devices_per_node=3),
            replace(PRESETS["v100-nvlink"], name="one-per-node", devices_per_node=1)]


def reference_layer_cost(layer: Layer, config: Config, machine: Machine) -> LayerCost:
    """The reference: one layer's compute and collectives under one configuration,
    charged in Python over `cost.Collectives`, one configuration at a time.

    The collectives come from the layer's iteration space: the kernel's forward
    statistics, the result's partial sums, the kernel's backward statistics, then the
    operand gradients' partial sums (in that order, which fixes the float sums).
    """
    space = layer.space
    devices_used = prod(config.values()) if config else 1
    flops_per_point = space.flops_forward + (space.flops_backward if layer.backward else 0.0)
    flops = flops_per_point * space.points / devices_used
    comm = Collectives(layer, config, machine)
    result = layer.result
    # Backward statistics and sums run only where some operand needs a gradient.
    backward = any(layer.grads)

    comm.statistics(backward=False)
    if space.partial:
        comm.all_reduce(local_elements(result, config), space.partial, result.element_bytes)
    comm.phase = "backward"
    if backward:
        comm.statistics(backward=True)

    params = layer.params or (False,) * len(layer.operands)
    for index, (use, grad, param) in enumerate(zip(layer.operands, layer.grads, params,
                                                    strict=True)):
        if not grad or index in space.kernel_reduced_grads:
            continue
        # The operand's gradient is a partial sum over split dims it does not range over.
        missing = [d.name for d in space.dims if d.name not in use.dims]
        comm.phase = "param" if param else "backward"
        comm.all_reduce(local_elements(use, config), missing, use.element_bytes)

    forward_flops = space.flops_forward * space.points / devices_used
    return LayerCost(flops / machine.flops, comm.seconds, comm.words,
                     forward_flops / machine.flops, comm.phase_seconds["forward"],
                     comm.phase_seconds["param"], comm.phase_words["param"])


def assert_matches_reference(problem: Problem, machine: Machine) -> None:
    """Each distinct layer's vectors against `reference_layer_cost` of each configuration."""
    seen = set()
    for layer, configs in zip(problem.layer_data, problem.config_lists, strict=True):
        key = (replace(layer, name=""), id(configs))
        if key in seen:
            continue
        seen.add(key)
        costs = layer_costs(layer, configs, machine)
        for index, config in enumerate(configs):
            assert astuple(costs[index]) == astuple(reference_layer_cost(layer, config, machine)), \
                (layer.name, config, machine.name)


@pytest.mark.parametrize("model", sorted(model.stem for model in MODELS.glob("*.dnn")))
@pytest.mark.parametrize("devices", [8, 64])
def test_layer_costs_match_reference_on_models(model: str, devices: int) -> None:
    module = parse_file(str(MODELS / f"{model}.dnn"))
    for machine in MACHINES:
        assert_matches_reference(build_problem(module, devices, machine), machine)


def random_problem(seed: int, devices: int) -> Problem:
    rng = np.random.default_rng(seed)
    graph = RandomGraph(rng)
    graph.lines.append("  %x = input [b, d]")
    graph.values.append(("x", ("b", "d")))
    while graph.layers < 12:
        graph.add_layer(LAYER_KINDS[int(rng.integers(len(LAYER_KINDS)))], seed % 2 == 0)
    outputs = [name for name, _ in graph.values if name not in graph.used and name != "x"]
    header = ", ".join(f"{dim} = {size}" for dim, size in DIMS.items())
    module = parse_text(f"graph @g{seed}({header}) {{\n" + "\n".join(graph.lines)
                        + f"\n  return %{', %'.join(outputs)}\n}}\n")
    return build_problem(module, devices, options=SearchOptions(min_shard=1))


@pytest.mark.parametrize("seed", range(12))
def test_layer_costs_match_reference_on_random_graphs(seed: int) -> None:
    for devices in (6, 16):
        problem = random_problem(seed, devices)
        for machine in MACHINES:
            assert_matches_reference(problem, machine)


@pytest.mark.parametrize("devices_per_node", [2, 8])
def test_hierarchical_collectives_match_reference(devices_per_node: int) -> None:
    """On a machine whose collectives across nodes are hierarchical (the DGX presets)."""
    machine = replace(PRESETS["a100-80gb-dgx"], name=f"dgx-{devices_per_node}-per-node",
                      devices_per_node=devices_per_node)
    assert_matches_reference(random_problem(1, 16), machine)


def test_spans_match_group_spans_nodes_on_every_grid() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        rank = int(rng.integers(1, 5))
        factors = rng.choice([1, 2, 3, 4, 8], size=(6, rank))
        grouped = tuple(bool(g) for g in rng.integers(0, 2, size=rank))
        for devices_per_node in (1, 2, 3, 4, 5, 8):
            spans = _spans_nodes(factors.astype(np.int64), grouped, devices_per_node)
            # The memoised spans (computed once per grid) are the same, asked twice.
            for _ in range(2):
                memoised = _spans_nodes_of(factors.astype(np.int64), grouped,
                                           devices_per_node)
                assert memoised.tolist() == spans.tolist()
            for row, span in zip(factors.tolist(), spans.tolist(), strict=True):
                axes = [(f, g) for f, g in zip(row, grouped, strict=True) if f > 1]
                expected = group_spans_nodes(tuple(f for f, _ in axes),
                                             tuple(g for _, g in axes), devices_per_node)
                assert span == expected, (row, grouped, devices_per_node)


def test_hierarchical_bandwidths_match_the_per_grid_bandwidth() -> None:
    """`hierarchical_bandwidths` (numpy over grids) against `cost.hierarchical_bandwidth`
    of each grid without its factors of 1 (as `Vectors.bandwidth` called it): the same
    floats, on nodes of 1 to 8 devices."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        rank = int(rng.integers(1, 5))
        factors = rng.choice([1, 2, 3, 4, 8, 16], size=(6, rank)).astype(np.int64)
        grouped = tuple(bool(g) for g in rng.integers(0, 2, size=rank))
        for devices_per_node in (1, 2, 3, 4, 8):
            machine = replace(PRESETS["a100-80gb-dgx"], devices_per_node=devices_per_node)
            bandwidths = hierarchical_bandwidths(factors, grouped, machine)
            for row, bandwidth in zip(factors.tolist(), bandwidths.tolist(), strict=True):
                axes = [(f, g) for f, g in zip(row, grouped, strict=True) if f > 1]
                expected = hierarchical_bandwidth(tuple(f for f, _ in axes),
                                                  tuple(g for _, g in axes), machine)
                assert bandwidth == expected, (row, grouped, devices_per_node)


def test_a_configuration_of_an_unknown_dim_is_an_error() -> None:
    with pytest.raises(ValueError, match="splits 'q', which is not one of the dims b, d"):
        factor_matrix(("b", "d"), [{"b": 2}, {"q": 2}])


@pytest.mark.parametrize("model", sorted(model.stem for model in MODELS.glob("*.dnn")))
@pytest.mark.parametrize("compat", ["", "pase"])
def test_breakdown_from_the_tables_is_the_breakdown_afresh(model: str, compat: str) -> None:
    module = parse_file(str(MODELS / f"{model}.dnn"))
    for devices, machine in ((8, "pase-default"), (64, "2080ti-pcie")):
        searched = build_problem(module, devices, machine, options=SearchOptions(compat=compat))
        solution = solve(searched)
        fresh = build_problem(module, devices, machine, options=SearchOptions(compat=compat))
        for assignment in (solution.assignment, searched.data_parallel()):
            assert searched.breakdown(assignment) == fresh.breakdown(assignment)
        assert fresh._cost_graph is None
