"""The mesh of a `-t jax` program (`pase.targets.jax`): its axes from the plan's grids, the
mesh axes each split dim of a layer covers, and a tensor's `PartitionSpec` over them.

A layer's grid (its split dims in iteration-space order, row-major on devices 0..q-1,
`pase.core.placement`) is a run of consecutive mesh axes; the devices a layer leaves idle
are the outer axes it does not name. `pase.targets.jax_pipeline` builds each stage's mesh
with the same functions.
"""

from __future__ import annotations

from math import prod

from pase.core.diagnostics import at_op
from pase.core.placement import Placement
from pase.dialect import dnn
from pase.dialect.pase import STRATEGY_ATTR_NAME, StrategyAttr
from pase.targets.jax_training import Spec

MeshAxes = tuple[str, ...]
"""The mesh axes one tensor dim is split over (empty: not split)."""


def graph_devices(graph: dnn.GraphOp) -> int:
    """P: the devices of the graph's `#pase.strategy`, else the largest layer grid."""
    strategy = graph.attributes.get(STRATEGY_ATTR_NAME)
    if isinstance(strategy, StrategyAttr):
        return strategy.devices.data
    return max([layer.config.num_devices for layer in graph.layer_names()
                if layer.config is not None] + [1])


ONE_MESH_HINT = ("; search with one-mesh=true (pase-search{devices=P one-mesh=true}, "
                 "pase-partition-stages{... one-mesh=true}): its plans are ones a mesh "
                 "holds, and the program runs exactly the plan searched")
"""What the mesh errors suggest (`pase.passes.strategy.one_mesh`)."""


def mesh_shape(devices: int, grids: list[tuple[dnn.LayerOp, tuple[int, ...]]],
               names: dict[dnn.LayerOp, str] | None = None) -> tuple[int, ...]:
    """The mesh's axis sizes (outermost first) whose suffix products include every
    grid's: each grid axis then covers consecutive mesh axes. `names` name a layer at
    fault that has no place in a file (an imported ONNX model's).

        >>> mesh_shape(8, [])
        (8,)
    """
    cuts = {1, devices}
    for layer, grid in grids:
        stride = 1
        for factor in reversed(grid):
            stride *= factor
            cuts.add(stride)
        if devices % stride:
            raise at_op(layer, f"the jax target cannot express this layer's grid "
                        f"{'x'.join(map(str, grid))} on {devices} devices: {stride} devices "
                        f"do not divide {devices}, so the idle devices are no mesh axis"
                        f"{ONE_MESH_HINT}", prefix=_named(layer, names))
    ordered = sorted(cuts)
    for small, large in zip(ordered, ordered[1:], strict=False):
        if large % small:
            culprit = next(layer for layer, grid in grids if large in _suffixes(grid)
                           or small in _suffixes(grid))
            raise at_op(culprit, f"the jax target cannot express this strategy on one mesh: "
                        f"grids of {small} and {large} devices do not nest (one mesh "
                        "axis per split needs each grid's size to divide the next)"
                        f"{ONE_MESH_HINT}", prefix=_named(culprit, names))
    sizes = [large // small for small, large in zip(ordered, ordered[1:], strict=False)]
    return tuple(reversed(sizes)) or (1,)


def used_mesh(shape: tuple[int, ...], used: int) -> tuple[int, ...]:
    """The inner axes of the mesh `shape` that hold the `used` devices 0..used-1, the
    largest grid of the plan (one of the mesh's cuts). The devices past it are idle in
    every layer (pase's placement puts each grid on the first devices); in the mesh they
    would each hold a replicated copy of every layer and compute it again, so a plan on
    one of 8 devices would need 8 times its memory on a machine that simulates them.

        >>> used_mesh((2, 2, 2), 4), used_mesh((8,), 1), used_mesh((2, 4), 8)
        ((2, 2), (1,), (2, 4))
    """
    inner = len(shape)
    while prod(shape[inner:]) < used:
        inner -= 1
    assert prod(shape[inner:]) == used, (shape, used)
    return shape[inner:] or (1,)


def _named(layer: dnn.LayerOp, names: dict[dnn.LayerOp, str] | None) -> str:
    return f"layer '{names[layer]}': " if names and layer in names else ""


def _suffixes(grid: tuple[int, ...]) -> set[int]:
    return {prod(grid[k:]) for k in range(len(grid))}


def grid_axes(placement: Placement, shape: tuple[int, ...]) -> dict[str, MeshAxes]:
    """The mesh axes (`m0` outermost) each split dim of a layer's grid covers.

        >>> grid_axes(Placement((("b", 2), ("h", 4))), (2, 2, 2))
        {'b': ('m0',), 'h': ('m1', 'm2')}
    """
    inner = [prod(shape[k + 1:]) for k in range(len(shape))]
    axes: dict[str, MeshAxes] = {}
    stride = 1
    for dim, factor in reversed(placement.axes):
        axes[dim] = tuple(f"m{k}" for k in range(len(shape))
                          if stride <= inner[k] < stride * factor)
        stride *= factor
    return dict(reversed(axes.items()))


def spec(dims: tuple[str | None, ...], axes: dict[str, MeshAxes], call: str = "P") -> str:
    """A `PartitionSpec` literal for a tensor whose dims range over iteration `dims`
    (`call=""`: the tuple of its entries, for the tables, which need no jax to load).

        >>> spec(("b", None, "h"), {"b": ("m0",), "h": ("m1", "m2")})
        "P('m0', None, ('m1', 'm2'))"
        >>> spec(("b",), {"b": ("m0",)}, call="")
        "('m0',)"
    """
    parts = []
    for dim in dims:
        mesh = axes.get(dim, ()) if dim is not None else ()
        parts.append("None" if not mesh else repr(mesh[0]) if len(mesh) == 1 else repr(mesh))
    while parts and parts[-1] == "None":
        parts.pop()
    comma = "," if len(parts) == 1 and not call else ""
    return f"{call}({', '.join(parts)}{comma})"


def spec_entries(dims: tuple[str | None, ...], axes: dict[str, MeshAxes]) -> Spec:
    """`spec`'s entries as a tuple (no trailing Nones dropped), for the training tables.

        >>> spec_entries(("b", None, "h"), {"b": ("m0",), "h": ("m1", "m2")})
        ('m0', None, ('m1', 'm2'))
    """
    return tuple(None if d is None or not axes.get(d) else axes[d][0]
                 if len(axes[d]) == 1 else axes[d] for d in dims)
