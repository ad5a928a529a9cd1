"""Memory per device and the search under a cap on it (`strategy/memory.py`).

The memory is pase-partition-stages' for one stage and one micro-batch; a cap the
optimum fits changes nothing; under a tighter cap the strategy fits, costs at least the
unconstrained optimum, is never below its proven bound, and equals brute force over
every strategy whenever it says it is optimal (exhaustive always does); a cap nothing
meets is refused with the least memory any strategy needs.
"""

from __future__ import annotations

import itertools
import math
from math import prod
from pathlib import Path

import numpy as np
import pytest
from random_graphs import DIMS, LAYER_KINDS, RandomGraph

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import (
    Partitioner,
    Problem,
    SearchOptions,
    build_problem,
    solve,
    stage_solver,
)
from pase.passes.strategy.budget import SearchError
from pase.passes.strategy.from_ir import read_graph
from pase.passes.strategy.machines import preset
from pase.passes.strategy.memory import (
    GIB,
    RELATIVE_TOLERANCE,
    BoundReached,
    MemoryCapError,
    memory_vectors,
    solve_capped,
    strategy_memory,
)
from pase.passes.strategy.pipeline.stages import StageSolver, cut

MODELS = Path(__file__).resolve().parents[3] / "models"
STRATEGY_LIMIT = 20_000


def random_problem(seed: int, devices: int = 4) -> Problem:
    """A random graph of 3-6 layers with at most STRATEGY_LIMIT strategies."""
    rng = np.random.default_rng(seed)
    graph = RandomGraph(rng)
    graph.lines.append("  %x = input [b, d]")
    graph.values.append(("x", ("b", "d")))
    target = int(rng.integers(3, 7))
    while graph.layers < target:
        graph.add_layer(LAYER_KINDS[int(rng.integers(len(LAYER_KINDS)))], seed % 2 == 0)
    outputs = [name for name, _ in graph.values if name not in graph.used and name != "x"]
    header = ", ".join(f"{dim} = {size}" for dim, size in DIMS.items())
    body = "\n".join(graph.lines)
    module = parse_text(f"graph @g{seed}({header}) {{\n{body}\n"
                        f"  return %{', %'.join(outputs)}\n}}\n")
    for min_shard in (1, 2, 4, 8, 16, 32):
        problem = build_problem(module, devices, options=SearchOptions(min_shard=min_shard))
        if prod(len(configs) for configs in problem.config_lists) <= STRATEGY_LIMIT:
            return problem
    raise AssertionError("no min-shard keeps the search space small")


def brute_force(problem: Problem, cap: float) -> float:
    """The least cost of the strategies within `cap`, trying them all (inf if none)."""
    graph = problem.cost_graph()
    memory = memory_vectors(problem)
    best = math.inf
    for choice in itertools.product(*(range(len(c)) for c in problem.config_lists)):
        if sum(float(memory[v][c]) for v, c in enumerate(choice)) <= cap:
            best = min(best, graph.total_cost(choice))
    return best


def caps(problem: Problem) -> list[float]:
    """Caps from the least memory any strategy needs up to the optimum's (exclusive)."""
    least = sum(float(vector.min()) for vector in memory_vectors(problem))
    most = strategy_memory(problem, solve(problem).assignment)
    return [least + fraction * (most - least) for fraction in (0.0, 0.3, 0.6, 0.9)
            if least + fraction * (most - least) < most]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


@pytest.mark.parametrize(("model", "devices"), [("mlp", 8), ("alexnet", 8)])
def test_memory_is_pipeline_memory_of_one_stage_and_one_microbatch(model: str,
                                                                   devices: int) -> None:
    graph = read_graph(parse_file(str(MODELS / f"{model}.dnn")))
    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), devices)
    machine = preset("pase-default")
    assert graph.batch is not None
    plan = Partitioner(graph.layers, graph.edges, graph.batch, devices, machine, [],
                       stage_solver(machine, graph.batch)).best(1, 1, "1f1b")
    assert plan is not None
    assert strategy_memory(problem, solve(problem).assignment) == plan.memory


def test_memory_vectors_sum_to_the_strategy_memory() -> None:
    problem = build_problem(parse_file(str(MODELS / "alexnet.dnn")), 8)
    vectors = memory_vectors(problem)
    rng = np.random.default_rng(0)
    for _ in range(20):
        choice = [int(rng.integers(len(c))) for c in problem.config_lists]
        assignment = {name: problem.config_lists[v][c]
                      for v, (name, c) in enumerate(zip(problem.layers, choice, strict=True))}
        assert sum(float(vectors[v][c]) for v, c in enumerate(choice)) == \
            strategy_memory(problem, assignment)


