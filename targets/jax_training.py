"""The training step of a `-t jax` program under the graph's `pase.training`: optimizer,
precision, recomputation and ZeRO (docs/jax.md, "The training step").

`pase.targets.jax` writes the plain SGD fp32 program; for other options `with_training`
swaps its step for one that

- updates with momentum or Adam, its state a pytree `{param: {"m", "v", "t"}}` of zeros
  at the start (`STATE_KINDS`), as pase-autodiff's state tensors `w_m`, `w_v`, `w_t`;
- computes the forward and backward in bf16/fp16 (`PRECISION`): params and float inputs
  cast as the forward reads them, the fp32 master params and state in the update, the
  loss in fp32;
- keeps the optimizer state in `STATE_LAYOUTS`: under ZeRO stage 1 or more sharded over
  the mesh axes its parameter is replicated on (the layer's data-parallel replicas),
  the gradients too from stage 2 (`GRAD_LAYOUTS`, a reduce-scatter where stage 0 has an
  all-reduce) and the params themselves at stage 3 (`PARAM_LAYOUTS`, all-gathered by
  the layout constraint of their first reader);

and `checkpointed` wraps runs of recomputed layers in `jax.checkpoint`. On a plan that is
data-parallel on every mesh axis the step writes ZeRO's collectives out (`jax_zero`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from xdsl.ir import Operation, SSAValue

from pase.dialect import dnn
from pase.dialect.dnn.seeding import LEARNING_RATE, LEARNING_RATES
from pase.dialect.dnn.training import OPTIMIZER_HYPERPARAMETERS, OPTIMIZER_STATES
from pase.dialect.pase import segment_of
from pase.dialect.training_options import StepOptions, recomputed
from pase.targets.jax_zero import LAYOUT_EDIT, MANUAL_STEP

Spec = tuple[str | tuple[str, ...] | None, ...]
"""A `PartitionSpec`'s entries: per tensor dim, no mesh axis, one, or several."""

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}

UPDATES = {
    "sgd": '''\
def update(params, grads, state, lr):
    """SGD: p - lr g (lr times RATE_SCALES's factor for a param with selected dims)."""
    return {name: params[name] - lr * RATE_SCALES.get(name, 1) * grads[name]
            for name in params}, state
''',
    "momentum": '''\
def update(params, grads, state, lr):
    """SGD with momentum (PyTorch's form): m' = beta m + g, p' = p - lr m'."""
    new_params, new_state = {}, {}
    for name, param in params.items():
        velocity = BETA1 * state[name]["m"] + grads[name]
        rate = lr * RATE_SCALES.get(name, 1)
        new_params[name], new_state[name] = param - rate * velocity, {"m": velocity}
    return new_params, new_state
''',
    "adam": '''\
def update(params, grads, state, lr):
    """Adam with bias correction (Kingma and Ba, Algorithm 1); t counts the steps."""
    new_params, new_state = {}, {}
    for name, param in params.items():
        grad, old = grads[name], state[name]
        count = old["t"] + 1
        first = BETA1 * old["m"] + (1 - BETA1) * grad
        second = BETA2 * old["v"] + (1 - BETA2) * grad * grad
        step = lr * (first / (1 - BETA1**count)) / (jnp.sqrt(second / (1 - BETA2**count)) + EPS)
        new_params[name] = param - step
        new_state[name] = {"m": first, "v": second, "t": count}
    return new_params, new_state
''',
}

