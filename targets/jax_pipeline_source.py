"""The fixed text of a pipelined `-t jax` program: its header and its driver.

`pase.targets.jax_pipeline` writes the tables and the stages' functions between them.
The driver shares the one-stage program's seeding, command line, error and XLA-warning
helpers (`jax_source.MAIN`'s functions, taken by name so both stay one text).
"""

from __future__ import annotations

from pase.targets.jax_source import JAX_IMPORTS, MAIN, STDLIB_IMPORTS

PIPELINE_PRELUDE = '''\
"""@{graph} as a pipelined JAX training step on {devices} devices, written by pase-opt -t jax.

{stages} stages on {per_stage} devices each, {microbatches} micro-batches per step under the
{schedule} schedule: each stage's layers are jitted on its own mesh (its devices, its
layers' layouts of the pase strategy); tensors and their gradients cross between stages by
a jitted ppermute over the two stages' devices; one SGD step per step.

    XLA_FLAGS=--xla_force_host_platform_device_count={devices} python step.py --steps 3
    python step.py --coordinator HOST:PORT --num-processes N --process-id I  # multi-host
"""

''' + STDLIB_IMPORTS + "from functools import partial\n" + JAX_IMPORTS


def pipeline_prelude(graph: str, devices: int, stages: int, microbatches: int,
                     schedule: str) -> str:
    return PIPELINE_PRELUDE.format(graph=graph, devices=devices, stages=stages,
                                   per_stage=devices // stages, microbatches=microbatches,
                                   schedule=schedule)


def shared_function(name: str) -> str:
    """The text of `def name` (or the `NAME = ...` line) in the one-stage program's MAIN.

        >>> shared_function("fail").splitlines()[0]
        'def fail(message):'
    """
    start = MAIN.index(f"\ndef {name}(") + 1 if f"\ndef {name}(" in MAIN else \
        MAIN.index(f"\n{name} = ") + 1
    end = MAIN.find("\n\n\n", start)
    return MAIN[start:end] + "\n\n"


