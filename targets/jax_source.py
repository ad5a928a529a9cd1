"""The fixed text of a `-t jax` program: its header, the op helpers it may use, its `__main__`.

`pase.targets.jax` writes the header (`PRELUDE`), the tables and `loss_fn` of one graph,
the helpers its layers call (`HELPERS`, by name), and `MAIN`: mesh, jitted step, data,
command line. Kept apart so the emitter reads as the translation it is.
"""

from collections.abc import Mapping

from xdsl.ir import Attribute

from pase.dialect.dnn.epsilon import epsilon_of
from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.targets.jax_recurrent import REDUCED_LSTM
from pase.targets.jax_reduced import AXES_OF, REDUCED_EINSUM, REDUCED_LAYER
from pase.targets.jax_stacked import GATHERED, STACKED_LAYER

PRELUDE = '''\
"""@{graph} as a JAX training step on {devices} devices, written by pase-opt -t jax.

Each layer's operands and result are constrained to the layout of its pase strategy
(#pase.config), on one mesh over devices 0..{devices}-1 in pase's canonical placement.

    XLA_FLAGS=--xla_force_host_platform_device_count={devices} python step.py --steps 3
    python step.py --coordinator HOST:PORT --num-processes N --process-id I  # multi-host
"""

'''

STDLIB_IMPORTS = """\
import argparse
import os
import sys
import tempfile
import time
"""
"""The standard modules every program imports (a pipeline program adds its own after them)."""

JAX_IMPORTS = """
try:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
except ImportError as missing:
    jax = None
    MISSING = missing
"""
"""JAX's imports, which a program reports missing when it runs rather than failing at import."""

PRELUDE += STDLIB_IMPORTS + JAX_IMPORTS