STEP = '''\
def make_step(mesh, lr, with_grads=False):
    """The jitted training step: (params, state, batch) -> (updated params, updated
    state, loss), and the gradients `with_grads` (for --save). The params are the fp32
    master weights, stored in MASTER_LAYOUTS; the forward reads copies of them in
    PARAM_LAYOUTS (in COMPUTE under bf16/fp16: cast where the master is held, then
    gathered); the gradients, taken of those copies, are reduced into GRAD_LAYOUTS in
    the copies' precision (a reduce-scatter to the shard under ZeRO 1 or more, an
    all-reduce at 0) before the update; the optimizer state is held in STATE_LAYOUTS.
    The params and the state are donated: the updated ones take their buffers."""
    stored = {name: NamedSharding(mesh, P(*MASTER_LAYOUTS[name])) for name in PARAMS}
    copied = {name: NamedSharding(mesh, P(*PARAM_LAYOUTS[name])) for name in PARAMS}
    summed = {name: NamedSharding(mesh, P(*GRAD_LAYOUTS[name])) for name in PARAMS}
    kept = {name: {kind: NamedSharding(mesh, P() if kind == "t" else P(*STATE_LAYOUTS[name]))
                   for kind in STATE_KINDS} for name in PARAMS}
    fed = {name: NamedSharding(mesh, P(*row[2])) for name, row in INPUTS.items()}

    def step(params, state, batch):
        copies = {name: jax.lax.with_sharding_constraint(jax.lax.with_sharding_constraint(
            low(param), stored[name]), copied[name]) for name, param in params.items()}
        loss, grads = jax.value_and_grad(lambda c: loss_fn(mesh, c, batch))(copies)
        grads = {name: jax.lax.with_sharding_constraint(grad, summed[name])
                 .astype(params[name].dtype) for name, grad in grads.items()}
        params, state = update(params, grads, state, lr)
        return params, state, loss, *([grads] if with_grads else [])

    shardings = (stored, kept, NamedSharding(mesh, P()), *([summed] if with_grads else []))
    step = jax.jit(step, in_shardings=(stored, kept, fed), out_shardings=shardings,
                   donate_argnums=(0, 1))
    return step, stored, fed, kept
'''

LOW = '''\
def low(param):
    """A master param in the forward's precision (COMPUTE under bf16/fp16)."""
    return param if PRECISION == "fp32" else param.astype(getattr(jnp, COMPUTE))
'''
"""The cast of an fp32 master param to the copy the forward reads (a program's helper)."""

STEP_HELPERS = "\n\n" + LOW + '''

def initial_state(kept, float_type):
    """The optimizer state at the start: zeros, in its layout."""
    def zeros():
        return {name: {kind: jnp.zeros(() if kind == "t" else tuple(row[0]),
                                       float_type or row[1])
                       for kind in STATE_KINDS} for name, row in PARAMS.items()}

    return jax.jit(zeros, out_shardings=kept)()


def named_state(state):
    """The state by pase-autodiff's names of its tensors: w_m, w_v, w_t."""
    return {f"{name}_{kind}": value for name, kinds in state.items()
            for kind, value in kinds.items()}
'''

LOW_PRECISION = '''\
def loss_fn(mesh, params, batch):
    """The forward in PRECISION: params and float inputs cast to it as they are read (the
    fp32 master params stay in the update; their gradients come back in fp32), the loss
    in fp32."""
    def cast(value):
        floating = jnp.issubdtype(value.dtype, jnp.floating)
        return value.astype(getattr(jnp, COMPUTE)) if floating else value

    loss = forward(mesh, jax.tree.map(cast, params), jax.tree.map(cast, batch))
    return loss.astype(jnp.promote_types(jnp.float32, loss.dtype))
'''

