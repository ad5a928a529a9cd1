"""Memory per device of a strategy, and the least-cost strategy under a cap on it.

A device holds, for the step, its block of every parameter and of its gradient, and the
block of every layer's result (what the backward pass reads again): the formula of
`pase-partition-stages` (`pipeline.parameter_bytes` + `pipeline.activation_bytes`) for one
stage and one micro-batch. Both are sums of per-layer terms, each fixed by that layer's
configuration, so a cap on memory is one additive resource constraint on the search:

- if the unconstrained optimum fits, it is the answer (exact);
- with `method="exhaustive"`, every strategy that fits is tried (exact; pruning keeps a
  configuration only if no other is cheaper everywhere *and* needs no more memory);
- with `method="dp"`, Lagrangian relaxation: the DP solves cost + λ·memory, which is the
  same DP with λ·memory added to each layer's cost vector. Every λ ≥ 0 gives a proven
  lower bound L(λ) = min(cost + λ·memory) − λ·cap on the constrained optimum, and its
  minimiser, when it fits, a feasible strategy. λ follows Jüttner et al.'s LARAC (2001):
  the λ where the cheapest infeasible and the cheapest feasible strategy found so far
  tie, until no strategy beats the tie, which is the λ maximising L (the dual optimum).
  Where L's maximum stays below the best strategy that fits (a duality gap: with few
  memory levels there is one), the exact search of `capped.py` closes it: reduced-cost
  bounds at that λ drop every configuration (and edge pair) no strategy cheaper than a
  threshold T uses, and PaSE's DP with a (cost, memory) frontier per table entry
  (`frontier.py`) finds the best strategy that fits among the rest; T grows from just
  above L until its answer is at most T, which proves it optimal. The frontier points
  it makes are bounded by `effort` (`DEFAULT_EFFORT`); a search stopped
  by it returns the best strategy found and the bound proven so far, and
  `CappedSolution.gap` says how far above it the strategy may be. A strategy is called
  optimal only when its cost equals the bound within 1e-9 relative. Memory is an
  integer number of bytes, so it is computed exactly.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> free = solve(problem)
    >>> memory = strategy_memory(problem, free.assignment)
    >>> capped = solve_capped(problem, memory)
    >>> capped.assignment == free.assignment, capped.proven
    (True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pase.passes.strategy.budget import MemoryBudget, SearchError, as_budget
from pase.passes.strategy.capped import Strategy, close_gap, reuses
from pase.passes.strategy.cost import Config
from pase.passes.strategy.cost_models import CostModel
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.exact import solve_graph
from pase.passes.strategy.exhaustive import solve_exhaustive
from pase.passes.strategy.pipeline.microbatch import activation_bytes, parameter_bytes
from pase.passes.strategy.problem import Assignment, Problem, collector_paused
from pase.passes.strategy.prune import prune
from pase.passes.strategy.training_cost import TrainingCost, memory_breakdown, unheld
from pase.passes.strategy.vertices import Layer

GIB = 1 << 30


def significant(value: float, digits: int, rounding: Callable[[float], int],
                nudge: float) -> tuple[int, float]:
    """`value` (> 0) rounded by `rounding` (`math.ceil`, `math.floor`) to `digits`
    significant digits, `nudge` (1 -/+ 1e-12) keeping a value a rounding error past a
    decimal on it: (units, scale), the number shown units * scale (`gib_up`, `gib_down`)."""
    scale = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return rounding(value / scale * nudge), scale


def gib_up(nbytes: float, digits: int = 4) -> str:
    """`nbytes` in GiB, rounded up to `digits` significant digits: a cap of the number
    shown holds `nbytes` (gib_up(0.058941 * GIB, 3) == '0.059')."""
    value = nbytes / GIB
    if value <= 0 or not math.isfinite(value):
        return f"{value:.{digits}g}"
    units, scale = significant(value, digits, math.ceil, 1 - 1e-12)
    return f"{units * scale:.{digits}g}"


def gib_down(nbytes: float, digits: int = 4, above: float = -math.inf) -> str:
    """`nbytes` in GiB, rounded down to `digits` significant digits, or as many more as it
    takes to stay above `above` bytes (a cap `nbytes` exceeds): a lower bound shown so
    stays one ("needs at least" the number; gib_down(0.058949 * GIB, 3) == '0.0589')."""
    value = nbytes / GIB
    if value <= 0 or not math.isfinite(value):
        return f"{value:.{digits}g}"
    for shown in range(digits, 18):
        units, scale = significant(value, shown, math.floor, 1 + 1e-12)
        while units > 0 and float(f"{units * scale:.{shown}g}") * GIB > nbytes:
            units -= 1  # (the decimal shown, as a cap, would be above `nbytes`)
        if float(f"{units * scale:.{shown}g}") * GIB > above or nbytes <= above:
            return f"{units * scale:.{shown}g}"
    return repr(value)


RELATIVE_TOLERANCE = 1e-9
"""A strategy within this of the lower bound (relative) is proven optimal."""
MAX_SOLVES = 100
"""The most DP solves LARAC makes (it converges in about 10 on the bundled models)."""
DEFAULT_EFFORT = 30_000
"""The most frontier points, in thousands, the exact search makes unless told otherwise
(`solve_capped`'s `effort`, `capped.POINTS_PER_EFFORT`): 3·10^7, which also bounds the
points one join materialises (some 3 GiB at worst: a join checks the count before it
makes them); the Transformer at P = 64 under 0.28 GiB on v100-nvlink, the largest proof
measured, takes 21,008 thousand; a search it stops reports its gap."""


@dataclass(frozen=True)
class Memory:
    """Bytes one device holds: parameters with their gradients (and optimizer state),
    activations, and, under recomputation, the results the largest segment holds again
    during its backward (`recomputed`); `parts`, under training options, the breakdown by
    `training_cost.MEMORY_PARTS`. `total`, their sum, is what a memory cap compares."""

    parameters: float
    activations: float
    parts: dict[str, float] | None = None
    recomputed: float = 0.0

    @property
    def total(self) -> float:
        return self.parameters + self.activations + self.recomputed


def strategy_memory(problem: Problem, assignment: Mapping[str, Config]) -> float:
    """The bytes per device of `assignment` (every layer named), parameters and gradients
    plus activations (plus the recomputed, `Memory`)."""
    return memory_parts(problem, assignment).total


def memory_parts(problem: Problem, assignment: Mapping[str, Config]) -> Memory:
    """The bytes per device of `assignment`, by part."""
    model = problem.model
    if not isinstance(model, TrainingCost):
        return Memory(parameter_bytes(problem.layer_data, assignment),
                      activation_bytes(problem.layer_data, assignment))
    parts = memory_breakdown(model, problem.layer_data, assignment)
    return Memory(parts["parameters"] + parts["gradients"] + parts["optimizer_state"],
                  parts["activations"], parts, parts["recomputed"])


def memory_vectors(problem: Problem, in_flight: int = 1) -> list[np.ndarray]:
    """For each layer, the bytes per device of each of its configurations (the order of
    `problem.config_lists`) with the activations of `in_flight` micro-batches held at
    once (a pipeline stage's, `schedule.in_flight`); a strategy's additive memory is the
    sum of its choices' (the recomputed results, not additive, are
    `recomputed.Transient`'s). A problem with a `layer_memory(index, in_flight)` (a
    pipeline stage's, `StageProblem`) gives each layer's vector itself, the same values
    kept by kind; a layer that holds a parameter shared with an earlier layer not in the
    problem (`training_cost.unheld`) counts it."""
    kept = getattr(problem, "layer_memory", None)
    model = problem.model
    owned = (unheld(problem.layer_data) if isinstance(model, TrainingCost)
             else [()] * len(problem.layer_data))
    # Layers that differ only in their names (one kind, `Problem._kinds`) with one
    # configuration list (repeated layers share theirs) hold the same bytes: priced once.
    kinds = problem._kinds()[0] if kept is None else [-1] * len(owned)
    made: dict[tuple[int, int], np.ndarray] = {}
    vectors = []
    for index, (layer, configs, own, kind) in enumerate(zip(
            problem.layer_data, problem.config_lists, owned, kinds, strict=True)):
        if own:
            assert isinstance(model, TrainingCost)
            vectors.append(model.memory(layer, configs, in_flight, own))
        elif kept is not None:
            vectors.append(kept(index, in_flight))
        else:
            key = (kind, id(configs))
            if key not in made:
                made[key] = model.memory(layer, configs, in_flight)
            vectors.append(made[key])
    return one_array_each(vectors)


def layers_memory(model: CostModel, layers: Sequence[Layer], configs: Sequence[Config],
                  in_flight: int = 1) -> float:
    """The bytes per device of `layers` (a contiguous run: a pipeline stage) in `configs`
    (one each) holding `in_flight` micro-batches: what `solve_capped` compares with the
    cap (`Memory.total`)."""
    assignment = {layer.name: config for layer, config in zip(layers, configs, strict=True)}
    if isinstance(model, TrainingCost):
        return memory_breakdown(model, layers, assignment, in_flight)["total"]
    return sum(float(model.memory(layer, [assignment[layer.name]], in_flight)[0])
               for layer in layers)


def one_array_each(vectors: list[np.ndarray]) -> list[np.ndarray]:
    """`vectors` with equal ones (the same values) as one array object: the identical
    layers of repeated blocks then share their vectors, as their cost vectors are shared
    (`Problem.cost_graph`), and pruning and the DP's reuse, which recognise a table by
    its buffer, treat them once (`priced` keeps them shared)."""
    seen: dict[tuple[str, tuple[int, ...], bytes], np.ndarray] = {}
    return [seen.setdefault((vector.dtype.str, vector.shape, vector.tobytes()), vector)
            for vector in vectors]


def priced(costs: list[np.ndarray], weights: list[np.ndarray], rate: float,
           allowed: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Each vertex's costs plus `rate` times its weights (`rate` 0: the costs as they are),
    inf where `allowed` is False; one array for layers whose cost, weight and allowed
    vectors are the same arrays (`one_array_each`), so that shared layers stay shared."""
    made: dict[tuple[int, int, int], np.ndarray] = {}
    result = []
    for index, (cost, weight) in enumerate(zip(costs, weights, strict=True)):
        ok = allowed[index] if allowed is not None else None
        key = (id(cost), id(weight), id(ok))
        if key not in made:
            vector = cost + rate * weight if rate else cost
            made[key] = vector if ok is None else np.where(ok, vector, math.inf)
        result.append(made[key])
    return result


class MemoryCapError(SearchError):
    """No strategy fits under the cap; `least` is the least memory any needs (bytes)."""

    def __init__(self, message: str, least: float):
        super().__init__(message)
        self.least = least


class BoundReached(Exception):
    """`solve_capped`'s `enough` accepted a proven lower bound on the cost of every
    strategy that fits (`bound`): the search stopped without a strategy."""

    def __init__(self, bound: float):
        super().__init__(f"every strategy that fits costs at least {bound}")
        self.bound = bound


@dataclass(frozen=True)
class CappedSolution:
    """The least-cost strategy found under a memory cap, and how sure that is.

    `lower_bound` is a proven lower bound on the cost of every strategy that fits (the
    cost itself when the search is exact); `solves` counts the DP runs, `nodes` the exact
    search's frontier points (`frontier.py`); `stopped` says that the effort bound (`effort`,
    `solve_capped`'s) ended the search before it proved the strategy optimal; `rate` is
    LARAC's best multiplier λ (0 where the cap did not bind), a warm start for a similar
    problem (`solve_capped`'s `start`); `choice`, the strategy's configuration indices
    (one per layer, in order).
    """

    assignment: Assignment
    cost: float
    memory: float
    cap: float
    lower_bound: float
    unconstrained_fits: bool
    solves: int
    stats: DPResult | None = None
    nodes: int = 0
    stopped: bool = False
    effort: int | None = None
    rate: float = 0.0
    choice: tuple[int, ...] = ()

    @property
    def gap(self) -> float:
        """How far the cost may be above the optimum, relative to the bound (0 when
        proven)."""
        if self.cost <= self.lower_bound or self.lower_bound <= 0:
            return 0.0 if self.cost <= self.lower_bound else math.inf
        return (self.cost - self.lower_bound) / self.lower_bound

    @property
    def proven(self) -> bool:
        """Whether the strategy is proven optimal among those that fit."""
        return self.cost <= self.lower_bound * (1 + RELATIVE_TOLERANCE)


def solve_capped(problem: Problem, cap: float, method: str = "dp", order: str = "genseq",
                 memory_budget: int | MemoryBudget = 4 << 30,
                 exhaustive_limit: int = 10**7, jit: str = "auto",
                 progress: Callable[[int, int, int], None] | None = None,
                 in_flight: int = 1,
                 enough: Callable[[float], bool] | None = None,
                 effort: int | None = DEFAULT_EFFORT,
                 start: float | None = None, free: DPResult | None = None
                 ) -> CappedSolution:
    """The least-cost strategy of `problem` needing at most `cap` bytes per device
    (module docstring), counting the activations `in_flight` times (a pipeline stage
    holding that many micro-batches, `memory_vectors`). Raises `MemoryCapError` when
    even the least memory any strategy needs is more than `cap`, and `SearchError` as
    `solve` does.

    `enough`, given each proven lower bound on the cost of every strategy that fits as
    the search raises it (the unconstrained optimum's cost first), may end the search:
    when it returns True, `BoundReached` is raised with that bound. A caller that only
    needs the strategy if it is cheap enough (the stage search, whose other bounds then
    prune it) so saves the rest of the solves; without it, and whenever it returns
    False throughout, the result is the same as without `enough`.

    `effort` bounds the exact search's frontier points, in thousands (summed over its
    rounds: `capped.close_gap`), a count, so the same input gives the same answer;
    stopped by it, the strategy is the best found and `lower_bound` the bound proven so
    far (`CappedSolution.stopped`); it also bounds the nodes of the branch and bound over
    recomputed results (`recomputed.MAX_NODES`). None searches until the strategy is
    proven optimal.

    `start`, a multiplier λ near the best one (`CappedSolution.rate` of a similar
    problem: a neighbouring pipeline stage's), starts LARAC there instead of at the
    least-memory strategy (`_warm`): fewer DP solves, the same bound, and the same
    optimum once proven (the exact search proves it whatever λ it starts from).

    `free`, the unconstrained optimum of `problem` already found
    (`solve_graph(problem.cost_graph(), method, order)`'s, pruned and bounded: `solve`'s
    with those options, as `warm.WarmStarts.unconstrained` keeps it), is taken as it is
    instead of being solved again.
    """
    if effort is not None and effort < 0:
        raise SearchError(f"effort must be at least 0, got {effort}")
    if method not in ("dp", "exhaustive"):
        raise SearchError(f"unknown method '{method}'; use dp or exhaustive")
    from pase.passes.strategy import recomputed

    with collector_paused():
        budget = as_budget(memory_budget)
        graph = problem.cost_graph(budget)
        memory = memory_vectors(problem, in_flight)
        transient = recomputed.Transient.of(problem)
        solved: dict[str, DPResult] = {} if free is None else {"free": free}

        def under(vectors: list[np.ndarray], room: float, first: bool,
                  near: float | None = None,
                  stop: Callable[[float], bool] | None = None,
                  ceiling: float = math.inf,
                  allowed: list[np.ndarray] | None = None) -> CappedSolution:
            def additive(part: CostGraph, part_vectors: list[np.ndarray],
                         known: dict[str, DPResult]) -> CappedSolution:
                pruning = transient is None or recomputed.prunes(part)
                return _solve_additive(problem, part, part_vectors,
                                       sum(float(vector.min()) for vector in part_vectors),
                                       room, method, order, budget, exhaustive_limit, jit,
                                       progress, enough if first else stop, effort,
                                       start if near is None else near, known, ceiling,
                                       pruning, pruning or part is graph or method != "dp",
                                       transient is not None)

            if allowed is None:
                return additive(graph, vectors, solved)
            found = recomputed.within(graph, allowed, vectors, budget, solved, additive)
            return replace(found, assignment=problem.assignment(found.choice))

        if transient is None:
            return under(memory, cap, True)

        def least_plan() -> CappedSolution:
            assert transient is not None
            choice = transient.least_choice(memory)
            cost = graph.total_cost(choice)
            return _solution(problem, choice, cost, _weight(memory, choice), cap, cost,
                             False, 0, None)

        return recomputed.solve_recomputed(transient, memory, cap, under, least_plan,
                                           None if effort is None else recomputed.MAX_NODES,
                                           enough)


def _solve_additive(problem: Problem, graph: CostGraph, memory: list[np.ndarray],
                    least: float, cap: float, method: str, order: str,
                    budget: MemoryBudget, exhaustive_limit: int, jit: str,
                    progress: Callable[[int, int, int], None] | None,
                    enough: Callable[[float], bool] | None, effort: int | None,
                    start: float | None, solved: dict[str, DPResult],
                    ceiling: float = math.inf, pruning: bool = True,
                    free_pruning: bool = True, fold: bool = False) -> CappedSolution:
    """`solve_capped` of the additive memory `memory` (`least`, the least of it any
    strategy needs) under `cap`; `solved["free"]`, the unconstrained optimum, is kept for
    the next call (`solve_recomputed`'s nodes), `ceiling` as `capped.close_gap`'s;
    `pruning` and `free_pruning`, whether LARAC's and the unconstrained DP solves prune
    (the whole graph's must: `solve`'s answer); `fold`, `frontier_search`'s."""
    if least > cap:
        raise MemoryCapError(f"no strategy fits in {cap / GIB:.4g} GiB per device; the "
                             f"least memory any strategy needs is {gib_up(least)} GiB "
                             "per device", least)

    def run(candidate: CostGraph, how: str = "dp", pruned: bool = pruning) -> DPResult:
        # Each solve's pruned copies go when it returns: give their charge back.
        used = budget.used
        try:
            return solve_graph(candidate, how, order, budget, exhaustive_limit, pruned,
                               jit=jit, progress=progress, reuse=reuses(candidate))
        finally:
            budget.release(budget.used - used)

    if "free" not in solved:
        solved["free"] = run(graph, method, free_pruning)
    free = solved["free"]
    free_memory = _weight(memory, free.choice)
    if free_memory <= cap:
        return _solution(problem, free.choice, free.cost, free_memory, cap, free.cost,
                         True, 1, free)
    if enough is not None and enough(free.cost):
        raise BoundReached(free.cost)
    if method == "exhaustive":
        return _exhaustive(problem, graph, memory, cap, budget, exhaustive_limit)
    return _lagrangian(problem, graph, memory, cap, free, run, enough, effort, jit,
                       start, ceiling, order, fold)


def _exhaustive(problem: Problem, graph: CostGraph, memory: list[np.ndarray], cap: float,
                budget: MemoryBudget, limit: int) -> CappedSolution:
    pruned, kept = prune(graph, budget, extra=memory)
    result = solve_exhaustive(pruned, limit, [m[k] for m, k in zip(memory, kept, strict=True)],
                              cap)
    choice = tuple(int(kept[v][c]) for v, c in enumerate(result.choice))
    return _solution(problem, choice, result.cost, _weight(memory, choice), cap, result.cost,
                     False, 1, result)


@dataclass(eq=False)
class _Node:
    """The configurations each layer may take (`allowed`), and what relaxing the cap on
    them gave: a proven bound on every strategy in it that fits, the cheapest of them
    found (`fits`, or None), the last strategy too large (`over`), and the multiplier λ
    whose L(λ) is the bound (`rate`)."""

    allowed: list[np.ndarray]
    bound: float
    fits: tuple[tuple[int, ...], float, float] | None
    over: tuple[tuple[int, ...], float, float] | None
    rate: float = 0.0


class _Relaxation:
    """LARAC on branches of one problem, counting the DP solves."""

    def __init__(self, graph: CostGraph, memory: list[np.ndarray], cap: float,
                 run: Callable[[CostGraph], DPResult]):
        self.graph = graph
        self.memory = memory
        self.cap = cap
        self.run = run
        self.solves = 0
        self.last: DPResult | None = None

    def strategy(self, choice: tuple[int, ...]) -> tuple[tuple[int, ...], float, float]:
        return choice, self.graph.total_cost(choice), _weight(self.memory, choice)

    def solve(self, allowed: list[np.ndarray], rate: float,
              keep: list[np.ndarray] | None = None) -> DPResult:
        """The least cost + rate·memory over the configurations in `keep` (default
        `allowed`); the others cost inf."""
        mask = keep if keep is not None else allowed
        costs = priced(self.graph.vertex_costs, self.memory, rate, mask)
        self.solves += 1
        self.last = self.run(CostGraph(self.graph.names, costs, dict(self.graph.edge_costs)))
        return self.last

    def node(self, allowed: list[np.ndarray], free: DPResult | None = None,
             enough: Callable[[float], bool] | None = None,
             start: float | None = None) -> _Node:
        """LARAC on the configurations `allowed` (`free`: their unconstrained solve, if
        made); `enough` is told each bound it proves (`solve_capped`). `start`, a
        multiplier near the best one (a neighbouring problem's), replaces the
        least-memory strategy by the first strategies found there (`_warm`)."""
        least = [weight[ok].min() for weight, ok in zip(self.memory, allowed, strict=True)]
        if sum(float(value) for value in least) > self.cap:
            return _Node(allowed, math.inf, None, None)
        free = free if free is not None else self.solve(allowed, 0.0)
        over = self.strategy(free.choice)
        if over[2] <= self.cap:
            return _Node(allowed, over[1], over, None)
        search = _Search(self, allowed, free.cost, enough)
        fits, done = None, False
        if start is not None and start > 0 and math.isfinite(start):
            fits, over, done = _warm(search, start, over)
        if fits is None:
            lean = one_array_each([ok & (weight == value) for weight, ok, value
                                   in zip(self.memory, allowed, least, strict=True)])
            fits = self.strategy(self.solve(allowed, 0.0, lean).choice)
            search.offer(fits)
        while not done and self.solves < MAX_SOLVES and fits[1] > over[1] and \
                fits[2] < over[2]:
            rate = (fits[1] - over[1]) / (over[2] - fits[2])
            value, found = search.probe(rate)
            tie = over[1] + rate * over[2]
            if value >= tie - RELATIVE_TOLERANCE * abs(tie):
                break  # nothing beats the line through the two: this λ maximises L
            if found[2] <= self.cap:
                fits = found
            else:
                over = found
        best = search.best
        assert best is not None  # (`fits` was offered)
        return _Node(allowed, min(search.bound, best[1]), best, over, search.rate)


class _Search:
    """One LARAC run's best Lagrangian bound so far (`bound`, at multiplier `rate`) and
    cheapest strategy that fits (`best`)."""

    def __init__(self, relaxation: _Relaxation, allowed: list[np.ndarray], free_cost: float,
                 enough: Callable[[float], bool] | None):
        self.relaxation = relaxation
        self.allowed = allowed
        self.enough = enough
        self.bound, self.rate = free_cost, 0.0  # L(0)
        self.best: Strategy | None = None

    def offer(self, found: Strategy) -> None:
        if found[2] <= self.relaxation.cap and (self.best is None or found[1] < self.best[1]):
            self.best = found

    def probe(self, rate: float) -> tuple[float, Strategy]:
        """The least cost + `rate` memory and a strategy of it; its L(rate) is kept if the
        best, and told to `enough` (which may raise `BoundReached`)."""
        relaxation = self.relaxation
        result = relaxation.solve(self.allowed, rate)
        if result.cost - rate * relaxation.cap > self.bound:
            self.bound, self.rate = result.cost - rate * relaxation.cap, rate
        if self.enough is not None:
            told = self.bound if self.best is None else min(self.bound, self.best[1])
            if self.enough(told):
                raise BoundReached(told)
        found = relaxation.strategy(result.choice)
        self.offer(found)
        return result.cost, found


WARM_STEP = 1.25
"""A warm start (`_warm`) moves its multiplier by this factor until it finds a strategy on
the other side of the cap."""
WARM_PROBES = 3
"""The most DP solves a warm start makes before it takes the least-memory strategy."""


def _warm(search: _Search, start: float, over: Strategy
          ) -> tuple[Strategy | None, Strategy, bool]:
    """LARAC's two first strategies found near `start`: the least cost + λ memory at
    λ = `start`, then at λ moved by `WARM_STEP` towards the other side of the cap, until
    one fits (`fits`) and one does not (`over`, which starts as the unconstrained
    optimum); `fits` None if none was found in `WARM_PROBES` solves. Any such pair is a
    valid start of LARAC: it ends where nothing beats the line through its last two,
    which proves that λ the best whatever the pair it started from. The last value is
    True where that is proven already: the two found are both minimisers at the λ of one
    of them (`start` was the best λ itself, as on the stages of a GPT whose λ is set by
    one block's configurations), so L there, kept by `search`, is the best."""
    fits: Strategy | None = None
    found_at: dict[bool, tuple[float, float]] = {}  # (λ, least value) of the last of each side
    rate = start
    for _ in range(WARM_PROBES):
        value, found = search.probe(rate)
        side = found[2] <= search.relaxation.cap
        found_at[side] = (rate, value)
        if side:
            fits = found
            rate /= WARM_STEP
        else:
            over = found
            rate *= WARM_STEP
        if len(found_at) == 2:
            break
    if fits is None or len(found_at) < 2:
        return fits, over, False
    done = any(other[1] + at * other[2] <= least + RELATIVE_TOLERANCE * abs(least)
               for other, (at, least) in ((over, found_at[True]), (fits, found_at[False])))
    return fits, over, done


def _lagrangian(problem: Problem, graph: CostGraph, memory: list[np.ndarray], cap: float,
                free: DPResult, run: Callable[[CostGraph], DPResult],
                enough: Callable[[float], bool] | None = None, effort: int | None = None,
                jit: str = "auto", start: float | None = None,
                ceiling: float = math.inf, order: str = "genseq",
                fold: bool = False) -> CappedSolution:
    """LARAC's bound and strategies (module docstring), then the exact search on what the
    bound keeps (`capped.close_gap`, in the elimination order `order`), until proven or
    `effort` thousand frontier points are made (or `enough` accepts the bound so far:
    `solve_capped`); `fold` as `capped.close_gap`'s."""
    relaxation = _Relaxation(graph, memory, cap, run)
    relaxation.solves = 1  # the unconstrained solve, made already
    root = relaxation.node(one_array_each([np.ones(w.size, dtype=bool) for w in memory]),
                           free, enough, start)
    assert root.fits is not None  # the least-memory strategy fits (checked before)
    closed = close_gap(graph, memory, cap, root.rate, root.fits, root.bound, effort, enough,
                       jit, ceiling, order, fold)
    best = closed.best
    return _solution(problem, best[0], best[1], best[2], cap, closed.bound, False,
                     relaxation.solves, relaxation.last, closed.nodes, closed.stopped, effort,
                     root.rate)


def _weight(memory: list[np.ndarray], choice: tuple[int, ...]) -> float:
    return sum(float(vector[c]) for vector, c in zip(memory, choice, strict=True))


def _solution(problem: Problem, choice: tuple[int, ...], cost: float, memory: float,
              cap: float, bound: float, fits: bool, solves: int,
              stats: DPResult | None, nodes: int = 0, stopped: bool = False,
              effort: int | None = None, rate: float = 0.0) -> CappedSolution:
    if math.isinf(cost):
        raise SearchError("no strategy fits under the memory cap")  # excluded by `least`
    return CappedSolution(problem.assignment(choice), cost, memory, cap, bound, fits,
                          solves, stats, nodes, stopped, effort, rate, tuple(choice))
