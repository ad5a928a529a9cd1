"""The recomputed activations under a memory cap (`memory.solve_capped`), exactly.

Under recomputation a device's peak is its parameters, gradients, optimizer state and
kept activations (a sum over its layers, each fixed by that layer's configuration) plus
the results one segment recomputes during its backward, the largest segment's: the
backward recomputes one segment at a time and frees it before the next
(docs/cost-model.md, "Recomputation"). That last term is a maximum over segments, not a
sum: the cap is K additive rows at once, A(x) + R_s(x) <= cap for every segment s, and
the search's exact capped solve carries one. `solve_recomputed` is a branch and bound
over the layers' recomputed results that needs only that one row:

- A node is a set of allowed configurations per layer. Every strategy in it recomputes
  at least T = the largest sum over a segment of its layers' least allowed recomputed
  results (`Transient.least_under`), so every strategy of the node that fits also fits
  the additive cap `cap - T`: the proven optimum of the node under that one row (the
  other configurations given more memory than the cap, so that no strategy may take
  them) is a proven lower bound on the cost of every strategy of the node that fits.
- If that optimum fits with its own recomputed results, the node is solved. If not, a
  segment s holds more than `cap - A(x)` >= T >= its least, so one of its layers holds
  more than its least allowed: the node is split on that layer (the one that holds the
  most above its least) into the configurations that recompute less than the optimum's
  (which cannot hold it) and those that recompute as much or more (whose T is higher).
  The two children partition the node, each strictly smaller, so the search ends.
- A node also has a level: every strategy of it holds at least `low` and at most `high`
  again in every segment (`Transient.capped` narrows each layer to the configurations
  under `high`); its plain row is `A <= cap - max(low, T)`. Where the optimum x holds
  R(x) <= `high` and does not fit, the split is on the level (less than R(x), and R(x)
  or more, whose room `cap - R(x)` excludes x); only above `high` on a layer as above.
- A child's relaxation is the mean of the rows `A + R_s <= cap` its parent's x exceeded,
  and of those of the segments of the same kind (`_row`, `_weights`): every strategy
  that fits meets each row, so their mean, and x does not. Where its optimum is above
  the node's plain row, the node is solved again under that row alone, which excludes
  it; each node is solved at most twice.
- Where the root's optimum does not fit, the best strategy recomputing the least in
  every layer, and solves under the cap lowered by what the root's (then the next)
  strategy holds again, find strategies that fit (`_lowered`), often the optimum, which
  then ends the search at the root's bound.
- Nodes are taken lowest bound first; a node whose bound is the best fitting strategy's
  cost (within `memory.RELATIVE_TOLERANCE`) is not split. The bound returned is the
  least bound of the nodes that end the search (solved, pruned, or left open by
  `MAX_NODES` under an effort bound), a true lower bound on every strategy that fits;
  the strategy always fits with its recomputed results, and is proven optimal when its
  cost equals the bound.
- Each node's solve is kept with its row (`_Solves`): a node under the same row whose
  configurations are within a solved one's takes its solution where it allows it (and
  its bound); a solve after the root stops once its bound reaches the best strategy
  found (`_beaten`), which ends the node (and those within it under that row); LARAC
  starts at the parent's multiplier; its exact search goes no higher than the best
  strategy's cost (`capped.close_gap`'s `ceiling`).
- A node that branches once a strategy that fits is known leaves out of its children
  the configurations no strategy of it that fits and beats the best takes (`_fixed`:
  reduced costs of its own row, which every such strategy meets; those of a node it is
  within under the same row, where one made them: `recomputed_fixing.py`), and each
  node is solved on the graph restricted to the configurations it allows (`within`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pase.passes.strategy.bound import _restrict
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.memory import (
    GIB,
    RELATIVE_TOLERANCE,
    BoundReached,
    CappedSolution,
    MemoryCapError,
    gib_down,
    gib_up,
    one_array_each,
)
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.recomputed_fixing import Fixings
from pase.passes.strategy.recomputed_fixing import within as _within
from pase.passes.strategy.recomputed_fixing import within_choice as _within_choice
from pase.passes.strategy.tables import layer_kind_key
from pase.passes.strategy.training_cost import TrainingCost
from pase.passes.strategy.vertices import Layer

MAX_NODES = 64
"""The most nodes (each one capped solve) the branch and bound solves under an effort
bound (`solve_capped`'s `effort`; without one it searches until proven); a search it
stops returns the best strategy that fits and the least bound of the nodes still open
(its `CappedSolution.stopped` set, its gap true)."""

MAX_ROUNDS = 8
"""The most solves under a cap lowered by what the last strategy holds again (`_lowered`),
the first strategy that fits found before branching."""

UNPRUNED_ENTRIES = 250_000
"""Fewer vertex and edge table entries than this: a node's DPs do not prune (`prunes`)."""

Solve = Callable[[list[np.ndarray], float, bool, float | None,
                   Callable[[float], bool] | None, float, list[np.ndarray]], CappedSolution]
"""`solve_under(vectors, room, first, near, stop, ceiling)`: the exact capped solve of the additive
memory `vectors` (one per layer) under `room`, raising `MemoryCapError` where nothing fits
(`first`: the root's, whose bound is every fitting strategy's, which may end it early;
`near`: a multiplier near the best one, its parent's, where LARAC starts: `solve_capped`'s
`start`; `stop`, told each bound the solve proves, ends it with `BoundReached` where it
returns True, as `solve_capped`'s `enough` does: a node that cannot beat the best
strategy found is left there; `ceiling`, that best strategy's cost, caps the exact
search's thresholds, `capped.close_gap`'s)."""


class Transient:
    """Each layer's recomputed results under each of its configurations, and the runs
    of layers between two checkpoints (the segments recomputed one at a time)."""

    def __init__(self, model: TrainingCost, problem: Problem):
        self.layers = problem.layer_data
        self.graph = problem.cost_graph
        """The problem's cost graph (`Problem.cost_graph`, built once)."""
        made: dict[tuple[int, Layer], np.ndarray] = {}
        self.vectors = []
        for layer, configs in zip(self.layers, problem.config_lists, strict=True):
            key = (id(configs), layer_kind_key(layer))
            if key not in made:
                made[key] = model.recomputed(layer, configs)
            self.vectors.append(made[key])
        self.runs: list[list[int]] = [[]]
        for index, layer in enumerate(self.layers):
            self.runs[-1].append(index)
            if layer.checkpoint:
                self.runs.append([])
        self.kinds = [tuple(self.vectors[i].tobytes() for i in run) for run in self.runs]
        """Each segment's layers' vectors (their bytes): segments of the same kind (a
        repeated block's) recompute alike."""

    @classmethod
    def of(cls, problem: Problem) -> Transient | None:
        """The problem's, or None where nothing is recomputed."""
        model = problem.model
        if not isinstance(model, TrainingCost) or model.training.recompute == "none":
            return None
        transient = cls(model, problem)
        return transient if transient.most > 0 else None

    @property
    def least(self) -> float:
        """At least what any strategy holds again (T of the root, module docstring)."""
        return max(sum(float(self.vectors[i].min()) for i in run) for run in self.runs)

    @property
    def most(self) -> float:
        """At most what any strategy holds again."""
        return max(sum(float(self.vectors[i].max()) for i in run) for run in self.runs)

    def least_under(self, allowed: Sequence[np.ndarray]) -> float:
        """At least what a strategy of the configurations `allowed` holds again."""
        return max(sum(float(self.vectors[i][allowed[i]].min()) for i in run)
                   for run in self.runs)

    def least_choice(self, memory: Sequence[np.ndarray]) -> tuple[int, ...]:
        """Each layer's configuration of least additive memory (`memory`, its vector),
        and of those the one that recomputes least."""
        return tuple(int(np.lexsort((again, weights))[0])
                     for again, weights in zip(self.vectors, memory, strict=True))

    def capped(self, allowed: list[np.ndarray], high: float) -> list[np.ndarray] | None:
        """`allowed` less the configurations no strategy of them holding at most `high`
        again in every segment can take (a layer's, where it recomputes more than `high`
        less its segment's other layers' least); None where none holds that little."""
        if math.isinf(high):
            return allowed
        narrowed = list(allowed)
        for run in self.runs:
            least = [float(self.vectors[i][narrowed[i]].min()) for i in run]
            room = high - sum(least)
            if room < 0:
                return None
            for i, own in zip(run, least, strict=True):
                narrowed[i] = narrowed[i] & (self.vectors[i] - own <= room)
        return one_array_each(narrowed)

    def held(self, choice: Sequence[int]) -> tuple[float, int]:
        """What the strategy of configuration indices `choice` holds again (its largest
        segment's recomputed results), and that segment's index in `runs`."""
        sums = [sum(float(self.vectors[i][choice[i]]) for i in run) for run in self.runs]
        largest = max(range(len(sums)), key=sums.__getitem__)
        return sums[largest], largest


@dataclass(order=True)
class _Node:
    """Configurations allowed per layer, and a proven bound on every strategy of them
    that fits (their parent's, until solved); `order`, minus the count of nodes made
    before, takes the last made first among equal bounds (depth first: a branch whose
    solutions all cost the bound, ties, reaches one that fits in as many nodes as it
    has layers to split, not in twice as many at each depth)."""

    bound: float
    order: int
    allowed: list[np.ndarray] = field(compare=False)
    low: float = field(default=0.0, compare=False)
    """Every strategy of the node holds at least this much again (its level's floor)."""
    high: float = field(default=math.inf, compare=False)
    """... and at most this much in every segment (its level's ceiling)."""
    weights: tuple[float, ...] = field(default=(), compare=False)
    """The relaxation's row (`_row`): each segment's weight (none: the plain row)."""
    rate: float | None = field(default=None, compare=False)
    """Its parent's best multiplier λ (`CappedSolution.rate`), where its LARAC starts."""


@dataclass
class _Tally:
    """What the capped solves of one branch and bound made, and its best strategy."""

    solves: int = 0
    nodes: int = 0
    stopped: bool = False
    floor: float = math.inf
    """The least bound of the nodes that ended (solved, pruned or left open)."""
    best: CappedSolution | None = None
    held: float = 0.0

    def add(self, solution: CappedSolution) -> None:
        self.solves += solution.solves
        self.nodes += solution.nodes
        self.stopped = self.stopped or solution.stopped

    def offer(self, solution: CappedSolution, held: float) -> None:
        if self.best is None or solution.cost < self.best.cost:
            self.best, self.held = solution, held


def solve_recomputed(transient: Transient, memory: list[np.ndarray], cap: float,
                     solve_under: Solve, least_plan: Callable[[], CappedSolution],
                     limit: int | None = MAX_NODES,
                     enough: Callable[[float], bool] | None = None) -> CappedSolution:
    """The least-cost strategy whose memory with its recomputed results is at most `cap`,
    and a proven lower bound (module docstring). `memory` is each layer's additive memory
    vector; `solve_under` the exact capped solve (`Solve`); `least_plan()` the strategy
    of least additive memory, and of those the least recomputed
    (`Transient.least_choice`), taken where it fits and nothing cheaper does; `limit` the
    most nodes solved (None: until proven); `enough` is told the proven bound on every
    strategy that fits before each node after the root (which tells it the root's), and
    ends the search with `BoundReached` when it returns True (`solve_capped`)."""
    least, lowest = sum(float(vector.min()) for vector in memory), transient.least
    if least + lowest > cap:
        raise MemoryCapError(f"no strategy fits in device-memory-gib={cap / GIB!r}; every "
                             f"strategy needs at least {gib_down(least + lowest, above=cap)} "
                             "GiB per device", least + lowest)
    tally = _Tally()
    root = _branch_and_bound(transient, memory, cap, solve_under, tally, limit, enough)
    plan = least_plan()  # (where nothing found fits, or all cost more)
    plan_held = transient.held(plan.choice)[0]
    if plan.memory + plan_held <= cap:
        tally.offer(plan, plan_held)
    best = tally.best
    if best is None:
        # (Not "the least memory of one that fits": the plan of least additive memory
        # can hold more again than another needs in all; bigru.dynamo.onnx, 4 devices,
        # recompute=full zero=2: 119,970 bytes, where one of 116,258 fits.)
        raise MemoryCapError(f"no strategy found that fits in device-memory-gib="
                             f"{cap / GIB!r} with the results it recomputes; every strategy "
                             f"needs at least {gib_down(least + lowest)} GiB per device, "
                             f"and one of {gib_up(plan.memory + plan_held)} GiB per device "
                             "fits", least + lowest)
    return replace(best, memory=best.memory + tally.held, cap=cap,
                   lower_bound=min(tally.floor, best.cost),
                   unconstrained_fits=best is root and root.unconstrained_fits,
                   solves=tally.solves, nodes=tally.nodes, stopped=tally.stopped)


def _branch_and_bound(transient: Transient, memory: list[np.ndarray], cap: float,
                      solve_under: Solve, tally: _Tally, limit: int | None,
                      enough: Callable[[float], bool] | None) -> CappedSolution | None:
    """Solves the nodes lowest bound first into `tally`, at most `limit` of them (module
    docstring); the root's solution (None if nothing fits under its row)."""
    everything = one_array_each([np.ones(vector.size, dtype=bool) for vector in memory])
    heap = [_Node(-math.inf, 0, everything)]
    made, root = 1, None
    solves = _Solves(transient, memory, cap, solve_under)
    for solved in itertools.count():
        if not heap:
            return root
        best, stop = tally.best, solved == limit
        if stop or (best is not None and
                    heap[0].bound * (1 + RELATIVE_TOLERANCE) >= best.cost):
            # (Every open node is bounded by the first's, lowest.)
            tally.floor = min(tally.floor, heap[0].bound)
            tally.stopped = tally.stopped or stop
            return root
        if enough is not None and solved > 0:
            bound = min(tally.floor, heap[0].bound, math.inf if best is None else best.cost)
            if enough(bound):
                raise BoundReached(bound)
        node = heapq.heappop(heap)
        low = max(node.low, transient.least_under(node.allowed))
        try:
            solution = solves.solve(node, low, solved == 0, tally)
        except MemoryCapError:
            continue  # (no strategy of the node fits: it ends with bound inf)
        except _Pruned as pruned:  # (nothing of it beats the best found: it ends there)
            tally.floor = min(tally.floor, max(node.bound, pruned.bound))
            continue
        bound = max(node.bound, solution.lower_bound)
        held, run = transient.held(solution.choice)
        solution = replace(solution, memory=sum(
            float(vector[index]) for vector, index in zip(memory, solution.choice, strict=True)))
        if node.weights and solution.memory > cap - low:
            # (Outside the plain row, which then excludes it: the node again, plain.)
            if solution.memory + held <= cap:
                tally.offer(solution, held)  # (fits, holding less than `low`)
            heapq.heappush(heap, replace(node, bound=bound, order=-made, weights=(),
                                         rate=solution.rate or node.rate))
            made += 1
            continue
        if solution.memory + held <= cap:
            # (Fits: the cheapest of the node's relaxation, so of the node, or cheaper.)
            tally.offer(solution, held)
            tally.floor = min(tally.floor, bound)  # (solved, or stopped by effort)
            root = solution if solved == 0 else root
            continue
        if solved == 0:
            root = solution
            _lowered(transient, memory, cap, solves, tally, held, solution.rate)
        children = _children(transient, node, solution.choice, held, run)
        if not children:  # (over the cap by rounding alone: left, with its bound)
            tally.floor = min(tally.floor, bound)
        weights = _weights(transient, solution.choice, cap - solution.memory)
        if children and tally.best is not None:
            children = _fixed(transient, memory, cap, node, low, solution.rate,
                              tally.best.cost, children, solves.fixings)
        for child in children:
            heapq.heappush(heap, replace(child, bound=bound, order=-made, weights=weights,
                                         rate=solution.rate or node.rate))
            made += 1
    raise AssertionError("unreachable")  # (itertools.count never ends)


class _Solves:
    """The nodes' capped solves, each relaxation's solutions kept: a node whose row (its
    `weights` and room) is that of a node solved before whose configurations include its
    own takes that solution where its own configurations include it (the least of a
    superset's, in the subset, is the subset's least), and that node's bound; where
    nothing of the superset fit under the row, nothing of the subset does."""

    def __init__(self, transient: Transient, memory: list[np.ndarray], cap: float,
                 solve_under: Solve):
        self.transient, self.memory, self.cap = transient, memory, cap
        self.solve_under = solve_under
        self.kept: dict[tuple[tuple[float, ...], float],
                        list[tuple[list[np.ndarray], CappedSolution | float | None]]] = {}
        self.reused = 0
        self.fixings = Fixings(transient.graph())
        """The fixing's bounds of the nodes that branched (`_fixed`)."""

    def solve(self, node: _Node, low: float, first: bool, tally: _Tally) -> CappedSolution:
        """The node's relaxation solved (`_row`, its floor `low`), or a kept solution of
        it; raises `MemoryCapError` where no strategy of the node fits under its row."""
        allowed, weights = node.allowed, node.weights
        vectors, room = _row(self.transient, _masked(self.memory, allowed, self.cap),
                             self.cap, low, weights)
        kept = self.kept.setdefault((weights, room), [])
        for superset, found in kept:
            if _within(allowed, superset) and (not isinstance(found, CappedSolution) or
                                               _within_choice(allowed, found.choice)):
                self.reused += 1
                if found is None:
                    raise MemoryCapError("no strategy of the node fits", math.inf)
                if isinstance(found, float):
                    raise _Pruned(found)  # (the best found is no worse than it was then)
                return found
        try:
            best = tally.best
            solution = self.solve_under(vectors, room, first, node.rate,
                                        None if first else _beaten(tally),
                                        math.inf if first or best is None else best.cost,
                                        allowed)
        except MemoryCapError:
            kept.append((allowed, None))
            raise
        except BoundReached as reached:
            if first:
                raise  # (`solve_capped`'s `enough`)
            kept.append((allowed, reached.bound))
            raise _Pruned(reached.bound) from None
        tally.add(solution)
        kept.append((allowed, solution))
        return solution


class _Pruned(Exception):
    """A node's relaxation proved `bound`, at which it cannot beat the best strategy found
    (`_beaten`): the node ends there, unsplit."""

    def __init__(self, bound: float):
        super().__init__(bound)
        self.bound = bound


def _beaten(tally: _Tally) -> Callable[[float], bool]:
    """A solve's `stop` (`Solve`): whether a bound on the strategies it solves over
    reaches the best strategy found so far's cost (within `RELATIVE_TOLERANCE`, as the
    heap's nodes are pruned), so that none of them is cheaper."""
    def stop(bound: float) -> bool:
        best = tally.best
        return best is not None and bound * (1 + RELATIVE_TOLERANCE) >= best.cost
    return stop


def _row(transient: Transient, memory: list[np.ndarray], cap: float, low: float,
         weights: tuple[float, ...]) -> tuple[list[np.ndarray], float]:
    """The one row of a node's relaxation, as vectors and room: with no `weights`, the
    additive memory A under `cap - low` (every strategy of the node holds at least
    `low` again); else the rows `A + R_s <= cap` (segment s holding its results again,
    which every strategy that fits meets) weighted by `weights` (summing to 1) and
    added: `A + sum_s w_s R_s <= cap`."""
    if not weights:
        return memory, cap - low
    made: dict[tuple[int, int, float], np.ndarray] = {}
    vectors = list(memory)
    for run, weight in zip(transient.runs, weights, strict=True):
        for index in run:
            if weight > 0:
                key = (id(memory[index]), id(transient.vectors[index]), weight)
                if key not in made:
                    made[key] = memory[index] + weight * transient.vectors[index]
                vectors[index] = made[key]
    return one_array_each(vectors), cap


def _weights(transient: Transient, choice: Sequence[int], room: float
             ) -> tuple[float, ...]:
    """A child's row (`_row`): the mean of the rows `A + R_s <= cap` its parent's
    strategy `choice` exceeds (`room`, `cap - A`; at least one where it does not fit),
    which that strategy exceeds too, and of those of the segments with the same layers
    (`Transient.kinds`): on one of two identical segments (a GPT's blocks) alone, the
    next strategy moves its recomputed results to the other, and back."""
    over = [sum(float(transient.vectors[i][choice[i]]) for i in run) > room
            for run in transient.runs]
    hit = {kind for kind, over_it in zip(transient.kinds, over, strict=True) if over_it}
    return tuple(float(kind in hit) / sum(kind in hit for kind in transient.kinds)
                 for kind in transient.kinds)


def _lowered(transient: Transient, memory: list[np.ndarray], cap: float,
             solves: _Solves, tally: _Tally, held: float, rate: float) -> None:
    """Strategies that fit, offered to `tally`: the best of those whose every layer
    recomputes its least (they fit the root's row and all hold T again), then the first
    found by solving under the cap lowered by what the last one holds again (`held`, the
    root's first), at most `MAX_ROUNDS` times. Both solve restrictions, which may miss
    the optimum and prove nothing, but where one finds it (among strategies of equal cost
    that recompute more or less, or where the root's optimum recomputes a little more
    than T) it ends the branch and bound at its root's bound. Each is the plain row of a
    node (`_Solves`, which keeps it for the nodes of the same row: a round's is the node
    of every configuration holding at least `held`), starts LARAC at the root's
    multiplier `rate`, and stops where it cannot beat the best found (`_beaten`):
    neither can the later rounds' (under lower caps)."""
    least = sum(float(vector.min()) for vector in memory)
    everything = one_array_each([np.ones(vector.size, dtype=bool) for vector in memory])
    for _ in range(MAX_ROUNDS):
        if least + held > cap:
            break
        try:
            solution = solves.solve(_Node(-math.inf, 0, everything, low=held, rate=rate),
                                    held, False, tally)
        except (MemoryCapError, _Pruned):
            break
        held = transient.held(solution.choice)[0]
        if solution.memory + held <= cap:
            tally.offer(solution, held)
            break
    fewest = one_array_each([again == again.min() for again in transient.vectors])
    try:  # (every layer recomputing its least: every segment holds its least, at most T)
        solution = solves.solve(_Node(-math.inf, 0, fewest, rate=rate), transient.least,
                                False, tally)
        again = transient.held(solution.choice)[0]
        if solution.memory + again <= cap:
            tally.offer(solution, again)
    except (MemoryCapError, _Pruned):
        pass


def _masked(memory: list[np.ndarray], allowed: list[np.ndarray], cap: float
            ) -> list[np.ndarray]:
    """`memory` with the configurations not `allowed` holding more than `cap`, so that no
    strategy under a room of at most `cap` takes them (shared vectors stay shared)."""
    made: dict[tuple[int, int], np.ndarray] = {}
    vectors = []
    for vector, ok in zip(memory, allowed, strict=True):
        key = (id(vector), id(ok))
        if key not in made:
            made[key] = vector if ok.all() else np.where(ok, vector, cap + 1.0)
        vectors.append(made[key])
    return vectors


def _children(transient: Transient, node: _Node, choice: Sequence[int], held: float,
              run: int) -> list[_Node]:
    """The children of `node` whose relaxation's strategy `choice` holds `held` again
    (segment `run`'s) and does not fit: where `held` is within the node's level, a
    split on the level (those holding less than `held`, and those holding as much or
    more, whose room `cap - held` the strategy exceeds; last: taken first among equal
    bounds); where it is above, a split on a layer of segment `run` (`_split`). Each
    child is narrowed to its level's ceiling (`Transient.capped`); empty ones go."""
    if held <= node.high:
        below = float(np.nextafter(held, -math.inf))
        parts = [(node.allowed, node.low, below), (node.allowed, held, node.high)]
    else:
        parts = [(allowed, node.low, node.high)
                 for allowed in _split(transient, node.allowed, choice, run)]
    children = []
    for allowed, low, high in parts:
        narrowed = transient.capped(allowed, high)
        if narrowed is not None and low <= high:
            children.append(_Node(node.bound, node.order, narrowed, low, high))
    return children


def prunes(graph: CostGraph) -> bool:
    """Whether a node's LARAC DP solves prune first: not below `UNPRUNED_ENTRIES` table
    entries, where pruning again at each multiplier costs more than it saves (the same
    minima; benchmarks/RESULTS.md, branch `rcauto`). A count: deterministic."""
    entries = sum(graph.sizes) + sum(table.size for table in graph.edge_costs.values())
    return entries >= UNPRUNED_ENTRIES


def within(graph: CostGraph, allowed: list[np.ndarray], vectors: list[np.ndarray],
           budget: MemoryBudget, solved: dict[str, DPResult],
           additive: Callable[[CostGraph, list[np.ndarray], dict[str, DPResult]],
                              CappedSolution]) -> CappedSolution:
    """`additive(part, part_vectors, known)`, the exact capped solve, on the graph
    restricted to the configurations `allowed` (a node's: the others may not be taken,
    so the strategies that fit and their optimum are the same, the tables smaller), its
    choice mapped back; `solved["free"]`, the whole graph's unconstrained optimum, is
    the part's too where it takes only allowed configurations (`known`)."""
    if all(bool(ok.all()) for ok in allowed):
        return additive(graph, vectors, solved)
    part, kept, charged = _restrict(graph, allowed, budget)
    try:
        known = {}
        free = solved.get("free")
        if free is not None and _within_choice(allowed, free.choice):
            known["free"] = replace(free, choice=tuple(
                int(np.searchsorted(k, c)) for k, c in zip(kept, free.choice, strict=True)))
        found = additive(part, one_array_each([vector[k] for vector, k
                                               in zip(vectors, kept, strict=True)]), known)
    finally:
        budget.release(charged)
    return replace(found, choice=tuple(int(k[c]) for k, c
                                       in zip(kept, found.choice, strict=True)))


def _fixed(transient: Transient, memory: list[np.ndarray], cap: float, node: _Node,
           low: float, rate: float, best: float, children: list[_Node],
           fixings: Fixings | None = None) -> list[_Node]:
    """`children` of `node` without the configurations no strategy of `node` that fits
    and costs less than `best` takes: reduced-cost fixing (`capped.ReducedCosts`) on the
    node's row (`_row`, its floor `low`) at its multiplier `rate`, which every strategy
    of the node that fits meets, so every strategy of its children that fits too; or on
    the bounds `fixings` kept of a node it is within under the same row."""
    vectors, room = _row(transient, _masked(memory, node.allowed, cap), cap, low,
                         node.weights)
    fixings = fixings if fixings is not None else Fixings(transient.graph())
    per_config, margin = fixings.bounds(node.allowed, vectors, room, rate,
                                        (node.weights, room))
    keep = one_array_each([bound - margin < best for bound in per_config])
    fixed = []
    for child in children:
        allowed = one_array_each([ok & kept for ok, kept in zip(child.allowed, keep,
                                                                strict=True)])
        if all(bool(ok.any()) for ok in allowed):
            fixed.append(replace(child, allowed=allowed))
    return fixed


def _split(transient: Transient, allowed: list[np.ndarray], choice: Sequence[int],
           run: int) -> list[list[np.ndarray]]:
    """The two children of a node whose solution `choice` does not fit with what segment
    `run` holds again: on the layer of that segment holding the most above its least
    allowed, the configurations recomputing as much as `choice`'s or more, and the others
    (last: taken first among equal bounds, `_Node`)."""
    def excess(index: int) -> float:
        again = transient.vectors[index]
        return float(again[choice[index]] - again[allowed[index]].min())

    layer = max(transient.runs[run], key=excess)  # (the first of the largest)
    if excess(layer) <= 0:  # (the segment holds more than cap - A >= T >= its least)
        return []
    again = transient.vectors[layer]
    less = again < again[choice[layer]]
    children = []
    for keep in (~less, less):
        child = list(allowed)
        child[layer] = allowed[layer] & keep
        children.append(one_array_each(child))
    return children
