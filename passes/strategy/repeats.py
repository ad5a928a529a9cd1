"""Bounds of repeated blocks, computed once per block: what `bound.solve_bounded` prunes
with on deep stacks of identical layers (a GPT's transformer blocks).

Min-sum diffusion over the whole graph (`bound.diffusion_bounds`) sweeps every edge
table of every block, though the blocks' tables are the very same arrays: on a 128-block
GPT at 128 devices a single sweep and its bounds take most of the search. Here the
graph is cut into parts instead, and each distinct part is bounded once.

The relaxation. The vertices, in program order, are cut into contiguous ranges: a head,
`copies` ranges of `period` vertices whose roles repeat (`bound._roles`: the same cost
vector and incident tables), and a tail. Each edge goes to the part of its later end; a
part holds its own vertices (with their costs) and a free copy (cost 0) of each earlier
vertex its edges reach. Every vertex cost and every edge cost is then counted in exactly
one part, so a strategy x of the graph gives each part the strategy x restricted to it,
and F(x) is the sum of the parts' costs. A part's copies may choose differently from the
vertex they copy, so

    F(x) >= sum_p min F_p                       and, for x_v = a,
    F(x) >= bound_p(v = a) + sum_{q != p} min F_q

for any part p holding v (its owner, or a part holding a copy of it), where min F_p and
bound_p are a lower bound of the part and per-configuration bounds of the part, taken
from min-sum diffusion on the part alone. Parts with the same tables in the same places
(the blocks of the stack) have the same bounds, computed once. These are valid bounds,
all that `solve_bounded` needs to stay exact: the DP it runs on the surviving
configurations returns `solve_dp`'s choice and cost bit for bit (bound.py), whichever
valid bounds decided the survivors. They are weaker than the whole graph's diffusion at
convergence (the copies are free), and much cheaper.

>>> from pase.passes.strategy.bound import _Plan
>>> graph = CostGraph([f"v{i}" for i in range(9)], [np.array([1.0, 0.0])] * 9)
>>> shared = np.array([[0.0, 3.0], [3.0, 0.0]])
>>> for i in range(8):
...     graph.add_edge(i, i + 1, shared)
>>> bounds = block_bounds(graph, _Plan(graph, list(range(9)), True), min_edge_entries=0)
>>> bounds.lower, bounds.upper, bounds.decoded
(0.0, 0.0, (1, 1, 1, 1, 1, 1, 1, 1, 1))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.bound import (
    MARGIN,
    MAX_SWEEPS,
    STALL,
    Bounds,
    _buffer_key,
    _counts,
    _Diffusion,
    _Plan,
    _roles,
)
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import JIT_MIN_ENTRIES, compiled_eliminate, eliminate

Moves = tuple[np.ndarray, np.ndarray]
"""Min-sum diffusion's moves on one edge: at its first end, at its second."""
MIN_COPIES = 3
"""The fewest repeated ranges for which the parts are bounded instead of the whole graph."""
MIN_EDGE_ENTRIES = 1 << 27
"""The fewest edge-table entries (all edges, shared tables counted each time) for which the
parts are bounded instead of the whole graph. Below it a sweep of the whole graph takes
under a second, and its tighter bounds leave the DP less to do: on GPT-2 small at P = 256
(3.6e7 entries) the parts' bounds made the search 1.5x slower, on megatron-1t at P = 128
(Adam, bf16, full recomputation, ZeRO-1) 4.6x faster."""


@dataclass(frozen=True)
class Repeat:
    """Vertices `start + j * period + i` (0 <= j < copies, 0 <= i < period) have the role
    of vertex `start + i`."""

    start: int
    period: int
    copies: int


def find_repeat(roles: Sequence[int]) -> Repeat | None:
    """The period that covers the most vertices with repeated copies (the fewest vertices
    per copy on ties), or None where no range repeats `MIN_COPIES` times.

        >>> find_repeat([0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4])
        Repeat(start=2, period=2, copies=4)
    """
    numbers = np.asarray(roles)
    best: Repeat | None = None
    for period in range(1, numbers.size // MIN_COPIES + 1):
        same = numbers[:-period] == numbers[period:]
        if not same.any():
            continue
        # The longest run of positions i with roles[i] == roles[i + period].
        edges = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))))
        starts, ends = edges[0::2], edges[1::2]
        longest = int(np.argmax(ends - starts))
        start, length = int(starts[longest]), int(ends[longest] - starts[longest])
        copies = (length + period) // period
        if copies >= MIN_COPIES and (best is None or
                                     copies * period > best.copies * best.period):
            best = Repeat(start, period, copies)
    return best


