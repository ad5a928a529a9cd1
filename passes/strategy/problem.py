"""The search problem of one graph, and its exact solution.

This is the stable Python API (DESIGN.md):

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import build_problem, solve
    >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
    >>> problem.layers
    ['h', 'a', 'z', 'l']
    >>> solution = solve(problem)                      # method="dp", order="genseq"
    >>> abs(problem.cost(solution.assignment) - solution.cost) < 1e-12 * solution.cost
    True

`Problem` holds plain data only (layers, edges, configurations, a machine, a cost model),
built by `build_problem` (`from_ir.py` reads the IR) or `Problem.from_layers`. It builds the
DP's cost tables on demand and evaluates any assignment, even outside the enumerated space
(the data-parallel baseline); `subproblem` restricts it to some layers on fewer devices.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pase.core.placement import check_devices
from pase.core.space import IterationSpace
from pase.passes.strategy.budget import (
    MemoryBudget,
    SearchMemoryError,
    as_budget,
    format_bytes,
)
from pase.passes.strategy.configs import check_pinned, count_configs, data_parallel
from pase.passes.strategy.cost import (
    JIT_REDISTRIBUTION_STEPS,
    Config,
    EdgeEnd,
    LayerCost,
    edge_working_bytes,
)
from pase.passes.strategy.cost_models import PASE_COST, CostModel, cost_model
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.layer_costs import LayerCosts
from pase.passes.strategy.machines import Machine, preset
from pase.passes.strategy.priced import PricedTables
from pase.passes.strategy.prune import rows_bytes
from pase.passes.strategy.tables import (
    EdgeEnds,
    SharedTables,
    collector_paused,
    edge_kind_key,
    layer_kind_key,
)
from pase.passes.strategy.training_cost import choices_key, copy_config, with_dims
from pase.passes.strategy.vertices import Edge, Layer, edges_among

Assignment = dict[str, Config]

CONFIG_BYTES = 200
"""What one configuration holds besides its dims, measured under tracemalloc: its dict
in `config_lists`, its key tuple in the table cache and its cost in the vertex vector."""
CONFIG_DIM_BYTES = 100
"""What each split dim adds to a configuration (a dict entry and a key pair)."""


@dataclass(frozen=True)
class Breakdown:
    """A strategy's cost in seconds and its parts; `per_layer` charges each edge to its
    consumer."""

    total: float
    compute: float
    communication: float
    redistribution: float
    per_layer: dict[str, float]


@dataclass(frozen=True)
class Solution:
    """An optimal assignment, its cost, and what the search did."""

    assignment: Assignment
    cost: float
    stats: DPResult | None = None


@dataclass
class Problem:
    """One graph's configurations and cost model on `devices` devices.

    Build it with `Problem.from_layers` (or `build_problem` from IR), which enumerates the
    configurations; `config_lists[i]` holds those of `layer_data[i]`.
    """

    graph: str
    devices: int
    machine: Machine
    layer_data: list[Layer]
    """The layers (vertices), in program order; `layers` holds their names."""
    edges: list[Edge]
    config_lists: list[list[Config]]
    batch_dim: str | None = None
    model: CostModel = PASE_COST
    """What the search charges (`cost_models.CostModel`), chosen when the problem is built."""
    pins: dict[str, Config] = field(default_factory=dict)
    """The layers pinned to one configuration (their only entry in `config_lists`)."""
    min_shard: int = 4
    compiled_redistribution: bool = field(init=False, repr=False)
    """Whether the edge tables are large enough to pay for compiling the redistribution
    kernel (`jit/overlap.py`); either way the volumes are the same integers."""
    tables: SharedTables | None = field(default=None, repr=False)
    """Tables shared with other problems (`SharedTables`), with `_kind_numbers` their
    numbers of this problem's layers and edges."""
    _cost_graph: CostGraph | None = field(default=None, repr=False)
    _cost_graph_budget: MemoryBudget | None = field(default=None, repr=False)
    _kind_numbers: tuple[list[int], list[int]] | None = field(default=None, repr=False)
    _vertex_parts: list[tuple[np.ndarray, np.ndarray] | None] = field(default_factory=list,
                                                                      repr=False)
    """Per layer, the compute and collective vectors its vertex vector sums (None where
    the vector came from shared tables); with `_edge_tables`, per edge, the matrix the
    graph was given, for `breakdown`. Filled when the cost graph is built."""
    _edge_tables: list[np.ndarray] = field(default_factory=list, repr=False)
    _config_positions: list[dict[tuple, int]] | None = field(default=None, repr=False)
    _priced: PricedTables | None = field(default=None, repr=False)
    """Where a narrowed search's rounds keep the edge entries priced (`priced.py`): the
    problems of its rounds share it, and price only the entries it lacks."""

    def __post_init__(self) -> None:
        steps = sum(len(self.config_lists[e.producer]) * len(self.config_lists[e.consumer])
                    * (len(e.held.sizes) + 1) for e in self.edges) * self.devices
        self.compiled_redistribution = steps >= JIT_REDISTRIBUTION_STEPS

    @classmethod
    def from_layers(cls, layers: Sequence[Layer], edges: Sequence[Edge], devices: int,
                    machine: Machine | str, pins: Mapping[str, Mapping[str, int]] | None = None,
                    batch: str | None = None, min_shard: int = 4, compat: str = "",
                    graph: str = "graph", budget: MemoryBudget | None = None,
                    tables: SharedTables | None = None,
                    kinds: tuple[list[int], list[int]] | None = None,
                    model: CostModel | None = None) -> Problem:
        """The problem of plain layers and edges (edges index `layers`) on `devices` devices
        of `machine` (a `Machine` or a preset's name; `pase.formats.machine_toml` reads files).

        A layer named in `pins` keeps that single configuration (factors of 1 dropped); the
        others get PaSE's configuration space (`enumerate_configs` with `min_shard`) plus
        the data-parallel configuration over `batch`: the space and the costs are the cost
        model's (`model`, or the one `compat` names: `cost_models.cost_model`; with
        `compat="pase"` the prototype's edges, configuration space and costs). `graph`
        names the problem in messages.
        Raises ValueError for a bad device count, compat mode or pinned layer name, and
        `PinError` for a pin that does not fit its layer. With `budget`, each layer's
        configurations are counted and charged before they are listed, so a space too
        large to list raises `SearchMemoryError` at once. With `tables` (no pins; the
        tables' machine, batch, min-shard and compat) and `kinds` (its `layer_kind` of each
        layer and `edge_kind` of each edge), the configuration lists and cost tables come
        from, and go to, the shared tables.

            >>> from pase.frontend import parse_file
            >>> from pase.passes.strategy.from_ir import read_graph
            >>> from pase.passes.strategy.machines import PRESETS
            >>> mlp = read_graph(parse_file("models/mlp.dnn"))
            >>> problem = Problem.from_layers(mlp.layers, mlp.edges, 8, PRESETS["pase-default"],
            ...                               pins={"h": {"b": 4}}, batch=mlp.batch)
            >>> problem.configs("h"), len(problem.configs("a")) > 1
            ([{'b': 4}], True)
        """
        check_devices(devices)
        model = model if model is not None else cost_model(compat)
        edges = model.graph_edges(edges)
        names = {layer.name for layer in layers}
        for name in pins or {}:
            if name not in names:
                raise ValueError(f"no layer '{name}' in graph @{graph}")
        fixed: dict[str, Config] = {}
        config_lists: list[list[Config]] = []
        # Layers of repeated blocks have equal iteration spaces: they share one list.
        listed: dict[tuple[IterationSpace, bool], list[Config]] = {}
        with collector_paused():
            for layer in layers:
                pin = (pins or {}).get(layer.name)
                if pin is not None:
                    config = with_dims(pin, {d: f for d, f in pin.items() if f != 1})
                    check_pinned(layer, config, devices)
                    fixed[layer.name] = config
                    config_lists.append(model.pinned(layer, config))
                    continue
                shared = (kinds[0][len(config_lists)], devices) if kinds else None
                if tables is not None and shared in tables.configs:
                    config_lists.append(tables.configs[shared])
                    continue
                if (layer.space, layer.checkpoint) in listed:
                    config_lists.append(listed[layer.space, layer.checkpoint])
                    continue
                if budget is not None:
                    _charge_configs(budget, layer, devices, min_shard, graph)
                configs = model.configs(layer, devices, min_shard, batch)
                listed[layer.space, layer.checkpoint] = configs
                if tables is not None and shared is not None:
                    tables.configs[shared] = configs
                config_lists.append(configs)
        resolved = machine if isinstance(machine, Machine) else preset(machine)
        if tables is not None and (kinds is None or pins):
            raise ValueError("shared tables need the kinds of the layers and edges, and no "
                             "pins")
        return cls(graph, devices, resolved, list(layers), list(edges), config_lists, batch,
                   model, fixed, min_shard, tables=tables, _kind_numbers=kinds)

    def subproblem(self, layers: Collection[str], devices: int) -> Problem:
        """This problem restricted to `layers` (names; in practice a contiguous range in
        program order, as a pipeline stage) on `devices` devices (for example P/S).

        It keeps, in this problem's order: the named layers; the edges between two of
        them (renumbered); their pins (checked again against `devices`); the machine,
        batch dim, min-shard and cost model, and the graph's name. It drops the edges
        that cross the boundary (one end outside `layers`), whose transfers a pipeline
        model charges as send/recv, and enumerates the configurations afresh for
        `devices`. Raises ValueError for a name that is not a layer.

            >>> from pase.frontend import parse_file
            >>> from pase.passes.strategy import build_problem
            >>> problem = build_problem(parse_file("models/mlp.dnn"), devices=8)
            >>> stage = problem.subproblem(["h", "a"], devices=4)
            >>> stage.layers, len(stage.edges), stage.devices
            (['h', 'a'], 1, 4)
        """
        wanted = set(layers)
        unknown = sorted(wanted - set(self.layers))
        if unknown:
            raise ValueError(f"no layer {', '.join(repr(name) for name in unknown)} in graph "
                             f"@{self.graph}")
        kept = [i for i, layer in enumerate(self.layer_data) if layer.name in wanted]
        edges = [edge for _, edge in edges_among(self.edges, kept)]
        return Problem.from_layers(
            [self.layer_data[i] for i in kept], edges, devices, self.machine,
            pins={name: pin for name, pin in self.pins.items() if name in wanted},
            batch=self.batch_dim, min_shard=self.min_shard, model=self.model,
            graph=self.graph)

    @property
    def compat(self) -> str:
        """The `compat` mode of the cost model ("" for pase's own)."""
        return self.model.name

    @property
    def layers(self) -> list[str]:
        """The layer (vertex) names, in program order."""
        return [layer.name for layer in self.layer_data]

    def index(self, name: str) -> int:
        for i, layer in enumerate(self.layer_data):
            if layer.name == name:
                return i
        raise KeyError(f"no layer '{name}' in graph @{self.graph}")

    def configs(self, name: str) -> list[Config]:
        """The configurations the search considers for a layer, `{dim: factor}`."""
        return [dict(c) for c in self.config_lists[self.index(name)]]

    def cost_graph(self, memory_budget: int | MemoryBudget | None = None) -> CostGraph:
        """The DP's input: vertex cost vectors and edge cost matrices (built once).

        Networks repeat blocks, so layers and edges that differ only in their names share
        one computation. With `memory_budget` (bytes or a `MemoryBudget`), raises
        `SearchMemoryError` before building tables that would not fit in it, and charges
        the tables it keeps (those built earlier, for another budget, are charged too).
        """
        budget = None if memory_budget is None else as_budget(memory_budget)
        if self._cost_graph is None:
            with collector_paused():
                self._cost_graph = self._build_cost_graph(budget)
            self._cost_graph_budget = budget
        elif budget is not None and budget is not self._cost_graph_budget:
            budget.count(sum(self._cost_graph.buffers().values()))
            self._cost_graph_budget = budget
        return self._cost_graph

    def _build_cost_graph(self, budget: MemoryBudget | None) -> CostGraph:
        layer_kinds, edge_kinds = self._kinds()
        vertex_keys: list[tuple[int, ...]]
        edge_keys: list[tuple[int, ...]]
        if self.tables is not None:
            # Shared numbers fix the configuration lists too (one per kind and devices).
            vertex_keys = [(kind, self.devices) for kind in layer_kinds]
            edge_keys = [(kind, self.devices) for kind in edge_kinds]
        else:
            configs_key = _list_numbers(self.config_lists)
            vertex_keys = list(zip(layer_kinds, configs_key, strict=True))
            edge_keys = [(kind, configs_key[e.producer], configs_key[e.consumer])
                         for kind, e in zip(edge_kinds, self.edges, strict=True)]
        missing_vertices = [key not in self.tables.vertex for key in vertex_keys] \
            if self.tables is not None else [True] * len(vertex_keys)
        missing_edges = [key not in self.tables.edge for key in edge_keys] \
            if self.tables is not None else [True] * len(edge_keys)
        if budget is not None:
            self._check_table_memory(vertex_keys, edge_keys, budget, missing_vertices,
                                     missing_edges)
        vertex_cache: dict[tuple[int, ...], np.ndarray] = {}
        parts_cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        vertex = []
        self._vertex_parts = []
        for i, (key, configs) in enumerate(zip(vertex_keys, self.config_lists, strict=True)):
            table = self.tables.vertex.get(key) if self.tables else None
            if table is None and key not in vertex_cache:
                costs = self._layer_costs(self.layer_data[i], configs)
                parts_cache[key] = (costs.compute, costs.communication)
                vertex_cache[key] = costs.total
                _count(budget, 3 * vertex_cache[key].nbytes)
                if self.tables is not None:
                    self.tables.store(self.tables.vertex, key, vertex_cache[key])
            vertex.append(table if table is not None else vertex_cache[key])
            self._vertex_parts.append(parts_cache.get(key) if table is None else None)
        graph = CostGraph(self.layers, vertex)
        edge_cache: dict[tuple[int, ...], np.ndarray] = {}
        # The tables shared tables hold now (storing new ones may clear them), and the
        # edge that builds each of the others.
        held_tables: dict[tuple[int, ...], np.ndarray] = {}
        built: dict[tuple[int, ...], int] = {}
        for number, edge_key in enumerate(edge_keys):
            if self.tables is not None and edge_key in self.tables.edge:
                held_tables[edge_key] = self.tables.edge[edge_key]
            else:
                built.setdefault(edge_key, number)
        ends = EdgeEnds(self, [self.edges[number] for number in built.values()])
        self._edge_tables = []
        for number, (edge, edge_key) in enumerate(zip(self.edges, edge_keys, strict=True)):
            u, v = edge.producer, edge.consumer
            if built.get(edge_key) == number:
                edge_ends = ends.pair(edge) if self.model.shares_ends else None
                edge_cache[edge_key] = self._priced_edge(edge, edge_kinds[number], edge_ends)
                _count(budget, edge_cache[edge_key].nbytes)
                if self.tables is not None:
                    self.tables.store(self.tables.edge, edge_key, edge_cache[edge_key])
            table = edge_cache[edge_key] if edge_key in built else held_tables[edge_key]
            self._edge_tables.append(table)
            graph.add_edge(u, v, table)
        return graph

    def _kinds(self) -> tuple[list[int], list[int]]:
        """A number per layer and per edge, equal for layers (edges) that differ only in
        their names (and their ends' names): what their costs depend on, besides the
        configurations. Computed once."""
        if self._kind_numbers is None:
            layer_kinds = _numbers([layer_kind_key(layer) for layer in self.layer_data])
            edge_kinds = _numbers([edge_kind_key(e, layer_kinds[e.producer],
                                                  layer_kinds[e.consumer])
                                   for e in self.edges])
            self._kind_numbers = (layer_kinds, edge_kinds)
        return self._kind_numbers

    def _check_table_memory(self, vertex_keys: list[tuple], edge_keys: list[tuple],
                            budget: MemoryBudget, missing_vertices: list[bool],
                            missing_edges: list[bool]) -> None:
        """Raise `SearchMemoryError` if the cost tables (float64, one per distinct layer and
        edge, twice: pruning makes a smaller copy; a layer's compute and collective
        vectors besides, which `breakdown` reads) plus the largest edge's working arrays
        (`cost.edge_working_bytes`) and pruning's rows of the widest layer
        (`prune.rows_bytes`) would not fit in what is left of `budget`. Tables the shared
        tables hold already (`missing_*` false) are counted once, for pruning's copy."""
        sizes = [len(configs) for configs in self.config_lists]
        tables: dict[object, int] = {
            key: 8 * size * (1 + 3 * missing)
            for key, size, missing in zip(vertex_keys, sizes, missing_vertices, strict=True)}
        for edge, key, missing in zip(self.edges, edge_keys, missing_edges, strict=True):
            tables[key] = 8 * sizes[edge.producer] * sizes[edge.consumer] * (1 + missing)
        working = max((edge_working_bytes(e, sizes[e.producer], sizes[e.consumer],
                                          self.devices) for e in self.edges), default=0)
        widths = [1] * len(sizes)
        for edge in self.edges:
            widths[edge.producer] += sizes[edge.consumer]
            widths[edge.consumer] += sizes[edge.producer]
        rows = max((rows_bytes(size, width) for size, width in zip(sizes, widths, strict=True)),
                   default=0)
        needed = sum(tables.values()) + max(working, rows)
        if budget.used + needed <= budget.limit:
            return
        detail = ""
        if self.edges:
            largest = max(self.edges, key=lambda e: sizes[e.producer] * sizes[e.consumer])
            u, v = largest.producer, largest.consumer
            detail = (f" (the largest, edge {self.layer_data[u].name} -> "
                      f"{self.layer_data[v].name}, is {sizes[u]:,} x {sizes[v]:,} "
                      "configurations)")
        raise SearchMemoryError(
            f"the cost tables of @{self.graph} on {self.devices} devices would take "
            f"{format_bytes(needed)}{detail}, over the memory budget of "
            f"{format_bytes(budget.limit)}"
            + (f" with {format_bytes(budget.used)} in use" if budget.used else "")
            + "; use fewer devices or a larger min-shard, or raise memory-gib")

    def _layer_cost(self, layer: Layer, config: Config) -> LayerCost:
        """The cost model's cost of a layer under one configuration."""
        return self.model.layer_costs(layer, [config], self.machine)[0]

    def _layer_costs(self, layer: Layer, configs: list[Config]) -> LayerCosts:
        """The cost model's costs of a layer under every configuration, as vectors."""
        return self.model.layer_costs(layer, configs, self.machine)

    def _vertex(self, index: int, config: Config) -> float:
        cost = self._layer_cost(self.layer_data[index], config)
        return cost.compute + cost.communication

    def edge_table(self, index: int) -> np.ndarray:
        """Edge `index`'s matrix of seconds over its ends' configurations, as the cost
        graph (built first if it is not) was given it."""
        self.cost_graph()
        return self._edge_tables[index]

    def _priced_edge(self, edge: Edge, kind: int,
                     ends: tuple[EdgeEnd, EdgeEnd] | None) -> np.ndarray:
        """Edge `edge`'s table (of kind `kind`), the entries earlier rounds priced taken
        from `_priced` where it is set (`priced.py`: the same floats)."""
        producer, consumer = self.config_lists[edge.producer], self.config_lists[edge.consumer]
        if self._priced is None:
            return self._edge(edge, producer, consumer, ends)

        def price(rows: Sequence[Config], columns: Sequence[Config]) -> np.ndarray:
            if rows is producer and columns is consumer:
                return self._edge(edge, producer, consumer, ends)
            return self._edge(edge, list(rows), list(columns))

        return self._priced.table(kind, producer, consumer, price)

    def _edge(self, edge: Edge, producer_configs: list[Config],
              consumer_configs: list[Config],
              ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
        return self.model.edge_costs(edge, self.layer_data[edge.producer], producer_configs,
                                     self.layer_data[edge.consumer], consumer_configs,
                                     self.devices, self.machine,
                                     self.compiled_redistribution, ends)

    def _complete(self, assignment: Mapping[str, Mapping[str, int]]) -> list[Config]:
        configs = []
        for layer in self.layer_data:
            if layer.name not in assignment:
                raise KeyError(f"the assignment has no configuration for layer '{layer.name}'")
            given = assignment[layer.name]
            configs.append(with_dims(given, {d: f for d, f in given.items() if f != 1}))
        return configs

    def breakdown(self, assignment: Mapping[str, Mapping[str, int]]) -> Breakdown:
        """The cost of an assignment (every layer named) and its parts.

        Once the cost tables are built (`cost_graph`), a layer whose configuration is in
        its list reads its costs there, and so does an edge between two such layers: the
        same floats the search added up.
        """
        configs = self._complete(assignment)
        compute = communication = redistribution = 0.0
        per_layer = {}
        layer_kinds, edge_kinds = self._kinds()
        positions = self._positions(configs)
        # Repeated blocks with the same configurations cost the same: compute each once.
        costs_of: dict[tuple, LayerCost] = {}
        edge_seconds: dict[tuple, float] = {}
        for i, (layer, kind, config) in enumerate(zip(self.layer_data, layer_kinds, configs,
                                                      strict=True)):
            parts = self._vertex_parts[i] if self._vertex_parts else None
            if parts is not None and positions[i] is not None:
                layer_compute = float(parts[0][positions[i]])
                layer_communication = float(parts[1][positions[i]])
            else:
                key = (kind, tuple(config.items()), choices_key(config))
                if key not in costs_of:
                    costs_of[key] = self._layer_cost(layer, config)
                layer_compute = costs_of[key].compute
                layer_communication = costs_of[key].communication
            compute += layer_compute
            communication += layer_communication
            per_layer[layer.name] = layer_compute + layer_communication
        for number, (edge, kind) in enumerate(zip(self.edges, edge_kinds, strict=True)):
            producer, consumer = configs[edge.producer], configs[edge.consumer]
            row, column = positions[edge.producer], positions[edge.consumer]
            if self._edge_tables and row is not None and column is not None:
                seconds = float(self._edge_tables[number][row, column])
            else:
                ends = (kind, tuple(producer.items()), tuple(consumer.items()))
                if ends not in edge_seconds:
                    edge_seconds[ends] = float(self._edge(edge, [producer], [consumer])[0, 0])
                seconds = edge_seconds[ends]
            redistribution += seconds
            per_layer[self.layer_data[edge.consumer].name] += seconds
        return Breakdown(compute + communication + redistribution, compute, communication,
                         redistribution, per_layer)

    def _positions(self, configs: list[Config]) -> list[int | None]:
        """Each layer's configuration's index in its list, or None where it is not
        listed or the cost tables are not built yet."""
        if self._cost_graph is None:
            return [None] * len(configs)
        if self._config_positions is None:
            by_list: dict[int, dict[tuple, int]] = {}
            for configs_of in self.config_lists:
                if id(configs_of) not in by_list:
                    by_list[id(configs_of)] = {}
                    for index, config in enumerate(configs_of):
                        by_list[id(configs_of)].setdefault(_config_key(config), index)
            self._config_positions = [by_list[id(configs_of)]
                                      for configs_of in self.config_lists]
        return [positions.get(_config_key(config))
                for positions, config in zip(self._config_positions, configs, strict=True)]

    def cost(self, assignment: Mapping[str, Mapping[str, int]]) -> float:
        """Total cost in seconds of an assignment `{layer: {dim: factor}}`."""
        return self.breakdown(assignment).total

    def assignment(self, choice: Sequence[int]) -> Assignment:
        """The assignment of configuration indices `choice` (one per layer, in order)."""
        return {name: copy_config(self.config_lists[i][c])
                for i, (name, c) in enumerate(zip(self.layers, choice, strict=True))}

    def data_parallel(self) -> Assignment:
        """Every layer splits the batch dim as far as it divides (up to all devices),
        whatever the min-shard rule allows: PaSE's baseline."""
        return {layer.name: data_parallel(layer, self.batch_dim, self.devices)
                for layer in self.layer_data}


def _config_key(config: Config) -> tuple[object, ...]:
    """A configuration as a key, whatever the order of its dims and without factors of 1."""
    return (tuple(sorted((dim, factor) for dim, factor in config.items() if factor != 1))
            + choices_key(config))


def _numbers(items: Sequence[object]) -> list[int]:
    """A number per item, equal for equal items, counting up from 0 in order of first
    appearance.

        >>> _numbers(["a", "b", "a"])
        [0, 1, 0]
    """
    seen: dict[object, int] = {}
    return [seen.setdefault(item, len(seen)) for item in items]


def _list_numbers(config_lists: list[list[Config]]) -> list[int]:
    """A number per configuration list, equal for equal lists: a small key for the table
    cache. Repeated layers share one list (`from_layers`), which is read once."""
    by_list: dict[int, int] = {}
    by_contents: dict[tuple, int] = {}
    numbers = []
    for configs in config_lists:
        if id(configs) not in by_list:
            contents = tuple((tuple(config.items()), choices_key(config))
                             for config in configs)
            by_list[id(configs)] = by_contents.setdefault(contents, len(by_contents))
        numbers.append(by_list[id(configs)])
    return numbers


def _count(budget: MemoryBudget | None, nbytes: int) -> None:
    """Count a table `_check_table_memory` has made room for."""
    if budget is not None:
        budget.count(nbytes)


def _charge_configs(budget: MemoryBudget, layer: Layer, devices: int, min_shard: int,
                    graph: str) -> None:
    """Charge a layer's configuration list before it is enumerated (one more for the
    data-parallel configuration)."""
    count = count_configs(layer.space, devices, min_shard) + 1
    dims = len(layer.space.splittable)
    budget.charge(count * (CONFIG_BYTES + CONFIG_DIM_BYTES * dims),
                  f"the {count:,} configurations of layer '{layer.name}' of @{graph} on "
                  f"{devices:,} devices")
