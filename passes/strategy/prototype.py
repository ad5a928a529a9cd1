"""The PaSE prototype's cost model, which `compat=pase` charges instead of pase's own:
`PrototypeCost`, the second implementation of `cost_models.CostModel`.

PASE-PROTOTYPE.md restates the prototype's formulas; docs/cost-model.md ("compat=pase")
maps each pase layer kind to its counterpart and tabulates how the two models differ.
The formulas count in the prototype's units, FLOP-equivalents (a multiply-add is one)
and words (a tensor element), and are turned into seconds as pase counts them: a
FLOP-equivalent is 2 FLOPs of `machine.flops`, a word its element's bytes over the link
bandwidth. On `pase-default` one FLOP-equivalent is 1e-13 s and a word 5,000 of them,
the prototype's r.

The prototype's graph has no weight or input vertices, so no edges carry them
(`prototype_edges`): weight traffic lives in the layer costs.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> cost = prototype_layer_cost(mlp.layers[0], {"b": 4}, preset("pase-default"))
    >>> cost.compute * 1e13      # 3·m'n'k' = 3 · 16·1024·256 multiply-adds
    12582912.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from math import prod

import numpy as np

from pase.passes.strategy.configs import enumerate_configs
from pase.passes.strategy.cost import (
    Collectives,
    Config,
    EdgeEnd,
    LayerCost,
    edge_seconds,
    used_devices,
)
from pase.passes.strategy.layer_costs import LayerCosts
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.microbatch import configuration_bytes
from pase.passes.strategy.vertices import Edge, Layer, TensorUse

ELEMENTWISE = ("relu", "gelu", "tanh", "sigmoid", "exp", "add", "sub", "mul",
               # pase's layers for exported models (issue 31), pointwise like the above
               "clip", "div", "sqrt", "neg", "pow", "mask")
GEMM = ("einsum", "conv2d", "embedding")


def prototype_edges(edges: Sequence[Edge]) -> list[Edge]:
    """The edges the prototype's graph has: none carries an input or a parameter (its
    `InputTensor`s are not vertices; weight traffic lives in the layer costs)."""
    return [edge for edge in edges if not edge.carried]


def prototype_layer_cost(layer: Layer, config: Config, machine: Machine) -> LayerCost:
    """The prototype's cost of one layer (PASE-PROTOTYPE.md §3), in seconds.

    The charge does not depend on which operands need a gradient: the prototype charges
    a GEMM's input-gradient all-reduce even where the input is data, and the backward
    pass of layers whose output never reaches the loss.
    """
    comm = Collectives(layer, config, machine)
    flop_equivalents = FORMULAS[layer.kind](_Local(layer, config), comm)
    return LayerCost(2 * flop_equivalents / machine.flops, comm.seconds, comm.words)


class _Local:
    """A layer's extents under a configuration: x' = x / p_x, and group sizes."""

    def __init__(self, layer: Layer, config: Config):
        self.layer = layer
        self.config = config
        self.bytes = layer.result.element_bytes

    def factor(self, dims: Sequence[str]) -> int:
        return prod(self.config.get(d, 1) for d in dims)

    def extent(self, dims: Sequence[str]) -> float:
        """Π of the local extents of `dims` (iteration dims)."""
        return prod(self.layer.space.dim(d).size for d in dims) / self.factor(dims)

    def elements(self, use: TensorUse) -> float:
        """E': the local elements of a tensor."""
        return use.elements / self.factor([d for d in use.dims if d is not None])


def _gemm_roles(layer: Layer) -> tuple[list[str], list[str], list[str], list[str]]:
    """The (batch, m, n, k) dims of a GEMM-family layer: batch in both operands and the
    result, n in the second operand and the result, k absent from the result, m the
    rest (the first operand's, a convolution's output height and width)."""
    first, second = layer.operands[0].dims, layer.operands[1].dims
    roles: tuple[list[str], list[str], list[str], list[str]] = ([], [], [], [])
    for name in layer.space.names:
        if name not in layer.result.dims:
            roles[3].append(name)
        elif name in first and name in second:
            roles[0].append(name)
        elif name in second:
            roles[2].append(name)
        else:
            roles[1].append(name)
    return roles