MAIN_EDITS = [
    ("    step, held, fed = make_step(mesh, args.lr, with_grads=bool(args.save))\n",
     "    step, held, fed, kept = make_step(mesh, args.lr, with_grads=bool(args.save))\n"),
    ("    batch = place(inputs, INPUTS, fed, float_type)\n",
     "    batch = place(inputs, INPUTS, fed, float_type)\n"
     "    state = initial_state(kept, float_type)\n"),
    ("lowered = step.lower(params, batch)", "lowered = step.lower(params, state, batch)"),
    ("params, loss, *grads = compiled(params, batch)",
     "params, state, loss, *grads = compiled(params, state, batch)"),
    ('        saved |= {f"param/{k}": v for k, v in gathered(params).items()}\n',
     '        saved |= {f"param/{k}": v for k, v in gathered(params).items()}\n'
     '        saved |= {f"param/{k}": v for k, v in gathered(named_state(state)).items()}\n'),
    ("        gathered(params), gathered(grads[0])  #",
     "        gathered(params), gathered(grads[0]), gathered(named_state(state))  #"),
]
"""The lines of `MAIN` (`pase.targets.jax_source`) that change with the step's state."""


def with_training(program: str, options: StepOptions, layouts: dict[str, Spec],
                  replicas: dict[str, tuple[tuple[str, int], ...]],
                  stages: dict[str, int], mesh: dict[str, int],
                  manual: tuple[tuple[str, ...], list[str]] = ((), [])) -> str:
    """`program` (the plain SGD fp32 one) with the step `options` asks for; `layouts`:
    each param's held spec, `replicas`: the mesh axes (name, size) it is replicated on,
    `stages`: its ZeRO stage, `mesh`: the size of each mesh axis; `manual`: the plan's
    data-parallel axes and their tables (`jax_zero`), whose collectives the step then
    writes out where every param's ZeRO shard is over exactly those axes."""
    state_layouts = zero_layouts(layouts, replicas, stages, mesh,
                                 {name: _sizes(program, name) for name in layouts})
    data, manual_tables = manual
    data = manual_step_axes(layouts, replicas, stages, mesh, state_layouts, data)
    tables = [
        *option_lines(options),
        *(manual_tables if data else []),
        f"ZERO = {stages!r}  # each param's ZeRO stage",
        _table("STATE_LAYOUTS", state_layouts, "the optimizer state's layout"),
        _table("GRAD_LAYOUTS", {n: state_layouts[n] if stages[n] >= 1 else layouts[n]
                                for n in layouts}, "where the gradients are reduced to"),
        _table("PARAM_LAYOUTS", {n: state_layouts[n] if stages[n] >= 3 else layouts[n]
                                 for n in layouts}, "where the forward's copies are held"),
        _table("MASTER_LAYOUTS", {n: state_layouts[n] if stages[n] >= (
            3 if options.precision == "fp32" else 1) else layouts[n] for n in layouts},
            "where the fp32 master params are stored"),
        "",
    ]
    start = program.index("def make_step(mesh, lr, with_grads=False):")
    end = program.index("\ndef seeded(")
    step = (STEP if not data else MANUAL_STEP) + STEP_HELPERS
    program = program[:start] + UPDATES[options.optimizer] + "\n\n" + step + program[end:]
    if data:
        program = program.replace(*LAYOUT_EDIT, 1)
    for old, new in MAIN_EDITS:
        assert program.count(old) == 1, old
        program = program.replace(old, new)
    program = with_default_rate(program, options.optimizer)
    program = program.replace("\ndef make_mesh():", "\n".join(["", *tables, "def make_mesh():"]),
                              1)
    if options.precision in DTYPES:
        program = program.replace("def loss_fn(mesh, params, batch):",
                                  LOW_PRECISION + "\n\ndef forward(mesh, params, batch):", 1)
        program = with_fp32_cross_entropy(program)
    return program


def zero_layouts(layouts: dict[str, Spec], replicas: dict[str, tuple[tuple[str, int], ...]],
                 stages: dict[str, int], mesh: dict[str, int],
                 sizes: dict[str, tuple[int, ...]]) -> dict[str, Spec]:
    """Each param's optimizer state layout: its ZeRO shard from stage 1 (`zero_layout`),
    its held layout before; `sizes`: the params' shapes."""
    return {name: zero_layout(layouts[name], replicas[name], sizes[name], mesh)
            if stages[name] >= 1 else layouts[name] for name in layouts}


