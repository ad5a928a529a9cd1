"""The frontier DP under a cap (`strategy/frontier.py`) and what feeds it (`capped.py`):
the Pareto filter's packed sort, the memory window on its points, and the diffusion swept
on towards LARAC's bound; each keeps the results exact."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pase.frontend import parse_file
from pase.passes.strategy import build_problem, capped, frontier, pareto
from pase.passes.strategy.capped import ReducedCosts, close_gap
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.frontier import _Points, frontier_search
from pase.passes.strategy.memory import memory_vectors
from pase.passes.strategy.options import SearchOptions, TrainingOptions
from tests.passes.strategy.test_memory import MODELS


def points(seed: int, whole: bool) -> _Points:
    """Random points with many equal entries, memories and costs (whole-numbered memory,
    or not)."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(2, 400))
    memory = rng.integers(0, 6, size=count).astype(np.float64) * 1024.0
    if not whole:
        memory += 0.5 * rng.integers(0, 2, size=count)
    return _Points((0,), frozenset([0]), rng.integers(0, 7, size=count),
                   rng.integers(0, 5, size=count) / 8.0, memory,
                   rng.normal(size=count), {3: rng.permutation(count)})


def pareto_by_hand(factor: _Points) -> list[int]:
    """The first of each point no other point of its entry beats in both cost and memory,
    in order of entry, memory, cost: compared pair by pair."""
    count = factor.entry.size
    kept = []
    for i in range(count):
        beaten = False
        for j in range(count):
            if factor.entry[j] != factor.entry[i] or j == i:
                continue
            pair_j = (factor.memory[j], factor.cost[j])
            pair_i = (factor.memory[i], factor.cost[i])
            if pair_j[0] <= pair_i[0] and pair_j[1] <= pair_i[1] and \
                    (pair_j != pair_i or j < i):
                beaten = True
                break
        if not beaten:
            kept.append(i)
    return sorted(kept, key=lambda i: (factor.entry[i], factor.memory[i], factor.cost[i], i))


@pytest.mark.parametrize("seed", range(12))
def test_the_pareto_filter_keeps_the_first_undominated_points_in_order(seed: int) -> None:
    for whole in (True, False):
        factor = points(seed, whole)
        # The packed key where memory is whole bytes, the three-key sort otherwise.
        packed = pareto.packed_key(factor.entry, factor.memory, factor.cost)
        assert (packed is None) == (not whole)
        kept = frontier._pareto(factor)
        expected = pareto_by_hand(factor)
        assert kept.parts[3].tolist() == factor.parts[3][expected].tolist()
        assert kept.cost.tolist() == factor.cost[expected].tolist()
        assert kept.reduced.tolist() == factor.reduced[expected].tolist()


def test_the_packed_key_orders_as_the_three_key_sort() -> None:
    rng = np.random.default_rng(5)
    count = 5000
    factor = _Points((0,), frozenset([0]), rng.integers(0, 300, size=count),
                     rng.integers(0, 50, size=count) * 1e-3,
                     rng.integers(0, 40, size=count) * 3.0e8, np.zeros(count), {})
    key = pareto.packed_key(factor.entry, factor.memory, factor.cost)
    assert key is not None
    order = np.lexsort((factor.cost, factor.memory, factor.entry))
    assert np.all(np.diff(key[order]) >= 0)
    # Each key's least cost, first of equals: the first of its run in the three-key sort,
    # whether found by the scatter of minima or by the sort.
    sorted_key = key[order]
    firsts = order[np.concatenate([[True], sorted_key[1:] != sorted_key[:-1]])]
    assert pareto.least_per_key(key, factor.cost, int(key.max()) + 1).tolist() == \
        firsts.tolist()
    # Too wide to pack exactly: the three-key sort instead.
    wide = _Points((0,), frozenset([0]), factor.entry, factor.cost, factor.memory * 2.0**40,
                   factor.reduced, {})
    assert pareto.packed_key(wide.entry, wide.memory, wide.cost) is None


