"""The stage search: its depth-first walk with bounds equals trying every cut."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from stage_plans import partitioner, random_source

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import Problem, build_problem, solve
from pase.passes.strategy.cost import Config
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import preset
from pase.passes.strategy.partition import Partitioner, stage_solver
from pase.passes.strategy.vertices import Edge, Layer


@pytest.mark.parametrize("seed", range(12))
def test_dp_equals_exhaustive_on_random_chains_and_dags(seed: int) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    for stages in (2, 4):
        for micro in (1, 2, 4):
            for schedule in ("1f1b", "gpipe"):
                exhaustive = plans.best(stages, micro, schedule, method="exhaustive")
                dp = plans.best(stages, micro, schedule, method="dp")
                if exhaustive is None:
                    assert dp is None
                    continue
                assert dp is not None
                assert dp.step == exhaustive.step
                assert [s.start for s in dp.stages] == [s.start for s in exhaustive.stages]


def plain_solver(machine: str, batch: str) -> Callable[[list[Layer], list[Edge], int],
                                                        dict[str, Config]]:
    """The stage solve without shared tables, signatures or caps: a fresh problem each."""
    def solve_stage(layers: list[Layer], edges: list[Edge], devices: int
                    ) -> dict[str, Config]:
        problem = Problem.from_layers(layers, edges, devices, machine, batch=batch,
                                      min_shard=1)
        return solve(problem).assignment

    return solve_stage


@pytest.mark.parametrize("seed", range(8))
def test_shared_tables_and_bounds_find_the_plain_search_plan(seed: int) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    fast = partitioner(source, devices=8)
    graph = read_graph(parse_text(source))
    assert graph.batch is not None
    plain = Partitioner(graph.layers, graph.edges, graph.batch, 8, preset("v100-nvlink"),
                        fast.cuts, plain_solver("v100-nvlink", graph.batch))
    for stages in (1, 2, 4):
        for micro in (1, 4):
            found = fast.best(stages, micro, "1f1b")
            expected = plain.best(stages, micro, "1f1b", method="exhaustive")
            assert (found is None) == (expected is None)
            if found is not None and expected is not None:
                assert found.step == expected.step
                assert found.assignment == expected.assignment
                assert [s.start for s in found.stages] == [s.start for s in expected.stages]


@pytest.mark.parametrize("seed", range(6))
def test_a_memory_cap_keeps_only_plans_that_fit(seed: int) -> None:
    source = random_source(seed, chain=True)
    plans = partitioner(source, devices=4)
    free = plans.best(2, 2, "1f1b")
    assert free is not None
    cap = free.memory * 0.999
    capped = plans.best(2, 2, "1f1b", memory=cap, method="dp")
    assert capped == plans.best(2, 2, "1f1b", memory=cap, method="exhaustive")
    if capped is not None:
        assert capped.memory <= cap
        assert capped.step >= free.step


@pytest.mark.parametrize(("model", "devices"), [("mlp", 8), ("alexnet", 4)])
def test_one_stage_one_microbatch_is_pase_search(model: str, devices: int) -> None:
    module = parse_file(f"models/{model}.dnn")
    graph = read_graph(module)
    machine = preset("v100-nvlink")
    assert graph.batch is not None
    plans = Partitioner(graph.layers, graph.edges, graph.batch, devices, machine, [],
                        stage_solver(machine, graph.batch))
    plan = plans.best(1, 1, "1f1b")
    assert plan is not None
    solution = solve(build_problem(module, devices, machine="v100-nvlink"))
    assert plan.assignment == solution.assignment
    assert plan.step == pytest.approx(solution.cost, rel=1e-12)
    assert plan.bubble == 0.0


def test_stages_split_the_devices_and_the_layers() -> None:
    graph = read_graph(parse_file("models/alexnet.dnn"))
    machine = preset("v100-nvlink")
    assert graph.batch is not None
    cuts = [i for i in range(1, len(graph.layers))]
    plans = Partitioner(graph.layers, graph.edges, graph.batch, 8, machine, cuts,
                        stage_solver(machine, graph.batch))
    plan = plans.best(2, 4, "1f1b")
    assert plan is not None
    assert [(s.offset, s.devices) for s in plan.stages] == [(0, 4), (4, 4)]
    assert plan.stages[0].start == 0
    assert plan.stages[0].stop == plan.stages[1].start
    assert plan.stages[1].stop == len(graph.layers)
    assert 0 < plan.bubble < 1
    for stage in plan.stages:
        for config in stage.assignment.values():
            assert np.prod(list(config.values()) or [1]) <= 4