def manual_step_axes(layouts: dict[str, Spec], replicas: dict[str, tuple[tuple[str, int], ...]],
                     stages: dict[str, int], mesh: dict[str, int],
                     state_layouts: dict[str, Spec], data: tuple[str, ...]) -> tuple[str, ...]:
    """The plan's data-parallel axes `data` where the step is `jax_zero`'s, manual over
    them: they are all the mesh's axes (docs/cost-model.md, "ZeRO and bf16/fp16 in the JAX
    program": XLA's CPU backend aborts on a bf16 psum in a partly manual shard_map) and
    every sharded param's ZeRO shard is over exactly them; none otherwise."""
    if set(data) != {axis for axis, size in mesh.items() if size > 1}:
        return ()
    if not all(stages[name] == 0 or _sharded_over(
            layouts[name], state_layouts[name], replicas[name], data) for name in layouts):
        return ()
    return data


def _sharded_over(held: Spec, state: Spec, replicas: Sequence[tuple[str, int]],
                  data: tuple[str, ...]) -> bool:
    """Whether a param held in `held` is replicated on exactly the `data` axes and its
    ZeRO shard `state` adds them, and only them, to one dim `held` leaves whole (or is
    `held`, where no dim divides): a shard `manual_grads` gathers and scatters itself."""
    changed = [entry for entry, was in zip(state, list(held) + [None] * len(state),
                                           strict=False) if entry != was]
    return {a for a, _ in replicas} == set(data) and changed in (
        [data[0] if len(data) == 1 else data], [])


def option_lines(options: StepOptions) -> list[str]:
    """The program's lines that name the step's options and the optimizer's constants."""
    return [
        f"OPTIMIZER = {options.optimizer!r}",
        *(f"{k.upper()} = {v!r}" for k, v in OPTIMIZER_HYPERPARAMETERS.get(
            options.optimizer, {}).items()),
        f"STATE_KINDS = {OPTIMIZER_STATES.get(options.optimizer, ())!r}",
        f"PRECISION = {options.precision!r}",
        *([f"COMPUTE = {DTYPES[options.precision]!r}  # jnp's name"]
          if options.precision in DTYPES else []),
        f"RECOMPUTE = {options.recompute!r}"]


def with_default_rate(program: str, optimizer: str) -> str:
    """`program` whose `--lr` defaults to `optimizer`'s learning rate."""
    rate = LEARNING_RATES[optimizer]
    program = program.replace(f"default={LEARNING_RATE!r},", f"default={rate!r},", 1)
    return program.replace(f"(default {LEARNING_RATE!r})", f"(default {rate!r})", 1)


def with_fp32_cross_entropy(program: str) -> str:
    """`program` whose softmax cross-entropy (a helper, where it has one) takes its
    logits to fp32 first: the loss in fp32 under bf16/fp16 compute."""
    return program.replace("    z = jnp.moveaxis(logits, axis, -1)\n",
                           "    z = jnp.moveaxis(logits, axis, -1)\n"
                           "    z = z.astype(jnp.promote_types(jnp.float32, z.dtype))"
                           "  # the loss in fp32\n", 1)


def _sizes(program: str, name: str) -> tuple[int, ...]:
    """The shape of param `name` in the program's PARAMS table."""
    line = next(line for line in program.splitlines() if line.startswith(f"    {name!r}: ("))
    return tuple(int(s) for s in line.split("(", 2)[2].split(")")[0].split(",") if s.strip())


def _table(name: str, rows: dict[str, Spec], what: str) -> str:
    return "\n".join([f"{name} = {{  # param: {what}",
                      *(f"    {k!r}: {v!r}," for k, v in rows.items()), "}"])


