"""The training step of a pipelined `-t jax` program under the graph's `pase.training`:
optimizer, precision and ZeRO per stage (docs/jax.md, "The training step").

`pase.targets.jax_pipeline` writes the plain SGD fp32 program (recomputation it writes
itself: `jax_training.checkpointed` within each stage's function); for other options
`with_pipeline_training` edits its driver so that

- each stage keeps the optimizer state of the params it holds (`stage.kept`, zeros at
  the start, pase-autodiff's `w_m`, `w_v`, `w_t`) and its update is the optimizer's
  (`jax_training.UPDATES`, on the gradients the stage summed over its micro-batches);
- each stage's function computes in bf16/fp16 (`in_precision`): params, float inputs
  and received tensors cast as it reads them, the tensors it sends in that precision,
  its loss in fp32; the fp32 master params, their gradients and the state stay in the
  update;
- the state is held in `STATE_LAYOUTS` (per param and stage holding it): under ZeRO
  stage 1 or more sharded over the stage's mesh axes its param is replicated on (the
  stage's data-parallel replicas), the summed gradients reduced into `GRAD_LAYOUTS`
  from stage 1 (in the compute precision, as the stage's replicas sum them) and the
  params stored in `PARAM_LAYOUTS` at stage 3 (all-gathered by the layout constraint of
  their first reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pase.dialect import dnn
from pase.dialect.training_options import StepOptions, zero_stage
from pase.targets.jax_mesh import spec_entries
from pase.targets.jax_training import (
    DTYPES,
    LOW,
    UPDATES,
    Spec,
    option_lines,
    with_default_rate,
    with_fp32_cross_entropy,
    zero_layout,
)

if TYPE_CHECKING:
    from pase.targets.jax_pipeline import _PipelineEmitter

FUNCTIONS = '''\
def initial_state(stage, float_type):
    """A stage's optimizer state at the start: zeros, in its layout (STATE_LAYOUTS)."""
    def zeros():
        return {n: {kind: jnp.zeros(() if kind == "t" else tuple(PARAMS[n][0]),
                                    float_type or PARAMS[n][1]) for kind in STATE_KINDS}
                for n in stage.params}

    return jax.jit(zeros, out_shardings=stage.state)()


def replica_sum(total):
    """A stage's fp32 gradient sums (one per replica, along axis 0) summed over its
    replicas in PRECISION: `lax.reduce`, since `jnp.sum` would widen bf16 to f32."""
    low = total if PRECISION == "fp32" else total.astype(getattr(jnp, COMPUTE))
    return jax.lax.reduce(low, np.array(0, low.dtype), jax.lax.add, (0,))


def added_axes(held, spec):
    """The dim and the mesh axes a param's layout `spec` adds to its layout `held` (its
    ZeRO shard: its replicas, on one dim), or None where it adds none."""
    def of(entry):
        return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)

    rank = max(len(held), len(spec))
    held, spec = (tuple(s) + (None,) * (rank - len(s)) for s in (held, spec))
    return next(((k, tuple(a for a in of(entry) if a not in of(held[k])))
                 for k, entry in enumerate(spec) if entry != held[k]), None)


def scattered(mesh, axes, held, spec, total):
    """A stage's gradient sums (one per replica along axis 0, over the data `axes`; each
    device's block that of the param's layout `held`) summed over its replicas in
    PRECISION into `spec`, written out in a shard_map over the stage's whole mesh:
    `psum_scatter` (a reduce-scatter) over the axes `spec` adds to `held` where it shards
    the param (ZeRO 1 and up: the data axes), `psum` (an all-reduce) where it does not."""
    low = total if PRECISION == "fp32" else total.astype(getattr(jnp, COMPUTE))
    added = added_axes(held, spec)

    def local(block):
        if added is None:
            return jax.lax.psum(block[0], axes)
        return jax.lax.psum_scatter(block[0], added[1], scatter_dimension=added[0], tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P(axes, *held),
                         out_specs=P(*spec))(low)


