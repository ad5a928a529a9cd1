"""PaSE's cost model, in seconds, with exact communication volumes.

docs/cost-model.md gives every formula; in short, for a configuration (split factor
per iteration dim) on p devices:

- placement is canonical: the configuration's device grid (its split dims in
  iteration-space order) maps onto devices 0..q-1 in row-major order, q = product of
  the factors; devices q..p-1 idle for that layer;
- compute = (forward + backward FLOPs per point) × points / q ÷ FLOP/s;
- collectives = words each device moves in ring collectives ÷ bandwidth, ring
  all-reduce of W words over g devices moving 2(g−1)/g·W;
- redistribution on an edge = the words a device needs and does not hold (exact block
  overlaps under canonical placement), maximum over devices, forward and, where a
  gradient flows back, backward.

Every function takes a list of configurations and returns a vector or matrix over it,
so building the DP's tables is a few numpy operations per layer and per edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import prod

import numpy as np

from pase.core.placement import grid_axes
from pase.passes.strategy import dim_pricing
from pase.passes.strategy.dim_pricing import DimLayouts
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.placed_redistribution import placed_seconds
from pase.passes.strategy.vertices import Edge, Layer, TensorUse, config_grids

Config = dict[str, int]


@dataclass(frozen=True)
class LayerCost:
    """One layer's cost under one configuration: seconds, and words per device.

    The totals split for pipelines (pase-partition-stages): `forward_compute` and
    `forward_communication` are the forward pass's share of `compute` and
    `communication`; `param_communication` and `param_words` are the all-reduces of
    parameter gradients (operands that are `dnn.param` values, `Layer.params`), which a
    pipeline runs once per step rather than once per micro-batch. The backward pass's
    share is the rest.
    """

    compute: float
    communication: float
    words: float
    forward_compute: float = 0.0
    forward_communication: float = 0.0
    param_communication: float = 0.0
    param_words: float = 0.0

    @property
    def forward(self) -> float:
        """Seconds of the forward pass: its compute and collectives."""
        return self.forward_compute + self.forward_communication

    @property
    def backward(self) -> float:
        """Seconds of the backward pass but for the parameter-gradient all-reduces."""
        return (self.compute - self.forward_compute + self.communication
                - self.forward_communication - self.param_communication)


def device_coordinates(factors: Sequence[int], devices: int) -> np.ndarray:
    """Row-major grid coordinates of devices 0..q-1, shape (q, len(factors))."""
    count = prod(factors)
    if not factors:
        return np.zeros((min(count, devices), 0), dtype=np.int64)
    return np.stack(np.unravel_index(np.arange(count), tuple(factors)), axis=1)


def blocks(layer: Layer, config: Config, use: TensorUse, devices: int) -> np.ndarray:
    """Each device's block of a tensor (see `_blocks`); a read-only array shared by
    every layer, configuration and tensor with the same grid and dims."""
    axes = grid_axes(layer.space.names, config)
    position = {name: i for i, (name, _) in enumerate(axes)}
    return _blocks(tuple(f for _, f in axes),
                   tuple(position.get(d, -1) if d is not None else -1 for d in use.dims),
                   use.sizes, devices)


@lru_cache(maxsize=1 << 16)
def _blocks(factors: tuple[int, ...], dim_axes: tuple[int, ...], sizes: tuple[int, ...],
            devices: int) -> np.ndarray:
    """Each device's block of a tensor: int64 array (devices, rank + 1, 2) of [lo, hi).

    The last entry is a presence dim, [0, 1) on working devices and [0, 0) on idle
    ones, so that even a scalar's block is empty where a device holds nothing. Idle
    devices hold the empty block [0, 0) in every dim.
    """
    coords = device_coordinates(list(factors), devices)
    rank = len(sizes)
    result = np.zeros((devices, rank + 1, 2), dtype=np.int64)
    used = coords.shape[0]
    result[:used, rank, 1] = 1
    for k, (axis, size) in enumerate(zip(dim_axes, sizes, strict=True)):
        if axis >= 0:
            length = size // factors[axis]
            lo = coords[:, axis] * length
            result[:used, k, 0] = lo
            result[:used, k, 1] = lo + length
        else:
            result[:used, k, 1] = size
    result.flags.writeable = False
    return result


@lru_cache(maxsize=65536)
def group_spans_nodes(factors: tuple[int, ...], grouped: tuple[bool, ...],
                      devices_per_node: int) -> bool:
    """Whether, on the row-major grid `factors`, some group of devices that differ only
    along the `grouped` axes has members on two nodes."""
    count = prod(factors)
    if count <= devices_per_node:
        return False
    coords = device_coordinates(list(factors), count)
    keep = [i for i, g in enumerate(grouped) if not g]
    key = (np.ravel_multi_index(tuple(coords[:, i] for i in keep),
                                tuple(factors[i] for i in keep))
           if keep else np.zeros(count, dtype=np.int64))
    node = np.arange(count) // devices_per_node
    return bool(np.unique(key * count + node).size != np.unique(key).size)


@lru_cache(maxsize=65536)
def group_on_first_node(factors: tuple[int, ...], grouped: tuple[bool, ...],
                        devices_per_node: int) -> tuple[int, int]:
    """On the row-major grid `factors`, the size g of the groups of devices that differ
    only along the `grouped` axes, and how many members of device 0's group are on
    device 0's node."""
    strides = [prod(factors[i + 1:]) for i in range(len(factors))]
    members = [0]
    for axis, is_grouped in enumerate(grouped):
        if is_grouped:
            members = [m + c * strides[axis] for m in members for c in range(factors[axis])]
    return len(members), sum(1 for m in members if m < devices_per_node)