DRIVER = '''\
class Stage:
    """One stage: its mesh and devices, its shardings, its jitted programs (after
    `compile`), and whether this process runs it (it holds all its devices)."""

    def __init__(self, index, group, lr):
        shape, axes = STAGE_MESHES[index]
        self.index, self.group = index, group
        self.mesh = Mesh(group.reshape(shape), axes)
        mine = [device.process_index == jax.process_index() for device in group]
        if any(mine) and not all(mine):
            fail(f"stage {index}'s devices belong to several processes; give each process "
                 f"whole stages ({DEVICES // STAGES} devices each)")
        self.local = all(mine)
        named = lambda spec: NamedSharding(self.mesh, P(*spec))  # noqa: E731
        self.params = {n: named(row[2]) for n, row in PARAMS.items() if PARAM_STAGE[n] == index}
        self.params |= {row[0]: named(row[3]) for row in SHARED if row[2] == index}
        self.batch = {n: named(where[index]) for n, where in INPUT_STAGES.items()
                      if index in where}
        self.received = {send[0]: named(send[3]) for send in SENDS if send[2] == index}
        self.sent = {}
        for value, source, target, spec, _, _ in SENDS:
            if source == index:  # in the target's layout, on this stage's devices
                target_shape, target_axes = STAGE_MESHES[target]
                self.sent[f"{value}>{target}"] = NamedSharding(
                    Mesh(group.reshape(target_shape), target_axes), P(*spec))
        if index == LOSS_STAGE:
            self.sent["loss"] = NamedSharding(self.mesh, P())
        function = partial(STAGE_FUNCTIONS[index], self.mesh)
        axes = DATA_AXES[index]
        self.replicas = int(np.prod([self.mesh.shape[a] for a in axes]))
        # The params whose gradient sums are kept apart per replica (one copy each along
        # axis 0, added up by the update) over these mesh axes: a data-parallel stage's
        # all over its DATA_AXES, else those of its stacked layers (STACKED).
        self.stacks = {n: axes for n in self.params} if axes else {
            n: stack for n, stack in STACKED[index].items() if n in self.params}
        self.copies_of = {n: int(np.prod([self.mesh.shape[a] for a in stack]))
                          for n, stack in self.stacks.items()}
        self.totals = {n: NamedSharding(self.mesh, P(self.stacks[n], *sharding.spec))
                       if n in self.stacks else sharding
                       for n, sharding in self.params.items()}  # (the gradient sums)

        def forward(params, batch, received):
            # The tensors sent and the pullback (its residuals: what the backward reads of
            # the forward, kept between them as the plan keeps activations); zeros stacked
            # per replica, whose cotangents are the stacked layers' partial gradients
            # (stacked_layer: params the stage reads as params.get(n + "#stack")).
            sinks = {f"{n}#stack": jax.lax.with_sharding_constraint(jnp.zeros(
                self.stacked_shape(n, w.shape), w.dtype), self.totals[n])
                for n, w in params.items() if n in self.stacks}
            staged = lambda p, r, s: function(p | s, batch, r)  # noqa: E731
            return jax.vjp(staged, params, received, sinks)

        def backward(pullback, cotangents, total):
            grads, back, apart = pullback(cotangents)
            grads = grads | {n: apart[f"{n}#stack"] for n in self.stacks}
            return jax.tree.map(jnp.add, total, grads), back

        if axes:
            forward, backward = chunked(CHUNK_FUNCTIONS[index], self.mesh, axes,
                                        self.replicas, CHUNK_WEIGHTS[index])

        def zeros(params):
            return {n: jnp.zeros(self.stacked_shape(n, w.shape), w.dtype)
                    for n, w in params.items()}

        def update(params, total):
            grads = {n: g.sum(axis=0) if n in self.stacks else g for n, g in total.items()}
            return {n: w - lr * RATE_SCALES.get(n, 1) * grads[n]
                    for n, w in params.items()}, grads

        self.jitted = {
            "forward": jax.jit(forward, in_shardings=(self.params, self.batch, self.received),
                               out_shardings=(self.sent, None)),
            "backward": jax.jit(backward, in_shardings=(None, self.sent, self.totals),
                                out_shardings=(self.totals, self.received), donate_argnums=2),
            "zeros": jax.jit(zeros, in_shardings=(self.params,), out_shardings=self.totals),
            "update": jax.jit(update, in_shardings=(self.params, self.totals),
                              out_shardings=(self.params, self.params), donate_argnums=0),
        }

    def stacked_shape(self, name, shape):
        """The shape of a param's gradient sums: one per replica where they are kept apart."""
        return ((self.copies_of[name],) if name in self.stacks else ()) + tuple(shape)

    def compile(self, params, batch, float_type):
        """Lower and compile the stage's programs for these (placed) arrays."""
        spec = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding)  # noqa: E731
        received = {send[0]: abstract(send, self.received[send[0]], float_type)
                    for send in SENDS if send[2] == self.index}
        sent = {f"{send[0]}>{send[2]}": abstract(send, self.sent[f"{send[0]}>{send[2]}"],
                                                 float_type)
                for send in SENDS if send[1] == self.index}
        if self.index == LOSS_STAGE:
            sent["loss"] = jax.ShapeDtypeStruct((), float_type or LOSS_DTYPE,
                                                sharding=self.sent["loss"])
        held = jax.tree.map(spec, params)
        fed = jax.tree.map(spec, batch)
        totals = {n: jax.ShapeDtypeStruct(self.stacked_shape(n, a.shape), a.dtype,
                                          sharding=self.totals[n])
                  for n, a in params.items()}
        arguments = {"forward": (held, fed, received),
                     "zeros": (held,), "update": (held, totals)}
        compiled = {name: lower_and_compile(self.jitted[name], arguments[name])
                    for name in self.jitted if name != "backward"}
        pullback = compiled["forward"].out_info[1]  # (the forward's residuals, as it makes them)
        compiled["backward"] = lower_and_compile(self.jitted["backward"],
                                                 (pullback, sent, totals))
        return compiled


def chunked(function, mesh, axes, replicas, weight):
    """A stage's forward and backward over R chunks of a micro-batch, one per
    data-parallel replica (`DATA_AXES`): `jax.vmap` over the chunks, the chunk axis on
    the data axes, of the chunk's `jax.vjp` (the forward: the tensors sent, joined into
    the batch, the loss the chunks' weighted sum, and the pullbacks, each residual held
    on its replica's devices) and of its pullback (the backward). Each replica's parameter
    gradients stay its own (R copies in the running sum, added up once a step by the
    update) where the plain backward's would be all-reduced every micro-batch; the
    gradients sent back are joined into the batch."""
    def split(tree, axis_of):
        return {k: v if axis_of(k) is None else jnp.moveaxis(v.reshape(
            v.shape[:axis_of(k)] + (replicas, -1) + v.shape[axis_of(k) + 1:]), axis_of(k), 0)
            for k, v in tree.items()}

    def join(tree, axis_of):
        return {k: v.sum(axis=0) if axis_of(k) is None else jnp.moveaxis(v, 0, axis_of(k)).reshape(
            v.shape[1:axis_of(k) + 1] + (-1,) + v.shape[axis_of(k) + 2:]) for k, v in tree.items()}

    def mapped(tree, axis_of):
        return {k: None if axis_of(k) is None else 0 for k in tree}

    def sent_axis(key):  # "value>target" or "loss"
        return None if key == "loss" else SEND_BATCH_AXIS[key.split(">")[0]]

    def forward(params, batch, received):
        def one(chunk_batch, chunk_received):
            return jax.vjp(lambda p, r: function(mesh, p, chunk_batch, r), params,
                           chunk_received)

        sent, pullbacks = jax.vmap(one, in_axes=(mapped(batch, BATCH_AXIS.get),
                                                 mapped(received, SEND_BATCH_AXIS.get)),
                                   spmd_axis_name=axes)(
            split(batch, BATCH_AXIS.get), split(received, SEND_BATCH_AXIS.get))
        joined = {k: v.sum(axis=0) * weight if k == "loss" else v[0] if sent_axis(k) is None
                  else join({k: v}, sent_axis)[k] for k, v in sent.items()}
        on_replicas = NamedSharding(mesh, P(axes))
        return joined, jax.tree.map(
            lambda r: jax.lax.with_sharding_constraint(r, on_replicas), pullbacks)

    def backward(pullbacks, cotangents, total):
        cotangents = {k: v * weight if k == "loss" else v for k, v in cotangents.items()}
        grads, back = jax.vmap(lambda pullback, chunk: pullback(chunk),
                               in_axes=(0, mapped(cotangents, sent_axis)),
                               spmd_axis_name=axes)(pullbacks, split(cotangents, sent_axis))
        return jax.tree.map(jnp.add, total, grads), join(back, SEND_BATCH_AXIS.get)

    return forward, backward


def abstract(send, sharding, float_type):
    """The abstract array of a crossing tensor (f64 with --f64)."""
    dtype = float_type if float_type and "float" in send[5] else send[5]
    return jax.ShapeDtypeStruct(tuple(send[4]), dtype, sharding=sharding)


class Crossing:
    """A tensor from stage `source` to stage `target` and its gradient back: a jitted
    ppermute over the two stages' devices, each target device receiving its block in the
    target's layout (the source computes it in that layout)."""

    def __init__(self, send, stages, float_type):
        value, source, target, spec, shape, dtype = send
        self.source, self.target, self.shape = stages[source], stages[target], tuple(shape)
        self.key, self.value = f"{value}>{target}", value
        target_shape, target_axes = STAGE_MESHES[target]
        both = np.stack([stages[source].group.reshape(target_shape),
                         stages[target].group.reshape(target_shape)])
        mesh = Mesh(both, ("stage", *target_axes))
        self.at_target = NamedSharding(stages[target].mesh, P(*spec))
        self.at_source = NamedSharding(
            Mesh(stages[source].group.reshape(target_shape), target_axes), P(*spec))
        self.whole = NamedSharding(mesh, P("stage", *spec))
        self.abstract = abstract(send, None, float_type)
        self.local = self.source.local or self.target.local
        self.jitted = {
            direction: jax.jit(jax.shard_map(
                partial(jax.lax.ppermute, axis_name="stage", perm=pairs), mesh=mesh,
                in_specs=P("stage", *spec), out_specs=P("stage", *spec)),
                in_shardings=self.whole, out_shardings=self.whole)
            for direction, pairs in (("send", [(0, 1)]), ("return", [(1, 0)]))}
        self.zeros = {}

    def compile(self):
        whole = jax.ShapeDtypeStruct((2, *self.shape), self.abstract.dtype, sharding=self.whole)
        return {name: lower_and_compile(program, (whole,))
                for name, program in self.jitted.items()}

    def move(self, program, array, receiving):
        """`array` (on the other side's devices, or None on a process that holds none)
        onto `receiving`'s side, in `sharding` there."""
        side, into = ((self.target, self.at_target) if receiving == "target"
                      else (self.source, self.at_source))
        pieces = [] if array is None else [
            jnp.expand_dims(shard.data, 0) for shard in array.addressable_shards]
        if side.local:
            if receiving not in self.zeros:
                block = (1, *into.shard_shape(self.shape))
                self.zeros[receiving] = [
                    jax.device_put(np.zeros(block, self.abstract.dtype), device)
                    for device in into.addressable_devices]
            pieces += self.zeros[receiving]
        moved = program(jax.make_array_from_single_device_arrays(
            (2, *self.shape), self.whole, pieces))
        if not side.local:
            return None
        devices = set(into.addressable_devices)
        return jax.make_array_from_single_device_arrays(
            self.shape, into, [shard.data[0] for shard in moved.addressable_shards
                               if shard.device in devices])


def lower_and_compile(jitted, arguments):
    return compile_summarised(jitted.lower(*arguments))


def microbatch(array, name, index):
    """Micro-batch `index` of an input (the whole input when it has no batch axis)."""
    axis = BATCH_AXIS[name]
    if axis is None:
        return array
    rows = array.shape[axis] // MICROBATCHES
    return np.take(array, range(index * rows, (index + 1) * rows), axis=axis)


def place(array, sharding):
    array = np.asarray(array)
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def run_step(stages, crossings, shared, compiled, params, batches, serial):
    """One training step in the schedule's ORDER: the new params, the micro-batches'
    losses (on the loss's stage) and the summed gradients. `serial`: wait for each
    program before starting the next (XLA's CPU client orders programs on a device by
    their data only, and two programs whose collectives wait on each other's devices
    would deadlock)."""
    wait = jax.block_until_ready if serial else (lambda tree: tree)
    received = [[{} for _ in range(MICROBATCHES)] for _ in stages]
    sent = [[None] * MICROBATCHES for _ in stages]
    residuals = [[None] * MICROBATCHES for _ in stages]  # each forward's, to its backward
    back = [[None] * MICROBATCHES for _ in stages]
    cotangents = [[{} for _ in range(MICROBATCHES)] for _ in stages]
    totals = [compiled[s.index]["zeros"](params[s.index]) if s.local else None for s in stages]
    for kind, index, m in ORDER:
        if kind in ("send", "return"):
            crossing = crossings[index]
            if not crossing.local:
                continue
            program = compiled[("crossing", index)][kind]
            if kind == "send":
                array = sent[crossing.source.index][m]
                array = array[crossing.key] if array is not None else None
                received[crossing.target.index][m][crossing.value] = wait(crossing.move(
                    program, array, "target"))
            else:
                array = back[crossing.target.index][m]
                array = array[crossing.value] if array is not None else None
                cotangents[crossing.source.index][m][crossing.key] = wait(crossing.move(
                    program, array, "source"))
            continue
        if kind == "share":
            totals = shared_sums(stages, shared, compiled, totals)
            continue
        stage = stages[index]
        if not stage.local:
            continue
        programs = compiled[index]
        if kind == "forward":
            sent[index][m], residuals[index][m] = wait(programs["forward"](
                params[index], batches[index][m], received[index][m]))
        elif kind == "backward":
            if index == LOSS_STAGE:
                cotangents[index][m]["loss"] = jnp.full_like(sent[index][m]["loss"],
                                                             LOSS_WEIGHT)
            totals[index], back[index][m] = wait(programs["backward"](
                residuals[index][m], cotangents[index][m], totals[index]))
            residuals[index][m] = None  # (freed)
        else:
            params[index], totals[index] = wait(programs["update"](params[index],
                                                                   totals[index]))
    losses = [sent[LOSS_STAGE][m]["loss"] for m in range(MICROBATCHES)] \\
        if stages[LOSS_STAGE].local else None
    return params, losses, totals


def shared_sums(stages, shared, compiled, totals):
    """The gradient sums with each param read in several stages summed over its copies
    (each copy crosses to the other stage once a step, in the reader's layout), so that
    every copy takes the same update."""
    totals = [dict(total) if total is not None else None for total in totals]
    for number, (name, owner, other, _, _, _) in enumerate(SHARED):
        crossing = shared[number]
        if not crossing.local:
            continue
        programs = compiled[("shared", number)]
        mine = totals[owner][name] if stages[owner].local else None
        theirs = totals[other][name] if stages[other].local else None
        ahead = crossing.move(programs["send"], None if mine is None else jax.device_put(
            mine, crossing.at_source), "target")
        back = crossing.move(programs["return"], theirs, "source")
        if stages[owner].local:
            totals[owner][name] = mine + jax.device_put(back, mine.sharding)
        if stages[other].local:
            totals[other][name] = theirs + ahead
    return totals


def combined(values, shapes):
    """Values by name, each held by one process (None on the others), on every process."""
    if jax.process_count() == 1:
        return values
    from jax.experimental import multihost_utils

    filled = {name: np.zeros(shapes[name][0], shapes[name][1]) if value is None
              else np.asarray(value) for name, value in values.items()}
    gathered = multihost_utils.process_allgather(filled)
    return {name: np.asarray(value).sum(axis=0) for name, value in gathered.items()}
'''

