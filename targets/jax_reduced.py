"""A param's gradient reduced into its ZeRO shard by the `-t jax` program itself, on plans
that split a layer's model dims as well as the batch (docs/cost-model.md, "ZeRO's
collectives on tensor-parallel plans").

Left to the layouts, XLA's SPMD partitioner reduces a gradient into its ZeRO shard with an
all-reduce and a slice (its CPU pipeline has no reduce-scatter creator): one
reduce-scatter's bytes above the cost model at ZeRO 1 and 2. `jax_zero` writes the
collectives out where the plan is data-parallel on every mesh axis; on the other plans
(`reduced_layers`), each einsum that reads a sharded param takes the param's gradient
itself (`REDUCED_EINSUM`, a `jax.custom_vjp`): each device multiplies its blocks of the
other operand and of the result's gradient (a partial sum over the mesh axes that split
the dims the param lacks, the param's replicas) and `psum_scatter`s it over those axes into
the shard, in a `jax.shard_map` manual over the whole mesh (XLA's CPU backend aborts on a
bf16 `psum_scatter` in a shard_map manual over some axes only). The forward and the other
operand's gradient stay the layouts'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import SSAValue

from pase.core.shapes import NamedShape
from pase.dialect import dnn
from pase.dialect.training_options import StepOptions, zero_stage
from pase.targets.jax_recurrent import lstm_splits_reduce
from pase.targets.jax_stacked import blocks_give
from pase.targets.jax_training import Spec, manual_step_axes, zero_layouts

MeshAxes = tuple[str, ...]
ParamLayouts = tuple[dict[str, Spec], dict[str, tuple[tuple[str, int], ...]], dict[str, int],
                     dict[str, int]]
"""`_Emitter.param_layouts`: each param's held layout, its replicas, its ZeRO stage, and
the mesh's axis sizes."""

REDUCED_EINSUM = '''\
def reduced_einsum(mesh, name, subscripts, specs, result_spec, index):
    """`jnp.einsum(subscripts, ...)` of two operands laid out in `specs`, operand `index`
    param `name`'s copy as the step holds it (its ZeRO 3 shard too), placed in its
    layout inside: its gradient does not pass back through a constraint to that layout
    (an all-gather). The gradient is each device's product of its blocks of the other
    operand and of the result's gradient (in `result_spec`), summed over the mesh axes
    GRAD_LAYOUTS adds to the param's layout by a `psum_scatter` into the shard (a
    reduce-scatter, in the copies' precision), in a shard_map manual over the whole mesh.
    At ZeRO 3 the backward places (gathers) the shard again, as the forward did."""
    operands, result = subscripts.split("->")
    letters = operands.split(",")
    other = 1 - index
    dim, summed = scatter_of(name, specs[index], len(letters[index]))

    def placed(param):
        return jax.lax.with_sharding_constraint(param, NamedSharding(mesh, specs[index]))

    def product(value, param):
        pair = (value, param) if index == 1 else (param, value)
        return jnp.einsum(subscripts, *pair, precision=jax.lax.Precision.HIGHEST)

    def local(value, cotangent):
        part = jnp.einsum(f"{letters[other]},{result}->{letters[index]}", value, cotangent,
                          precision=jax.lax.Precision.HIGHEST)
        return jax.lax.psum_scatter(part, summed, scatter_dimension=dim, tiled=True)

    reduced = jax.shard_map(local, mesh=mesh, in_specs=(specs[other], result_spec),
                            out_specs=P(*GRAD_LAYOUTS[name]))

    @jax.custom_vjp
    def einsum(value, param):
        return product(value, placed(param))

    def forward(value, param):
        return einsum(value, param), (value, param)

    def backward(saved, cotangent):
        value, param = saved
        if ZERO[name] >= 3:  # the shard, gathered again (not the forward's gather, kept)
            param = jax.lax.optimization_barrier(param)
        across, = jax.vjp(lambda v: product(v, placed(param)), value)[1](cotangent)
        return across, reduced(value, cotangent)

    einsum.defvjp(forward, backward)
    return lambda *pair: einsum(pair[other], pair[index])
'''
"""The program's helper (in a training program with a reduced einsum)."""

