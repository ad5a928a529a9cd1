"""An LSTM's weight gradient reduced into its ZeRO shard by the `-t jax` program itself
(docs/cost-model.md, "An LSTM's weight reduce-scattered").

Left to the layouts, the weight gradient of an LSTM that splits its batch (and its gates'
units) is summed over the batch's mesh axes inside the backward's scan by an all-reduce,
then sliced into the ZeRO shard: one all-gather's bytes above the cost model's
reduce-scatter at ZeRO 1 and 2. `REDUCED_LSTM` runs the LSTM with each layer's gate
inputs as a zero `delta` operand, so that the backward's scan gives the gates' gradients
[l, s, b, n] and not the weight's; the weight's gradient is then one einsum of each
layer's step inputs [x_t, h_(t-1)] (kept by the forward, [l, s, b, k]) and those gates'
gradients, each device's blocks (a partial sum over the batch's axes), `psum_scatter`ed
into the shard in a shard_map manual over the whole mesh, as `reduced_einsum` does. The
forward's pullback (its residuals) is the backward's: nothing is run twice.
"""

from __future__ import annotations

from pase.dialect import dnn

REDUCED_LSTM = '''\
def reduced_lstm(mesh, name, specs, result_spec):
    """`lstm(x, w)` of x [b, s, e] laid out in `specs[0]` and param `name`'s w [l, 2e, 4e]
    as the step holds it (its ZeRO 3 shard too), placed in `specs[1]` inside. w's gradient
    is each device's sum over its steps and batch rows of its step inputs times its
    gates' gradients, `psum_scatter`ed over the mesh axes GRAD_LAYOUTS adds to w's layout
    (the batch's) into the shard (at ZeRO 0 `psum`med over the batch's axes); x's
    gradient is the layouts'."""
    batch_axes = tuple(specs[0])[0] if len(specs[0]) else None
    unit_axes = (tuple(specs[1]) + (None,) * 3)[2]
    held = tuple(specs[1]) + (None,) * (3 - len(specs[1]))
    scattered = tuple(GRAD_LAYOUTS[name]) != held  # (ZeRO 0: summed whole, a psum)
    dim, summed = scatter_of(name, specs[1], 3) if scattered else (0, axes_of(batch_axes))
    delta_spec = P(None, None, batch_axes, unit_axes)

    def run(x, w, deltas):
        batch, _, hidden = x.shape
        sequence, inputs = jnp.swapaxes(x, 0, 1), []
        for layer in range(w.shape[0]):
            def cell(carry, step, weight=w[layer]):
                (h, c), (step_input, delta) = carry, step
                joined = jnp.concatenate([step_input, h], axis=1)
                gates = (joined @ weight + delta).reshape(batch, hidden, 4)
                i, f, o = sigmoid(gates[..., 0]), sigmoid(gates[..., 1]), sigmoid(gates[..., 3])
                c = f * c + i * jnp.tanh(gates[..., 2])
                h = o * jnp.tanh(c)
                return (h, c), (h, joined)

            zeros = jnp.zeros((batch, hidden), x.dtype)
            _, (sequence, joined) = jax.lax.scan(cell, (zeros, zeros),
                                                 (sequence, deltas[layer]))
            inputs.append(joined)
        return jnp.swapaxes(sequence, 0, 1), jnp.stack(inputs)

    def local(inputs, deltas):
        part = jnp.einsum("lsbk,lsbn->lkn", inputs, deltas,
                          precision=jax.lax.Precision.HIGHEST)
        if not scattered:
            return jax.lax.psum(part, summed) if summed else part
        return jax.lax.psum_scatter(part, summed, scatter_dimension=dim, tiled=True)

    reduced = jax.shard_map(local, mesh=mesh, in_specs=(P(None, None, batch_axes, None),
                                                        delta_spec),
                            out_specs=P(*GRAD_LAYOUTS[name]))

    def pulled(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, specs[1]))
        deltas = jax.lax.with_sharding_constraint(
            jnp.zeros((w.shape[0], x.shape[1], x.shape[0], w.shape[2]), x.dtype),
            NamedSharding(mesh, delta_spec))
        return jax.vjp(lambda value, delta: run(value, w, delta), x, deltas, has_aux=True)

    @jax.custom_vjp
    def apply(x, w):
        return pulled(x, w)[0]

    def forward(x, w):
        result, pullback, inputs = pulled(x, w)
        return result, (pullback, inputs)

    def backward(saved, cotangent):
        pullback, inputs = saved
        across, deltas = pullback(cotangent)
        return across, reduced(inputs, deltas)

    apply.defvjp(forward, backward)
    return apply
'''
"""The program's helper (in a training program whose LSTM reduces its weight's
gradient)."""


def lstm_splits_reduce(op: dnn.LayerOp, params: tuple[int, ...], split: set[str]) -> bool:
    """Whether `op` is an LSTM of operands x and w (no bias) that `REDUCED_LSTM` takes:
    its split dims among x's batch and w's gate units."""
    if not isinstance(op, dnn.LstmOp) or len(op.inputs) != 2 or params != (1,):
        return False
    return split <= {op.input_shapes[0].dims[0], op.input_shapes[1].dims[2]}


def reduced_lstm_statement(name: str, specs: list[str], result_spec: str,
                           operands: list[str]) -> str:
    """The expression of a reduced LSTM: `name` its weight's, `specs` its operands'
    PartitionSpecs, `operands` the constrained operands (the weight's taken bare)."""
    return (f"reduced_lstm(mesh, {name!r}, ({', '.join(specs)}), {result_spec})"
            f"({operands[0]}, {name})")