PIPELINE_MAIN = '''\
def main(argv=None):
    args = arguments(argv)
    if jax is None:
        fail(f"this program needs JAX ({MISSING}): pip install 'pase[jax]'")
    if X64 or args.f64:
        jax.config.update("jax_enable_x64", True)
    if args.coordinator:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    float_type = "float64" if args.f64 else None
    devices = jax.devices()
    if len(devices) < DEVICES:
        fail(f"this step runs on {DEVICES} devices, but JAX has {len(devices)} "
             f"({devices[0].platform}); on a CPU machine run it with "
             f"XLA_FLAGS=--xla_force_host_platform_device_count={DEVICES}")
    groups = np.array(devices[:DEVICES]).reshape(STAGES, DEVICES // STAGES)
    stages = [Stage(index, groups[index], args.lr) for index in range(STAGES)]
    crossings = [Crossing(send, stages, float_type) for send in SENDS]
    shared = [Crossing(row, stages, float_type) for row in SHARED]
    if args.data:
        with np.load(args.data) as data:
            initial, inputs = dict(data), dict(data)
    else:
        rng = np.random.default_rng(args.seed)
        initial, inputs = seeded(PARAMS, rng, float_type), seeded(INPUTS, rng, float_type)
    kinds = {**{n: row[3][0] for n, row in PARAMS.items()},
             **{n: row[3][0] for n, row in INPUTS.items()}}
    cast = lambda n, a, dtype: np.asarray(a).astype(  # noqa: E731
        dtype if kinds[n] in ("ints", "lengths") else float_type or dtype)
    params = [{n: place(cast(n, initial[n], PARAMS[n][1]), sharding)
               for n, sharding in stage.params.items()} if stage.local else None
              for stage in stages]
    batches = [[{n: place(microbatch(cast(n, inputs[n], INPUTS[n][1]), n, m), sharding)
                 for n, sharding in stage.batch.items()} for m in range(MICROBATCHES)]
               if stage.local else None for stage in stages]
    start = time.perf_counter()
    try:
        compiled = {stage.index: stage.compile(params[stage.index], batches[stage.index][0],
                                               float_type)
                    for stage in stages if stage.local}
        compiled |= {("crossing", k): crossing.compile()
                     for k, crossing in enumerate(crossings) if crossing.local}
        compiled |= {("shared", k): crossing.compile()
                     for k, crossing in enumerate(shared) if crossing.local}
    except Exception as error:  # XLA's errors have no common class
        fail(f"XLA could not compile the step: {type(error).__name__}: "
             f"{(str(error).strip().splitlines() or [''])[0]}")
    compile_seconds = time.perf_counter() - start
    step_losses, grads = [], []
    start = time.perf_counter()
    for _ in range(args.steps):
        params, losses, grads = run_step(stages, crossings, shared, compiled, params, batches,
                                         devices[0].platform == "cpu")
        step_losses.append(losses)
    jax.block_until_ready([p for p in params if p is not None])
    step_seconds = (time.perf_counter() - start) / args.steps
    local_losses = None if step_losses[0] is None else np.array(
        [LOSS_WEIGHT * sum(float(np.asarray(loss)) for loss in losses)
         for losses in step_losses])
    shapes = {"losses": ((args.steps,), "float64")}
    shapes |= {f"{kind}/{n}": (row[0], float_type or row[1]) for n, row in PARAMS.items()
               for kind in ("param", "grad")}
    values = {"losses": local_losses}
    for stage in stages if args.save else []:
        for n in [n for n in stage.params if PARAM_STAGE[n] == stage.index]:
            values[f"param/{n}"] = params[stage.index][n] if stage.local else None
            values[f"grad/{n}"] = grads[stage.index][n] if stage.local else None
    values = combined(values, shapes)
    if jax.process_index() == 0:
        for number, loss in enumerate(values["losses"], 1):
            say(f"step {number} loss {loss:.10g}")
    if args.save and jax.process_index() == 0:
        saved = {name: np.asarray(value) for name, value in values.items()}
        saved |= {"compile_seconds": compile_seconds, "step_seconds": step_seconds,
                  "modelled_step": MODELLED_STEP,
                  "sends": np.array([[s[0], str(s[1]), str(s[2])] for s in SENDS],
                                    dtype=str).reshape(len(SENDS), 3)}
        for key, programs in compiled.items():
            where = f"stage{key}" if isinstance(key, int) else f"{key[0]}{key[1]}"
            for name, program in programs.items():
                saved[f"hlo/{where}/{name}"] = np.array(program.as_text())
        np.savez(args.save, **saved)


if __name__ == "__main__":
    main()
'''