def _gemm_terms(local: _Local, comm: Collectives, batch: float, m: float, n: float,
                k: float, dims: tuple[list[str], list[str], list[str]], pointwise: int
                ) -> float:
    """Πβ'·[3m'n'k' + 3·pw·m'n' + AR(m'n', p_k) + AR(m'k', p_n) + AR(n'k', p_m)], the
    all-reduces charged to `comm`; returns the FLOP-equivalents. `dims` = (m, n, k)."""
    m_dims, n_dims, k_dims = dims
    for words, group in ((m * n, k_dims), (m * k, n_dims), (n * k, m_dims)):
        comm.all_reduce(batch * words, group, local.bytes)
    return batch * (3 * m * n * k + 3 * pointwise * m * n)


def _gemm(local: _Local, comm: Collectives) -> float:
    if len(local.layer.operands) == 1:
        # A one-operand einsum: the prototype's Transpose (free), or a ReduceMean when
        # it sums dims.
        return _reduce(local, comm)
    batch, m, n, k = _gemm_roles(local.layer)
    return _gemm_terms(local, comm, local.extent(batch), local.extent(m), local.extent(n),
                       local.extent(k), (m, n, k), pointwise=0)


def _lstm(local: _Local, comm: Collectives, gates: int = 4) -> float:
    """The GEMM with batch = layers, m = seq·batch, n = 4·units, k = [x, h] (pw = 3),
    plus per layer and step the redistribution of the hidden state from the (b', n')
    output block to the (b', k') input block. A GRU's is the same with n = 3·units."""
    layers, seq, batch, units, stacked = local.layer.space.dims
    compute = _gemm_terms(local, comm, local.extent([layers.name]),
                          local.extent([seq.name, batch.name]),
                          gates * local.extent([units.name]),
                          local.extent([stacked.name]),
                          ([seq.name, batch.name], [units.name], [stacked.name]), pointwise=3)
    hidden = np.array([batch.size, units.size], dtype=np.float64)
    output = np.array([[local.factor([batch.name]), local.factor([units.name])]])
    step_input = np.array([[local.factor([batch.name]), local.factor([stacked.name])]])
    words = float(redistributed_words(hidden, output, step_input)[0, 0])
    comm.charge(layers.size * seq.size * words, [units.name, stacked.name], local.bytes)
    return compute


def _gru(local: _Local, comm: Collectives) -> float:
    return _lstm(local, comm, gates=3)


def _pool(local: _Local, comm: Collectives) -> float:
    """One op per output element, forward only. (The prototype adds a halo exchange
    where height or width is split; pase's pooling never splits them.)"""
    return local.elements(local.layer.result)


def _elementwise(local: _Local, comm: Collectives) -> float:
    # (1 + pw)·E' with pw = 0: pase's pointwise ops are layers of their own.
    return local.elements(local.layer.result)


def _norm_axes(layer: Layer) -> list[str]:
    # The prototype's BatchNorm is its Norm on the batch axis (the input's first dim).
    if layer.kind == "batchnorm":
        return [layer.space.names[0]]
    return list(layer.over)


def _norm(local: _Local, comm: Collectives) -> float:
    """16·E' + 4·AR(E'/a', p_a) + 4·AR(a', Π_{j≠a} p_j)."""
    axes = _norm_axes(local.layer)
    others = [d for d in local.layer.space.names if d not in axes]
    elements = local.elements(local.layer.result)
    comm.all_reduce(elements / local.extent(axes), axes, local.bytes, count=4)
    comm.all_reduce(local.extent(axes), others, local.bytes, count=4)
    return 16 * elements


def _softmax(local: _Local, comm: Collectives) -> float:
    """(4 + d_a)·E' + 2·AR(E'/a', p_a) + AR(E'/a'·d_a, p_a)."""
    axes = list(local.layer.over)
    elements = local.elements(local.layer.result)
    rows = elements / local.extent(axes)
    full = prod(local.layer.space.dim(d).size for d in axes)
    comm.all_reduce(rows, axes, local.bytes, count=2)
    comm.all_reduce(rows * full, axes, local.bytes)
    return (4 + full) * elements


def _cross_entropy(local: _Local, comm: Collectives) -> float:
    """4·E' + 2·B', and 2·B' words if the class dim is split."""
    classes = list(local.layer.over)
    elements = local.elements(local.layer.operands[0])
    rows = elements / local.extent(classes)
    if local.factor(classes) > 1:
        comm.charge(2 * rows, classes, local.bytes)
    return 4 * elements + 2 * rows


def _reduce(local: _Local, comm: Collectives) -> float:
    """The prototype's ReduceMean: AR(E', Π p over the reduced axes), no compute."""
    layer = local.layer
    reduced = [d for d in layer.space.names if d not in layer.result.dims]
    comm.all_reduce(local.elements(layer.operands[0]), reduced, local.bytes)
    return 0.0


