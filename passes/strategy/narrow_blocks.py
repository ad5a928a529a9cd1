"""Narrowing by repeated blocks: each block's own optimum, found once, bounds how far any
layer of an optimal strategy can be from its least cost, block by block instead of over the
whole graph.

`narrow.py` keeps a layer's configuration a when its excess e_v(a) (over the layer's least
cost) is at most F* - L, the whole graph's gap between its optimum and the sum L of its
layers' least costs. On a 96-block GPT that gap is 96 blocks' worth of redistributions and
excesses, and every layer may spend all of it: at 3,072 devices the second round kept
nearly every configuration. Here the layers are cut into groups instead (a head, the
repeated blocks, a tail: `repeats.find_repeat` on the layers' kinds), each group's edges
kept and the edges between groups dropped (they cost at least 0):

    F(x) >= sum_g F_g(x_g),   F_g(y) = sum_{v in g} c_v(y_v) + sum_{uv inside g} c_uv(y_u, y_v).

With lb_g <= min F_g for every group (its exact optimum, solved once per distinct group)
and U the cost of any strategy of the whole graph, an optimal x* has, for a layer v of
group g,

    e_v(x*_v) <= F_g(x*_g) - L_g <= U - sum_{h != g} lb_h - L_g,

L_g being the sum of g's layers' least costs: the group's own gap plus what the whole
strategy U costs above the groups' optima (the edges between them, mostly), not the gaps
of every other block. U is the groups' optima put together (blocks solved alike choose
alike, so the edges between them are cheap), priced by `Problem.cost`. Every optimal
strategy survives, so the narrowed problem's optimum is the whole one, and the very
strategy the whole DP picks (narrow.py's argument: kept lists keep their order).

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> layer_groups(problem) is None    # four different layers: nothing repeats
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pase.passes.strategy.bound import MARGIN
from pase.passes.strategy.cost import Config
from pase.passes.strategy.problem import Assignment, Problem, Solution
from pase.passes.strategy.repeats import find_repeat
from pase.passes.strategy.vertices import edges_among

MIN_BLOCKS = 3
"""The fewest repeated blocks for which the layers are narrowed block by block."""


def layer_groups(problem: Problem) -> list[range] | None:
    """The layers (indices, program order) cut into a head, the repeated blocks and a
    tail, or None where no range of layers repeats `MIN_BLOCKS` times. A layer's role is
    its kind and the kinds and directions of its edges. The blocks start as early as the
    layers' kinds and inner edges repeat (at most a period before the roles do: a GPT's
    first block, whose layer norm reads the embeddings, not a residual add) and go on as
    long as they repeat (the last block, whose edges out differ): the head holds the
    embeddings alone, and its own gap, which they make wide, covers no attention layer.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy import build_problem
        >>> problem = build_problem(parse_file("models/transformer.dnn"), devices=4)
        >>> [len(group) for group in layer_groups(problem)]    # a head, 6 blocks, a tail
        [94, 24, 24, 24, 24, 24, 24, 2]
    """
    layer_kinds, edge_kinds = problem._kinds()
    incident: list[list[tuple[int, bool]]] = [[] for _ in problem.layer_data]
    for edge, kind in zip(problem.edges, edge_kinds, strict=True):
        incident[edge.producer].append((kind, True))
        incident[edge.consumer].append((kind, False))
    numbers: dict[tuple[object, ...], int] = {}
    roles = [numbers.setdefault((kind, *sorted(ends)), len(numbers))
             for kind, ends in zip(layer_kinds, incident, strict=True)]
    repeat = find_repeat(roles)
    if repeat is None or repeat.copies < MIN_BLOCKS:
        return None
    period, count = repeat.period, len(roles)

    def key(cut: int) -> tuple[object, ...]:
        return group_key(problem, range(cut, min(cut + period, count)))

    start = min((cut for cut in range(max(0, repeat.start - period + 1), repeat.start)
                 if cut + 2 * period <= count and key(cut) == key(cut + period)),
                default=repeat.start)
    cuts = [0, start]
    while cuts[-1] + period <= count and key(cuts[-1]) == key(start):
        cuts.append(cuts[-1] + period)
    cuts.append(count)
    return [range(low, high) for low, high in zip(cuts, cuts[1:], strict=False) if high > low]


def group_problem(problem: Problem, layers: Sequence[int],
                  config_lists: list[list[Config]] | None = None) -> Problem:
    """The problem of `layers` alone (indices, increasing) and the edges among them, with
    the same configuration lists (the very lists, or `config_lists`, one per layer) and
    kinds: what F_g of the module docstring costs."""
    layer_kinds, edge_kinds = problem._kinds()
    lists = [problem.config_lists[i] for i in layers] if config_lists is None \
        else config_lists
    cut = edges_among(problem.edges, layers)
    names = {problem.layer_data[i].name for i in layers}
    part = Problem(problem.graph, problem.devices, problem.machine,
                   [problem.layer_data[i] for i in layers], [edge for _, edge in cut],
                   lists, problem.batch_dim,
                   problem.model, {n: pin for n, pin in problem.pins.items() if n in names},
                   problem.min_shard)
    part._kind_numbers = ([layer_kinds[i] for i in layers],
                          [edge_kinds[number] for number, _ in cut])
    part._priced = problem._priced
    return part


def group_key(problem: Problem, layers: Sequence[int]) -> tuple[object, ...]:
    """Equal for groups whose layers and inner edges have the same kinds in the same
    places (and the same configuration lists): they have the same optimum."""
    layer_kinds, edge_kinds = problem._kinds()
    cut = edges_among(problem.edges, layers)
    return (tuple((layer_kinds[i], id(problem.config_lists[i])) for i in layers),
            tuple((edge.producer, edge.consumer, edge_kinds[number]) for number, edge in cut))


def group_optima(problem: Problem, groups: list[range],
                 solve_group: Callable[[Problem], Solution]
                 ) -> tuple[list[float], float, Assignment]:
    """Each group's optimum, each distinct group solved once by `solve_group` (an exact
    search of a problem), and the whole graph's strategy that takes each group's optimal
    configurations, with its cost."""
    solved: dict[tuple[object, ...], Solution] = {}
    optima = []
    assignment: Assignment = {}
    for layers in groups:
        key = group_key(problem, layers)
        if key not in solved:
            solved[key] = solve_group(group_problem(problem, layers))
        solution = solved[key]
        optima.append(solution.cost)
        # The group's optimum, given to these layers (same kinds and lists, in order).
        for index, config in zip(layers, solution.assignment.values(), strict=True):
            assignment[problem.layer_data[index].name] = config
    return optima, problem.cost(assignment), assignment


def block_gaps(least: list[float], groups: list[range], optima: list[float],
               upper: float) -> list[float]:
    """Each layer's gap, the module docstring's bound on its excess in an optimal strategy
    when a strategy costing `upper` is known, with `MARGIN` of slack; `least` holds each
    layer's least cost and `optima` each group's optimum. With `upper` the sum of the
    optima, each layer's group's own gap (its optimum less its layers' least costs).

        >>> gaps = block_gaps([1.0, 2.0, 1.0, 2.0], [range(0, 2), range(2, 4)], [3.5, 3.5], 7.25)
        >>> [round(gap, 6) for gap in gaps]      # 7.25 - 3.5 - (1 + 2), and a margin
        [0.75, 0.75, 0.75, 0.75]
    """
    total = math.fsum(optima)
    slack = MARGIN * (abs(upper) + math.fsum(abs(cost) for cost in optima)
                      + math.fsum(abs(cost) for cost in least))
    gaps = [0.0] * len(least)
    for layers, optimum in zip(groups, optima, strict=True):
        gap = upper - (total - optimum) - math.fsum(least[i] for i in layers)
        for index in layers:
            gaps[index] = gap + slack
    return gaps