HELPERS = {
    "relu": '''\
def relu(x):
    return jnp.where(x > 0, x, 0)
''',
    "gelu": '''\
def gelu(x):
    """The tanh approximation, as pase's kernel."""
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))
''',
    "tanh": '''\
def tanh(x):
    return jnp.tanh(x)
''',
    "sigmoid": '''\
def sigmoid(x):
    return 0.5 * (1.0 + jnp.tanh(0.5 * x))
''',
    "exp": '''\
def exp(x):
    return jnp.exp(x)
''',
    "clip": '''\
def clip(x, low, high):
    """x clamped into [low, high]; the gradient passes strictly inside, as pase's."""
    inside = (x > low) & (x < high)
    return jnp.where(inside, x, jax.lax.stop_gradient(jnp.clip(x, low, high)))
''',
    "causal_mask": '''\
def causal_mask(x, q_axis, k_axis, fill):
    """x where key position <= query position, else `fill`."""
    q = jax.lax.broadcasted_iota(jnp.int32, x.shape, q_axis)
    k = jax.lax.broadcasted_iota(jnp.int32, x.shape, k_axis)
    return jnp.where(k <= q, x, fill)
''',
    "sqrt": '''\
def sqrt(x):
    return jnp.sqrt(x)
''',
    "neg": '''\
def neg(x):
    return -x
''',
    "softmax": '''\
def softmax(x, axes):
    exps = jnp.exp(x - jax.lax.stop_gradient(jnp.max(x, axis=axes, keepdims=True)))
    return exps / jnp.sum(exps, axis=axes, keepdims=True)
''',
    "norm": '''\
def norm(x, axes, scale=None, bias=None, eps=1e-5):
    """Layer or (training-mode) batch normalization over `axes`."""
    mean = jnp.mean(x, axis=axes, keepdims=True)
    variance = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) * jax.lax.rsqrt(variance + eps)
    return y if scale is None else y * scale + bias
''',
    "rms_norm": '''\
def rms_norm(x, axes, scale=None, eps=1e-5):
    """x over its root mean square over `axes` (T5's norm), times the scale."""
    y = x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=axes, keepdims=True) + eps)
    return y if scale is None else y * scale
''',
    "softmax_cross_entropy": '''\
def softmax_cross_entropy(logits, labels, axis):
    """The mean over the rows of logsumexp(z) - z[label], the classes along `axis`."""
    z = jnp.moveaxis(logits, axis, -1)
    target = jnp.take_along_axis(z, labels[..., None].astype(jnp.int32), axis=-1)[..., 0]
    return jnp.mean(jax.nn.logsumexp(z, axis=-1) - target)
''',
    "ignoring_cross_entropy": '''\
def ignoring_cross_entropy(logits, labels, axis, ignore_index):
    """softmax_cross_entropy over the rows whose label is not `ignore_index` (PyTorch's),
    their mean over the whole batch's count of them; 0 when every label is ignored."""
    z = jnp.moveaxis(logits, axis, -1)
    kept = labels != ignore_index
    picked = jnp.where(kept, labels, 0)[..., None].astype(jnp.int32)
    target = jnp.take_along_axis(z, picked, axis=-1)[..., 0]
    losses = jnp.where(kept, jax.nn.logsumexp(z, axis=-1) - target, 0)
    return jnp.sum(losses) / jnp.maximum(jnp.sum(kept), 1).astype(losses.dtype)
''',
    "counted_cross_entropy": '''\
def counted_cross_entropy(logits, labels, axis, ignore_index, count):
    """ignoring_cross_entropy of one micro-batch, its sum divided by `count`, the labels
    the WHOLE batch keeps (at least 1): the micro-batches' losses add up to the batch's."""
    z = jnp.moveaxis(logits, axis, -1)
    kept = labels != ignore_index
    picked = jnp.where(kept, labels, 0)[..., None].astype(jnp.int32)
    target = jnp.take_along_axis(z, picked, axis=-1)[..., 0]
    losses = jnp.where(kept, jax.nn.logsumexp(z, axis=-1) - target, 0)
    return jnp.sum(losses) / count.astype(losses.dtype)
''',
    "conv2d": '''\
def conv2d(x, w, stride, padding):
    """NCHW convolution with an OIHW filter, zero padding (height, width)."""
    return jax.lax.conv_general_dilated(
        x, w, (stride, stride), [(padding[0], padding[0]), (padding[1], padding[1])],
        dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=jax.lax.Precision.HIGHEST)
''',
    "grouped_conv2d": '''\
def grouped_conv2d(x, w, stride, padding, groups):
    """conv2d with the channels in `groups` groups (depthwise: one channel each)."""
    return jax.lax.conv_general_dilated(
        x, w, (stride, stride), [(padding[0], padding[0]), (padding[1], padding[1])],
        dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=groups,
        precision=jax.lax.Precision.HIGHEST)
''',
    "pool2d": '''\
def pool2d(kind, x, window, stride, padding):
    """NCHW max or average pooling; the average counts padded zeros."""
    pads = [(0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])]
    dims, strides = (1, 1, *window), (1, 1, stride, stride)
    if kind == "max":
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, dims, strides, pads)
    total = jax.lax.reduce_window(x, 0.0, jax.lax.add, dims, strides, pads)
    return total / (window[0] * window[1])
''',
    "lstm": '''\
def lstm(x, w, bias=None):
    """A multi-layer LSTM, x [b, s, e], w [l, 2e, 4e] with gate columns unit-major
    (4 * unit + gate, gates i, f, g, o), an optional bias [l, 4e] added to the gates;
    zero initial state; the last layer's states."""
    batch, _, hidden = x.shape
    if bias is None:
        bias = jnp.zeros((w.shape[0], w.shape[2]), x.dtype)

    def cell(weight, layer_bias, carry, step_input):
        h, c = carry
        gates = (jnp.concatenate([step_input, h], axis=1) @ weight + layer_bias).reshape(
            batch, hidden, 4)
        i, f, o = sigmoid(gates[..., 0]), sigmoid(gates[..., 1]), sigmoid(gates[..., 3])
        c = f * c + i * jnp.tanh(gates[..., 2])
        h = o * jnp.tanh(c)
        return (h, c), h

    sequence = jnp.swapaxes(x, 0, 1)
    for layer in range(w.shape[0]):
        zeros = jnp.zeros((batch, hidden), x.dtype)
        _, sequence = jax.lax.scan(
            lambda carry, xt, wl=w[layer], bl=bias[layer]: cell(wl, bl, carry, xt),
            (zeros, zeros), sequence)
    return jnp.swapaxes(sequence, 0, 1)
''',
    "gru": '''\
def gru(x, w, bias_input=None, bias_hidden=None):
    """A multi-layer GRU as PyTorch's nn.GRU, x [b, s, e], w [l, 2e, 3e] (input rows, then
    hidden rows; gate columns unit-major, 3 * unit + gate, gates r, z, n), optional input
    and recurrent biases [l, 3e]; the reset gate scales the recurrent product after its
    bias; zero initial state; the last layer's states."""
    batch, _, hidden = x.shape
    zeros = jnp.zeros((w.shape[0], w.shape[2]), x.dtype)
    bias_input = zeros if bias_input is None else bias_input
    bias_hidden = zeros if bias_hidden is None else bias_hidden

    def cell(weight, b_in, b_hid, h, step_input):
        a = (step_input @ weight[:hidden] + b_in).reshape(batch, hidden, 3)
        c = (h @ weight[hidden:] + b_hid).reshape(batch, hidden, 3)
        r, z = sigmoid(a[..., 0] + c[..., 0]), sigmoid(a[..., 1] + c[..., 1])
        n = jnp.tanh(a[..., 2] + r * c[..., 2])
        h = (1.0 - z) * n + z * h
        return h, h

    sequence = jnp.swapaxes(x, 0, 1)
    for layer in range(w.shape[0]):
        _, sequence = jax.lax.scan(
            lambda h, xt, wl=w[layer], bi=bias_input[layer], bh=bias_hidden[layer]:
            cell(wl, bi, bh, h, xt), jnp.zeros((batch, hidden), x.dtype), sequence)
    return jnp.swapaxes(sequence, 0, 1)
''',
}
"""The helper functions a layer's expression may call, by name."""
HELPERS.update(reduced_einsum=REDUCED_EINSUM, reduced_layer=REDUCED_LAYER,  # (jax_reduced)
               axes_of=AXES_OF, stacked_layer=STACKED_LAYER,  # (jax_stacked)
               gathered=GATHERED, reduced_lstm=REDUCED_LSTM)  # (jax_recurrent)