@pytest.mark.parametrize("method", ["dp", "exhaustive"])
def test_a_cap_the_optimum_fits_changes_nothing(method: str) -> None:
    problem = build_problem(parse_file(str(MODELS / "mlp.dnn")), 8)
    free = solve(problem, SearchOptions(method=method))
    memory = strategy_memory(problem, free.assignment)
    for cap in (memory, 2 * memory, 1e6 * GIB):
        capped = solve_capped(problem, cap, method)
        assert capped.assignment == free.assignment
        assert capped.cost == free.cost
        assert capped.unconstrained_fits
        assert capped.proven
        assert capped.memory == memory


def test_a_tighter_cap_on_mlp_is_proven_optimal_and_equals_brute_force() -> None:
    problem = build_problem(parse_file(str(MODELS / "mlp.dnn")), 8)
    free = solve(problem)
    assert caps(problem)
    for cap in caps(problem):
        capped = solve_capped(problem, cap)
        assert capped.memory <= cap
        assert capped.cost > free.cost
        assert capped.proven
        assert close(capped.cost, brute_force(problem, cap))
        assert close(capped.cost, solve_capped(problem, cap, "exhaustive").cost)


@pytest.mark.parametrize("seed", range(16))
def test_capped_search_against_brute_force_on_random_graphs(seed: int) -> None:
    problem = random_problem(seed)
    free = solve(problem)
    for cap in caps(problem):
        best = brute_force(problem, cap)
        exhaustive = solve_capped(problem, cap, "exhaustive")
        assert exhaustive.memory <= cap
        assert close(exhaustive.cost, best)
        assert exhaustive.proven
        capped = solve_capped(problem, cap)
        assert capped.memory <= cap
        assert capped.cost >= free.cost
        assert capped.lower_bound <= best * (1 + 1e-12)
        assert capped.cost >= best * (1 - 1e-12)
        if capped.proven:
            assert close(capped.cost, best)
        assert abs(problem.cost(capped.assignment) - capped.cost) <= 1e-12 * capped.cost


@pytest.mark.parametrize("seed", range(16))
def test_enough_ends_the_capped_search_only_with_a_true_bound(seed: int) -> None:
    # `enough` hears proven bounds only: every bound it is told is at most the least cost
    # under the cap; ending at one raises BoundReached with it; never ending gives the
    # same strategy as no `enough`.
    problem = random_problem(seed)
    for cap in caps(problem):
        best = brute_force(problem, cap)
        heard: list[float] = []

        def never(bound: float, heard: list[float] = heard) -> bool:
            heard.append(bound)
            return False

        plain = solve_capped(problem, cap)
        assert solve_capped(problem, cap, enough=never) == plain
        assert all(bound <= best * (1 + 1e-12) for bound in heard)
        if plain.cost == solve(problem).cost:
            continue  # the unconstrained optimum fits: nothing to end
        assert heard
        highest = max(heard)
        with pytest.raises(BoundReached) as ended:
            solve_capped(problem, cap, enough=lambda bound, top=highest: bound >= top)
        assert ended.value.bound == highest


@pytest.mark.parametrize("seed", range(6))
def test_a_warm_start_finds_the_cold_start_optimum(seed: int) -> None:
    # LARAC started at any multiplier (the cold start's own, a neighbour's below or above
    # it, one far off either way) proves the same bound, and the exact search the same
    # optimum (its cost; the strategy too but for ties within the tolerance).
    problem = random_problem(seed)
    for cap in caps(problem):
        cold = solve_capped(problem, cap)
        for factor in (1e-6, 0.5, 1.3, 1e6):
            warm = solve_capped(problem, cap, start=(cold.rate or 1.0) * factor)
            assert warm.memory <= cap
            assert warm.proven == cold.proven
            assert abs(warm.cost - cold.cost) <= RELATIVE_TOLERANCE * cold.cost
            assert abs(warm.lower_bound - cold.lower_bound) <= \
                RELATIVE_TOLERANCE * cold.lower_bound


def test_random_graphs_have_binding_caps_and_proofs() -> None:
    """The property test above is not vacuous: the caps bind, and branch and bound
    closes every duality gap on these small graphs, so each strategy is proven."""
    outcomes = [solve_capped(problem, cap).proven for problem in map(random_problem, range(16))
                for cap in caps(problem)]
    assert len(outcomes) >= 16
    assert all(outcomes)


