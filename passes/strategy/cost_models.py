"""The cost model as an object: what the search charges, behind one interface.

A `CostModel` gives, for a layer, its configurations (`configs`) and their costs as
vectors over them (`layer_costs`: compute, collectives, their parts), for an edge the
matrix of redistribution seconds over its ends' configurations (`edge_costs`), for the
graph the edges it charges (`graph_edges`), and a device's memory under each
configuration (`memory`). A `Problem` holds one, chosen once when it is built
(`cost_model(compat)`): pase's analytical model (`PaseCost`, docs/cost-model.md) or the
PaSE prototype's formulas (`prototype.PrototypeCost`, `compat=pase`). The cost of one
configuration is the vector of one (`layer_cost`).

Where the coming terms plug in (issue 32, "The training people run"): a term that
depends on the configuration is one more vector in `layer_costs` or `memory`, computed
over the configuration list like the others, so the DP, the bounds and the capped
search see it without change. Optimizer state and a ZeRO shard are `memory` terms: the
optimizer's words per parameter times the parameter block, divided, for ZeRO, by the
data-parallel degree of the configuration (its batch factor, a column of
`layer_costs.factor_matrix`); their all-gathers are `layer_costs` terms charged like the
parameter-gradient all-reduce (`LayerCosts.param_communication`). Precision is the
element bytes of the tensors. An extra per-layer choice (recomputation on or off) is a
wider configuration space: `configs` lists each configuration with and without it, and
`layer_costs`/`memory` charge it (recomputation adds forward compute and drops the
activations). A model with such terms is a third implementation of this protocol, or
`PaseCost` with options, chosen where `cost_model` chooses today.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.machines import preset
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> model = cost_model("")
    >>> configs = model.configs(mlp.layers[0], 4, 4, mlp.batch)
    >>> costs = model.layer_costs(mlp.layers[0], configs, preset("v100-nvlink"))
    >>> len(costs.total) == len(configs), model.name, cost_model("pase").name
    (True, '', 'pase')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from pase.passes.strategy.configs import searched_configs
from pase.passes.strategy.cost import Config, EdgeEnd, edge_costs
from pase.passes.strategy.layer_costs import LayerCosts, layer_costs
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.microbatch import configuration_bytes
from pase.passes.strategy.prototype import PrototypeCost
from pase.passes.strategy.training_cost import TrainingCost
from pase.passes.strategy.vertices import Edge, Layer

if TYPE_CHECKING:
    from pase.passes.strategy.options import TrainingOptions


class CostModel(Protocol):
    """What a search charges; `PaseCost` and `prototype.PrototypeCost` implement it."""

    name: str
    """The `compat` mode that chooses it ("" for pase's own model)."""
    shares_ends: bool
    """Whether `edge_costs` reads `ends` (`cost.EdgeEnd`s built once per distinct end,
    shared by the edges that read one layer's result)."""

    def configs(self, layer: Layer, devices: int, min_shard: int,
                batch: str | None) -> list[Config]:
        """The configurations the search considers for `layer` on `devices` devices."""
        ...

    def pinned(self, layer: Layer, config: Config) -> list[Config]:
        """The configurations of a layer pinned to `config` (the pin itself, or the pin
        under each per-layer choice the model adds, as `TrainingCost`'s)."""
        ...

    def graph_edges(self, edges: Sequence[Edge]) -> list[Edge]:
        """The edges of the graph this model charges."""
        ...

    def layer_costs(self, layer: Layer, configs: Sequence[Config],
                    machine: Machine) -> LayerCosts:
        """The layer's costs under each of `configs`, as vectors."""
        ...

    def edge_costs(self, edge: Edge, producer: Layer, producer_configs: Sequence[Config],
                   consumer: Layer, consumer_configs: Sequence[Config], devices: int,
                   machine: Machine, compiled: bool = False,
                   ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
        """Redistribution seconds, matrix (producer configs, consumer configs)."""
        ...

    def memory(self, layer: Layer, configs: Sequence[Config],
               in_flight: int = 1) -> np.ndarray:
        """Bytes one device holds under each of `configs`, with the activations of
        `in_flight` micro-batches."""
        ...


class PaseCost:
    """pase's analytical model (docs/cost-model.md): PaSE's configuration space plus
    data parallelism, exact redistribution volumes under canonical placement."""

    name = ""
    shares_ends = True

    def configs(self, layer: Layer, devices: int, min_shard: int,
                batch: str | None) -> list[Config]:
        return searched_configs(layer, devices, min_shard, batch)

    def pinned(self, layer: Layer, config: Config) -> list[Config]:
        return [config]

    def graph_edges(self, edges: Sequence[Edge]) -> list[Edge]:
        return list(edges)

    def layer_costs(self, layer: Layer, configs: Sequence[Config],
                    machine: Machine) -> LayerCosts:
        return layer_costs(layer, configs, machine)

    def edge_costs(self, edge: Edge, producer: Layer, producer_configs: Sequence[Config],
                   consumer: Layer, consumer_configs: Sequence[Config], devices: int,
                   machine: Machine, compiled: bool = False,
                   ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
        return edge_costs(edge, producer, producer_configs, consumer, consumer_configs,
                          devices, machine, compiled, ends)

    def memory(self, layer: Layer, configs: Sequence[Config],
               in_flight: int = 1) -> np.ndarray:
        return configuration_bytes(layer, configs, in_flight)


PASE_COST = PaseCost()
PROTOTYPE_COST = PrototypeCost()
MODELS: dict[str, CostModel] = {"": PASE_COST, "pase": PROTOTYPE_COST}


def cost_model(compat: str, training: TrainingOptions | None = None) -> CostModel:
    """The model of a `compat` mode: "" pase's own, "pase" the PaSE prototype's, charging
    the `training` step (`TrainingCost`; the defaults: today's step, `PaseCost`).
    Raises ValueError for another mode, or a training step with compat=pase."""
    if compat not in MODELS:
        raise ValueError(f"unknown compat mode '{compat}'; the only one is 'pase'")
    if training is None or training.is_default:
        return MODELS[compat]
    training.check()
    if compat:
        raise ValueError("the training options (optimizer, precision, recompute, zero, "
                         "data-parallel) need pase's own cost model, not compat=pase")
    return TrainingCost(training)