MAIN = '''\
def make_mesh():
    """The mesh over devices 0..DEVICES-1, in order (pase's canonical placement). In a
    run of several processes, over the plan's PLAN_DEVICES instead: those past DEVICES,
    idle in every layer, are an outer axis no layout names (each holds a replicated
    copy), so that every process has devices in the mesh."""
    devices = jax.devices()
    shape, axes = MESH_SHAPE, MESH_AXES
    if jax.process_count() > 1 and PLAN_DEVICES > DEVICES:
        shape, axes = (PLAN_DEVICES // DEVICES, *shape), ("idle", *axes)
    count = int(np.prod(shape))
    if len(devices) < count:
        fail(f"this step runs on {count} devices, but JAX has {len(devices)} "
             f"({devices[0].platform}); on a CPU machine run it with "
             f"XLA_FLAGS=--xla_force_host_platform_device_count={count}")
    return Mesh(np.array(devices[:count]).reshape(shape), axes)


def make_step(mesh, lr, with_grads=False):
    """The jitted SGD step: (params, batch) -> (updated params, loss), and the gradients
    `with_grads` (for --save). The params are donated: the updated ones take their
    buffers, so a device holds one copy of them, not two, nor a third of the gradients."""
    held = {name: NamedSharding(mesh, P(*row[2])) for name, row in PARAMS.items()}
    fed = {name: NamedSharding(mesh, P(*row[2])) for name, row in INPUTS.items()}

    def step(params, batch):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(mesh, p, batch))(params)
        return ({name: params[name] - lr * RATE_SCALES.get(name, 1) * grads[name]
                 for name in params}, loss, *([grads] if with_grads else []))

    shardings = (held, NamedSharding(mesh, P()), *([held] if with_grads else []))
    return jax.jit(step, in_shardings=(held, fed), out_shardings=shardings,
                   donate_argnums=0), held, fed


def seeded(table, rng, float_type):
    """Seeded values for PARAMS or INPUTS (order one, ids within their range, padding
    masks of random lengths)."""
    values = {}
    for name, (shape, dtype, _, (kind, scale)) in table.items():
        if kind == "ints":
            values[name] = rng.integers(0, int(scale), size=shape).astype(dtype)
            continue
        if kind == "lengths":  # a padding mask: per row 1s for a random length, then 0s
            lengths = rng.integers(1, int(scale) + 1, size=tuple(shape[:-1]))
            values[name] = (np.arange(shape[-1]) < lengths[..., None]).astype(dtype)
            continue
        array = (1.0 if kind == "normal+1" else 0.0) + scale * rng.standard_normal(shape)
        values[name] = array.astype(float_type or dtype)
    return values


def place(values, table, shardings, float_type):
    """The global arrays, each process filling its own devices' blocks."""
    placed = {}
    for name, (shape, dtype, _, (kind, _)) in table.items():
        array = np.asarray(values[name])
        array = array.astype(dtype if kind in ("ints", "lengths") else float_type or dtype)
        placed[name] = jax.make_array_from_callback(
            tuple(shape), shardings[name], lambda index, a=array: a[index])
    return placed


def gathered(tree):
    """A pytree of global arrays as numpy arrays on every process."""
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


REMATERIALIZATION = "Involuntary full rematerialization"


def compile_summarised(lowered):
    """`lowered.compile()`, XLA's "involuntary full rematerialization" warnings (one
    600-character line per resharded tensor on stderr) summarised in one line, the rest of
    its stderr passed on."""
    sys.stderr.flush()
    kept = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            return lowered.compile()
        finally:
            os.dup2(kept, 2)
            os.close(kept)
            log.seek(0)
            lines = log.read().decode(errors="replace").splitlines()
            others = [line for line in lines if REMATERIALIZATION not in line]
            shapes = [line.split("= ", 1)[1].split(" ", 1)[0] for line in lines
                      if REMATERIALIZATION in line and "= " in line]
            count = len(lines) - len(others)
            print(*others, sep="\\n", file=sys.stderr, end="\\n" if others else "")
            if count:
                print(f"note: XLA reshards {count} tensor{'s' if count > 1 else ''} of the "
                      f"plan ({', '.join(sorted(set(shapes)))}) "
                      "by full rematerialization (all-gathered whole on every device, "
                      "then sliced): a change of layout between layers that XLA finds no "
                      "collective for moves more words than the plan predicts there",
                      file=sys.stderr)


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def say(line):
    # One write of the whole line: a library printing on stdout from another thread
    # (Gloo, in a run of several processes) cannot land inside it, buffered or not.
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\\n\\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="SGD steps (default 3)")
    parser.add_argument("--lr", type=float, default=''' + repr(LEARNING_RATE) + ''',
                        help="learning rate (default ''' + repr(LEARNING_RATE) + ''')")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (default 0)")
    parser.add_argument("--f64", action="store_true", help="run in double precision")
    parser.add_argument("--data", help="an .npz of initial params and the batch, by name")
    parser.add_argument("--save", help="write losses, last gradients, params, HLO to .npz")
    parser.add_argument("--coordinator", help="HOST:PORT of process 0 (multi-process)")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    return parser.parse_args(argv)


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
    mesh = make_mesh()
    step, held, fed = make_step(mesh, args.lr, with_grads=bool(args.save))
    if args.data:
        with np.load(args.data) as data:
            initial, inputs = dict(data), dict(data)
    else:
        rng = np.random.default_rng(args.seed)
        initial, inputs = seeded(PARAMS, rng, float_type), seeded(INPUTS, rng, float_type)
    params = place(initial, PARAMS, held, float_type)
    batch = place(inputs, INPUTS, fed, float_type)
    start = time.perf_counter()
    try:
        lowered = step.lower(params, batch)
        compiled = compile_summarised(lowered)
    except Exception as error:  # XLA's errors have no common class
        fail(f"XLA could not compile the step: {type(error).__name__}: "
             f"{(str(error).strip().splitlines() or [''])[0]}")
    compile_seconds = time.perf_counter() - start
    losses, grads = [], [{}]
    start = time.perf_counter()
    for number in range(1, args.steps + 1):
        params, loss, *grads = compiled(params, batch)
        losses.append(float(np.asarray(loss.addressable_data(0))))
        if jax.process_index() == 0:
            say(f"step {number} loss {losses[-1]:.10g}")
    step_seconds = (time.perf_counter() - start) / args.steps
    if args.save and jax.process_index() == 0:
        saved = {"losses": np.array(losses), "compile_seconds": compile_seconds,
                 "step_seconds": step_seconds, "hlo": np.array(compiled.as_text()),
                 "stablehlo": np.array(lowered.as_text())}
        saved |= {f"param/{k}": v for k, v in gathered(params).items()}
        saved |= {f"grad/{k}": v for k, v in gathered(grads[0]).items()}
        np.savez(args.save, **saved)
    elif args.save:
        gathered(params), gathered(grads[0])  # every process takes part in the gathers


if __name__ == "__main__":
    main()
'''