def test_alexnet_under_a_cap_fits_and_costs_more() -> None:
    problem = build_problem(parse_file(str(MODELS / "alexnet.dnn")), 8)
    free = solve(problem)
    capped = solve_capped(problem, 0.125 * GIB)
    assert capped.memory <= 0.125 * GIB < strategy_memory(problem, free.assignment)
    assert capped.cost >= free.cost
    assert capped.lower_bound <= capped.cost
    assert capped.proven == (capped.gap == 0.0 or capped.gap <= 1e-9)


@pytest.mark.parametrize("method", ["dp", "exhaustive"])
def test_a_cap_nothing_meets_is_refused_with_the_least_memory(method: str) -> None:
    problem = build_problem(parse_file(str(MODELS / "mlp.dnn")), 8)
    least = sum(float(vector.min()) for vector in memory_vectors(problem))
    with pytest.raises(MemoryCapError, match="the least memory any strategy needs") as caught:
        solve_capped(problem, least - 1, method)
    assert caught.value.least == least
    assert solve_capped(problem, least, method).memory == least


@pytest.mark.parametrize("seed", range(8))
def test_a_search_stopped_by_its_effort_keeps_a_true_bound(seed: int) -> None:
    # Stopped after 0, 1, 2, ... branch-and-bound nodes, the search reports a bound at
    # most the least cost under the cap (brute force) and at least LARAC's alone (effort
    # 0); it says it stopped only when it is not proven; without a bound on the effort
    # it proves the optimum.
    problem = random_problem(seed)
    for cap in caps(problem):
        best = brute_force(problem, cap)
        root = solve_capped(problem, cap, effort=0)
        for effort in (0, 1, 2, 4, 8, None):
            capped = solve_capped(problem, cap, effort=effort)
            assert capped.memory <= cap
            assert root.lower_bound <= capped.lower_bound <= best * (1 + 1e-12)
            assert capped.cost >= best * (1 - 1e-12)
            assert capped.stopped == (not capped.proven)
            if capped.proven:
                assert close(capped.cost, best)
        assert capped.proven


def test_a_negative_effort_is_refused() -> None:
    problem = build_problem(parse_file(str(MODELS / "mlp.dnn")), 8)
    with pytest.raises(SearchError, match="effort must be at least 0, got -1"):
        solve_capped(problem, 0.0, effort=-1)


@pytest.mark.parametrize("seed", range(8))
def test_reduced_cost_bounds_never_exceed_brute_force(seed: int) -> None:
    # For every configuration (and edge pair) the bound at a multiplier is at most the
    # least cost of the strategies that fit and take it: fixing by them is exact.
    from pase.passes.strategy.capped import ReducedCosts

    problem = random_problem(seed)
    graph = problem.cost_graph()
    memory = memory_vectors(problem)
    sizes = [len(c) for c in problem.config_lists]
    strategies = [(choice, graph.total_cost(choice),
                   sum(float(memory[v][c]) for v, c in enumerate(choice)))
                  for choice in itertools.product(*(range(k) for k in sizes))]
    for cap in caps(problem):
        fitting = [(choice, cost) for choice, cost, weight in strategies if weight <= cap]
        for rate in (0.0, 1e-9, 1e-7):
            reduced = ReducedCosts(graph, memory, cap, rate, jit="off")
            assert reduced.lower <= min(cost for _, cost in fitting) * (1 + 1e-12)
            for choice, cost in fitting:
                slack = 1e-9 * max(1.0, abs(cost))
                for v, c in enumerate(choice):
                    assert reduced.per_config[v][c] <= cost + slack
            # The pairs at the cheapest few (each limit keeps its own strategy's pairs).
            for choice, cost in sorted(fitting, key=lambda item: item[1])[:4]:
                kept = reduced.pairs([np.arange(k) for k in sizes],
                                     cost + 1e-9 * max(1.0, abs(cost)))
                assert kept
                assert all(mask[choice[u], choice[v]] for (u, v), mask in kept.items())


