"""The whole round narrowed by a lower bound that counts the joins between repeated blocks:
configurations in no strategy as cheap as a known cost U, dropped before the whole round's
tables are built.

`narrow_blocks.block_gaps` bounds a strategy's cost by the sum of its groups' optima,
which leaves out the edges between groups. On a stack of blocks whose own optimum is not
self-consistent (GPT-3 175B at 3,072 devices: the block's optimal output layout is not the
one its input reads best), those joins cost about 0.017 s over 96 blocks, and every layer
of every block keeps the configurations within that gap: the whole round's DP outgrew the
memory budget. Here the joins are counted. The blocks B_1 .. B_n form a chain: the only
edges between them go from one layer r_{i-1} of a block (its boundary, a GPT's second
residual add) to the next block. With any potential phi over r's configurations,

    F(x) >= P_0(x) + sum_{i=2..n} K_i(x) + P_end(x),
    P_0   = head + B_1 + (the edges among them) - phi(r_1),
    K_i   = phi(r_{i-1}) + B_i + (the edges from r_{i-1} into B_i) - phi(r_i),
    P_end = phi(r_n) + tail + (the edges from r_n into it),

the phi terms cancelling along the chain and every edge left out (the head's into the
tail, a tied embedding's) costing at least 0. Each part's min-sum diffusion
(`repeats._part_bounds`) gives a lower bound m_p and per-configuration bounds
B_p(v = a) <= min { part : x_v = a }, so a strategy with x_v = a costs at least
B_p(v = a) + sum_{q != p} m_q (K counted n - 1 times; a layer in two parts takes the larger
bound). A configuration whose bound exceeds U is in no strategy costing at most U, so in
no optimal one. The bounds hold for the strategies whose configurations are in the lists
they were computed on: those the excess bound keeps for the same U (`block_gaps`), which
hold every strategy costing at most U. The kept configurations stay in their order, so
the narrowed DP picks the very strategy the whole DP picks (`narrow.py`'s argument); the
blocks keep one list per layer kind (the union over the blocks' bounds), so they still
share their tables.

phi is found by value iteration, each step one diffusion of K: the bound of K at r_i = b
(less phi(b)) is the cost of reaching b through one more block; with phi the cost of
reaching r through the blocks before, K's bound is the chain's cost per block, and the
joins are in it. Any phi gives valid bounds; the best of the steps is kept.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem
    >>> from pase.passes.strategy.narrow_blocks import layer_groups
    >>> problem = build_problem(parse_file("models/transformer.dnn"), devices=4)
    >>> chain = find_chain(problem, layer_groups(problem))
    >>> len(chain.blocks), chain.boundary       # 6 blocks, joined by their last layer
    (6, 23)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.bound import MARGIN
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.narrow import masked, restricted
from pase.passes.strategy.narrow_blocks import block_gaps, group_key, group_problem
from pase.passes.strategy.problem import Problem, Solution
from pase.passes.strategy.repeats import _part_bounds, _swept

NEAR = 1.0
"""Where no strategy costs the first round's guess, the next round is narrowed as if a
strategy cost A' = the chain bound plus this share of the bound's lead over the groups'
optima, and its optimum is proven where it costs at most A'. On GPT-3 175B at 3,072
devices the bound plus its whole lead (9.2319 s) is above the optimum (9.2315 s), so that
round is the last; a quarter (0.0026 s) found a strategy 0.0030 s above the optimum."""


@dataclass(frozen=True)
class Chain:
    """The layers before the blocks, the blocks (each a range of layers, the same kinds in
    the same places) and the layers after them; `boundary` is the position in a block of
    the one layer whose edges reach the next block."""

    head: range
    blocks: list[range]
    tail: range
    boundary: int


def find_chain(problem: Problem, groups: Sequence[range] | None) -> Chain | None:
    """The chain of `groups` (`narrow_blocks.layer_groups`: a head, repeated blocks, a
    tail), or None where the blocks are fewer than 3, where an edge joins two blocks that
    are not consecutive, or where the edges from one block into the next do not all leave
    from one layer, in the same places and of the same kinds for every pair of blocks."""
    if not groups:
        return None
    keys = [group_key(problem, layers) for layers in groups]
    first = 1 if len(groups) > 1 and keys[0] != keys[1] else 0
    last = first
    while last + 1 < len(groups) and keys[last + 1] == keys[first]:
        last += 1
    blocks = list(groups[first:last + 1])
    if len(blocks) < 3:
        return None
    period = len(blocks[0])
    start, stop = blocks[0].start, blocks[-1].stop
    edge_kinds = problem._kinds()[1]
    joins: list[set[tuple[int, int, int]]] = [set() for _ in blocks]
    for edge, kind in zip(problem.edges, edge_kinds, strict=True):
        low, high = sorted((edge.producer, edge.consumer))
        if not (start <= low < stop and start <= high < stop):
            continue
        one, other = (low - start) // period, (high - start) // period
        if one == other:
            continue
        if other != one + 1 or edge.producer != low:
            return None
        joins[other].add((edge.producer - blocks[one].start,
                          edge.consumer - blocks[other].start, kind))
    if any(join != joins[1] for join in joins[2:]):
        return None
    ends = {producer for producer, _, _ in joins[1]}
    if len(ends) != 1:
        return None
    return Chain(range(groups[0].start, start), blocks, range(stop, groups[-1].stop),
                 ends.pop())


@dataclass(frozen=True)
class ChainBounds:
    """The chain's lower bound `total` of the strategies whose configurations are in a
    problem's lists, and per layer the bound of each configuration (what a strategy that
    takes it costs at least), `slack` below the sums' rounding."""

    total: float
    per_config: list[np.ndarray]
    slack: float
    parts: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The lower bounds of P_0, of one K and of P_end (the module docstring's m_p)."""
    reach: float = 0.0
    """The potential's largest value, max phi (its least is 0)."""

    def keeps(self, upper: float) -> list[np.ndarray]:
        """Per layer, the configurations in some strategy costing `upper` or less."""
        limit = upper + MARGIN * abs(upper) + self.slack
        return [bound <= limit for bound in self.per_config]


def chain_bounds(problem: Problem, widened: Problem, chain: Chain,
                 budget: MemoryBudget | None = None, jit: str = "auto") -> ChainBounds:
    """The chain's bounds (the module docstring) of the strategies whose configurations
    are in `widened`'s lists (`problem` narrowed); each part's tables priced through
    `problem`'s `PricedTables` and charged to `budget` while it is bounded."""
    blocks, boundary = chain.blocks, chain.boundary
    first, second, last = blocks[0], blocks[1], blocks[-1]
    h = len(chain.head)
    parts = _Parts(problem, widened, budget, jit)
    try:
        k_layers = [first.start + boundary, *second]
        phi = cyclic_potential(parts.graph(k_layers), 1 + boundary, jit)
        k_lower, k_bounds, k_margin = parts.bounds(k_layers, {0: phi}, {1 + boundary: phi})
        head_lower, head_bounds, head_margin = parts.bounds(
            [*chain.head, *first], {}, {h + boundary: phi})
        end_lower, end_bounds, end_margin = parts.bounds(
            [last.start + boundary, *chain.tail], {0: phi}, {})
    finally:
        parts.release()
    copies = len(blocks) - 1
    total = head_lower + copies * k_lower + end_lower
    head_rest, k_rest, end_rest = total - head_lower, total - k_lower, total - end_lower
    per_config: list[np.ndarray] = [np.zeros(0)] * len(widened.config_lists)
    for index, layer in enumerate(chain.head):
        per_config[layer] = head_bounds[index] + head_rest
    for index, layer in enumerate(chain.tail):
        per_config[layer] = end_bounds[1 + index] + end_rest
    as_copy = k_bounds[0] + k_rest
    for position in range(len(first)):
        in_first = head_bounds[h + position] + head_rest
        inside = k_bounds[1 + position] + k_rest
        in_last = inside
        if position == boundary:
            in_first = np.maximum(in_first, as_copy)
            in_last = np.maximum(inside, end_bounds[0] + end_rest)
            inside = np.maximum(inside, as_copy)
        # The blocks share one list: a configuration goes where no block can take it.
        bound = np.minimum(np.minimum(in_first, inside), in_last)
        for block in blocks:
            per_config[block.start + position] = bound
    return ChainBounds(total, per_config, head_margin + copies * k_margin + end_margin,
                       (head_lower, k_lower, end_lower), float(phi.max()))


def joined_gaps(least: list[float], groups: list[range], optima: list[float], chain: Chain,
                bounds: ChainBounds, level: float, upper: float) -> list[float] | None:
    """Each layer's gap (a bound on its excess in every strategy costing `upper` or less)
    from the chain bounds `bounds` of an earlier round, computed on the lists the excesses
    of a strategy costing `level` leave (S); None where the argument below does not hold.
    Nothing is priced: it narrows the next round's lists before their tables are built.

    Each part p's diffusion bound m_p holds for the strategies whose configurations at p's
    layers (its own and its copy) are all in S. Any strategy x has F_p(x) >= o_p - d_p,
    o_p the optima of p's groups and d_p the most its potential terms take (max phi for
    P_0 and K, 0 for P_end); where a layer w of p is outside S, its group g costs more
    than L_g + gap_w = o_g + D (D = `level` less the groups' optima), so
    F_p(x) >= o_p + D - d_p ("out"). A part whose own layers are in S but whose copy is
    not ("copy out", F_p >= o_p - d_p) follows a part that is out, and each part is
    followed by one. So where, for every part, (m_p - o_p - D + d_p) <= 0, and, for
    every part and its follower f, that plus (m_f - o_f + d_f) <= 0, the parts other
    than p cost at least their m's together less c_p = max(0, m_f - o_f + d_f) of p's
    follower f (whose copy out is then paired with nothing). With x_v = a, v a layer of
    group g in p, F_p(x) >= L_g + e_v(a) + (o_p - o_g) - d_p; hence

        e_v(a) <= upper - (total - m_p) + c_p + d_p - (o_p - o_g) - L_g,

    total the bounds' sum. The blocks share their lists: a block's layer takes the
    largest of its gaps in P_0 (the first block) and in K (the others)."""
    head_m, k_m, end_m = bounds.parts
    block = chain.blocks[0]
    opt = {(layers.start, layers.stop): optimum for layers, optimum in zip(groups, optima,
                                                                           strict=True)}
    o_block = opt[(block.start, block.stop)]
    o_head = math.fsum(o for (low, high), o in opt.items() if high <= block.start)
    o_tail = math.fsum(o for (low, _), o in opt.items() if low >= chain.blocks[-1].stop)
    spread = level - math.fsum(optima)
    # (m_p, o_p, d_p) of P_0, K and P_end, and the out / copy-out deficits of each.
    parts = [(head_m, o_head + o_block, bounds.reach), (k_m, o_block, bounds.reach),
             (end_m, o_tail, 0.0)]
    out = [m - o - spread + d for m, o, d in parts]
    copy_out = [m - o + d for m, o, d in parts]
    if max(out) > 0 or out[0] + copy_out[1] > 0 or out[1] + max(copy_out[1:]) > 0:
        return None
    total = bounds.total
    slack = bounds.slack + MARGIN * (abs(upper) + abs(total) + math.fsum(map(abs, optima))
                                     + math.fsum(map(abs, least)))
    gaps = [math.inf] * len(least)

    def widest(layers: range, part: int, follower: float, shared: bool) -> None:
        m, o_p, d = parts[part]
        for group in (g for g in groups if g.start >= layers.start and g.stop <= layers.stop):
            o_g = opt[(group.start, group.stop)]
            gap = (upper - (total - m) + max(0.0, follower) + d - (o_p - o_g)
                   - math.fsum(least[i] for i in group) + slack)
            for index in group:
                for at in ([b.start + index - layers.start for b in chain.blocks] if shared
                           else [index]):
                    gaps[at] = gap if gaps[at] == math.inf else max(gaps[at], gap)

    widest(chain.head, 0, copy_out[1], False)
    widest(chain.tail, 2, 0.0, False)
    widest(range(block.start, block.stop), 0, copy_out[1], True)
    widest(range(chain.blocks[1].start, chain.blocks[1].stop), 1, max(copy_out[1:]), True)
    return gaps


def cyclic_potential(part: CostGraph, boundary: int, jit: str) -> np.ndarray:
    """A potential phi over the configurations of K's copy (`part`'s vertex 0, a copy of
    its vertex `boundary`): the block closed on itself (the edges from the copy leave
    `boundary` instead) is diffused, and phi(a) is minus the moves its joins put on the
    boundary at a. With them K's bound starts where the closed block's does: any
    strategy of the chain with the blocks' costs so reparametrised costs the same, but
    the ends' (module docstring). Zero where a join would land on an edge the block has."""
    closed = CostGraph(part.names[1:], part.vertex_costs[1:])
    joins = []
    for (u, v), table in part.edge_costs.items():
        if u == 0:
            key = (min(v, boundary) - 1, max(v, boundary) - 1)
            if v == boundary or key in closed.edge_costs:
                return np.zeros(part.sizes[0])
            joins.append(key)
            closed.add_edge(boundary - 1, v - 1, table)
        else:
            if (u - 1, v - 1) in closed.edge_costs:
                return np.zeros(part.sizes[0])
            closed.add_edge(u - 1, v - 1, table)
    diffusion = _swept(closed, jit)
    phi = np.zeros(part.sizes[0])
    for number, edge in enumerate(diffusion.edges):
        if edge in joins:
            phi -= diffusion.moves[number][0 if edge[0] == boundary - 1 else 1]
    return phi - phi.min()


def _widened(problem: Problem, least: list[float], excess: list[np.ndarray],
             groups: list[range], optima: list[float], upper: float,
             tighter: list[float] | None = None) -> tuple[Problem, list[np.ndarray]] | None:
    """`problem` narrowed by the excesses a strategy costing `upper` leaves (`block_gaps`,
    and `tighter` gaps where given: `joined_gaps`), and its indices; None where some
    layer keeps nothing."""
    gaps = block_gaps(least, groups, optima, upper)
    if tighter is not None:
        gaps = [min(gap, other) for gap, other in zip(gaps, tighter, strict=True)]
    widened, kept = restricted(problem, excess, gaps)
    return (widened, kept) if all(widened.config_lists) else None


def solve_chain(problem: Problem, least: list[float], excess: list[np.ndarray],
                groups: list[range], optima: list[float], chain: Chain, upper: float,
                solve: Callable[[Problem], Solution], guess: float,
                budget: MemoryBudget | None = None
                ) -> tuple[Problem, list[np.ndarray], Solution]:
    """The optimum of `problem` by `solve` on the configurations a strategy costing
    `upper` leaves (its excesses within the groups' gaps, given each group's optimum
    `optima` and each layer's least cost `least`, then its chain bounds within `upper`).
    Where `upper` is above the optima plus `guess` of them, a first round narrows as if
    a strategy cost A = that much: its optimum, if within A, is the whole one (every
    strategy as cheap is kept), and otherwise a strategy. Where the chain's bound is above
    A no strategy costs A; a round then narrows as if a strategy cost A' = the bound plus
    `NEAR` of its lead over the optima (its own lists and bounds), whose optimum, if
    within A', is the whole one (and otherwise a strategy). A last round narrows by the
    cheapest strategy known. The rounds after the first keep only the excesses that the
    first round's chain bounds allow too (`joined_gaps`: before any table is priced).
    Returns the narrowed problem, its indices into `problem`'s lists and its optimum."""
    total = math.fsum(optima)
    assumed = total * (1 + guess)
    rounds = [assumed] if upper > assumed else []
    # The first round's bounds and level: later rounds' lists narrowed by `joined_gaps`.
    first: tuple[ChainBounds, float] | None = None
    while rounds:
        level = rounds.pop()
        round_ = _bounded(problem, least, excess, groups, optima, chain, level, budget, first)
        if round_ is None:
            continue
        widened, kept, bounds = round_
        first = first or (bounds, level)
        keeps = bounds.keeps(level)
        if not all(keep.any() for keep in keeps):
            # No strategy costs `level`. After the first round, a round as if one cost A'
            # where that is below `upper`; otherwise a strategy within A' (and in every
            # layer at least its least bound): it only narrows the last round.
            near = bounds.total + NEAR * max(bounds.total - total, guess * total)
            if level == assumed and level < near < upper:
                rounds.append(near)
                continue
            keeps = bounds.keeps(max(near, *(float(b.min()) for b in bounds.per_config)))
        narrowed, kept = masked(problem, widened, keeps, kept)
        solution = solve(narrowed)
        if solution.cost <= level:
            return narrowed, kept, solution
        upper = min(upper, solution.cost)
    round_ = _bounded(problem, least, excess, groups, optima, chain, upper, budget, first)
    assert round_ is not None, "the strategy costing upper is kept"
    widened, kept, bounds = round_
    keeps = bounds.keeps(upper)
    if all(keep.any() for keep in keeps):  # (the strategy costing upper is kept)
        widened, kept = masked(problem, widened, keeps, kept)
    return widened, kept, solve(widened)


def _bounded(problem: Problem, least: list[float], excess: list[np.ndarray],
             groups: list[range], optima: list[float], chain: Chain, upper: float,
             budget: MemoryBudget | None, first: tuple[ChainBounds, float] | None = None
             ) -> tuple[Problem, list[np.ndarray], ChainBounds] | None:
    """`problem` narrowed by the excesses a strategy costing `upper` leaves (and by
    `joined_gaps` of the `first` round's bounds and level, where given), its indices, and
    the chain bounds on its lists; None where some layer keeps nothing."""
    tighter = None if first is None else joined_gaps(least, groups, optima, chain,
                                                     first[0], first[1], upper)
    round_ = _widened(problem, least, excess, groups, optima, upper, tighter)
    if round_ is None:
        return None
    widened, kept = round_
    return widened, kept, chain_bounds(problem, widened, chain, budget)


class _Parts:
    """The chain's parts: each a group problem of some layers on `widened`'s lists, its
    cost graph with some vertex vectors replaced or lowered by a potential, bounded by
    diffusion; the tables charged to `budget` until `release`."""

    def __init__(self, problem: Problem, widened: Problem, budget: MemoryBudget | None,
                 jit: str) -> None:
        self.problem, self.widened, self.budget, self.jit = problem, widened, budget, jit
        self.graphs: dict[tuple[int, ...], CostGraph] = {}
        self.largest: dict[tuple[object, ...], float] = {}

    def graph(self, layers: list[int]) -> CostGraph:
        key = tuple(layers)
        if key not in self.graphs:
            part = group_problem(self.problem, layers,
                                 [self.widened.config_lists[index] for index in layers])
            self.graphs[key] = part.cost_graph(self.budget)
        return self.graphs[key]

    def bounds(self, layers: list[int], replaced: dict[int, np.ndarray],
               lowered: dict[int, np.ndarray]) -> tuple[float, list[np.ndarray], float]:
        """The part of `layers` with vertex i's vector `replaced[i]` and `lowered[i]` taken
        from vertex i's: diffusion's lower bound, its per-configuration bounds, and the
        rounding margin of its tables."""
        graph = self.graph(layers)
        costs = [replaced[i] if i in replaced else
                 cost - lowered[i] if i in lowered else cost
                 for i, cost in enumerate(graph.vertex_costs)]
        part = CostGraph(graph.names, costs, dict(graph.edge_costs))
        lower, per_config, _ = _part_bounds(part, self.jit)
        largest = [*(float(np.abs(cost).max()) for cost in part.vertex_costs if cost.size),
                   *(self._largest(table) for table in part.edge_costs.values() if table.size)]
        return lower, per_config, MARGIN * math.fsum(largest)

    def _largest(self, table: np.ndarray) -> float:
        """max |table| of an edge table of the parts' graphs (held until `release`), found
        once per table: the parts share their blocks' tables."""
        key = (table.__array_interface__["data"][0], table.shape, table.strides)
        if key not in self.largest:
            self.largest[key] = max(float(table.max()), -float(table.min()))
        return self.largest[key]

    def release(self) -> None:
        if self.budget is not None:
            for graph in self.graphs.values():
                self.budget.release(sum(graph.buffers().values()))
        self.graphs.clear()
        self.largest.clear()
