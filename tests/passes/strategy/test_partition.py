"""The stage search: its depth-first walk with bounds equals trying every cut."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from stage_plans import partitioner, random_source

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import (
    Partitioner,
    PipelinePlan,
    PlanSpec,
    Problem,
    build_problem,
    evaluate_plan,
    segments,
    solve,
    stage_solver,
)
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.cost import Config
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.from_ir import GraphData, read_graph
from pase.passes.strategy.machines import preset
from pase.passes.strategy.memory import memory_vectors
from pase.passes.strategy.pipeline.hull import Hull as _Hull
from pase.passes.strategy.pipeline.hull import lagrangian_bound as _lagrangian_bound
from pase.passes.strategy.pipeline.microbatch import edges_at, microbatch_layers
from pase.passes.strategy.vertices import Edge, Layer, edges_among


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


def plain_solve(layers: list[Layer], edges: list[Edge], devices: int, machine: str,
                batch: str) -> dict[str, Config]:
    """The stage solve without shared tables, signatures or caps: a fresh problem each."""
    problem = Problem.from_layers(layers, edges, devices, machine, batch=batch, min_shard=1)
    return solve(problem).assignment


def plain_best(graph: GraphData, devices: int, machine: str, cuts: list[int], stages: int,
               micro: int) -> PipelinePlan | None:
    """Every choice of stage beginnings, each stage solved afresh (`plain_solve`) and the
    plan evaluated as a given one (`evaluate_plan`): the first with the least step."""
    assert graph.batch is not None
    layers = microbatch_layers(graph.layers, graph.batch, micro)
    edges = edges_at(graph.edges, layers, graph.batch, micro)
    best = None
    for chosen in itertools.combinations(cuts, stages - 1):
        bounds = (0, *chosen)
        assignment: dict[str, Config] = {}
        for start, stop in zip(bounds, [*bounds[1:], len(layers)], strict=True):
            inside = [edge for _, edge in edges_among(edges, range(start, stop))]
            assignment.update(plain_solve(layers[start:stop], inside, devices // stages,
                                          machine, graph.batch))
        plan = evaluate_plan(graph.layers, graph.edges, graph.batch, devices,
                             preset(machine), PlanSpec(bounds, micro, "1f1b", assignment))
        if best is None or plan.step < best.step:
            best = plan
    return best


@pytest.mark.parametrize("seed", range(8))
def test_shared_tables_and_bounds_find_the_plain_search_plan(seed: int) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    fast = partitioner(source, devices=8)
    graph = read_graph(parse_text(source))
    assert graph.batch is not None
    for stages in (1, 2, 4):
        for micro in (1, 4):
            found = fast.best(stages, micro, "1f1b")
            expected = plain_best(graph, 8, "v100-nvlink", fast.cuts, stages, micro) \
                if stages <= len(fast.cuts) + 1 else None
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


@pytest.mark.parametrize(("model", "stages", "micro", "schedule"),
                         [("mlp", 2, 4, "1f1b"), ("alexnet", 2, 2, "gpipe"),
                          ("transformer", 4, 2, "1f1b")])
def test_a_searched_plan_evaluated_as_given_is_the_same_plan(model: str, stages: int,
                                                               micro: int,
                                                               schedule: str) -> None:
    graph = read_graph(parse_file(f"models/{model}.dnn"))
    machine = preset("v100-nvlink")
    assert graph.batch is not None
    plans = Partitioner(graph.layers, graph.edges, graph.batch, 8, machine,
                        segment_cuts(graph), stage_solver(machine, graph.batch))
    plan = plans.best(stages, micro, schedule)
    assert plan is not None
    spec = PlanSpec(tuple(stage.start for stage in plan.stages), micro, schedule,
                    plan.assignment)
    given = evaluate_plan(graph.layers, graph.edges, graph.batch, 8, machine, spec)
    assert given == plan  # every stage's times, bytes and memory; the step and bubble
    assert given.simulation is not None
    assert plan.simulation is not None
    assert given.simulation.events == plan.simulation.events


def segment_cuts(graph: GraphData) -> list[int]:
    index = segments(graph.layers, graph.edges)
    return [i for i in range(1, len(index)) if index[i] != index[i - 1]]


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


def _random_graph(rng: np.random.Generator, vertices: int, configs: int
                  ) -> tuple[CostGraph, list[np.ndarray]]:
    """A cost graph with random vertex and edge costs, and random memory per config
    (a few levels, so that strategies tie in memory as real layers do)."""
    costs = [rng.uniform(0.0, 1.0, configs) for _ in range(vertices)]
    graph = CostGraph([f"v{i}" for i in range(vertices)], costs)
    for v in range(1, vertices):
        for u in rng.choice(v, size=min(v, 2), replace=False):
            graph.add_edge(int(u), v, rng.uniform(0.0, 0.5, (configs, configs)))
    weights = [rng.integers(1, 4, configs).astype(np.float64) * 100.0
               for _ in range(vertices)]
    return graph, weights


@pytest.mark.parametrize("seed", range(10))
def test_a_segment_hull_is_the_least_work_plus_rate_times_memory(seed: int) -> None:
    rng = np.random.default_rng(seed)
    graph, weights = _random_graph(rng, vertices=4, configs=5)
    hull = _Hull.of(graph, weights, MemoryBudget(1 << 30))
    strategies = [(graph.total_cost(choice),
                   sum(float(w[c]) for w, c in zip(weights, choice, strict=True)))
                  for choice in itertools.product(range(5), repeat=4)]
    assert np.all(np.diff(hull.work) >= 0)
    assert np.all(np.diff(hull.memory) < 0)
    for rate in (0.0, 1e-4, 1e-3, 3e-3, 1e-2, 0.1, 1.0):
        least = min(work + rate * memory for work, memory in strategies)
        assert hull.least(rate) == pytest.approx(least, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_the_lagrangian_bound_is_at_most_the_least_work_that_fits(seed: int) -> None:
    # Two segments (one repeated), as a stage of three segments; no edges between them.
    rng = np.random.default_rng(100 + seed)
    parts = [_random_graph(rng, vertices=2, configs=4) for _ in range(2)]
    budget = MemoryBudget(1 << 30)
    hulls = [_Hull.of(graph, weights, budget) for graph, weights in parts]
    sums = []
    for (graph, weights), count in zip(parts, (2, 1), strict=True):
        own = [(graph.total_cost(c), sum(float(w[i]) for w, i in zip(weights, c, strict=True)))
               for c in itertools.product(range(4), repeat=2)]
        sums.append([own] * count)
    strategies = [(sum(p[0] for p in pick), sum(p[1] for p in pick))
                  for pick in itertools.product(*(s for both in sums for s in both))]
    least_memory = min(memory for _, memory in strategies)
    for share in (0.0, 0.2, 0.5, 0.8, 1.0):
        cap = least_memory + share * (max(m for _, m in strategies) - least_memory)
        bound = _lagrangian_bound([(hulls[0], 2), (hulls[1], 1)], cap)
        best = min(work for work, memory in strategies if memory <= cap)
        assert bound <= best
        if share == 1.0:  # nothing binds: the bound is the least work
            assert bound == pytest.approx(best, rel=3e-9)
    assert _lagrangian_bound([(hulls[0], 2), (hulls[1], 1)], least_memory * 0.999) \
        == math.inf


@pytest.mark.parametrize("seed", range(8))
def test_the_objective_bound_holds_for_stages_solved_under_a_cap(seed: int) -> None:
    # M (F + B) + AR of a stage the solver gives under a cap (the solver's objective) is
    # at least its unconstrained M (F + B) + AR and M times any lower bound on its F + B
    # (here: the segments' least, and the Lagrangian bound of capped_least), and M times
    # the stage's own Lagrangian bound (stage_bound), for every range and several caps.
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=4)
    positions = [0, *plans.cuts, len(plans.layers)]
    checked = 0
    for micro in (1, 2, 4):
        bounds = plans.segment_bounds(1, micro)
        assert bounds is not None
        for a, b in itertools.combinations(range(len(positions)), 2):
            start, stop = positions[a], positions[b]
            free = plans.stage(start, stop, 4, micro)
            assert free is not None
            objective = micro * free.work + free.cost.allreduce
            assert plans.objective_own(start, stop, 4, micro, 0.0) == objective
            layers = plans.micro(micro).layers[start:stop]
            floor = sum(float(v.min()) for v in memory_vectors(
                Problem.from_layers(layers, [], 4, plans.machine, batch=plans.batch,
                                    min_shard=1), 2))
            full = free.parameter_bytes + 2 * free.activation_bytes
            for share in (0.0, 0.4, 0.9):
                cap = floor + share * (full - floor)
                stage = plans.stage(start, stop, 4, micro, 2, cap)
                if stage is None:
                    continue
                own = micro * stage.work + stage.cost.allreduce
                work, _ = plans.capped_least(start, stop, 4, micro, 2, cap)
                for least in (bounds.least_work(start, stop), work):
                    assert least <= stage.work * (1 + 1e-12)
                    assert plans.objective_own(start, stop, 4, micro, least) <= \
                        own * (1 + 1e-12)
                # The stage's Lagrangian bound at one λ (a neighbour's) on its objective,
                # F + B + AR / M: at most the proven capped optimum's (at one M: a DP
                # solve per range, and LARAC's for the first).
                assert stage.gap == 0.0
                assert micro != 2 or micro * plans.least.stage_bound(
                    start, stop, 4, micro, 2, cap) <= own * (1 + 1e-12)
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("seed", range(8))
def test_searches_under_caps_that_bind_equal_exhaustive_search(seed: int) -> None:
    # Caps between the least memory and the unconstrained plan's: stages solved under
    # the cap, pruned first by their Lagrangian bounds.
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=4)
    for stages, micro in ((1, 2), (2, 1), (2, 2), (4, 2)):
        free = plans.best(stages, micro, "1f1b")
        if free is None:
            continue
        floor = plans.least_memory(stages, micro, "1f1b")
        for share in (0.3, 0.7):
            cap = floor + share * (free.memory - floor)
            capped = plans.best(stages, micro, "1f1b", memory=cap, method="dp")
            expected = plans.best(stages, micro, "1f1b", memory=cap, method="exhaustive")
            assert (capped is None) == (expected is None)
            if capped is not None and expected is not None:
                assert capped.step == expected.step
                assert [s.start for s in capped.stages] == \
                    [s.start for s in expected.stages]
                assert capped.memory <= cap