def _free(local: _Local, comm: Collectives) -> float:
    return 0.0


FORMULAS: dict[str, Callable[[_Local, Collectives], float]] = {
    **dict.fromkeys(GEMM, _gemm), **dict.fromkeys(ELEMENTWISE, _elementwise),
    "lstm": _lstm, "gru": _gru, "pool2d": _pool, "layernorm": _norm, "batchnorm": _norm,
    "rmsnorm": _norm,
    "softmax": _softmax, "softmax_cross_entropy": _cross_entropy, "reduce": _reduce,
    "concat": _free, "reshape": _free, "slice": _free, "pad": _free, "broadcast": _free,
}
"""Each pase layer kind's prototype formula (FLOP-equivalents; collectives charged)."""


def redistributed_words(sizes: np.ndarray, held: np.ndarray, needed: np.ndarray
                        ) -> np.ndarray:
    """The prototype's words one way: `max(0, Π(t/q) − overlap)`, matrix (A, B).

    `sizes` is the tensor's shape t, `held` (A, rank) and `needed` (B, rank) the split
    factors s and q per tensor dim. The overlap is `Π min(t/s, t/q)` (the blocks aligned,
    best case), or 0 if Q = Πq exceeds S = Πs.

        >>> t = np.array([8.0, 8.0])      # rows held; columns, rows, both needed
        >>> redistributed_words(t, np.array([[2, 1]]), np.array([[1, 2], [2, 1], [2, 2]]))
        array([[16.,  0., 16.]])
    """
    block = sizes / needed
    volume = block.prod(axis=-1)
    overlap = np.minimum((sizes / held)[:, None, :], block[None, :, :]).prod(axis=-1)
    overlap = np.where(needed.prod(axis=-1)[None, :] > held.prod(axis=-1)[:, None], 0.0,
                       overlap)
    return np.maximum(0.0, volume[None, :] - overlap)


def prototype_edge_words(edge: Edge, producer_configs: Sequence[Config],
                         consumer_configs: Sequence[Config]) -> np.ndarray:
    """The prototype's edge volume, `2·max(0, Π(t/q) − overlap)` (forward activations and
    backward gradients alike), matrix (producer configs, consumer configs)."""
    sizes = np.array(edge.needed.sizes, dtype=np.float64)
    return 2 * redistributed_words(sizes, _tensor_splits(edge.held, producer_configs),
                                   _tensor_splits(edge.needed, consumer_configs))


def _tensor_splits(use: TensorUse, configs: Sequence[Config]) -> np.ndarray:
    """(configs, rank): each config's split factor of each tensor dim."""
    return np.array([[config.get(d, 1) if d is not None else 1 for d in use.dims]
                     for config in configs], dtype=np.int64).reshape(len(configs),
                                                                      len(use.dims))


class PrototypeCost:
    """The PaSE prototype's model (`cost_models.CostModel`): PaSE's configuration space
    alone (no data-parallel extra), its graph without parameter or input edges
    (`prototype_edges`), its layer formulas (`prototype_layer_cost`) and edge volumes
    (`prototype_edge_words`). Its memory is pase's: the prototype has none."""

    name = "pase"
    shares_ends = False

    def configs(self, layer: Layer, devices: int, min_shard: int,
                batch: str | None) -> list[Config]:
        return enumerate_configs(layer.space, devices, min_shard)

    def pinned(self, layer: Layer, config: Config) -> list[Config]:
        return [config]

    def graph_edges(self, edges: Sequence[Edge]) -> list[Edge]:
        return prototype_edges(edges)

    def layer_costs(self, layer: Layer, configs: Sequence[Config],
                    machine: Machine) -> LayerCosts:
        costs = [prototype_layer_cost(layer, config, machine) for config in configs]
        return LayerCosts(*(np.array([getattr(cost, part.name) for cost in costs],
                                     dtype=np.float64).reshape(len(costs))
                            for part in fields(LayerCosts)))

    def edge_costs(self, edge: Edge, producer: Layer, producer_configs: Sequence[Config],
                   consumer: Layer, consumer_configs: Sequence[Config], devices: int,
                   machine: Machine, compiled: bool = False,
                   ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
        words = prototype_edge_words(edge, producer_configs, consumer_configs)
        return edge_seconds(words, edge, used_devices(producer_configs),
                            used_devices(consumer_configs), machine)

    def memory(self, layer: Layer, configs: Sequence[Config],
               in_flight: int = 1) -> np.ndarray:
        return configuration_bytes(layer, configs, in_flight)