def hierarchical_bandwidth(factors: tuple[int, ...], grouped: tuple[bool, ...],
                           machine: Machine) -> float:
    """The bandwidth at which a ring collective among the devices that differ only along
    the `grouped` axes of the grid `factors` moves its flat ring's words on a machine
    whose collectives are hierarchical (`Machine.hierarchical`, docs/cost-model.md).

    A group of g devices, g_n of them per node on n = g / g_n nodes, reduces within each
    node over NVLink ((g_n - 1)/g_n of the words of a flat ring over g_n) and across the
    nodes over each device's own adapter, every device carrying 1/g_n of the data
    ((n - 1)/n of it): the flat ring's (g - 1)/g words take the time of those two.

        >>> from pase.passes.strategy.machines import preset
        >>> round(hierarchical_bandwidth((32,), (True,), preset("a100-80gb-dgx")) / 1e9, 1)
        145.3
    """
    group, local = group_on_first_node(factors, grouped, machine.devices_per_node)
    if group <= local or group < 2:
        return machine.intra_node_bandwidth
    nodes = group / local
    flat = (group - 1) / group
    within = (local - 1) / local / flat
    across = (nodes - 1) / nodes / local / flat
    return 1.0 / (within / machine.intra_node_bandwidth
                  + across / machine.inter_node_bandwidth)


