"""A pipelined stage's parameter gradients kept as one partial sum per replica across its
micro-batches, summed once a step (docs/jax.md, "Pipeline plans").

A layer that splits the batch (or any dim its param lacks) leaves its param's gradient a
partial sum over the mesh axes of those dims. Left to the layouts, XLA's SPMD partitioner
all-reduces it inside every micro-batch's backward: M all-reduces a step where the plan
(`predicted_pipeline_words`) charges one. A stage whose every layer splits the batch alone
maps its backward over its replicas (`jax_pipeline`'s chunks); in a stage that mixes
layouts, each such layer is written `stacked_layer(...)` (`STACKED_LAYER`): a
`jax.custom_vjp` whose forward is the layer in its layouts and whose params' gradients
are the layer's own backward on each device's blocks (a `jax.shard_map` manual over the
stage's whole mesh), returned unreduced, stacked over those axes, as the cotangent of a
"sink" of zeros the stage's backward adds to its inputs (`STACKED`). The backward adds
them into running sums of R copies with no collective; the update sums the copies once
(one all-reduce, or ZeRO's reduce-scatter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pase.dialect import dnn

MeshAxes = tuple[str, ...]

SINK = "#stack"
"""The suffix of a param's sink in a stage's params (`w#stack`), in its backward only."""

STACKED_LAYER = '''\
def stacked_layer(mesh, layer, specs, result_spec, params, stacks, sinks):
    """`layer` of operands laid out in `specs`, the params at `params` taken as the stage
    holds them (a ZeRO 3 shard too) and placed in their layouts inside, so that the
    backward places (gathers) them again where it reads them. In a stage's backward
    (`sinks` given: zeros of each param stacked over its mesh axes `stacks`), each param's
    gradient is the layer's own backward on each device's blocks, a partial sum over
    those axes, returned unreduced (one per replica, no collective) as its sink's
    cotangent; the params' own cotangents are zero, the other operands' gradients the
    layouts'."""
    def placed(values):
        return [jax.lax.with_sharding_constraint(value, NamedSharding(mesh, specs[k]))
                if k in params else value for k, value in enumerate(values)]

    if any(sink is None for sink in sinks):  # the forward: no gradient taken
        return lambda *values: layer(*placed(values))

    def with_values(values, chosen):
        merged = list(values)
        for k, value in zip(params, chosen):
            merged[k] = value
        return layer(*merged)

    def local(values, cotangent):
        pullback = jax.vjp(lambda *chosen: with_values(values, chosen),
                           *[values[k] for k in params])[1]
        return tuple(grad[None] for grad in pullback(cotangent))

    # (check_vma=False: each device's partial sum is its own, not psum-ed)
    stacked = jax.shard_map(local, mesh=mesh, in_specs=(tuple(specs), result_spec),
                            out_specs=tuple(P(axes, *specs[k]) for k, axes in
                                            zip(params, stacks)), check_vma=False)

    @jax.custom_vjp
    def apply(values, sinks):
        return layer(*placed(values))

    def forward(values, sinks):
        return apply(values, sinks), values

    def backward(held, cotangent):
        values = placed(held)
        others = [k for k, value in enumerate(values) if k not in params
                  and jnp.issubdtype(value.dtype, jnp.floating)]
        grads = [jnp.zeros_like(value) if k in params else None
                 for k, value in enumerate(held)]
        if others:
            def of_others(*chosen):
                merged = list(values)
                for k, value in zip(others, chosen):
                    merged[k] = value
                return layer(*merged)

            for k, grad in zip(others, jax.vjp(of_others, *[values[k] for k in others])[1](
                    cotangent)):
                grads[k] = grad
        return tuple(grads), stacked(tuple(values), cotangent)

    apply.defvjp(forward, backward)
    return lambda *values: apply(values, tuple(sinks))
'''
"""The program's helper (in a pipelined stage with a stacked layer)."""


GATHERED = '''\
def gathered(value):
    """A ZeRO 3 param gathered into its layout, named so that a pipelined stage's pullback
    does not keep it: its backward gathers it again where it reads it."""
    from jax.ad_checkpoint import checkpoint_name

    return checkpoint_name(value, "gathered")
