"""pase's cost of a layer under every configuration at once, as numpy vectors.

A layer of a large network has a hundred configurations and a network a hundred kinds of
layer, so the DP's vertex vectors are built here, a few numpy operations per layer; the
cost of one configuration (`layer_cost`) is the vector of one. Every charge is the same
float operation in the same order as a per-configuration loop would make, applied to a
vector: the divisions of integers, which Python rounds once, are done in Python per
distinct divisor (there are few: divisors of the device count), and a collective over a
group of one device adds 0.0, which changes no sum. tests/passes/strategy/test_layer_costs.py
checks every entry against such a loop (its `reference_layer_cost`, over
`cost.Collectives`). docs/cost-model.md gives the formulas.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> costs = layer_costs(mlp.layers[0], [{"b": 4}, {"b": 2, "h": 2}], preset("v100-nvlink"))
    >>> costs[1] == layer_cost(mlp.layers[0], {"b": 2, "h": 2}, preset("v100-nvlink"))
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from math import prod

import numpy as np

from pase.passes.strategy.cost import Config, LayerCost
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.vertices import Layer

# At most this many (configuration, device) entries at once when finding which
# collective groups span nodes.
_SPAN_ENTRIES = 1 << 18


@dataclass(frozen=True)
class LayerCosts:
    """`LayerCost`'s fields, each a float64 vector over configurations; `costs[i]` is
    configuration i's `LayerCost`."""

    compute: np.ndarray
    communication: np.ndarray
    words: np.ndarray
    forward_compute: np.ndarray
    forward_communication: np.ndarray
    param_communication: np.ndarray
    param_words: np.ndarray

    def __getitem__(self, index: int) -> LayerCost:
        return LayerCost(*(float(getattr(self, part.name)[index]) for part in fields(self)))

    @property
    def forward(self) -> np.ndarray:
        """`LayerCost.forward` of every configuration."""
        return self.forward_compute + self.forward_communication

    @property
    def backward(self) -> np.ndarray:
        """`LayerCost.backward` of every configuration."""
        return (self.compute - self.forward_compute + self.communication
                - self.forward_communication - self.param_communication)

    @property
    def total(self) -> np.ndarray:
        """The DP's vertex vector: compute plus collectives."""
        return self.compute + self.communication


def factor_matrix(names: Sequence[str], configs: Sequence[Config]) -> np.ndarray:
    """int64 (configs, dims): each configuration's factor of each of `names` (1 where it
    does not split it). Raises ValueError for a configuration that splits a dim not in
    `names`."""
    column = {name: j for j, name in enumerate(names)}
    factors = np.ones((len(configs), len(names)), dtype=np.int64)
    for i, config in enumerate(configs):
        for name, factor in config.items():
            if name not in column:
                raise ValueError(f"configuration {config} splits '{name}', which is not one "
                                 f"of the dims {', '.join(names)}")
            factors[i, column[name]] = factor
    return factors


def _exact(operation: Callable[[int], float], values: np.ndarray) -> np.ndarray:
    """`operation(v)` for each integer in `values`, evaluated in Python once per distinct
    value, as a float64 vector."""
    distinct = sorted({int(value) for value in values.tolist()})
    table = np.array([operation(value) for value in distinct], dtype=np.float64)
    return table[np.searchsorted(np.array(distinct, dtype=np.int64), values)]