def zero_layout(held: Spec, replicas: Sequence[tuple[str, int]], sizes: tuple[int, ...],
                mesh: dict[str, int]) -> Spec:
    """`held` with the replica mesh axes (name, size) added to the first dim whose size
    they divide together with the axes it has already; `held` if none (the state then
    stays replicated).

        >>> zero_layout((None, 'm1'), [('m0', 2)], (8, 4), {'m0': 2, 'm1': 2})
        ('m0', 'm1')
        >>> zero_layout(('m1',), [('m0', 2)], (4,), {'m0': 2, 'm1': 2})
        (('m1', 'm0'),)
        >>> zero_layout((), [('m0', 2)], (3,), {'m0': 2})
        ()
    """
    axes = tuple(axis for axis, _ in replicas)
    ways = prod(size for _, size in replicas)
    if ways == 1:
        return held
    entries = list(held) + [None] * (len(sizes) - len(held))
    for index, entry in enumerate(entries):
        existing = () if entry is None else (entry,) if isinstance(entry, str) else entry
        if sizes[index] % (prod(mesh[a] for a in existing) * ways) == 0:
            combined = (*existing, *axes)
            entries[index] = combined[0] if len(combined) == 1 else combined
            return tuple(entries)
    return held


def checkpointed(ops: Sequence[Operation], statement: Callable[[Operation], list[str]],
                 names: dict[SSAValue, str], options: StepOptions) -> list[str]:
    """The body of `loss_fn`, each run of consecutive recomputed layers (all of them
    under recompute=full, those with `pase.recompute` under auto; a run ends where a
    `#pase.segment` does) one nested function under `jax.checkpoint`: the backward
    keeps only its inputs and recomputes the rest. Under full, where the layers carry
    their segments (the search writes them), the last layer of each segment is kept,
    outside the runs, as the cost model's checkpoint (`mark_checkpoints`): on a chain,
    where every layer ends a segment, nothing is recomputed."""
    lines: list[str] = []
    run: list[Operation] = []
    count = 0
    kept = segment_ends(ops) if options.recompute == "full" else set()

    def flush() -> None:
        nonlocal count
        if not run:
            return
        count += 1
        lines.extend(_checkpoint(run, statement, names, count))
        run.clear()

    for op in ops:
        if isinstance(op, dnn.LayerOp) and recomputed(op, options) and op not in kept:
            if run and segment_of(run[-1]) != segment_of(op):
                flush()
            run.append(op)
            continue
        if isinstance(op, dnn.InputOp | dnn.ParamOp):
            lines.extend(statement(op))  # (reads only: they may come before a run)
            continue
        flush()
        lines.extend(statement(op))
    flush()
    return lines


def segment_ends(ops: Sequence[Operation]) -> set[Operation]:
    """The layers that end their `#pase.segment` (none where a layer has no segment)."""
    layers = [op for op in ops if isinstance(op, dnn.LayerOp)]
    marked = [segment_of(op) for op in layers]
    if not layers or any(segment is None for segment in marked):
        return set()
    return {op for op, segment, after in zip(layers, marked, [*marked[1:], None], strict=True)
            if segment != after}


def _checkpoint(run: list[Operation], statement: Callable[[Operation], list[str]],
                names: dict[SSAValue, str], number: int) -> list[str]:
    inside = set(run)
    defined = [r for op in run for r in op.results]
    inputs = list(dict.fromkeys(v for op in run for v in op.operands
                                if v.owner not in inside))
    outputs = [v for v in defined if any(use.operation not in inside for use in v.uses)]
    arguments = ", ".join(names[v] for v in inputs)
    results = ", ".join(names[v] for v in outputs) + ("," if len(outputs) == 1 else "")
    layers = ", ".join(names[r] for r in defined)
    body = [f"    {line}" if line else "" for op in run for line in statement(op)]
    return ["", f"# recomputed in the backward (jax.checkpoint): {layers}",
            f"def recomputed_{number}({arguments}):", *body, f"    return {results}",
            "", f"{results} = jax.checkpoint(recomputed_{number})({arguments})"]