@pytest.mark.parametrize("seed", range(6))
def test_least_per_key_scatters_and_sorts_alike(seed: int) -> None:
    # Few key values (the scatter of minima) or a span too wide for it (the sort): each
    # key's least cost, the first of equal costs, in order of key.
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 3000))
    key = rng.integers(0, int(rng.integers(1, 500)), size=count)
    cost = rng.integers(0, 6, size=count) / 4.0
    order = np.lexsort((cost, key))
    sorted_key = key[order]
    firsts = order[np.concatenate([[True], sorted_key[1:] != sorted_key[:-1]])].tolist()
    for span in (int(key.max()) + 1, 10**15):
        assert pareto.least_per_key(key, cost, span).tolist() == firsts


@pytest.mark.parametrize("seed", range(6))
def test_a_joins_representatives_leave_the_same_frontier(seed: int) -> None:
    # The pairs of two sides (memory on a lattice, so sums coincide): the frontier of
    # the least of each entry and memory is the frontier of all the pairs, the same
    # indices in the same order; memory that is not whole is left to the full filter.
    rng = np.random.default_rng(seed)
    sides = [int(rng.integers(1, 60)), int(rng.integers(1, 60))]
    flats = (rng.integers(0, 3, size=sides[0]) * 4, rng.integers(0, 4, size=sides[1]))
    memories = tuple(rng.integers(0, 9, size=n).astype(np.float64) * 384.0 + 1e6
                     for n in sides)
    costs = tuple(rng.integers(0, 7, size=n) / 8.0 for n in sides)
    from_left, from_right = (grid.ravel() for grid in np.meshgrid(
        np.arange(sides[0]), np.arange(sides[1]), indexing="ij"))
    keep = rng.random(from_left.size) < 0.7
    from_left, from_right = from_left[keep], from_right[keep]
    entry = flats[0][from_left] + flats[1][from_right]
    memory = memories[0][from_left] + memories[1][from_right]
    cost = costs[0][from_left] + costs[1][from_right]
    expected = pareto.pareto_index(entry, memory, cost)
    assert expected.tolist() == pareto_by_hand(
        _Points((0,), frozenset([0]), entry, cost, memory, cost, {}))
    least = pareto.pair_representatives(flats, memories, costs, from_left, from_right)
    assert least is not None
    kept = least[pareto.frontier_mask(entry[least], cost[least])]
    assert kept.tolist() == expected.tolist()
    if sides[0] > 1:
        halves = (memories[0] + 0.5 * (np.arange(sides[0]) % 2), memories[1])
        assert pareto.pair_representatives(flats, halves, costs, from_left,
                                           from_right) is None