class Collectives:
    """Accumulates the ring collectives of one layer under one configuration."""

    def __init__(self, layer: Layer, config: Config, machine: Machine):
        self.layer = layer
        self.config = config
        self.machine = machine
        self.axes = grid_axes(layer.space.names, config)
        self.words = 0.0
        self.seconds = 0.0
        self.phase = "forward"
        """Where `charge` books: "forward", "backward" or "param" (see `LayerCost`)."""
        self.phase_words = {"forward": 0.0, "backward": 0.0, "param": 0.0}
        self.phase_seconds = {"forward": 0.0, "backward": 0.0, "param": 0.0}

    def factor(self, dims: Sequence[str]) -> int:
        return prod(self.config.get(d, 1) for d in dims)

    def group(self, dims: Sequence[str]) -> int:
        """The size of the groups of devices that differ only along `dims`."""
        return prod(f for name, f in self.axes if name in dims)

    def _spans(self, dims: Sequence[str]) -> bool:
        return group_spans_nodes(tuple(f for _, f in self.axes),
                                 tuple(name in dims for name, _ in self.axes),
                                 self.machine.devices_per_node)

    def all_reduce(self, words: float, dims: Sequence[str], element_bytes: int,
                   count: int = 1) -> None:
        group = self.group(dims)
        if group > 1:
            moved = count * 2 * (group - 1) / group * words
            self.charge(moved, dims, element_bytes)

    def all_gather(self, total_words: float, dims: Sequence[str], element_bytes: int,
                   count: int = 1) -> None:
        group = self.group(dims)
        if group > 1:
            moved = count * (group - 1) / group * total_words
            self.charge(moved, dims, element_bytes)

    def statistics(self, backward: bool) -> None:
        """The collectives the layer's kernel runs itself, forward or backward ones, per
        row of the first operand's block (`Statistics.rows`)."""
        statistics = self.layer.space.statistics
        if statistics is None:
            return
        x = self.layer.operands[0]
        rows = x.elements / prod(s for d, s in zip(x.dims, x.sizes, strict=True)
                                 if d not in statistics.rows)
        rows /= self.factor([d for d in x.dims if d is not None and d in statistics.rows])
        for collective in statistics.collectives:
            if collective.backward != backward:
                continue
            words = rows * collective.words_per_row if collective.per_row \
                else float(collective.words_per_row)
            among = statistics.over if collective.among is None else collective.among
            if collective.kind == "all_reduce":
                self.all_reduce(words, among, x.element_bytes, collective.count)
            else:
                self.all_gather(words, among, x.element_bytes, collective.count)

    def charge(self, words: float, dims: Sequence[str], element_bytes: int) -> None:
        """`words` moved per device among the devices that differ only along `dims`."""
        if self.machine.hierarchical:
            bandwidth = hierarchical_bandwidth(
                tuple(f for _, f in self.axes), tuple(name in dims for name, _ in self.axes),
                self.machine)
        else:
            bandwidth = self.machine.bandwidth(self._spans(dims))
        seconds = words * element_bytes / bandwidth
        self.words += words
        self.seconds += seconds
        self.phase_words[self.phase] += words
        self.phase_seconds[self.phase] += seconds


def local_elements(use: TensorUse, config: Config) -> float:
    """Elements of one device's block of a tensor."""
    return use.elements / prod(config.get(d, 1) for d in use.dims if d is not None)