_INTS = """\
            values[name] = rng.integers(0, int(scale), size=shape).astype(dtype)
            continue
"""
_IGNORED = """\
        if kind == "ignored":  # labels, a quarter of them the loss's ignore_index
            (high, ignore), shape = scale, tuple(shape)
            labels = rng.integers(0, high, size=shape)
            values[name] = np.where(rng.random(shape) < 0.25, ignore, labels).astype(dtype)
            continue
"""


def with_ignored_labels(text: str) -> str:
    """A program's `__main__` text (`MAIN`, or a pipeline's) for a model whose loss has an
    ignore_index: `seeded` draws its labels' "ignored" seed (`pase.dialect.dnn.seeding`:
    a quarter of them the ignore_index) and the casts keep them integers. Other programs
    keep the text without it.

        >>> "ignored" in with_ignored_labels(MAIN), "ignored" in MAIN
        (True, False)
    """
    assert _INTS in text
    return text.replace(_INTS, _INTS + _IGNORED, 1).replace(
        'array.astype(dtype if kind in ("ints", "lengths") else float_type or dtype)',
        'array.astype(dtype if kind in ("ints", "lengths", "ignored")\n'
        '                             else float_type or dtype)').replace(
        'dtype if kinds[n] in ("ints", "lengths") else',
        'dtype if kinds[n] in ("ints", "lengths", "ignored") else')


def epsilon_argument(properties: Mapping[str, Attribute]) -> str:
    """`, eps=1e-12` for a norm whose epsilon is not the helpers' default 1e-5 (its
    `epsilon` property), else nothing: a norm of the default prints as before."""
    return f", eps={epsilon_of(properties)!r}" if "epsilon" in properties else ""
