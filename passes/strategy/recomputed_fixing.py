"""The per-configuration bounds that fix the children of the recomputed branch and bound
(`recomputed._fixed`), each made once per row and set of configurations.

A node that branches once a strategy that fits is known drops from its children the
configurations no strategy of it that fits and beats the best takes: reduced-cost
fixing (`capped.ReducedCosts`, a min-sum diffusion of the graph priced at the node's
multiplier) on the node's one row. The diffusion is the fixing's whole cost, some
twelve sweeps over every edge whatever the tables' size (29 ms of each 36-layer node
of `benchmarks/capped.py --training`'s small-rc-auto, a quarter of its search).

The bounds of a node hold on each node within it under the same row (`Fixings`): a
strategy of the inner node that fits meets the row with the outer node's
configurations masked (it takes none of the others), and the reduced-cost bound on
every strategy that meets that row and takes configuration a of layer v is the outer
node's `per_config[v][a]`, whatever the multiplier it was made at. So an inner node
takes them as they are, with the best strategy's cost of its own time (lower, so that
it drops at least as much), instead of sweeping again; a node of another row, or not
within one made before, makes its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pase.passes.strategy.capped import MARGIN, ReducedCosts
from pase.passes.strategy.costgraph import CostGraph

Row = tuple[tuple[float, ...], float]
"""A node's row as a key: its segments' weights (`recomputed._row`) and its room."""


class Fixings:
    """Each row's per-configuration bounds, with the configurations of the node they
    were made on (module docstring); `made` counts the diffusions."""

    def __init__(self, graph: CostGraph):
        self.graph = graph
        self.kept: dict[Row, list[tuple[list[np.ndarray], list[np.ndarray], float]]] = {}
        self.made = 0

    def bounds(self, allowed: list[np.ndarray], vectors: list[np.ndarray], room: float,
               rate: float, row: Row) -> tuple[list[np.ndarray], float]:
        """Lower bounds on the cost of every strategy of the configurations `allowed`
        that meets the row (`vectors`, each layer's, under `room`; the configurations
        not allowed masked above it) with x_v = a, per layer v and configuration a, and
        the margin they are trusted to (`capped.MARGIN`): a node's within which these
        lie, made under the same `row`, or made now at the multiplier `rate`."""
        for superset, per_config, margin in self.kept.get(row, []):
            if within(allowed, superset):
                return per_config, margin
        reduced = ReducedCosts(self.graph, vectors, room, rate)
        self.made += 1
        tables = [*self.graph.vertex_costs, *self.graph.edge_costs.values()]
        margin = MARGIN * math.fsum(float(np.abs(t).max()) for t in tables) + \
            MARGIN * room * rate
        self.kept.setdefault(row, []).append((allowed, reduced.per_config, margin))
        return reduced.per_config, margin


def within(allowed: list[np.ndarray], superset: list[np.ndarray]) -> bool:
    """Whether every configuration `allowed` is in `superset` too."""
    return all(ok is every or not (ok & ~every).any()
               for ok, every in zip(allowed, superset, strict=True))


def within_choice(allowed: list[np.ndarray], choice: Sequence[int]) -> bool:
    """Whether the strategy `choice` takes only configurations `allowed`."""
    return all(bool(ok[index]) for ok, index in zip(allowed, choice, strict=True))
