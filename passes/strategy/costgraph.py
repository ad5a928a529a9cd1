"""The plain-data problem the search engine solves: costs on the vertices and edges of a graph.

A vertex is a layer with `K_v` configurations and a cost vector over them; an edge carries a
`(K_u, K_v)` matrix of redistribution costs between the configurations of its two layers. A
strategy picks one configuration index per vertex; its cost is PaSE's F(G, φ): the sum of the
chosen vertex costs and the chosen edge costs.

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 2.0]), np.array([0.0, 5.0])])
>>> graph.add_edge(1, 0, np.array([[0.0, 3.0], [4.0, 0.0]]))
>>> graph.total_cost([1, 0])
5.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class CostGraph:
    """Vertex cost vectors and edge cost matrices over configuration indices.

    `edge_costs` is keyed by `(u, v)` with `u < v`; its matrix has shape `(K_u, K_v)`.

    >>> graph = CostGraph(["x"], [np.array([3.0, 1.0])])
    >>> graph.total_cost([1])
    1.0
    """

    names: list[str]
    vertex_costs: list[np.ndarray]
    edge_costs: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.vertex_costs):
            raise ValueError(f"{len(self.names)} names but {len(self.vertex_costs)} vertex "
                             "cost vectors")
        self.vertex_costs = [np.asarray(cost, dtype=np.float64) for cost in self.vertex_costs]
        for name, cost in zip(self.names, self.vertex_costs, strict=True):
            if cost.ndim != 1 or cost.size == 0:
                raise ValueError(f"vertex '{name}' needs a non-empty cost vector, got shape "
                                 f"{cost.shape}")
        edges, self.edge_costs = self.edge_costs, {}
        for (u, v), matrix in edges.items():
            self.add_edge(u, v, matrix)

    @property
    def sizes(self) -> list[int]:
        """The number of configurations `K_v` of each vertex."""
        return [cost.size for cost in self.vertex_costs]

    def add_edge(self, u: int, v: int, matrix: np.ndarray) -> None:
        """Add `matrix[config of u, config of v]` to the edge between `u` and `v`.

        The key is normalized to `u < v` (transposing the matrix), and a second edge between
        the same vertices is summed into the first, since only their total matters. The
        graph keeps `matrix` itself (a read-only view), not a copy, so edges of repeated
        blocks can share one table.

        >>> graph = CostGraph(["a", "b"], [np.zeros(2), np.zeros(3)])
        >>> graph.add_edge(1, 0, np.ones((3, 2)))
        >>> graph.edge_costs[(0, 1)].shape
        (2, 3)
        """
        edge_cost = np.asarray(matrix, dtype=np.float64)
        if u == v:
            raise ValueError(f"edge from vertex '{self.names[u]}' to itself")
        if u > v:
            u, v, edge_cost = v, u, edge_cost.T
        expected = (self.vertex_costs[u].size, self.vertex_costs[v].size)
        if edge_cost.shape != expected:
            raise ValueError(f"edge '{self.names[u]}' -> '{self.names[v]}' has a cost matrix of "
                             f"shape {edge_cost.shape}, expected {expected}")
        if (u, v) in self.edge_costs:
            self.edge_costs[(u, v)] = self.edge_costs[(u, v)] + edge_cost
        else:
            view = edge_cost.view()
            view.flags.writeable = False
            self.edge_costs[(u, v)] = view

    def buffers(self) -> dict[int, int]:
        """The memory the graph's tables hold: bytes by buffer address, each shared table
        (repeated blocks, `add_edge`'s views) once."""
        tables = [*self.vertex_costs, *self.edge_costs.values()]
        return {table.__array_interface__["data"][0]: table.nbytes for table in tables}

    def neighbours(self) -> list[set[int]]:
        """The undirected adjacency: `neighbours()[v]` holds every vertex sharing an edge with v.

        >>> graph = CostGraph(["a", "b", "c"], [np.zeros(1)] * 3)
        >>> graph.add_edge(2, 0, np.zeros((1, 1)))
        >>> graph.neighbours()
        [{2}, set(), {0}]
        """
        adjacency: list[set[int]] = [set() for _ in self.names]
        for u, v in self.edge_costs:
            adjacency[u].add(v)
            adjacency[v].add(u)
        return adjacency

    def total_cost(self, choice: Sequence[int]) -> float:
        """The cost of a strategy: `choice[v]` is the configuration index of vertex v.

        >>> graph = CostGraph(["a", "b"], [np.array([1.0, 2.0]), np.array([10.0])])
        >>> graph.add_edge(0, 1, np.array([[0.5], [0.0]]))
        >>> graph.total_cost([0, 0])
        11.5
        """
        if len(choice) != len(self.names):
            raise ValueError(f"a strategy needs {len(self.names)} choices, got {len(choice)}")
        vertex_total = sum(float(cost[index])
                           for cost, index in zip(self.vertex_costs, choice, strict=True))
        edge_total = sum(float(edge_cost[choice[u], choice[v]])
                         for (u, v), edge_cost in self.edge_costs.items())
        return vertex_total + edge_total