def in_precision(function):
    """A stage's function computing in PRECISION: its params, float inputs and received
    tensors cast to COMPUTE as it reads them (the fp32 master params stay in the update;
    their gradients come back in fp32), its loss in fp32."""
    def cast(value):
        floating = jnp.issubdtype(value.dtype, jnp.floating)
        return value.astype(getattr(jnp, COMPUTE)) if floating else value

    def computed(mesh, params, batch, received):
        batch = {n: value if n == "kept labels" else cast(value) for n, value in batch.items()}
        sent = function(mesh, jax.tree.map(cast, params), batch, jax.tree.map(cast, received))
        return {k: v.astype(jnp.promote_types(jnp.float32, v.dtype)) if k == "loss" else v
                for k, v in sent.items()}

    return computed


'''

PRECISION_LINES = '''\
STAGE_FUNCTIONS = [in_precision(function) for function in STAGE_FUNCTIONS]
CHUNK_FUNCTIONS = [function and in_precision(function) for function in CHUNK_FUNCTIONS]
'''

DRIVER_EDITS = [
    ("""\
            staged = lambda p, r, s: function(p | s, batch, r)  # noqa: E731
""", """\
            staged = lambda p, r, s: function(p | s, batch, r)  # noqa: E731
            if any(levels.get(index, 0) >= 3 for levels in ZERO.values()):  # (`gathered`)
                staged = jax.checkpoint(staged, policy=jax.checkpoint_policies.
                                        save_anything_except_these_names("gathered"))
"""),
    ("""\
                       for n, sharding in self.params.items()}  # (the gradient sums)
""", """\
                       for n, sharding in self.params.items()}  # (the gradient sums)
        # ZeRO: the optimizer state and the summed gradients (stage 1) and the stored
        # params (3) sharded over each param's replicas on this stage's mesh.
        self.state = {n: {kind: named(() if kind == "t" else STATE_LAYOUTS[n][index])
                          for kind in STATE_KINDS} for n in self.params}
        self.summed = {n: named(GRAD_LAYOUTS[n][index]) for n in self.params}
        # The fp32 master params in MASTER_LAYOUTS (sharded with the state under bf16/fp16
        # from ZeRO 1), the copies the forward and backward read in PARAM_LAYOUTS, in the
        # compute precision (`copies`: cast where the master is held, then gathered).
        self.copies = {n: named(PARAM_LAYOUTS[n][index]) for n in self.params}
        self.params = {n: named(MASTER_LAYOUTS[n][index]) for n in self.params}
        self.kept = None  # the optimizer state's arrays (initial_state)
"""),
    ("""\
        def update(params, total):
            grads = {n: g.sum(axis=0) if n in self.stacks else g for n, g in total.items()}
            return {n: w - lr * RATE_SCALES.get(n, 1) * grads[n]
                    for n, w in params.items()}, grads
""", """\
        manual = bool(axes) and all(a in axes for a, k in self.mesh.shape.items() if k > 1)
        held = {n: tuple(sharding.spec)[1:] if n in self.stacks else ()
                for n, sharding in self.totals.items()}

        def over_data(n):  # a shard over exactly the replicas' axes, each device's block
            added = added_axes(held[n], GRAD_LAYOUTS[n][index])  # its replica's sum
            return n in self.stacks and (manual or added is not None
                                         and set(added[1]) == set(self.stacks[n]))

        shards = {n: over_data(n) for n in self.params}

        def update(params, total, state):
            # The micro-batches' sums (fp32) reduced over the replicas in PRECISION, into
            # the shard from ZeRO 1 (docs/cost-model.md, "ZeRO and bf16/fp16 in the JAX
            # program"), then widened for the update; by a shard_map's reduce-scatter
            # (`scattered`) where the data axes are the stage's whole mesh or the shard's.
            grads = {n: (scattered(self.mesh, self.stacks[n], held[n], GRAD_LAYOUTS[n][index],
                                   g) if shards[n] else jax.lax.with_sharding_constraint(
                             replica_sum(g) if n in self.stacks else g, self.summed[n])
                         ).astype(g.dtype)
                     for n, g in total.items()}
            params, state = optimizer_update(params, grads, state, lr)
            return params, grads, state
"""),
    ("""\
            "update": jax.jit(update, in_shardings=(self.params, self.totals),
                              out_shardings=(self.params, self.params), donate_argnums=0),
""", """\
            "update": jax.jit(update, in_shardings=(self.params, self.totals, self.state),
                              out_shardings=(self.params, self.summed, self.state),
                              donate_argnums=(0, 2)),
"""),
    ('"zeros": (held,), "update": (held, totals)}',
     '"zeros": (held,),\n'
     '                     "update": (held, totals, jax.tree.map(spec, self.kept))}'),
    ("""\
            params[index], totals[index] = wait(programs["update"](params[index],
                                                                   totals[index]))
""", """\
            params[index], totals[index], stage.kept = wait(programs["update"](
                params[index], totals[index], stage.kept))
"""),
    ("    start = time.perf_counter()\n    try:\n", """\
    for stage in stages:  # the optimizer state at the start: zeros, in STATE_LAYOUTS
        stage.kept = initial_state(stage, float_type) if stage.local else None
    start = time.perf_counter()
    try:
"""),
    ("""\
            values[f"grad/{n}"] = grads[stage.index][n] if stage.local else None
""", """\
            values[f"grad/{n}"] = grads[stage.index][n] if stage.local else None
            values |= {f"param/{n}_{kind}": stage.kept[n][kind] if stage.local else None
                       for kind in STATE_KINDS}
"""),
    ("""\
               for kind in ("param", "grad")}
""", """\
               for kind in ("param", "grad")}
    shapes |= {f"param/{n}_{kind}": (() if kind == "t" else row[0], float_type or row[1])
               for n, row in PARAMS.items() for kind in STATE_KINDS}
"""),
    ("one SGD step per step.", "one update per step\n(OPTIMIZER, PRECISION; ZeRO as "
     "STATE_LAYOUTS, GRAD_LAYOUTS, PARAM_LAYOUTS and MASTER_LAYOUTS say)."),
    ("""\
        self.jitted = {
            "forward": jax.jit(forward, in_shardings=(self.params, self.batch, self.received),
""", """\
        def copies(params):
            return {n: jax.lax.with_sharding_constraint(low(w), self.params[n])
                    for n, w in params.items()}

        self.jitted = {
            "copies": jax.jit(copies, in_shardings=(self.params,), out_shardings=self.copies),
            "forward": jax.jit(forward, in_shardings=(self.copies, self.batch, self.received),
"""),
    ("""\
        held = jax.tree.map(spec, params)
""", """\
        held = jax.tree.map(spec, params)
        low_type = lambda a: a.dtype if PRECISION == "fp32" else jnp.dtype(COMPUTE)  # noqa: E731
        copied = {n: jax.ShapeDtypeStruct(a.shape, low_type(a), sharding=self.copies[n])
                  for n, a in params.items()}
"""),
    ("""\
        arguments = {"forward": (held, fed, received),
""", """\
        arguments = {"copies": (held,), "forward": (copied, fed, received),
"""),
    ("""\
    totals = [compiled[s.index]["zeros"](params[s.index]) if s.local else None for s in stages]
""", """\
    totals = [compiled[s.index]["zeros"](params[s.index]) if s.local else None for s in stages]
    copies = [compiled[s.index]["copies"](params[s.index]) if s.local and PRECISION != "fp32"
              else params[s.index] for s in stages]  # the forward's, from the fp32 master
"""),
    ("""\
            sent[index][m], residuals[index][m] = wait(programs["forward"](
                params[index], batches[index][m], received[index][m]))
""", """\
            sent[index][m], residuals[index][m] = wait(programs["forward"](
                copies[index], batches[index][m], received[index][m]))
"""),
]
"""The lines of the pipeline's driver (`jax_pipeline_source`) that change with the
step's optimizer state and ZeRO layouts."""

LOW_PRECISION_EDIT = (
    '    dtype = float_type if float_type and "float" in send[5] else send[5]\n',
    '    dtype = float_type if float_type and "float" in send[5] else send[5]\n'
    '    if send in SENDS and "float" in send[5]:  # activations cross in PRECISION\n'
    '        dtype = getattr(jnp, COMPUTE)\n')
"""Under bf16/fp16 the activations (and their gradients) cross between stages in that
precision; the gradient sums of a param shared by two stages (`SHARED`) stay fp32."""


def with_pipeline_training(program: str, emitter: _PipelineEmitter,
                           options: StepOptions) -> str:
    """`program` (the plain SGD fp32 pipeline) with the step `options` asks for."""
    zero, state, grads, stored, master = stage_layouts(emitter, options)
    tables = [*option_lines(options),
              _table("ZERO", zero, "each param's ZeRO stage"),
              _table("STATE_LAYOUTS", state, "the optimizer state's layout"),
              _table("GRAD_LAYOUTS", grads, "where the summed gradients are reduced to"),
              _table("PARAM_LAYOUTS", stored, "where the forward's copies are held"),
              _table("MASTER_LAYOUTS", master, "where the fp32 master params are stored"), ""]
    program = _replaced(program, "\nORDER = ", "\n" + "\n".join(tables) + "ORDER = ")
    update = UPDATES[options.optimizer].replace("def update(", "def optimizer_update(", 1)
    program = _replaced(program, "\nSTAGE_FUNCTIONS = [",
                        "\n" + update + "\n\n" + LOW + "\n\n" + FUNCTIONS
                        + "STAGE_FUNCTIONS = [")
    for old, new in DRIVER_EDITS:
        program = _replaced(program, old, new)
    if options.precision in DTYPES:
        start = program.index("\nCHUNK_FUNCTIONS = [")
        end = program.index("\n", start + 1) + 1
        program = program[:end] + PRECISION_LINES + program[end:]
        program = with_fp32_cross_entropy(_replaced(program, *LOW_PRECISION_EDIT))
    return with_default_rate(program, options.optimizer)


def _replaced(program: str, old: str, new: str) -> str:
    assert program.count(old) == 1, old
    return program.replace(old, new)


def _table(name: str, rows: dict[str, dict[int, int]] | dict[str, dict[int, Spec]],
           what: str) -> str:
    return "\n".join([f"{name} = {{  # param: {{stage holding it: {what} on its mesh}}",
                      *(f"    {k!r}: {v!r}," for k, v in rows.items()), "}"])


def stage_layouts(emitter: _PipelineEmitter, options: StepOptions) -> tuple[
        dict[str, dict[int, int]], dict[str, dict[int, Spec]], dict[str, dict[int, Spec]],
        dict[str, dict[int, Spec]], dict[str, dict[int, Spec]]]:
    """Per param and stage holding it (its first reader's, and each other stage that
    reads it): its ZeRO stage (that reader's) and the layouts of its optimizer state,
    summed gradients, the copy the forward reads and the fp32 master on the stage's mesh
    (`jax_training.zero_layout`: sharded over the stage's mesh axes the param is replicated
    on; the master with the state under bf16/fp16 from ZeRO 1, the copy from ZeRO 3)."""
    zero: dict[str, dict[int, int]] = {}
    state: dict[str, dict[int, Spec]] = {}
    grads: dict[str, dict[int, Spec]] = {}
    stored: dict[str, dict[int, Spec]] = {}
    master: dict[str, dict[int, Spec]] = {}
    for op in emitter.micro.body.block.ops:
        if not isinstance(op, dnn.ParamOp):
            continue
        name = emitter.names[op.output]
        first: dict[int, tuple[dnn.LayerOp | None, int]] = {}
        for layer, operand in emitter.readers(op.output):
            first.setdefault(emitter.stage[layer], (layer, operand))
        zero[name], state[name], grads[name], stored[name], master[name] = {}, {}, {}, {}, {}
        for stage, (reader, index) in (first or {0: (None, 0)}).items():
            shape = emitter.emitters[stage].shape
            mesh = {f"m{k}": size for k, size in enumerate(shape)}
            held: Spec = () if reader is None else spec_entries(
                reader.iteration_space().operands[index], emitter.emitters[stage].axes[reader])
            used = {a for entry in held if entry is not None
                    for a in ((entry,) if isinstance(entry, str) else entry)}
            replicas = tuple((a, s) for a, s in mesh.items() if a not in used)
            level = 0 if reader is None else zero_stage(reader, options)
            sharded = zero_layout(held, replicas, tuple(op.output.type.shape.sizes), mesh) \
                if level >= 1 else held
            zero[name][stage], state[name][stage] = level, sharded
            grads[name][stage] = sharded if level >= 1 else held
            stored[name][stage] = sharded if level >= 3 else held
            master[name][stage] = sharded if level >= (
                3 if options.precision == "fp32" else 1) else held
    return zero, state, grads, stored, master
