"""The branch and bound over recomputed results (`passes/strategy/recomputed.py`): what
makes its nodes fewer and cheaper (issue 33, branch `rcfast`), each checked on its own
and on TINY's every cap against the brute-force optimum
(`tests/passes/strategy/test_recomputed.py`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pase.passes.strategy import memory_parts, recomputed, solve_capped
from pase.passes.strategy.memory import BoundReached, CappedSolution, MemoryCapError
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.recomputed import Transient
from pase.passes.strategy.recomputed_fixing import Fixings
from tests.passes.strategy.test_recomputed import caps, every, problem  # noqa: F401


def solution(choice: tuple[int, ...], cost: float, bound: float | None = None
             ) -> CappedSolution:
    return CappedSolution({}, cost, 0.0, 0.0, cost if bound is None else bound, False, 1,
                          choice=choice)


class Calls:
    """A `Solve` that answers from a list and records what it was asked."""

    def __init__(self, *answers: CappedSolution | Exception):
        self.answers = list(answers)
        self.asked: list[tuple[float, float | None]] = []
        self.ceilings: list[float] = []

    def __call__(self, vectors: list[np.ndarray], room: float, first: bool,
                 near: float | None, stop: object, ceiling: float,
                 allowed: list[np.ndarray]) -> CappedSolution:
        self.asked.append((room, near))
        self.ceilings.append(ceiling)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def transient(problem: Problem) -> Transient:  # noqa: F811
    found = Transient.of(problem)
    assert found is not None
    return found


def node(allowed: list[np.ndarray], rate: float | None = None) -> recomputed._Node:
    return recomputed._Node(0.0, 0, allowed, rate=rate)


def test_a_node_inside_a_solved_one_takes_its_solution_where_it_holds_it(
        problem: Problem, transient: Transient) -> None:  # noqa: F811
    from pase.passes.strategy.memory import memory_vectors

    memory = memory_vectors(problem)
    everything = [np.ones(v.size, dtype=bool) for v in memory]
    first = solution((0,) * len(memory), 1.0)
    calls = Calls(first, solution((1,) * len(memory), 2.0))
    solves = recomputed._Solves(transient, memory, 1e9, calls)
    tally = recomputed._Tally()
    assert solves.solve(node(everything, 3.0), 0.0, False, tally) is first
    assert calls.asked == [(1e9, 3.0)]  # (LARAC started at the node's multiplier)
    inner = list(everything)
    inner[1] = inner[1].copy()
    inner[1][-1] = False  # (still holds the solution's configuration 0)
    assert solves.solve(node(inner), 0.0, False, tally) is first
    assert len(calls.asked) == 1
    assert solves.reused == 1
    # Not holding it, or under another row: solved.
    inner[1] = inner[1].copy()
    inner[1][0] = False
    assert solves.solve(node(inner), 0.0, False, tally).cost == 2.0
    assert len(calls.asked) == 2
    assert tally.solves == 2


def test_a_node_that_cannot_beat_the_best_found_ends_and_so_do_those_inside_it(
        problem: Problem, transient: Transient) -> None:  # noqa: F811
    from pase.passes.strategy.memory import memory_vectors

    memory = memory_vectors(problem)
    everything = [np.ones(v.size, dtype=bool) for v in memory]
    tally = recomputed._Tally()
    tally.offer(solution((0,) * len(memory), 1.0), 0.0)

    def reaching(vectors: list[np.ndarray], room: float, first: bool, near: float | None,
                 stop: object, ceiling: float, allowed: list[np.ndarray]) -> CappedSolution:
        assert stop is None if first else (callable(stop) and not stop(0.5) and stop(1.0))
        # (The best strategy's cost caps the exact search's thresholds, not the root's.)
        assert ceiling == (math.inf if first else 1.0)
        raise BoundReached(1.0)

    solves = recomputed._Solves(transient, memory, 1e9, reaching)
    with pytest.raises(recomputed._Pruned) as pruned:
        solves.solve(node(everything), 0.0, False, tally)
    assert pruned.value.bound == 1.0
    solves.solve_under = Calls()  # (asked nothing more)
    with pytest.raises(recomputed._Pruned):
        solves.solve(node(list(everything)), 0.0, False, tally)
    # The root's bound goes to `solve_capped`'s `enough`, not to the node.
    solves = recomputed._Solves(transient, memory, 1e9, reaching)
    with pytest.raises(BoundReached):
        solves.solve(node(everything), 0.0, True, recomputed._Tally())


def test_nothing_fits_in_a_node_inside_one_where_nothing_fit(
        problem: Problem, transient: Transient) -> None:  # noqa: F811
    from pase.passes.strategy.memory import memory_vectors

    memory = memory_vectors(problem)
    everything = [np.ones(v.size, dtype=bool) for v in memory]
    calls = Calls(MemoryCapError("none", 0.0))
    solves = recomputed._Solves(transient, memory, 1.0, calls)
    for _ in range(2):
        with pytest.raises(MemoryCapError):
            solves.solve(node(everything), 0.0, False, recomputed._Tally())
    assert len(calls.asked) == 1


def test_a_childs_row_weighs_the_segments_of_the_kind_its_parent_exceeded(
        transient: Transient) -> None:
    assert transient.kinds[0] == transient.kinds[1]  # (TINY's two blocks)
    choice = [int(np.argmax(v)) for v in transient.vectors[:4]] + [0] * 4
    held = sum(float(transient.vectors[i][choice[i]]) for i in range(4))
    # Only the first segment holds more than the room; its twin is weighed as much.
    assert recomputed._weights(transient, choice, held - 1.0) == (0.5, 0.5, 0.0)


def test_every_cap_is_proven_in_fewer_exact_solves(
        problem: Problem, every: tuple[np.ndarray, np.ndarray, np.ndarray],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """48 exact solves over TINY's seven caps, at most 13 at one (main 2fc5b5b: 76, and
    30 at 18,688 bytes), each cap's optimum proven."""
    cost, additive, held = every
    asked = []
    search = recomputed.solve_recomputed

    def counted(transient: Transient, memory: list[np.ndarray], cap: float,
                solve_under: recomputed.Solve, *rest: object, **named: object
                ) -> CappedSolution:
        def solve(*arguments: object) -> CappedSolution:
            asked[-1] += 1
            return solve_under(*arguments)  # type: ignore[arg-type]
        return search(transient, memory, cap, solve, *rest, **named)  # type: ignore[arg-type]

    monkeypatch.setattr(recomputed, "solve_recomputed", counted)
    for cap in caps(every):
        asked.append(0)
        found = solve_capped(problem, cap, effort=None)
        assert found.proven
        assert found.cost == pytest.approx(float(cost[additive + held <= cap].min()),
                                           rel=1e-9)
        assert memory_parts(problem, found.assignment).total <= cap
    assert sum(asked) <= 52, asked
    assert max(asked) <= 15, asked