AXES_OF = '''\
def scatter_of(name, spec, rank):
    """The dim of param `name` (of `rank` dims, held in `spec`) its gradient is scattered
    along, and the mesh axes GRAD_LAYOUTS adds there: its replicas."""
    held = tuple(spec) + (None,) * (rank - len(spec))
    return next((k, tuple(a for a in axes_of(entry) if a not in axes_of(held[k])))
                for k, entry in enumerate(GRAD_LAYOUTS[name]) if entry != held[k])


def axes_of(entry):
    """The mesh axes of one PartitionSpec entry."""
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
'''
"""The reduced helpers' own helpers."""

REDUCED_LAYER = '''\
def reduced_layer(mesh, names, layer, specs, result_spec, params):
    """`layer(*operands)`, a layer's expression, of operands laid out in `specs`; the
    operands at `params` (indices) are the params `names` as the step holds them (their
    ZeRO 3 shards too), placed in their layouts inside. Each param's gradient is the
    layer's own backward on each device's blocks (a partial sum over the mesh axes
    GRAD_LAYOUTS adds to the param's layout: dims the param lacks, which the layer keeps
    apart), summed by a `psum_scatter` into the shard (a reduce-scatter, in the copies'
    precision) in a shard_map manual over the whole mesh; the other operands' gradients
    are the layouts'. At ZeRO 3 the backward places (gathers) the shards again."""

    def placed(values):
        return [jax.lax.with_sharding_constraint(value, NamedSharding(mesh, specs[k]))
                if k in params else value for k, value in enumerate(values)]

    def with_values(values, at, chosen):
        merged = list(values)
        for k, value in zip(at, chosen):
            merged[k] = value
        return layer(*merged)

    def scattered(name, k, grad):
        dim, summed = scatter_of(name, specs[k], grad.ndim)
        return jax.lax.psum_scatter(grad, summed, scatter_dimension=dim, tiled=True)

    def local(values, cotangent):
        pullback = jax.vjp(lambda *chosen: with_values(values, params, chosen),
                           *[values[k] for k in params])[1]
        return tuple(scattered(name, k, grad)
                     for name, k, grad in zip(names, params, pullback(cotangent)))

    # (check_vma=False: the params' blocks, the same on their replicas, are not made
    # varying by a psum of their cotangents; each device's partial sum is scattered)
    reduced = jax.shard_map(local, mesh=mesh, in_specs=(tuple(specs), result_spec),
                            out_specs=tuple(P(*GRAD_LAYOUTS[name]) for name in names),
                            check_vma=False)

    @jax.custom_vjp
    def apply(*values):
        return layer(*placed(values))

    def forward(*values):
        return apply(*values), values

    def backward(values, cotangent):
        values = [jax.lax.optimization_barrier(value)  # the shard, gathered again
                  if k in params and ZERO[names[params.index(k)]] >= 3 else value
                  for k, value in enumerate(values)]
        full = placed(values)
        others = [k for k, value in enumerate(full) if k not in params
                  and jnp.issubdtype(value.dtype, jnp.floating)]
        grads = [None] * len(full)
        if others:
            across = jax.vjp(lambda *chosen: with_values(full, others, chosen),
                             *[full[k] for k in others])[1](cotangent)
            for k, grad in zip(others, across):
                grads[k] = grad
        for k, grad in zip(params, reduced(tuple(full), cotangent)):
            grads[k] = grad
        return tuple(grads)

    apply.defvjp(forward, backward)
    return apply
'''
"""The program's helper (in a training program whose norm or embedding reduces its
params' gradients)."""