class Vectors:
    """`cost.Collectives` over all configurations: factors, groups, and the sums each
    charge adds to (seconds and words, in total and per phase)."""

    def __init__(self, layer: Layer, factors: np.ndarray, machine: Machine):
        self.layer = layer
        self.names = layer.space.names
        self.factors = factors
        self.machine = machine
        count = len(factors)
        self.words = np.zeros(count)
        self.seconds = np.zeros(count)
        self.phase = "forward"
        self.phase_words = {phase: np.zeros(count) for phase in ("forward", "backward", "param")}
        self.phase_seconds = {phase: np.zeros(count)
                              for phase in ("forward", "backward", "param")}
        self._bandwidths: dict[tuple[bool, ...], np.ndarray] = {}

    def factor(self, dims: Sequence[str]) -> np.ndarray:
        """`Collectives.factor`: the product of the factors of `dims`, each as often as
        it appears."""
        product = np.ones(len(self.factors), dtype=np.int64)
        for dim in dims:
            if dim in self.names:
                product = product * self.factors[:, self.names.index(dim)]
        return product

    def _grouped(self, dims: Sequence[str]) -> tuple[bool, ...]:
        return tuple(name in dims for name in self.names)

    def group(self, dims: Sequence[str]) -> np.ndarray:
        """`Collectives.group`: the product of the factors of the iteration dims in `dims`."""
        return self.factor([name for name, grouped in zip(self.names, self._grouped(dims),
                                                          strict=True) if grouped])

    def bandwidth(self, dims: Sequence[str]) -> np.ndarray:
        """Each configuration's bandwidth for a collective among the devices that differ
        only along `dims`: `Collectives._spans`, vectorised."""
        grouped = self._grouped(dims)
        if grouped not in self._bandwidths and self.machine.hierarchical:
            self._bandwidths[grouped] = hierarchical_bandwidths(self.factors, grouped,
                                                                self.machine)
        if grouped not in self._bandwidths:
            spans = _spans_nodes_of(self.factors, grouped, self.machine.devices_per_node)
            self._bandwidths[grouped] = np.where(spans, self.machine.inter_node_bandwidth,
                                                 self.machine.intra_node_bandwidth)
        return self._bandwidths[grouped]

    def all_reduce(self, words: np.ndarray, dims: Sequence[str], element_bytes: int,
                   count: int = 1) -> None:
        share = _exact(lambda group: count * 2 * (group - 1) / group if group > 1 else 0.0,
                       self.group(dims))
        self.charge(share * words, dims, element_bytes)

    def all_gather(self, total_words: np.ndarray, dims: Sequence[str], element_bytes: int,
                   count: int = 1) -> None:
        share = _exact(lambda group: count * (group - 1) / group if group > 1 else 0.0,
                       self.group(dims))
        self.charge(share * total_words, dims, element_bytes)

    def statistics(self, backward: bool) -> None:
        """`Collectives.statistics`, vectorised."""
        statistics = self.layer.space.statistics
        if statistics is None:
            return
        x = self.layer.operands[0]
        whole_rows = x.elements / prod(s for d, s in zip(x.dims, x.sizes, strict=True)
                                       if d not in statistics.rows)
        rows = _exact(lambda factor: whole_rows / factor,
                      self.factor([d for d in x.dims
                                   if d is not None and d in statistics.rows]))
        for collective in statistics.collectives:
            if collective.backward != backward:
                continue
            words = rows * collective.words_per_row if collective.per_row \
                else np.full_like(rows, collective.words_per_row)
            among = statistics.over if collective.among is None else collective.among
            if collective.kind == "all_reduce":
                self.all_reduce(words, among, x.element_bytes, collective.count)
            else:
                self.all_gather(words, among, x.element_bytes, collective.count)

    def charge(self, words: np.ndarray, dims: Sequence[str], element_bytes: int) -> None:
        """`Collectives.charge`; where the group is one device, `words` is 0.0."""
        seconds = words * element_bytes / self.bandwidth(dims)
        self.words += words
        self.seconds += seconds
        self.phase_words[self.phase] += words
        self.phase_seconds[self.phase] += seconds


def hierarchical_bandwidths(factors: np.ndarray, grouped: tuple[bool, ...],
                            machine: Machine) -> np.ndarray:
    """`cost.hierarchical_bandwidth` of each row of `factors` (a row-major device grid;
    axes of factor 1 add nothing to it), the same floats, in numpy: device 0's group is
    the devices whose coordinates along the axes not `grouped` are 0, so the members on
    its node are the devices e < devices per node (and < the grid's size) with those
    coordinates 0; the formula's float operations are the same, in the same order.

    >>> from pase.passes.strategy.cost import hierarchical_bandwidth
    >>> from pase.passes.strategy.machines import preset
    >>> grid = np.array([[4, 8], [32, 1]])       # 32 devices; the groups along axis 0
    >>> dgx = preset("a100-80gb-dgx")
    >>> (hierarchical_bandwidths(grid, (True, False), dgx).tolist()
    ...  == [hierarchical_bandwidth((4, 8), (True, False), dgx),
    ...      hierarchical_bandwidth((32,), (True,), dgx)])
    True
    """
    per_node = machine.devices_per_node
    strides = np.ones_like(factors)
    for j in range(factors.shape[1] - 2, -1, -1):
        strides[:, j] = strides[:, j + 1] * factors[:, j + 1]
    group = np.ones(len(factors), dtype=np.int64)
    device = np.arange(per_node, dtype=np.int64)[None, :]
    member = device < factors.prod(axis=1)[:, None]
    for axis, is_grouped in enumerate(grouped):
        if is_grouped:
            group = group * factors[:, axis]
        else:
            member &= device // strides[:, axis:axis + 1] % factors[:, axis:axis + 1] == 0
    local = member.sum(axis=1)
    bandwidth = np.full(len(factors), machine.intra_node_bandwidth)
    spread = (group > local) & (group >= 2)
    size, near = group[spread].astype(np.float64), local[spread].astype(np.float64)
    nodes = size / near
    flat = (size - 1) / size
    within = (near - 1) / near / flat
    across = (nodes - 1) / nodes / near / flat
    bandwidth[spread] = 1.0 / (within / machine.intra_node_bandwidth
                               + across / machine.inter_node_bandwidth)
    return bandwidth


