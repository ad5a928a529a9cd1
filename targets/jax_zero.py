"""ZeRO's collectives written out in a `-t jax` training step: the data-parallel axes as
`jax.shard_map`'s manual axes (docs/cost-model.md, "ZeRO and bf16/fp16 in the JAX program").

XLA's SPMD partitioner, left to place a ZeRO step's collectives from layouts alone, reduces
the gradients into their shards with an all-reduce and a slice on its CPU backend (no
reduce-scatter creator there) and keeps the params ZeRO 3 gathers in the forward for the
backward. Where the plan is data-parallel on every mesh axis (`data_axes`: every layer
splits the batch over all the axes and nothing else, and the batch can be cut there with
the math of one batch), the step (`MANUAL_STEP`) runs the loss and its gradients in a
`jax.shard_map` manual over the whole mesh, each device on its own rows of the batch:

- each replica's loss is its share of the batch's (`LOSS_WEIGHT`), summed by a `psum`;
- a param whose master is sharded (bf16/fp16 from ZeRO 1, fp32 at 3) comes in as its shard
  and is gathered by `all_gather` in the forward's precision; a held (replicated) one is
  cast varying (`pcast`), so that its gradient is each replica's own;
- the gradients are reduced by `psum_scatter` into the shard from ZeRO 1 (a reduce-scatter;
  the transpose of the gather where it is in the differentiated function), by `psum` at 0
  (an all-reduce);
- at ZeRO 3 the gathers are inside the differentiated function, under a `jax.checkpoint`
  whose policy saves every value but the gathered params (`regathered`): the backward
  gathers them again, as ZeRO 3 and FSDP do and the cost model charges.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import prod

from pase.dialect import dnn
from pase.dialect.dnn.microbatch import batch_dim, loss_weight, microbatch_problem

MeshAxes = tuple[str, ...]

MANUAL_STEP = '''\
def make_step(mesh, lr, with_grads=False):
    """The jitted training step: (params, state, batch) -> (updated params, updated
    state, loss), and the gradients `with_grads` (for --save). The params are the fp32
    master weights, stored in MASTER_LAYOUTS; the forward reads copies of them in the
    precision it computes in, cast where the master is held; the loss and the gradients
    are `manual_grads`'s, the gradients reduced into GRAD_LAYOUTS; the optimizer state is
    held in STATE_LAYOUTS. The params and the state are donated: the updated ones take
    their buffers."""
    stored = {name: NamedSharding(mesh, P(*MASTER_LAYOUTS[name])) for name in PARAMS}
    summed = {name: NamedSharding(mesh, P(*GRAD_LAYOUTS[name])) for name in PARAMS}
    kept = {name: {kind: NamedSharding(mesh, P() if kind == "t" else P(*STATE_LAYOUTS[name]))
                   for kind in STATE_KINDS} for name in PARAMS}
    fed = {name: NamedSharding(mesh, P(*row[2])) for name, row in INPUTS.items()}
    grads_of = manual_grads(mesh)

    def step(params, state, batch):
        copies = {name: jax.lax.with_sharding_constraint(low(param), stored[name])
                  for name, param in params.items()}
        loss, grads = grads_of(copies, batch)
        grads = {name: grad.astype(params[name].dtype) for name, grad in grads.items()}
        params, state = update(params, grads, state, lr)
        return params, state, loss, *([grads] if with_grads else [])

    shardings = (stored, kept, NamedSharding(mesh, P()), *([summed] if with_grads else []))
    step = jax.jit(step, in_shardings=(stored, kept, fed), out_shardings=shardings,
                   donate_argnums=(0, 1))
    return step, stored, fed, kept


def manual_grads(mesh):
    """(copies, batch) -> (loss, gradients): a `shard_map` manual over the MANUAL axes
    (the plan's data-parallel ones: all the mesh's). Each replica
    takes its rows of the batch and its shard of each sharded copy (gathered by
    `all_gather`), weighs its loss by LOSS_WEIGHT (its share of the batch's) and sums the
    gradients of its copies over the replicas: `psum_scatter` into the shard from ZeRO 1
    (a reduce-scatter), `psum` at ZeRO 0 (an all-reduce). At ZeRO 3 the gathers are in the
    differentiated function, and `jax.checkpoint` does not keep what they gathered: the
    backward gathers it again."""
    inside = {name for name in PARAMS if ZERO[name] >= 3 and sharded(name)}

    def gather(name, shard):
        return jax.lax.all_gather(shard, manual_axes(MASTER_LAYOUTS[name]),
                                  axis=manual_dim(MASTER_LAYOUTS[name]), tiled=True)

    def local(copies, batch):
        def weighted(args):
            params = {name: gather(name, arg) if name in inside else arg
                      for name, arg in args.items()}
            return LOSS_WEIGHT * loss_fn(mesh, params, batch)

        args = {name: copy if name in inside else gather(name, copy) if sharded(name)
                else jax.lax.pcast(copy, MANUAL, to="varying") for name, copy in copies.items()}
        if inside:
            weighted = jax.checkpoint(weighted, policy=regathered)
        loss, grads = jax.value_and_grad(weighted)(args)
        return jax.lax.psum(loss, MANUAL), {
            name: grad if name in inside else jax.lax.psum_scatter(
                grad, manual_axes(GRAD_LAYOUTS[name]),
                scatter_dimension=manual_dim(GRAD_LAYOUTS[name]), tiled=True)
            if manual_axes(GRAD_LAYOUTS[name]) else jax.lax.psum(grad, MANUAL)
            for name, grad in grads.items()}

    return jax.shard_map(
        local, mesh=mesh, axis_names=set(mesh.axis_names),  # (an idle axis: replicas)
        in_specs=({name: manual(MASTER_LAYOUTS[name]) for name in PARAMS},
                  {name: manual(row[2]) for name, row in INPUTS.items()}),
        out_specs=(P(), {name: manual(GRAD_LAYOUTS[name]) for name in PARAMS}))


def regathered(primitive, *_, **__):
    """ZeRO 3's `jax.checkpoint` policy: keep every value but what an all-gather (of a
    param's shards) makes."""
    return primitive.name != "all_gather"


def sharded(name):
    """Whether param `name`'s master is stored sharded over MANUAL (then gathered)."""
    return bool(manual_axes(MASTER_LAYOUTS[name]))


def entry_axes(entry):
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def manual(spec):
    """`spec` over the MANUAL axes only: a shard_map's in or out spec."""
    parts = [tuple(a for a in entry_axes(entry) if a in MANUAL) for entry in spec]
    return P(*[None if not part else part[0] if len(part) == 1 else part for part in parts])


def manual_axes(spec):
    """The MANUAL axes `spec` splits a dim over (one dim at most), major first."""
    return tuple(a for entry in spec for a in entry_axes(entry) if a in MANUAL)


def manual_dim(spec):
    """The dim `spec` splits over MANUAL axes."""
    return next(k for k, entry in enumerate(spec)
                if any(a in MANUAL for a in entry_axes(entry)))

'''

LAYOUT_EDIT = (
    "        return jax.lax.with_sharding_constraint(value, NamedSharding(mesh, spec))\n",
    "        return value  # each device's own rows: manual_grads's shard_map is the layout\n")
"""The forward's `layout` helper, in a program whose step is `MANUAL_STEP`."""


def data_axes(graph: dnn.GraphOp, axes: Mapping[dnn.LayerOp, Mapping[str, MeshAxes]],
              mesh: Mapping[str, int]) -> MeshAxes:
    """The plan's data-parallel mesh axes: those that every layer with the batch dim
    splits it over, first (major) and over nothing else, and no other layer uses; none
    where the batch cannot be cut over them with the math of one batch
    (`microbatch_problem`) or the loss is a cross-entropy with an `ignore_index` (its
    count of labels kept is the whole batch's)."""
    batch = batch_dim(graph)
    if batch is None or not axes:
        return ()
    common: MeshAxes | None = None
    for layer, split in axes.items():
        if batch in [dim.name for dim in layer.iteration_space().dims]:
            ours = tuple(split.get(batch, ()))
            common = ours if common is None else common[:_prefix(common, ours)]
    others = {a for split in axes.values() for dim, used in split.items() if dim != batch
              for a in used}
    common = common or ()
    data = common[:next((k for k, a in enumerate(common) if a in others), len(common))]
    if not data or microbatch_problem(graph, prod(mesh[a] for a in data)) is not None:
        return ()
    loss = graph.body.block.last_op
    owner = loss.operands[0].owner if isinstance(loss, dnn.ReturnOp) and loss.operands \
        else None
    if isinstance(owner, dnn.SoftmaxCrossEntropyOp) and owner.ignore_index is not None:
        return ()
    return data


def _prefix(one: MeshAxes, other: MeshAxes) -> int:
    """The length of the common prefix of two axis tuples."""
    count = 0
    for a, b in zip(one, other, strict=False):
        if a != b:
            break
        count += 1
    return count


def manual_of(graph: dnn.GraphOp, axes: Mapping[dnn.LayerOp, Mapping[str, MeshAxes]],
              mesh: Mapping[str, int]) -> tuple[MeshAxes, list[str]]:
    """The plan's data-parallel axes (`data_axes`) and the program's tables of a step
    manual over them: its axes and each replica's loss weight."""
    data = data_axes(graph, axes, mesh)
    if not data:
        return (), []
    weight = loss_weight(graph, prod(mesh[a] for a in data))
    return data, [f"MANUAL = {data!r}  # the data-parallel mesh axes: the step's shard_map's",
                  f"LOSS_WEIGHT = {weight!r}  # a replica's loss: its share of the batch's"]