def _ranges(count: int, repeat: Repeat) -> list[range]:
    """The parts' own vertices: the head, the copies, the tail (empty ones left out)."""
    cuts = [0, *(repeat.start + j * repeat.period for j in range(repeat.copies + 1)), count]
    return [range(low, high) for low, high in zip(cuts, cuts[1:], strict=False) if high > low]


@dataclass
class _Part:
    """A part's own vertices, then its copies (`vertices`, graph indices), and its graph."""

    vertices: list[int]
    owned: int
    graph: CostGraph
    key: tuple[object, ...]


def _parts(graph: CostGraph, ranges: list[range]) -> list[_Part]:
    owner = np.empty(len(graph.names), dtype=np.int64)
    for number, own in enumerate(ranges):
        owner[own.start:own.stop] = number
    edges_of: list[list[tuple[int, int]]] = [[] for _ in ranges]
    for u, v in graph.edge_costs:
        edges_of[int(owner[max(u, v)])].append((u, v))
    zeros: dict[int, np.ndarray] = {}
    sizes = graph.sizes
    parts = []
    for number, own in enumerate(ranges):
        copies = sorted({end for edge in edges_of[number] for end in edge
                         if owner[end] != number})
        vertices = [*own, *copies]
        local = {vertex: index for index, vertex in enumerate(vertices)}
        costs = [graph.vertex_costs[vertex] for vertex in own]
        costs += [zeros.setdefault(sizes[vertex], np.zeros(sizes[vertex]))
                  for vertex in copies]
        part = CostGraph([graph.names[vertex] for vertex in vertices], costs)
        edge_keys = []
        for u, v in sorted(edges_of[number], key=lambda edge: (local[edge[0]], local[edge[1]])):
            part.add_edge(local[u], local[v], graph.edge_costs[(u, v)])
            edge_keys.append((local[u], local[v], _buffer_key(graph.edge_costs[(u, v)])))
        key = (len(own), *(_buffer_key(cost) for cost in costs[:len(own)]),
               *(sizes[vertex] for vertex in copies), *edge_keys)
        parts.append(_Part(vertices, len(own), part, key))
    return parts


def _part_bounds(part: CostGraph, jit: str) -> tuple[float, list[np.ndarray], tuple[int, ...]]:
    """Diffusion on one part: its lower bound, per-configuration bounds and a strategy,
    after sweeps until one raises the bound by less than `STALL` of the gap."""
    if not part.edge_costs:
        minima = [float(cost.min()) for cost in part.vertex_costs]
        lower = math.fsum(minima)
        return (lower, [cost + (lower - low) for cost, low in zip(part.vertex_costs, minima,
                                                                  strict=True)],
                tuple(int(np.argmin(cost)) for cost in part.vertex_costs))
    return _swept(part, jit).bounds()


def _swept(part: CostGraph, jit: str) -> _Diffusion:
    """Min-sum diffusion on one part (which has edges), swept until a sweep raises its
    lower bound by less than `STALL` of the gap to the strategy decoded after the first
    (later sweeps take `lower` alone, a third of the bounds' row minima; any sweeps give
    valid bounds, and `solve_bounded`'s DP returns the same strategy whichever it is
    given)."""
    diffusion = _Diffusion(part, jit)
    if jit == "auto" and not diffusion.kernel:
        # A part is swept many times over: the kernel pays for itself sooner than on a
        # whole graph (it adds and compares as numpy does: the same bounds).
        entries = sum(table.size for table in part.edge_costs.values())
        diffusion.kernel = (entries >= JIT_MIN_ENTRIES
                            and compiled_eliminate(False) is not eliminate)
    diffusion.sweep()
    lower, _, decoded = diffusion.bounds()
    upper = part.total_cost(decoded)
    for _ in range(1, MAX_SWEEPS):
        diffusion.sweep()
        before, lower = lower, diffusion.lower()[0]
        if lower - before < STALL * max(upper - lower, 0.0):
            break
    return diffusion