_SPANS: dict[tuple, np.ndarray] = {}
"""`_spans_nodes_of`'s results: layers of one kind, at any micro-batch size or in any stage
sub-problem, share a factor grid (at most `_SPANS_KEPT` kept, then cleared)."""
_SPANS_KEPT = 4096


def _spans_nodes_of(factors: np.ndarray, grouped: tuple[bool, ...],
                    devices_per_node: int) -> np.ndarray:
    """`_spans_nodes`, computed once per factor grid, grouping and node size (a pure
    function of them; the result is read-only).

    >>> grid = np.array([[2, 8], [1, 16]])  # two 16-device grids, 8 devices a node
    >>> _spans_nodes_of(grid, (False, True), 8).tolist()
    [False, True]
    >>> _spans_nodes_of(grid, (False, True), 8) is _spans_nodes_of(grid, (False, True), 8)
    True
    """
    key = (factors.shape, factors.dtype.str, factors.tobytes(), grouped, devices_per_node)
    spans = _SPANS.get(key)
    if spans is None:
        if len(_SPANS) >= _SPANS_KEPT:
            _SPANS.clear()
        spans = _spans_nodes(factors, grouped, devices_per_node)
        spans.flags.writeable = False
        _SPANS[key] = spans
    return spans


def _spans_nodes(factors: np.ndarray, grouped: tuple[bool, ...],
                 devices_per_node: int) -> np.ndarray:
    """For each row of `factors` (a row-major device grid), `cost.group_spans_nodes`:
    whether some group of devices that differ only along the `grouped` axes has members
    on two nodes.

    A group holds the device whose grouped coordinates are all 0 (subtract them from a
    device's number), so it spans nodes if and only if some member lies on another
    node than that one.
    """
    count = factors.prod(axis=1)
    spans = np.zeros(len(factors), dtype=bool)
    rows = np.flatnonzero(count > devices_per_node)
    if rows.size == 0 or not any(grouped):
        return spans
    strides = np.ones_like(factors)
    for j in range(factors.shape[1] - 2, -1, -1):
        strides[:, j] = strides[:, j + 1] * factors[:, j + 1]
    width = int(count[rows].max())
    step = max(1, _SPAN_ENTRIES // width)
    device = np.arange(width, dtype=np.int64)[None, :]
    for start in range(0, rows.size, step):
        chunk = rows[start:start + step]
        representative = device.copy()
        for axis in [axis for axis, is_grouped in enumerate(grouped) if is_grouped]:
            stride, factor = strides[chunk, axis:axis + 1], factors[chunk, axis:axis + 1]
            representative = representative - device // stride % factor * stride
        differs = device // devices_per_node != representative // devices_per_node
        spans[chunk] = (differs & (device < count[chunk, None])).any(axis=1)
    return spans


def layer_costs(layer: Layer, configs: Sequence[Config], machine: Machine) -> LayerCosts:
    """`layer_cost(layer, config, machine)` for every config of `configs`, as vectors."""
    space = layer.space
    factors = factor_matrix(space.names, configs)
    devices_used = factors.prod(axis=1)
    flops_per_point = space.flops_forward + (space.flops_backward if layer.backward else 0.0)
    flops = _exact(lambda used: flops_per_point * space.points / used, devices_used)
    comm = Vectors(layer, factors, machine)
    result = layer.result
    backward = any(layer.grads)

    def local_elements(use_dims: Sequence[str | None], elements: int) -> np.ndarray:
        return _exact(lambda factor: elements / factor,
                      comm.factor([d for d in use_dims if d is not None]))

    comm.statistics(backward=False)
    if space.partial:
        comm.all_reduce(local_elements(result.dims, result.elements), space.partial,
                        result.element_bytes)
    comm.phase = "backward"
    if backward:
        comm.statistics(backward=True)

    params = layer.params or (False,) * len(layer.operands)
    for index, (use, grad, param) in enumerate(zip(layer.operands, layer.grads, params,
                                                    strict=True)):
        if not grad or index in space.kernel_reduced_grads:
            continue
        missing = [d.name for d in space.dims if d.name not in use.dims]
        comm.phase = "param" if param else "backward"
        comm.all_reduce(local_elements(use.dims, use.elements), missing, use.element_bytes)

    forward_flops = _exact(lambda used: space.flops_forward * space.points / used,
                           devices_used)
    return LayerCosts(flops / machine.flops, comm.seconds, comm.words,
                      forward_flops / machine.flops, comm.phase_seconds["forward"],
                      comm.phase_seconds["param"], comm.phase_words["param"])


def layer_cost(layer: Layer, config: Config, machine: Machine) -> LayerCost:
    """pase's compute and intra-layer collective cost of one layer under one
    configuration: `layer_costs` of that one configuration.

    The collectives come from the layer's iteration space: the kernel's forward
    statistics, the result's partial sums, the kernel's backward statistics, then the
    operand gradients' partial sums (in that order, which fixes the float sums).
    """
    return layer_costs(layer, [config], machine)[0]