@pytest.mark.parametrize("seed", [0, 3, 6, 11])
def test_the_exact_search_ends_at_a_ceiling_it_cannot_beat(seed: int) -> None:
    """`capped.close_gap`'s `ceiling` (a node's: the best strategy found elsewhere): above
    the optimum the same optimum, proven; below it a bound of at least `ceiling`, told
    to `enough`, or returned unproven without it, in no more frontier points."""
    from pase.passes.strategy.capped import close_gap
    from tests.passes.strategy.test_frontier import ring

    graph, memory = ring(seed)
    rate, cap = 0.5, float(sum(int(m.min()) + int(m.max()) for m in memory) // 2)
    strategies = {choice: (graph.total_cost(choice), math.fsum(
        float(vector[c]) for vector, c in zip(memory, choice, strict=True)))
        for choice in itertools.product(*map(range, graph.sizes))}
    larac = min(c + rate * m for c, m in strategies.values()) - rate * cap
    best = min(c for c, m in strategies.values() if m <= cap)
    lean = min((m, c, choice) for choice, (c, m) in strategies.items() if m <= cap)
    start = (lean[2], lean[1], lean[0])
    plain = close_gap(graph, memory, cap, rate, start, larac)
    assert plain.best[1] == pytest.approx(best, abs=1e-12)
    above = close_gap(graph, memory, cap, rate, start, larac, ceiling=best + 0.5)
    assert (above.best, above.bound) == (plain.best, plain.bound)
    if lean[1] <= best:
        return  # (the least-memory strategy is the optimum: no round is made)
    told: list[float] = []

    def enough(bound: float) -> bool:
        told.append(bound)
        return bound >= best - 0.5

    with pytest.raises(BoundReached):
        close_gap(graph, memory, cap, rate, start, larac, enough=enough,
                  ceiling=best - 0.5)
    assert told[-1] >= best - 0.5  # (the diffusion's own bound may be above it already)
    under = close_gap(graph, memory, cap, rate, start, larac, ceiling=best - 0.5)
    assert best - 0.5 <= under.bound <= best
    assert under.best[1] > under.bound
    assert not under.stopped
    assert under.nodes <= plain.nodes


def test_a_node_is_solved_on_its_allowed_configurations_alone(problem: Problem) -> None:  # noqa: F811
    """`recomputed.within`: the solve sees the graph and vectors restricted to the allowed
    configurations, the unconstrained optimum where it is allowed, and its choice comes
    back in the whole graph's indices."""
    from pase.passes.strategy.budget import as_budget
    from pase.passes.strategy.dp import DPResult
    from pase.passes.strategy.memory import memory_vectors

    graph = problem.cost_graph()
    memory = memory_vectors(problem)
    allowed = [np.arange(v.size) % 2 == 1 for v in memory]
    allowed[0] = np.ones(memory[0].size, dtype=bool)
    free = DPResult(choice=tuple(1 for _ in memory), cost=1.0, order=(), max_dependent_set=0,
                    table_entries=0, peak_table_bytes=0)
    seen = []

    def additive(part: object, vectors: list[np.ndarray], known: dict) -> CappedSolution:
        seen.append((part.sizes, [v.tolist() for v in vectors], known["free"].choice))
        return solution(tuple(size - 1 for size in part.sizes), 2.0)

    budget = as_budget(1 << 30)
    found = recomputed.within(graph, allowed, memory, budget, {"free": free}, additive)
    kept = [np.flatnonzero(ok) for ok in allowed]
    assert seen == [([k.size for k in kept],
                     [v[k].tolist() for v, k in zip(memory, kept, strict=True)],
                     (1,) + (0,) * (len(memory) - 1))]
    assert found.choice == tuple(int(k[-1]) for k in kept)
    assert budget.used == 0


def test_fixing_keeps_every_strategy_that_fits_and_beats_the_best(
        problem: Problem, every: tuple[np.ndarray, np.ndarray, np.ndarray],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`_fixed` (reduced-cost fixing on a node's row) drops configurations, but none of a
    strategy of the node that fits and costs less than the best found (brute force)."""
    cost, additive, held = every
    choices = np.array(list(itertools.product(*(range(len(configs))
                                                 for configs in problem.config_lists))))
    real = recomputed._fixed
    dropped = []

    def checked(transient: Transient, memory: list[np.ndarray], cap: float,
                node: recomputed._Node, low: float, rate: float, best: float,
                children: list[recomputed._Node],
                fixings: Fixings | None = None) -> list[recomputed._Node]:
        fixed = real(transient, memory, cap, node, low, rate, best, children, fixings)
        better = (additive + held <= cap) & (cost < best)
        for child in children:
            inside = better & np.all([ok[choices[:, i]] for i, ok
                                      in enumerate(child.allowed)], axis=0)
            after = [c for c in fixed if c.low == child.low and c.high == child.high and
                     all((c_ok <= ok).all()
                         for c_ok, ok in zip(c.allowed, child.allowed, strict=True))]
            kept = np.any([np.all([ok[choices[:, i]] for i, ok in enumerate(c.allowed)],
                                  axis=0) for c in after], axis=0) if after else \
                np.zeros(inside.size, dtype=bool)
            assert not (inside & ~kept).any()
        dropped.append(sum(int(ok.sum()) for child in children for ok in child.allowed) -
                       sum(int(ok.sum()) for child in fixed for ok in child.allowed))
        return fixed

    monkeypatch.setattr(recomputed, "_fixed", checked)
    for cap in caps(every):
        found = solve_capped(problem, cap, effort=None)
        assert found.proven
    assert sum(dropped) > 0


def test_a_node_within_one_fixed_under_its_row_takes_its_bounds(
        problem: Problem, every: tuple[np.ndarray, np.ndarray, np.ndarray],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`Fixings` makes one diffusion per row and enclosing node: on TINY's every cap the
    nodes that branch under a row and within a node fixed before take its bounds (fewer
    diffusions than fixings), and every search still ends at the brute-force optimum."""
    from pase.passes.strategy import recomputed_fixing

    cost, additive, held = every
    real = recomputed_fixing.ReducedCosts
    calls = {"fixings": 0, "diffusions": 0}

    def counted(*arguments: object, **keywords: object) -> object:
        calls["diffusions"] += 1
        return real(*arguments, **keywords)  # type: ignore[arg-type]

    fixed = recomputed._fixed

    def counting(*arguments: object) -> list[recomputed._Node]:
        calls["fixings"] += 1
        return fixed(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(recomputed_fixing, "ReducedCosts", counted)
    monkeypatch.setattr(recomputed, "_fixed", counting)
    for cap in caps(every):
        found = solve_capped(problem, cap, effort=None)
        fits = additive + held <= cap
        assert found.proven
        assert math.isclose(found.cost, float(cost[fits].min()), rel_tol=1e-9)
    assert 0 < calls["diffusions"] < calls["fixings"]


def test_fixings_take_an_enclosing_nodes_bounds_under_the_same_row_only(
        problem: Problem) -> None:  # noqa: F811
    """`Fixings.bounds`: the same bounds for a node within the first under its row; new
    ones for a node not within it, or under another row."""
    from pase.passes.strategy.memory import memory_vectors
    from pase.passes.strategy.recomputed_fixing import Fixings

    memory = memory_vectors(problem)
    fixings = Fixings(problem.cost_graph())
    everything = [np.ones(vector.size, dtype=bool) for vector in memory]
    inner = [ok.copy() for ok in everything]
    inner[0][0] = False
    outer = fixings.bounds(everything, memory, 1e9, 1e-9, ((), 1e9))
    assert fixings.bounds(inner, memory, 1e9, 1e-9, ((), 1e9))[0] is outer[0]
    assert fixings.made == 1
    fixings.bounds(everything, memory, 2e9, 1e-9, ((), 2e9))
    assert fixings.made == 2
    again = Fixings(problem.cost_graph())
    first = again.bounds(inner, memory, 1e9, 1e-9, ((), 1e9))
    assert again.bounds(everything, memory, 1e9, 1e-9, ((), 1e9))[0] is not first[0]
    assert again.made == 2


def test_the_recomputed_vectors_are_the_breakdowns(problem: Problem) -> None:  # noqa: F811
    """`TrainingCost.recomputed` (each result priced once per distinct dims) gives every
    configuration the "recomputed" part of its `memory_breakdown`."""
    model = problem.model
    recomputing = 0
    for layer, configs in zip(problem.layer_data, problem.config_lists, strict=True):
        vector = model.recomputed(layer, configs)
        assert vector.tolist() == [model.memory_breakdown(layer, config)["recomputed"]
                                   for config in configs]
        recomputing += int((vector > 0).sum())
    assert recomputing > 0


def test_the_memory_vectors_price_each_dims_once(problem: Problem,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`TrainingCost.memory` prices a configuration's dims once (`_held`) and applies
    each configuration's training choices to it: the same bytes as its
    `memory_breakdown`'s additive parts, in fewer pricings than configurations."""
    model = problem.model
    real = type(model)._held
    priced = []

    def counted(self: object, layer: object, config: object, own: tuple[int, ...]) -> object:
        priced.append(config)
        return real(self, layer, config, own)  # type: ignore[arg-type]

    monkeypatch.setattr(type(model), "_held", counted)
    pricings = configurations = 0
    for layer, configs in zip(problem.layer_data, problem.config_lists, strict=True):
        priced.clear()
        vector = model.memory(layer, configs)
        assert len(priced) == len({tuple(sorted(dict(c).items())) for c in configs})
        pricings, configurations = pricings + len(priced), configurations + len(configs)
        monkeypatch.setattr(type(model), "_held", real)
        parts = [model.memory_breakdown(layer, config) for config in configs]
        monkeypatch.setattr(type(model), "_held", counted)
        assert vector.tolist() == [p["parameters"] + p["gradients"] + p["optimizer_state"]
                                   + p["activations"] for p in parts]
    assert pricings < configurations


def test_small_nodes_are_solved_without_pruning(
        problem: Problem, every: tuple[np.ndarray, np.ndarray, np.ndarray],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`recomputed.prunes`: LARAC's DP solves of a node whose tables hold fewer than
    `UNPRUNED_ENTRIES` entries skip the dominance pruning (the unconstrained solves,
    `solve`'s answer, keep it); above it they prune, and the answer is the same."""
    from pase.passes.strategy import memory

    real = memory.solve_graph
    pruned: list[bool] = []

    def recorded(*arguments: object, **options: object) -> object:
        pruned.append(bool(arguments[5]) if len(arguments) > 5 else True)
        return real(*arguments, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(memory, "solve_graph", recorded)
    cap = caps(every)[2]
    small = solve_capped(problem, cap, effort=None)
    assert pruned[0]
    assert pruned.count(False) > pruned.count(True)
    assert not recomputed.prunes(problem.cost_graph())
    monkeypatch.setattr(recomputed, "UNPRUNED_ENTRIES", 0)
    pruned.clear()
    large = solve_capped(problem, cap, effort=None)
    assert len(pruned) > 2
    assert all(pruned)
    assert recomputed.prunes(problem.cost_graph())
    assert (small.choice, small.cost, small.lower_bound) == \
        (large.choice, large.cost, large.lower_bound)
    assert small.proven


def test_a_search_without_recomputation_still_prunes(monkeypatch: pytest.MonkeyPatch) -> None:
    """`recomputed.prunes` is the recomputed nodes' alone: a capped search where nothing
    is recomputed prunes every DP solve, however small its tables."""
    from pase.frontend import parse_text
    from pase.passes.strategy import (
        SearchOptions,
        TrainingOptions,
        build_problem,
        memory,
        solve,
    )
    from tests.passes.strategy.test_recomputed import MACHINE
    from tests.passes.strategy.test_training_cost import TINY

    plain = build_problem(parse_text(TINY), 2, MACHINE, options=SearchOptions(
        min_shard=1, training=TrainingOptions(optimizer="adam")))
    vectors = memory.memory_vectors(plain)
    free = memory.memory_parts(plain, solve(plain).assignment).total
    least = sum(float(vector.min()) for vector in vectors)
    real = memory.solve_graph
    pruned: list[bool] = []

    def recorded(*arguments: object, **options: object) -> object:
        pruned.append(bool(arguments[5]) if len(arguments) > 5 else True)
        return real(*arguments, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(memory, "solve_graph", recorded)
    found = solve_capped(plain, (least + free) / 2, effort=None)
    assert found.proven
    assert len(pruned) > 2
    assert all(pruned)
