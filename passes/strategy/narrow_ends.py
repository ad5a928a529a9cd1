"""A cheap strategy of the whole graph, near its optimum, to narrow the whole round by
(`narrow_blocks.py`): the repeated blocks take their own optimum, and the layers around
them (the head and the tail, each group found once) are solved exactly given that.

`narrow_blocks.block_gaps` narrows each layer of an optimal strategy to excesses within
its group's own gap plus U - sum_g lb_g, where U is the cost of any strategy of the whole
graph. The groups' optima put together (the stitched strategy) give one U; but the head
(a GPT's embeddings) alone prefers configurations whose layouts the first block does not
read cheaply, so that U pays for the mismatch twice over: in the head's own optimum,
which ignores the block, and in the joins between the two. Here the groups that occur
once (the head and the tail) are solved again, exactly, on the whole round's
configurations, and so are the blocks next to them (the first block may meet the
embeddings half way), with the layers of the blocks beyond that they meet pinned to
those blocks' optimal configurations; every other layer keeps the stitched strategy.
The result is a real strategy, priced on the whole problem (`Problem.cost`): any
strategy's cost bounds the optimum above, so the narrowing stays exact, whatever this
strategy is. On GPT-3 175B it
is the optimum's cost within 10^-3 s, or the optimum itself.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> ends_problem(problem, problem, [range(0, 4)], {}) is None   # no repeated group
    True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping

from pase.passes.strategy.cost import Config
from pase.passes.strategy.narrow_blocks import group_key, group_problem
from pase.passes.strategy.problem import Problem, Solution


def ends_problem(problem: Problem, narrowed: Problem, groups: list[range],
                 assignment: Mapping[str, Config]) -> Problem | None:
    """The problem of the layers of the groups that occur once and of the repeated
    groups they share an edge with (their configurations `narrowed`'s), with each other
    layer that shares an edge with them pinned to its configuration in `assignment`;
    None where every group repeats, none does, or that leaves no layer pinned."""
    keys = [group_key(problem, layers) for layers in groups]
    counts = Counter(keys)
    once = {index for layers, key in zip(groups, keys, strict=True) if counts[key] == 1
            for index in layers}
    if not once or len(once) == len(problem.layer_data):
        return None
    # The repeated groups next to them are free too (the first block may meet the
    # embeddings half way).
    group_of = {index: number for number, layers in enumerate(groups) for index in layers}
    free = set(once)
    for edge in problem.edges:
        for end, other in ((edge.producer, edge.consumer), (edge.consumer, edge.producer)):
            if end in once and other not in once:
                free.update(groups[group_of[other]])
    if len(free) == len(problem.layer_data):
        return None
    near = {end for edge in problem.edges for end in (edge.producer, edge.consumer)
            if (edge.producer in free) != (edge.consumer in free)} - free
    layers = sorted(free | near)
    lists = [[assignment[problem.layer_data[index].name]] if index in near
             else narrowed.config_lists[index] for index in layers]
    return group_problem(problem, layers, lists)


def completed_cost(problem: Problem, narrowed: Problem, groups: list[range],
                   assignment: Mapping[str, Config],
                   solve: Callable[[Problem], Solution]) -> float:
    """The cost on `problem` of `assignment` (every layer named) with its groups that
    occur once replaced by their exact optimum given the rest (`ends_problem`, solved by
    `solve`); inf where there is no such problem."""
    part = ends_problem(problem, narrowed, groups, assignment)
    if part is None:
        return math.inf
    completed = dict(assignment)
    # (Imported here: narrow.py imports this module.)
    from pase.passes.strategy.narrow import solve_narrowed

    completed.update(solve_narrowed(part, solve).assignment)
    return problem.cost(completed)