def block_moves(graph: CostGraph, jit: str = "auto") -> list[Moves] | None:
    """Min-sum diffusion's moves for every edge of `graph` (in `graph.edge_costs`' order)
    from its parts (the module docstring's), each distinct part diffused once: every edge
    is in one part, and a part's moves at a copy go to the vertex it copies, so together
    they reparametrise the whole graph (a warm start for its own diffusion,
    `capped.ReducedCosts`). None where `block_bounds` would not cut the graph into parts
    (its edge tables hold fewer than `MIN_EDGE_ENTRIES` entries, or nothing repeats)."""
    if sum(table.size for table in graph.edge_costs.values()) < MIN_EDGE_ENTRIES:
        return None
    repeat = find_repeat(_roles(graph))
    if repeat is None:
        return None
    swept: dict[tuple[object, ...], list[Moves]] = {}
    moves: dict[tuple[int, int], Moves] = {}
    for part in _parts(graph, _ranges(len(graph.names), repeat)):
        if not part.graph.edge_costs:
            continue
        if part.key not in swept:
            swept[part.key] = _swept(part.graph, jit).moves
        for (u, v), (at_u, at_v) in zip(part.graph.edge_costs, swept[part.key], strict=True):
            first, second = part.vertices[u], part.vertices[v]
            # (A part numbers its copies after its own vertices: an edge from a copy is
            # the other way round in the part.)
            if first < second:
                moves[(first, second)] = (at_u, at_v)
            else:
                moves[(second, first)] = (at_v, at_u)
    return [moves[edge] for edge in graph.edge_costs]


def block_bounds(graph: CostGraph, plan: _Plan, plain: float = math.inf,
                 jit: str = "auto", min_edge_entries: int | None = None
                 ) -> Bounds | None:
    """Valid bounds of `graph` from its parts (the module docstring), each distinct part
    bounded once; None where the edge tables hold fewer than `min_edge_entries` entries
    (default `MIN_EDGE_ENTRIES`),
    where no range of vertices repeats `MIN_COPIES` times, or where the DP over what the
    bounds keep is predicted to compute more than `plain` table entries (the plain DP is
    then the cheaper way)."""
    least = MIN_EDGE_ENTRIES if min_edge_entries is None else min_edge_entries
    if sum(table.size for table in graph.edge_costs.values()) < least:
        return None
    repeat = find_repeat(plan.roles)
    if repeat is None:
        return None
    parts = _parts(graph, _ranges(len(graph.names), repeat))
    solved: dict[tuple[object, ...], tuple[float, list[np.ndarray], tuple[int, ...]]] = {}
    for part in parts:
        if part.key not in solved:
            solved[part.key] = _part_bounds(part.graph, jit)
    lower = math.fsum(solved[part.key][0] for part in parts)
    per_config: list[np.ndarray | None] = [None] * len(graph.names)
    decoded = [0] * len(graph.names)
    for part in parts:
        part_lower, part_bounds, part_choice = solved[part.key]
        for index, vertex in enumerate(part.vertices):
            bound = part_bounds[index] + (lower - part_lower)
            known = per_config[vertex]
            per_config[vertex] = bound if known is None else np.maximum(known, bound)
            if index < part.owned:
                decoded[vertex] = part_choice[index]
    # The parts' own vertices cover the graph: every vertex has a bound.
    bounds = Bounds(lower, [bound for bound in per_config if bound is not None],
                    graph.total_cost(decoded), tuple(decoded), 0, _margin(graph))
    assert len(bounds.per_config) == len(graph.names)
    if plan.entries(_counts(bounds, bounds.upper, plan.roles)) > plain:
        return None
    return bounds


def _margin(graph: CostGraph) -> float:
    """`MARGIN` of the sum of every table's largest |cost| (as `diffusion_bounds`), each
    shared table's maximum found once."""
    largest: dict[tuple[object, ...], float] = {}
    total = []
    for table in [*graph.vertex_costs, *graph.edge_costs.values()]:
        key = _buffer_key(table)
        if key not in largest:
            largest[key] = float(np.abs(table).max())
        total.append(largest[key])
    return MARGIN * math.fsum(total)