_BATCH = """\
        self.batch = {n: named(where[index]) for n, where in INPUT_STAGES.items()
                      if index in where}
"""
_BATCHES = """\
                 for n, sharding in stage.batch.items()} for m in range(MICROBATCHES)]
               if stage.local else None for stage in stages]
"""
_COUNTED = """\
    # The labels the whole batch keeps, counted before the first micro-batch: every
    # micro-batch's loss divides by it (at least 1: all ignored, loss 0 and gradient 0).
    kept = max(sum(int(kept_labels({n: microbatch(cast(n, inputs[n], INPUTS[n][1]), n, m)
                                    for n in INPUTS})) for m in range(MICROBATCHES)), 1)
    for m in range(MICROBATCHES) if stages[LOSS_STAGE].local else ():
        batches[LOSS_STAGE][m]["kept labels"] = place(np.asarray(
            kept, float_type or LOSS_DTYPE), stages[LOSS_STAGE].batch["kept labels"])
"""


def with_counted_labels(text: str) -> str:
    """A pipeline's `__main__` text for a loss with an ignore_index in M > 1
    micro-batches: `main` counts the labels the whole batch keeps (`kept_labels` of each
    micro-batch) before the first, and the loss's stage reads the count as the entry
    "kept labels" of every micro-batch's batch (replicated). Other programs keep the
    text without it.

        >>> "kept labels" in with_counted_labels(pipeline_main())
        True
    """
    assert _BATCH in text
    assert _BATCHES in text
    return text.replace(_BATCH, _BATCH + """\
        if index == LOSS_STAGE:  # the labels the whole batch keeps
            self.batch["kept labels"] = named(())
""", 1).replace(_BATCHES, _BATCHES.replace(
        "items()}", "items()\n                 if n in INPUTS}") + _COUNTED, 1)


def pipeline_main() -> str:
    """The driver and `main` of a pipelined program, with the shared helpers."""
    shared = "".join(shared_function(name) for name in (
        "seeded", "REMATERIALIZATION", "compile_summarised", "fail", "say", "arguments"))
    return shared + DRIVER + "\n\n" + PIPELINE_MAIN
