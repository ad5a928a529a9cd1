"""The configurations one device mesh can hold (`pase-search{one-mesh=true}`).

The JAX target (`-t jax`, `pase-run --engine jax`) runs a strategy on one `Mesh` of the P
devices (docs/jax.md): a layer's grid (its split dims in iteration-space order, row-major
on devices 0..q-1) must be a run of consecutive mesh axes, and the devices it leaves idle
the outer axes it does not name. So the suffix products of every grid (the device strides
of its axes: 4 and 8 for a grid 2x4) must be cuts of the mesh: each divides P, and all
layers' cuts together form one chain, each dividing the next.

With `one-mesh=true` the search keeps only the configurations whose suffix products lie
in `mesh_cuts(P)`, the prefix products of P's prime factors, smallest first: then every
strategy it can return is one mesh's, and the JAX program runs exactly the searched
plan. On P a prime power (8, 64, 1024) those are all the grids a mesh of P holds, so the
option only drops grids no mesh holds (BERT's vocabulary of 30,522 split 6 ways on 8
devices); on other P it keeps the grids of one chain (12: cuts 1, 2, 4, 12, so no grid of
3 or 6 devices).

    >>> mesh_cuts(8), mesh_cuts(12), mesh_cuts(1)
    ((1, 2, 4, 8), (1, 2, 4, 12), (1,))
    >>> on_one_mesh((2, 4), 8), on_one_mesh((6,), 8), on_one_mesh((3, 2), 6)
    (True, False, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from pase.core.placement import Placement
from pase.passes.strategy.cost import Config
from pase.passes.strategy.cost_models import PaseCost
from pase.passes.strategy.training_cost import TrainingCost
from pase.passes.strategy.vertices import Layer

OPTION = "one-mesh=true"
"""How a user asks for it (pase-search and pase-partition-stages)."""


def mesh_cuts(devices: int) -> tuple[int, ...]:
    """The device strides a mesh of `devices` cuts at: 1, then the running products of
    the prime factors of `devices`, smallest first."""
    cuts, rest, prime = [1], devices, 2
    while rest > 1:
        while rest % prime == 0:
            rest //= prime
            cuts.append(cuts[-1] * prime)
        prime += 1
    return tuple(cuts)


def suffix_products(grid: Sequence[int]) -> list[int]:
    """The device strides of a grid's axes, innermost first: `(2, 4)` gives `[4, 8]`."""
    products, stride = [], 1
    for factor in reversed(grid):
        stride *= factor
        products.append(stride)
    return products


def on_one_mesh(grid: Sequence[int], devices: int) -> bool:
    """Whether a layer's grid (its split factors in iteration-space order) is a run of
    axes of the mesh of `devices` (`mesh_cuts`)."""
    cuts = set(mesh_cuts(devices))
    return all(stride in cuts for stride in suffix_products(grid))


def grid_of(layer: Layer, config: Config) -> tuple[int, ...]:
    """The grid a configuration places `layer` on (`pase.core.placement`)."""
    return tuple(f for _, f in Placement.of(layer.space.names, config).axes)


def mesh_configs(layer: Layer, configs: Sequence[Config], devices: int) -> list[Config]:
    """The configurations of `configs` whose grids one mesh of `devices` holds, in order;
    ValueError when none is (a pinned data-parallel degree off the mesh's cuts)."""
    kept = [config for config in configs if on_one_mesh(grid_of(layer, config), devices)]
    if configs and not kept:
        raise ValueError(f"layer '{layer.name}': none of its configurations is on one mesh "
                         f"of {devices} devices (cut at {', '.join(map(str, mesh_cuts(devices)))}"
                         f"; {OPTION})")
    return kept


class _OnOneMesh:
    """A cost model's configurations cut to those one mesh holds (mixed in first)."""

    def configs(self, layer: Layer, devices: int, min_shard: int,
                batch: str | None) -> list[Config]:
        return mesh_configs(layer, super().configs(  # type: ignore[misc]
            layer, devices, min_shard, batch), devices)


class OneMeshCost(_OnOneMesh, PaseCost):
    """pase's model on the configurations one mesh holds."""


class OneMeshTrainingCost(_OnOneMesh, TrainingCost):
    """The training step's model on the configurations one mesh holds."""


def one_mesh_model(model: PaseCost | TrainingCost | object) -> PaseCost | TrainingCost:
    """`model` restricted to one mesh's configurations; ValueError for compat=pase."""
    if isinstance(model, TrainingCost):
        return OneMeshTrainingCost(model.training)
    if isinstance(model, PaseCost):
        return OneMeshCost()
    raise ValueError(f"{OPTION} needs pase's own cost model, not compat=pase")