def _unique_blocks(layer: Layer, configs: Sequence[Config], use: TensorUse,
                   devices: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct block layouts of a tensor over `configs` (each as `blocks` gives it),
    and each config's index among them, built for all configs at once.

    Configs are told apart by a key that a layout determines and that determines it: the
    number of working devices q and, per tensor dim, whether every working device holds
    all of it, none of it (a split into blocks of length 0), or blocks of length l > 0
    from a split f > 1 with stride s (lo = (device // s) % f · l: l is a block's extent, s
    the first device whose block starts elsewhere, f the number of distinct starts, as
    s·f ≤ q). Only the first config of each key has its layout built.
    """
    names = layer.space.names
    factors, strides = config_grids(names, configs)
    working_count = factors.prod(axis=1)
    columns = [working_count]
    for dim, size in zip(use.dims, use.sizes, strict=True):
        if dim is None or dim not in names:
            continue                        # the same blocks under every config
        j = names.index(dim)
        length = size // factors[:, j]
        split = (factors[:, j] > 1) & (length > 0)
        columns.append(np.where(split, factors[:, j], 0))
        columns.append(np.where(split, strides[:, j], 0))
        columns.append(np.where(split, length, np.where(length > 0, -1, 0)))
    seen: dict[tuple[int, ...], int] = {}
    inverse = np.array([seen.setdefault(key, len(seen))
                        for key in map(tuple, np.stack(columns, axis=1).tolist())],
                       dtype=np.int64)
    first = np.zeros(len(seen), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(configs) - 1, -1, -1)
    factors, strides, working_count = factors[first], strides[first], working_count[first]
    device = np.arange(devices, dtype=np.int64)
    rank = len(use.sizes)
    # Built dim-major, so that each step writes one contiguous (layouts, devices) plane;
    # idle devices are zeroed at the end, all dims at once.
    planes = np.empty((rank + 1, 2, len(first), devices), dtype=np.int64)
    planes[rank, 0] = 0
    planes[rank, 1] = 1
    for k, (dim, size) in enumerate(zip(use.dims, use.sizes, strict=True)):
        if dim is None or dim not in names:
            planes[k, 0] = 0
            planes[k, 1] = size
            continue
        j = names.index(dim)
        length = (size // factors[:, j])[:, None]
        lo = planes[k, 0]
        np.floor_divide(device, strides[:, j:j + 1], out=lo)
        np.remainder(lo, factors[:, j:j + 1], out=lo)
        np.multiply(lo, length, out=lo)
        np.add(lo, length, out=planes[k, 1])
    planes *= device < working_count[:, None]
    return planes.transpose(2, 3, 0, 1), inverse


# A problem whose edges take at least this many (pair, device, dim) steps in all uses the
# compiled loop: below it, compiling (about 0.04 s) costs more than it saves.
JIT_REDISTRIBUTION_STEPS = 1 << 25


DIM_PRICING_DEVICES = 512
"""From this many devices `edge_costs` prices from the ends' per-dim layouts
(`dim_pricing`), whose cost barely grows with the devices; below it, from every device's
block (`redistribution_words`, `placed_seconds`), faster on few devices. The same floats
either way (`tests/passes/strategy/test_dim_pricing.py`)."""


def redistribution_words(held: np.ndarray, needed: np.ndarray,
                         compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Words each device needs and does not hold, maximum over devices.

    `held` (A, devices, rank, 2) and `needed` (B, devices, rank, 2) are block layouts
    from `blocks`; returns (forward, backward) matrices (A, B): forward moves what the
    consumer needs into its layout, backward moves the gradient back into the holder's
    layout. With `compiled`, the compiled loop of `jit.overlap` finds the least
    overlaps (the same integers).

    Canonical placement makes this cheaper than a pass over every device: a layout works
    on devices 0..q-1 with equal blocks there. Where the consumer works on more devices
    than the holder, some device holds nothing and needs its whole block; otherwise the
    worst device is the one with the least overlap among the first min(q_a, q_b). The
    same holds backward with the roles swapped.
    """
    held_q = np.count_nonzero(held[:, :, -1, 1] > held[:, :, -1, 0], axis=1)
    needed_q = np.count_nonzero(needed[:, :, -1, 1] > needed[:, :, -1, 0], axis=1)
    least = least_overlap(held, needed, held_q, needed_q, compiled)
    held_volume = np.prod(held[:, 0, :, 1] - held[:, 0, :, 0], axis=-1).astype(np.float64)
    needed_volume = np.prod(needed[:, 0, :, 1] - needed[:, 0, :, 0],
                            axis=-1).astype(np.float64)
    forward = needed_volume[None, :] - np.where(needed_q[None, :] <= held_q[:, None],
                                                least, 0.0)
    backward = held_volume[:, None] - np.where(held_q[:, None] <= needed_q[None, :],
                                               least, 0.0)
    return forward, backward


def least_overlap(held: np.ndarray, needed: np.ndarray, held_q: np.ndarray,
                  needed_q: np.ndarray, compiled: bool = False) -> np.ndarray:
    """`_least_overlap`, by the compiled loop of `jit.overlap` where `compiled` (and
    llvmlite works): the same floats."""
    if compiled:
        from pase.passes.strategy.jit.compiler import jit_available
        from pase.passes.strategy.jit.overlap import least_overlap_jit

        if jit_available():
            return least_overlap_jit(held, needed, held_q, needed_q)
    return _least_overlap(held, needed, held_q, needed_q)


def _least_overlap(held: np.ndarray, needed: np.ndarray, held_q: np.ndarray,
                   needed_q: np.ndarray) -> np.ndarray:
    """(A, B): the least overlap in elements of a's and b's blocks over the devices
    0..min(q_a, q_b)-1 that both work on, in numpy."""
    rank = held.shape[2]
    # A dim that no layout on either side splits is whole on every working device, so it
    # scales the overlap by its size and needs no per-pair work.
    extents = np.maximum(held[..., 1].max(axis=(0, 1)), needed[..., 1].max(axis=(0, 1)))
    full = [k for k in range(rank)
            if all((side[..., k, 0] == 0).all()
                   and ((side[..., k, 1] == 0) | (side[..., k, 1] == extents[k])).all()
                   for side in (held, needed))]
    split = [k for k in range(rank) if k not in full]
    full_size = float(prod(int(extents[k]) for k in full))
    # Sorted by working devices, most first: the pairs that share at least q devices are
    # a leading rectangle of the two orders, so each device is visited once per level of
    # q, for those pairs only.
    order_a = np.argsort(-held_q, kind="stable")
    order_b = np.argsort(-needed_q, kind="stable")
    held_sorted, needed_sorted = held[order_a][:, :, split], needed[order_b][:, :, split]
    qa, qb = held_q[order_a], needed_q[order_b]
    least = np.full((len(qa), len(qb)), np.inf)
    start = 0
    # (Python sets, not np.unique: that imports numpy.ma, 10 ms, on first use.)
    for level in sorted({int(q) for q in (*qa, *qb) if q <= min(qa[0], qb[0])}):
        rows, cols = int(np.count_nonzero(qa >= level)), int(np.count_nonzero(qb >= level))
        chunk = max(1, (1 << 16) // (rows * cols))     # about 64k pairs × devices per step
        for lo in range(start, level, chunk):
            hi = min(level, lo + chunk)
            h = held_sorted[:rows, None, lo:hi]                       # (rows, 1, D, k, 2)
            n = needed_sorted[None, :cols, lo:hi]                     # (1, cols, D, k, 2)
            overlap = np.full((rows, cols, hi - lo), full_size)
            for k in range(len(split)):
                extent = np.minimum(h[..., k, 1], n[..., k, 1])
                extent -= np.maximum(h[..., k, 0], n[..., k, 0])
                np.maximum(extent, 0, out=extent)
                overlap *= extent
            np.minimum(least[:rows, :cols], overlap.min(axis=2), out=least[:rows, :cols])
        start = level
    result = np.empty_like(least)
    result[np.ix_(order_a, order_b)] = least
    return result


def used_devices(configs: Sequence[Config]) -> np.ndarray:
    """How many devices each configuration works on (the product of its factors)."""
    return np.array([prod(c.values()) if c else 1 for c in configs], dtype=np.int64)


def edge_working_bytes(edge: Edge, producer_configs: int, consumer_configs: int,
                       devices: int) -> int:
    """The most memory `edge_costs` holds at once for these numbers of configurations,
    its result included (from `DIM_PRICING_DEVICES` devices, `dim_pricing.working_bytes`):
    each side's block layouts (int64, every configuration on every
    device, and their unique copies) with their masks and offsets, then up to eight
    (A, B) float64 matrices (overlaps, forward and backward words, their sum, spans,
    bandwidths, seconds), with a margin measured under tracemalloc.

        >>> from pase.passes.strategy.vertices import TensorUse
        >>> use = TensorUse(("b",), (8,), 4)
        >>> edge_working_bytes(Edge(0, 1, use, use, backward=True), 10, 10, 8)
        29440
    """
    if devices >= DIM_PRICING_DEVICES:
        return dim_pricing.working_bytes(edge, producer_configs, consumer_configs, devices)
    layouts = sum(count * devices * (3 * 16 * (len(use.sizes) + 1) + 6 * 8)
                  for count, use in ((producer_configs, edge.held),
                                     (consumer_configs, edge.needed)))
    return layouts + 8 * 8 * producer_configs * consumer_configs


@dataclass(frozen=True)
class EdgeEnd:
    """What `edge_costs` needs of one end of an edge under each of its configurations:
    the distinct block layouts of the tensor, per dim (`dim_pricing.DimLayouts`), and
    each configuration's index among them, and each configuration's number of working
    devices. Edges that share an end (a layer's result read by several consumers) can
    share one."""

    layouts: DimLayouts
    index: np.ndarray
    working: np.ndarray

    @classmethod
    def of(cls, layer: Layer, configs: Sequence[Config], use: TensorUse,
           devices: int) -> EdgeEnd:
        layouts, index = DimLayouts.of(layer, configs, use, devices)
        return cls(layouts, index, used_devices(configs))


def edge_costs(edge: Edge, producer: Layer, producer_configs: Sequence[Config],
               consumer: Layer, consumer_configs: Sequence[Config], devices: int,
               machine: Machine, compiled: bool = False,
               ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
    """Redistribution seconds, matrix (producer configs, consumer configs), priced from
    the ends' per-dim layouts (`dim_pricing`: the same floats as `redistribution_words`
    and `placed_seconds` of the per-device blocks); `compiled` picks the llvmlite loop
    for the pairs of links walked device by device. On a `hierarchical` machine
    each move is priced by the links its words take (`placed_redistribution`), else by
    `edge_seconds`' flat rule. `ends`, the held and the
    needed end (`EdgeEnd.of` of the producer's `edge.held` and the consumer's
    `edge.needed`), saves building them again."""
    held, needed = ends or (EdgeEnd.of(producer, producer_configs, edge.held, devices),
                            EdgeEnd.of(consumer, consumer_configs, edge.needed, devices))
    links = (edge.needed.element_bytes, machine.intra_node_bandwidth,
             machine.inter_node_bandwidth, machine.devices_per_node, compiled)
    if devices >= DIM_PRICING_DEVICES:
        forward, backward = dim_pricing.redistribution_words(held.layouts, needed.layouts,
                                                             compiled)
        if machine.hierarchical:
            seconds = dim_pricing.placed_seconds(held.layouts, needed.layouts, forward,
                                                 backward if edge.backward else None, *links)
            return seconds[np.ix_(held.index, needed.index)]
    else:
        held_blocks = held.layouts.blocks(np.arange(len(held.layouts)))
        needed_blocks = needed.layouts.blocks(np.arange(len(needed.layouts)))
        forward, backward = redistribution_words(held_blocks, needed_blocks, compiled)
        if machine.hierarchical:
            seconds = placed_seconds(held_blocks, needed_blocks, forward,
                                     backward if edge.backward else None, *links)
            return seconds[np.ix_(held.index, needed.index)]
    words = forward + backward if edge.backward else forward
    words = words[np.ix_(held.index, needed.index)]
    return edge_seconds(words, edge, held.working, needed.working, machine)


def edge_seconds(words: np.ndarray, edge: Edge, held_working: np.ndarray,
                 needed_working: np.ndarray, machine: Machine) -> np.ndarray:
    """`words` (matrix over the ends' configurations) of `edge`'s tensor in seconds: over
    the inter-node link where either end's configuration works on more devices than a
    node holds."""
    spans = np.maximum(held_working[:, None],
                       needed_working[None, :]) > machine.devices_per_node
    bandwidth = np.where(spans, machine.inter_node_bandwidth, machine.intra_node_bandwidth)
    return words * edge.needed.element_bytes / bandwidth