'''
"""The program's helper (in a pipelined stage with a ZeRO 3 param)."""


def stacked_params(layers: Sequence[dnn.LayerOp],
                   axes: Mapping[dnn.LayerOp, Mapping[str, MeshAxes]]
                   ) -> dict[dnn.LayerOp, dict[int, MeshAxes]]:
    """Of a stage's `layers` (each with its split dims' mesh `axes`), those whose params'
    gradients are partial sums that each device's blocks give: per layer, each such param
    operand with the mesh axes it is summed over (the axes of the split dims it lacks, in
    mesh order), read by that layer only (`blocks_give`)."""
    found: dict[dnn.LayerOp, dict[int, MeshAxes]] = {}
    for layer in layers:
        space = layer.iteration_space()
        split = {d for d, mesh in axes[layer].items() if mesh}
        params = [k for k, v in enumerate(layer.inputs) if isinstance(v.owner, dnn.ParamOp)
                  and {use.operation for use in v.uses} == {layer}]
        for k in params:
            lacked = split - set(space.operands[k])
            if not lacked or not blocks_give(layer, k, split):
                continue
            found.setdefault(layer, {})[k] = tuple(sorted(
                (a for d in lacked for a in axes[layer][d]), key=lambda a: int(a[1:])))
    return found


def blocks_give(layer: dnn.LayerOp, index: int, split: set[str]) -> bool:
    """Whether each device's blocks of `layer`'s operands (its `split` dims split) give
    its param operand `index`'s block of the gradient, a partial sum over the axes of the
    split dims the param lacks: each of those in the layer's result and every operand
    but the layer's params, and not reduced (the batch, a sequence: not a convolution's
    height, whose input block would need its halo); `_exact` for the rest."""
    space = layer.iteration_space()
    lacked = split - set(space.operands[index])
    params = [k for k, v in enumerate(layer.inputs) if isinstance(v.owner, dnn.ParamOp)]
    return _exact(layer, index, split, lacked) and all(
        d in space.result and not space.dim(d).reduction and d not in space.partial
        and d not in space.stats_dims
        and all(d in dims for j, dims in enumerate(space.operands) if j not in params)
        for d in lacked)


def _exact(layer: dnn.LayerOp, index: int, split: set[str], lacked: set[str]) -> bool:
    """Whether the layer's own backward on each device's blocks gives param `index`'s
    block of the gradient (summed over the `lacked` dims' axes): any split of an einsum,
    a convolution or an elementwise op; a norm that splits neither the dims it
    normalizes nor its params'; an embedding whose table rows are whole; a recurrent
    layer that splits only dims its params lack."""
    match layer:
        case dnn.EinsumOp() | dnn.Conv2dOp() | dnn.BinaryOp():
            return True
        case dnn.NormOp() | dnn.RmsNormOp():
            dims = set(layer.input_shapes[index].dims) | set(layer.dims_prop("over"))
            return not dims & split
        case dnn.EmbeddingOp():
            return index == 1 and layer.input_shapes[1].dims[0] not in split
        case dnn.LstmOp() | dnn.GruOp():
            return split == lacked
    return False


def stacked_statement(layer: str, specs: Sequence[str], result_spec: str,
                      stacks: Mapping[int, MeshAxes], sinks: Sequence[str],
                      operands: Sequence[str]) -> str:
    """The expression of a `STACKED_LAYER`: `layer` a lambda of its operands, `specs` their
    PartitionSpecs, `stacks` the param operands' summed axes, `sinks` their params' names,
    `operands` the constrained operands (the params' taken bare: `stacked_layer` places
    them)."""
    params = tuple(stacks)
    operands = [sinks[params.index(k)] if k in params else operand
                for k, operand in enumerate(operands)]
    reads = "".join(f"params.get({name + SINK!r}), " for name in sinks)
    return (f"stacked_layer(mesh, {layer}, ({', '.join(specs)},), {result_spec}, "
            f"{params!r}, {tuple(stacks[k] for k in params)!r}, ({reads.rstrip()}))"
            f"({', '.join(operands)})")