def reduced_layers(graph: dnn.GraphOp, axes: Mapping[dnn.LayerOp, Mapping[str, MeshAxes]],
                   names: Mapping[SSAValue, str], layouts: ParamLayouts,
                   data: MeshAxes, options: StepOptions) -> dict[dnn.LayerOp, tuple[int, ...]]:
    """The layers whose params' gradients the program reduces itself, each with its param
    operands' indices, where the step is not `jax_zero`'s (manual over the plan's
    data-parallel axes `data`): an einsum of two operands, one a param
    (`REDUCED_EINSUM`), a norm whose dims over which it normalizes and its params' dims
    are not split, or an embedding whose table's rows are not (`REDUCED_LAYER`: each
    device's blocks are the layer's own). Each param is read by this layer only and its
    ZeRO shard (from stage 1) adds to its held layout (`layouts`: held, replicas, stages
    and mesh, `_Emitter.param_layouts`) the mesh axes it is replicated on, all of which
    the layer splits (so each device's gradient is a partial sum over exactly the axes
    its shard adds)."""
    held, replicas, stages, mesh = layouts
    sizes = {names[op.output]: op.output.type.shape.sizes for op in graph.body.block.ops
             if isinstance(op, dnn.ParamOp)}
    state = zero_layouts(held, replicas, stages, mesh, sizes)
    if manual_step_axes(held, replicas, stages, mesh, state, data):
        return {}
    found: dict[dnn.LayerOp, tuple[int, ...]] = {}
    for op in graph.body.block.ops:
        # (an LSTM at ZeRO 0 too: left to the layouts, its weight's gradient is all-reduced
        # in every step of the backward's scan)
        lstm = isinstance(op, dnn.LstmOp)
        if not isinstance(op, dnn.LayerOp) or op not in axes \
                or zero_stage(op, options) < (0 if lstm else 1):
            continue
        params = tuple(k for k, v in enumerate(op.inputs) if isinstance(v.owner, dnn.ParamOp))
        used = {a for split in axes[op].values() for a in split}
        if params and _local(op, params, {d for d, split in axes[op].items() if split}) \
                and all({use.operation for use in op.inputs[k].uses} == {op}
                        and (lstm or state[names[op.inputs[k]]] != held[names[op.inputs[k]]])
                        and {a for a, _ in replicas[names[op.inputs[k]]]} <= used
                        for k in params):
            found[op] = params
    return found


def _local(op: dnn.LayerOp, params: tuple[int, ...], split: set[str]) -> bool:
    """Whether each device's blocks of `op`'s operands give its params' gradients' partial
    sums: the kinds of layer `reduced_layers` takes, their dims split as it needs."""
    match op:
        case dnn.EinsumOp():
            return len(op.inputs) == 2 and len(params) == 1
        case dnn.NormOp() | dnn.RmsNormOp():
            dims = {d for k in params for d in op.input_shapes[k].dims}
            return not (dims | set(op.dims_prop("over"))) & split
        case dnn.EmbeddingOp():
            return params == (1,) and op.input_shapes[1].dims[0] not in split
        case dnn.Conv2dOp():  # (the batch or channels split: not the height's halo)
            return all(blocks_give(op, k, split) for k in params)
        case dnn.LstmOp():  # (`jax_recurrent.REDUCED_LSTM`)
            return lstm_splits_reduce(op, params, split)
    return False


def reduced_layer_statement(layer: str, names: Sequence[str], specs: Sequence[str],
                            result_spec: str, params: tuple[int, ...],
                            operands: Sequence[str]) -> str:
    """The expression of a `REDUCED_LAYER`: `layer` a lambda of its operands `v0, v1, ..`,
    `names` its params', `specs` its operands' PartitionSpecs, `operands` the constrained
    operands (the params' taken bare: `reduced_layer` places them)."""
    arguments = [names[params.index(k)] if k in params else operand
                 for k, operand in enumerate(operands)]
    return (f"reduced_layer(mesh, {tuple(names)!r}, {layer}, ({', '.join(specs)},), "
            f"{result_spec}, {params!r})({', '.join(arguments)})")


def reduced_statement(call: str, name: str, specs: Sequence[str], result_spec: str,
                      index: int, operands: Sequence[str]) -> str:
    """The expression of a reduced einsum: `call` its subscripts, `specs` its operands'
    PartitionSpecs (as the program writes them), `operands` the constrained operands
    (the param's taken bare: `reduced_einsum` places it)."""
    arguments = [name if k == index else operand for k, operand in enumerate(operands)]
    return (f"reduced_einsum(mesh, {name!r}, {call!r}, ({', '.join(specs)}), {result_spec}, "
            f"{index})({', '.join(arguments)})")


def subscripts(inputs: Sequence[NamedShape], result: NamedShape) -> str:
    """The einsum subscripts of a named contraction: `"ab,bc->ac"`."""
    letters: dict[str, str] = {}
    for dim in [d for shape in (*inputs, result) for d in shape.dims]:
        letters.setdefault(dim, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[
            len(letters)])
    return (",".join("".join(letters[d] for d in s.dims) for s in inputs) + "->"
            + "".join(letters[d] for d in result.dims))
