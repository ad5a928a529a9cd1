"""What many problems share, and what one problem's build holds for a while.

`SharedTables` keeps configuration lists and cost tables across the stage sub-problems of
a pipeline search; `layer_kind_key` and `edge_kind_key` are what a layer's and an edge's
costs depend on besides their configurations; `EdgeEnds` holds each edge end's layouts
while a problem's edge tables are built; `collector_paused` turns the cyclic garbage
collector off meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.cost import Config, EdgeEnd
from pase.passes.strategy.cost_models import PASE_COST, CostModel
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.vertices import Edge, Layer, TensorUse

if TYPE_CHECKING:
    from pase.passes.strategy.problem import Problem


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while.

    Building the tables allocates some 10^5 small objects, none in reference cycles;
    meanwhile the collector would walk the whole heap (the parsed IR included) again
    and again, a fifth of AlexNet's search at P=64.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def layer_kind_key(layer: Layer) -> Layer:
    """What a layer's costs depend on besides its configuration: all but its name."""
    return replace(layer, name="")


def edge_kind_key(edge: Edge, producer_kind: int, consumer_kind: int) -> tuple:
    """What an edge's costs depend on besides its ends' configurations: its ends' kinds
    and all of it but their positions and the name of the value it carries."""
    return (producer_kind, consumer_kind, replace(edge, producer=0, consumer=0, carried=""))


@dataclass
class SharedTables:
    """Configuration lists and cost tables that many problems on one machine share: the
    stage sub-problems of a pipeline search (`pipeline.Partitioner`), whose layers and
    edges recur in many stage ranges.

    The caller numbers the layers and edges by what their costs depend on (`layer_kind`,
    `edge_kind`: equal for layers that differ only in their names), so a problem built
    with these tables (`Problem.from_layers(..., tables=...)`) finds a layer's list and
    vector, and an edge's matrix, by (number, devices) without hashing the layer again.
    The tables hold at most `limit` bytes (`nbytes`); past it they are cleared, so
    memory stays bounded (the values are the same either way). One `SharedTables` serves
    one machine, min-shard, batch dim and cost model.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> mlp = read_graph(parse_file("models/mlp.dnn"))
        >>> tables = SharedTables("v100-nvlink", mlp.batch)
        >>> [tables.layer_kind(layer) for layer in mlp.layers]
        [0, 1, 2, 3]
    """

    machine: Machine | str
    batch: str | None
    min_shard: int = 4
    model: CostModel = PASE_COST
    limit: int = 1 << 30
    nbytes: int = 0
    configs: dict[tuple[int, int], list[Config]] = field(default_factory=dict, repr=False)
    vertex: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False)
    edge: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False)
    _layer_kinds: dict[Layer, int] = field(default_factory=dict, repr=False)
    _edge_kinds: dict[tuple[int, int, Edge], int] = field(default_factory=dict, repr=False)

    def layer_kind(self, layer: Layer) -> int:
        """A number equal for layers that differ only in their names."""
        return self._layer_kinds.setdefault(layer_kind_key(layer), len(self._layer_kinds))

    def edge_kind(self, edge: Edge, producer_kind: int, consumer_kind: int) -> int:
        """A number equal for edges between layers of the same kinds that differ only in
        their ends' positions and the name of the value they carry."""
        return self._edge_kinds.setdefault(edge_kind_key(edge, producer_kind, consumer_kind),
                                           len(self._edge_kinds))

    def store(self, table: dict[tuple[int, ...], np.ndarray], key: tuple[int, ...],
              value: np.ndarray) -> None:
        """Keep `value` under `key` if it fits; clear every table first if it does not."""
        if self.nbytes + value.nbytes > self.limit:
            self.vertex.clear()
            self.edge.clear()
            self.nbytes = 0
        if value.nbytes <= self.limit:
            table[key] = value
            self.nbytes += value.nbytes


EndKey = tuple[int, tuple[str, ...], TensorUse]


class EdgeEnds:
    """The ends of the edges whose tables a problem builds (`cost.EdgeEnd`): each built
    once, for edges that share an end (a layer's result read by several consumers), and
    dropped after the last of those edges, so only the ends still to be read are held.

    An end is a configuration list (by id: the lists outlive the build), the layer's
    dims and the tensor use.
    """

    def __init__(self, problem: Problem, edges: Sequence[Edge]):
        self.problem = problem
        self.held: dict[EndKey, EdgeEnd] = {}
        self.readers: dict[EndKey, int] = {}
        for edge in edges:
            for key in self._keys(edge):
                self.readers[key] = self.readers.get(key, 0) + 1

    def _keys(self, edge: Edge) -> tuple[EndKey, EndKey]:
        lists, layers = self.problem.config_lists, self.problem.layer_data
        return ((id(lists[edge.producer]), layers[edge.producer].space.names, edge.held),
                (id(lists[edge.consumer]), layers[edge.consumer].space.names, edge.needed))

    def pair(self, edge: Edge) -> tuple[EdgeEnd, EdgeEnd]:
        """The held and the needed end of one of the edges."""
        (held_key, needed_key) = self._keys(edge)
        return (self._take(held_key, edge.producer, edge.held),
                self._take(needed_key, edge.consumer, edge.needed))

    def _take(self, key: EndKey, index: int, use: TensorUse) -> EdgeEnd:
        end = self.held.pop(key, None)
        if end is None:
            end = EdgeEnd.of(self.problem.layer_data[index], self.problem.config_lists[index],
                             use, self.problem.devices)
        self.readers[key] -= 1
        if self.readers[key]:
            self.held[key] = end
        return end