@pytest.mark.parametrize("seed", range(6))
def test_representatives_one_left_point_at_a_time_are_the_pairs_own(seed: int) -> None:
    # A join's pairs as it makes them (each left point with a slice of the right points
    # in one order; the right points differ in entry or memory): the loop over left
    # points finds the same least pair of each entry and memory, in the same order.
    rng = np.random.default_rng(seed)
    cells = rng.choice(4 * 9, size=int(rng.integers(2, 36)), replace=False)
    flats = (rng.integers(0, 3, size=int(rng.integers(1, 30))) * 4, cells // 9)
    memories = (rng.integers(0, 9, size=flats[0].size) * 384.0, (cells % 9) * 384.0 + 7.0)
    costs = (rng.integers(0, 7, size=flats[0].size) / 8.0,
             rng.integers(0, 7, size=cells.size) / 8.0)
    order = rng.permutation(cells.size)
    start = rng.integers(0, cells.size, size=flats[0].size)
    stop = np.minimum(start + rng.integers(0, cells.size, size=start.size), cells.size)
    counts = stop - start
    from_left = np.repeat(np.arange(start.size), counts)
    from_right = order[np.concatenate([np.arange(a, b) for a, b in zip(start, stop,
                                                                       strict=True)])]
    least = pareto.pair_representatives(flats, memories, costs, from_left, from_right)
    rows = pareto.representatives_by_rows(flats, memories, costs, order, start, stop)
    assert least is not None
    assert rows is not None
    assert rows[0].tolist() == from_left[least].tolist()
    assert rows[1].tolist() == from_right[least].tolist()


def tied_chain(seed: int, layers: int = 7) -> tuple[CostGraph, list[np.ndarray], float]:
    """A chain whose layers each have configurations on one line cost + rate·memory
    (ZeRO's gathers priced per byte at the memory they save), others off it, and edges."""
    rng = np.random.default_rng(seed)
    rate = 0.5
    costs, memory = [], []
    for _ in range(layers):
        saved = rng.integers(1, 6, size=3).astype(np.float64)
        base = float(rng.integers(0, 4))
        costs.append(np.array([base, base + rate * saved[0], base + rate * saved[1],
                               base + 1.0 + rng.integers(0, 3)]))
        top = float(rng.integers(10, 14))
        memory.append(np.array([top, top - saved[0], top - saved[1], top - saved[2]]))
    graph = CostGraph([f"v{i}" for i in range(layers)], costs)
    for i in range(layers - 1):
        graph.add_edge(i, i + 1, rng.integers(0, 2, size=(4, 4)).astype(np.float64) * 0.25)
    least = sum(float(m.min()) for m in memory)
    most = sum(float(m.max()) for m in memory)
    return graph, memory, math.floor(least + 0.6 * (most - least)) + 0.5


@pytest.mark.parametrize("seed", range(8))
def test_the_memory_window_keeps_the_optimum_and_drops_points(seed: int) -> None:
    # With the window (points whose completions cannot hold enough memory to cost at
    # most T go) the frontier DP returns the brute-force optimum, the same strategy as
    # without it, from no more points.
    graph, memory, cap = tied_chain(seed)
    fitting = [(graph.total_cost(choice), choice) for choice
               in itertools.product(*(range(size) for size in graph.sizes))
               if sum(float(memory[v][c]) for v, c in enumerate(choice)) <= cap]
    best = min(cost for cost, _ in fitting)
    rate = 0.5
    reduced = ReducedCosts(graph, memory, cap, rate, jit="off")
    moves = dict(zip(reduced.diffusion.edges, reduced.diffusion.moves, strict=True))
    results = {window: frontier_search(graph, memory, cap, best, rate, reduced.unary, moves,
                                       margin=1e-9, window=window)
               for window in (True, False)}
    assert results[True].cost == pytest.approx(best, abs=1e-12)
    assert results[True].choice == results[False].choice
    assert results[True].points <= results[False].points
    assert results[True].memory <= cap


def test_the_memory_window_drops_points_on_a_tie_line() -> None:
    # Every layer: one configuration, or a second that saves 1 byte for 0.5 s at λ =
    # 0.5 (a tie), under a cap that leaves room for half of them unsaved: the partial
    # strategies that saved too much (too little memory left to reach the cap) go.
    layers = 10
    graph = CostGraph([f"v{i}" for i in range(layers)],
                      [np.array([0.0, 0.5]) for _ in range(layers)])
    for i in range(layers - 1):
        graph.add_edge(i, i + 1, np.zeros((2, 2)))
    memory = [np.array([2.0, 1.0]) for _ in range(layers)]
    found = {window: frontier_search(graph, memory, 15.0, 2.5, 0.5, window=window)
             for window in (True, False)}
    assert (found[True].cost, found[True].memory) == (2.5, 15.0)
    assert found[True].choice == found[False].choice
    assert found[True].points < found[False].points


def ring(seed: int, layers: int = 6) -> tuple[CostGraph, list[np.ndarray]]:
    """A ring of layers with one chord (cycles: diffusion settles slowly there)."""
    rng = np.random.default_rng(seed)
    graph = CostGraph([f"v{i}" for i in range(layers)],
                      [rng.integers(0, 4, size=3).astype(np.float64) for _ in range(layers)])
    for u, v in [*((i, i + 1) for i in range(layers - 1)), (0, layers - 1), (0, 3)]:
        graph.add_edge(u, v, rng.integers(0, 4, size=(3, 3)).astype(np.float64))
    return graph, [rng.integers(1, 5, size=3).astype(np.float64) for _ in range(layers)]


@pytest.mark.parametrize("seed", [0, 3, 6, 11])
def test_diffusion_far_below_larac_is_swept_on(seed: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Stopped after one sweep, the diffusion of a ring is below the least cost +
    # λ·memory; given LARAC's bound as its target it sweeps on, and its bounds stay
    # valid: close_gap still proves the brute-force optimum.
    monkeypatch.setattr(capped, "SWEEPS", 1)
    graph, memory = ring(seed)
    rate = 0.5
    cap = float(sum(int(m.min()) + int(m.max()) for m in memory) // 2)
    strategies = [(graph.total_cost(choice), choice,
                   sum(float(memory[v][c]) for v, c in enumerate(choice)))
                  for choice in itertools.product(*(range(size) for size in graph.sizes))]
    larac = min(cost + rate * weight for cost, _, weight in strategies) - rate * cap
    short = ReducedCosts(graph, memory, cap, rate, jit="off")
    swept = ReducedCosts(graph, memory, cap, rate, jit="off", target=larac)
    assert short.lower < larac - capped.CLOSE * abs(larac + rate * cap)
    assert short.lower < swept.lower <= larac + 1e-9
    fitting = [item for item in strategies if item[2] <= cap]
    best = min(cost for cost, _, _ in fitting)
    lean = min(fitting, key=lambda item: item[2])
    closed = close_gap(graph, memory, cap, rate, (lean[1], lean[0], lean[2]), larac)
    assert closed.best[1] == pytest.approx(best, abs=1e-12)
    assert closed.best[2] <= cap
    assert not closed.stopped


def test_repeated_layers_memory_is_priced_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # GPT-2's twelve blocks: each kind of layer's memory vector is made once, and every
    # layer's vector is what pricing it alone gives.
    options = SearchOptions(training=TrainingOptions(optimizer="adam", precision="bf16",
                                                     zero="auto"))
    problem = build_problem(parse_file(str(MODELS / "gpt2_small.dnn")), 8, options=options)
    model = type(problem.model)
    real = model.memory
    calls = []

    def counted(self: object, *args: object, **kwargs: object) -> np.ndarray:
        calls.append(args[0])
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(model, "memory", counted)
    vectors = memory_vectors(problem)
    assert len(calls) < len(problem.layer_data) / 4
    monkeypatch.setattr(model, "memory", real)
    for layer, configs, vector in zip(problem.layer_data, problem.config_lists, vectors,
                                      strict=True):
        if not layer.shared or not any(layer.shared):
            assert np.array_equal(vector, problem.model.memory(layer, configs))


def saving_line(seed: int, layers: int = 6) -> tuple[CostGraph, list[np.ndarray], float]:
    """A chain whose layers each save some bytes for their price at λ = 0.01 (every
    configuration on one line cost + λ·memory, as ZeRO's gathers), under a cap the first
    saving of every layer meets exactly: the optimum is the Lagrangian bound."""
    rng = np.random.default_rng(seed)
    saved = rng.integers(1, 60, size=(layers, 3)).astype(np.float64)
    graph = CostGraph([f"v{i}" for i in range(layers)],
                      [np.concatenate([[1.0], 1.0 + 0.01 * s]) for s in saved])
    for i in range(layers - 1):
        graph.add_edge(i, i + 1, np.zeros((4, 4)))
    memory = [np.concatenate([[100.0], 100.0 - s]) for s in saved]
    return graph, memory, 100.0 * layers - float(saved[:, 0].sum())


def rounds(graph: CostGraph, memory: list[np.ndarray], cap: float, rate: float, probe: int,
           monkeypatch: pytest.MonkeyPatch
           ) -> tuple[capped.Closed, list[tuple[float, bool, bool]]]:
    """`close_gap` from the least-memory strategy and the brute-force Lagrangian bound at
    `rate`, with `capped.PROBE_POINTS` = `probe`; and each frontier search's threshold,
    whether it finished and whether it had the memory window."""
    made: list[tuple[float, bool, bool]] = []

    def logged(*args: object, **kwargs: object) -> frontier.FrontierResult:
        result = frontier_search(*args, **kwargs)  # type: ignore[arg-type]
        made.append((float(args[3]), result.finished,  # type: ignore[arg-type]
                     bool(kwargs.get("window", True))))
        return result

    monkeypatch.setattr(capped, "PROBE_POINTS", probe)
    monkeypatch.setattr(frontier, "frontier_search", logged)
    strategies = [(graph.total_cost(choice), choice,
                   math.fsum(float(memory[v][c]) for v, c in enumerate(choice)))
                  for choice in itertools.product(*(range(size) for size in graph.sizes))]
    larac = min(cost + rate * weight for cost, _, weight in strategies) - rate * cap
    lean = min(strategies, key=lambda item: (item[2], item[0]))
    return close_gap(graph, memory, cap, rate, (lean[1], lean[0], lean[2]), larac,
                     jit="off"), made


@pytest.mark.parametrize("seed", range(4))
def test_a_dear_first_round_gives_way_to_the_tight_round(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every first round dear (PROBE_POINTS = 0): it is stopped at once, and the tight
    # round, at TIGHT_STEP above the bound, proves the optimum (here the bound itself)
    # alone: the same strategy as the rounds without it.
    graph, memory, cap = saving_line(seed)
    plain, plain_rounds = rounds(graph, memory, cap, 0.01, 10**9, monkeypatch)
    tight, tight_rounds = rounds(graph, memory, cap, 0.01, 0, monkeypatch)
    assert (tight.best, tight.bound, tight.stopped) == (plain.best, plain.bound, False)
    assert tight.best[2] <= cap
    assert len(plain_rounds) == 1
    assert [finished for _, finished, _ in tight_rounds] == [False, True]
    assert tight_rounds[1][0] < plain_rounds[0][0] == tight_rounds[0][0]


@pytest.mark.parametrize("seed", range(6))
def test_a_failed_tight_round_changes_nothing(seed: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Where no strategy that fits costs TIGHT_STEP or less above the bound, the tight
    # round proves nothing, and the rounds after it are those made without it, but for
    # the first round's windowed pass: where that found nothing at most T it was made
    # again without the window; after a failed tight round it is made so at once.
    graph, memory, cap = tied_chain(seed)
    plain, plain_rounds = rounds(graph, memory, cap, 0.5, 10**9, monkeypatch)
    tight, tight_rounds = rounds(graph, memory, cap, 0.5, 0, monkeypatch)
    assert (tight.best, tight.bound, tight.stopped) == (plain.best, plain.bound, False)
    fitting = [graph.total_cost(choice) for choice
               in itertools.product(*(range(size) for size in graph.sizes))
               if sum(float(memory[v][c]) for v, c in enumerate(choice)) <= cap]
    assert tight.best[1] == pytest.approx(min(fitting), abs=1e-12)
    assert tight_rounds[2][2] is False
    if len(plain_rounds) > 1:  # (a first round that proves it: one round)
        assert plain_rounds[0][2] is True
        assert plain_rounds[1][2] is False
        assert tight_rounds[2:] == plain_rounds[1:]