@pytest.mark.parametrize("seed", range(4))
def test_the_frontier_dp_finds_the_least_cost_under_the_cap(seed: int) -> None:
    # On the reparametrised tables at a multiplier, restricted to what reduced-cost fixing
    # keeps at T: with T the least cost under the cap (brute force) the frontier DP finds
    # a strategy of that cost that fits; with T below it, none costing at most T; with a
    # limit of one point it says it did not finish.
    from pase.passes.strategy.capped import ReducedCosts
    from pase.passes.strategy.frontier import frontier_search

    problem = random_problem(seed)
    graph = problem.cost_graph()
    memory = memory_vectors(problem)
    for cap in caps(problem):
        best = brute_force(problem, cap)
        for rate in (0.0, 1e-8):
            reduced = ReducedCosts(graph, memory, cap, rate, jit="off")
            moves = dict(zip(reduced.diffusion.edges, reduced.diffusion.moves, strict=True))
            for threshold in (best, best * (1 - 1e-3)):
                margin = 1e-9 * max(1.0, best)
                keep = [bound <= threshold + margin for bound in reduced.per_config]
                pairs = reduced.pairs([np.flatnonzero(mask) for mask in keep],
                                      threshold + margin)
                found = frontier_search(graph, memory, cap, threshold, rate, reduced.unary,
                                        moves, keep, pairs, margin)
                assert found.finished
                if found.choice is not None:
                    assert found.memory <= cap
                    assert close(graph.total_cost(found.choice), found.cost)
                    assert found.cost >= best * (1 - 1e-12)
                if threshold == best:
                    assert found.choice is not None
                    assert close(found.cost, best)
                else:
                    assert found.choice is None or found.cost > threshold
        assert not frontier_search(graph, memory, cap, math.inf, limit=1).finished


def test_configurations_of_inf_cost_are_dropped_before_the_dp() -> None:
    # A capped search's masked solves (the least-memory one: inf on every configuration
    # it leaves out) get the DP of the finite configurations: the DP of all of them
    # chooses the same, but takes tables over the left-out ones too (on a GPT stage at
    # 256 devices, 9.5e10 entries: over the budget, as here).
    from pase.passes.strategy.budget import SearchMemoryError, as_budget
    from pase.passes.strategy.costgraph import CostGraph
    from pase.passes.strategy.dp import solve_dp
    from pase.passes.strategy.exact import solve_graph

    rng = np.random.default_rng(7)
    costs = [np.where(rng.random(60) < 0.1, rng.random(60), math.inf) for _ in range(4)]
    for cost in costs:
        cost[0] = 1.0
    graph = CostGraph(list("abcd"), costs)
    for u, v in itertools.combinations(range(4), 2):
        graph.add_edge(u, v, rng.random((60, 60)))
    everything = solve_dp(graph)
    with pytest.raises(SearchMemoryError):
        solve_dp(graph, memory_budget=1 << 20)
    finite = solve_graph(graph, budget=as_budget(1 << 20), pruning=False)
    assert (finite.choice, finite.cost) == (everything.choice, everything.cost)


@pytest.mark.parametrize("order", ["bfs", "minfill"])
def test_the_capped_search_eliminates_in_the_order_given(order: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # `order` reaches the frontier DP too (it used to eliminate in genseq whatever the
    # option), and its optimum is the brute force's; a stage solver's capped solves
    # take its options' order likewise.
    from pase.passes.strategy import frontier

    asked: list[str] = []
    plain = frontier.elimination_order

    def spy(neighbours, how: str = "genseq"):  # noqa: ANN001, ANN202
        asked.append(how)
        return plain(neighbours, how)

    monkeypatch.setattr(frontier, "elimination_order", spy)
    solved = 0
    for seed in range(6):
        problem = random_problem(seed)
        for cap in caps(problem):
            capped = solve_capped(problem, cap, order=order)
            assert capped.proven
            assert close(capped.cost, brute_force(problem, cap))
            solved += capped.nodes > 0
    assert solved
    assert asked
    assert set(asked) == {order}
    asked.clear()
    mlp = read_graph(parse_file(str(MODELS / "mlp.dnn")))
    solver = StageSolver(preset("v100-nvlink"), mlp.batch, SearchOptions(order=order))
    whole = cut(mlp.layers, mlp.edges, solver.kinds(mlp.layers, mlp.edges), 0,
                len(mlp.layers))
    problem = solver.problem(whole, 8)
    least = sum(float(vector.min()) for vector in memory_vectors(problem))
    free = strategy_memory(problem, solve(problem).assignment)
    assert least < free
    assert solver.solve(whole, 8, (least + free) / 2) is not None
    assert asked
    assert set(asked) == {order}
