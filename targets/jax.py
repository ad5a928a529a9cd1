"""The JAX target: a graph and its strategy as a standalone JAX training step (`-t jax`).

    pase-opt models/mlp.dnn -p 'pase-search{devices=8}' -t jax -o step.py
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python step.py --steps 3

The module imports only jax and numpy. It has the forward in `jax.numpy`/`jax.lax`, seeded
parameters, and a jitted SGD step (loss, `jax.grad`, update) whose shardings follow the
`#pase.config` of every layer (docs/jax.md):

- One `Mesh` over devices 0..P-1, in order, whose axes cut P into factors so that every
  layer's grid (its split dims in iteration-space order, row-major on devices 0..q-1,
  `pase.core.placement`) is a run of consecutive mesh axes, and the devices a layer
  leaves idle (q..P-1) are the outer axes it does not name: a replicated copy. Devices
  idle in every layer are left out (`used_mesh`): a plan on one of 8 devices is a
  program on one.
- Each layer's operands and result get `with_sharding_constraint` to the layer's layout;
  a param or input is held (`in_shardings`) in the layout of its first reader.

`jax{devices=N}` sets P; by default the graph's `#pase.strategy` gives it (1 without one).
A strategy whose grids no single mesh can hold (a 2-way and a 3-way split on 6 devices)
is an error at the layer that breaks the chain (`pase.targets.jax_mesh` builds the mesh).
A pipeline plan (`pase.pipeline`) is written by `pase.targets.jax_pipeline`; a plan
attribute the target does not translate is an error (`pase.targets.jax_expressible`).
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.utils.target import Target

from pase.core import shapes, weights
from pase.core.diagnostics import Diagnostic, at_op
from pase.core.options import CheckedOptions
from pase.core.placement import MAX_DEVICES, Placement
from pase.core.shapes import ELEMENTS, NamedShape
from pase.dialect import dnn
from pase.dialect.dnn.seeding import Seed, rate_scales, seeds
from pase.dialect.pase import pipeline_of
from pase.dialect.training_options import (
    StepOptions,
    TrainingOptionError,
    training_of,
    zero_stage,
)
from pase.targets.jax_expressible import check_expressible
from pase.targets.jax_mesh import (
    graph_devices,
    grid_axes,
    mesh_shape,
    spec,
    spec_entries,
    used_mesh,
)
from pase.targets.jax_recurrent import reduced_lstm_statement
from pase.targets.jax_reduced import (
    reduced_layer_statement,
    reduced_layers,
    reduced_statement,
    subscripts,
)
from pase.targets.jax_source import HELPERS, MAIN, PRELUDE, epsilon_argument, with_ignored_labels
from pase.targets.jax_stacked import stacked_statement
from pase.targets.jax_training import Spec, checkpointed, with_training
from pase.targets.jax_zero import manual_of


@dataclass(frozen=True)
class JaxTarget(CheckedOptions, Target):
    """Print the module's one `dnn.graph` as a JAX program on `devices` devices."""

    name = "jax"
    OPTIONS_OF = "-t jax"
    devices: int = 0

    def __post_init__(self) -> None:
        """Refuse a device count no program can run on, when the option is read (pase-opt
        checks -t's options before it reads the model)."""
        if problem := devices_problem(self.devices):
            raise ValueError(problem)

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(jax_program(module, self.devices,
                                 weights.initial_values(module) is not None))


def devices_problem(devices: int) -> str | None:
    """Why `-t jax{devices=N}` cannot be: a count below 0 or over the search's limit.

    >>> devices_problem(0), devices_problem(8)
    (None, None)
    >>> devices_problem(99_999_999_999)
    "-t jax: devices must be from 1 to 8,192 (or 0, the strategy's), got 99,999,999,999"
    """
    if 0 <= devices <= MAX_DEVICES:
        return None
    return f"-t jax: devices must be from 1 to {MAX_DEVICES:,} (or 0, the strategy's), got " \
        f"{devices:,}"


def jax_program(module: ModuleOp, devices: int = 0, with_weights: bool = False) -> str:
    """The JAX module of the one graph in `module` (devices 0: from its strategy).
    `with_weights`: the program starts from the model's weights, the .npz beside it
    (`core.weights.WEIGHTS_SUFFIX`) that pase-opt writes with it, instead of seeded ones."""
    if problem := devices_problem(devices):
        raise Diagnostic(problem)
    graphs = [op for op in module.ops if isinstance(op, dnn.GraphOp)]
    if len(graphs) != 1 or len(list(module.ops)) != 1:
        raise Diagnostic("the jax target needs a module with exactly one dnn.graph "
                         "(the forward graph, before pase-autodiff)")
    graph = graphs[0]
    if (problem := graph.loss_problem()) is not None:
        raise at_op(graph.body.block.ops.last or graph, problem)  # type: ignore[arg-type]
    gradient_ops = [op for op in graph.body.block.ops if dnn.is_gradient(op)]
    if gradient_ops:
        raise at_op(gradient_ops[0], "the jax target takes the forward graph; JAX derives "
                    "the backward itself: print it before pase-autodiff")
    check_expressible(graph)
    try:
        options = training_of(graph)
    except TrainingOptionError as error:
        raise Diagnostic(f"the jax target: {error}") from None
    if (pipeline := pipeline_of(graph)) is not None and (
            pipeline.stages.data > 1 or pipeline.microbatches.data > 1):
        from pase.targets.jax_pipeline import pipeline_program

        if devices and devices != pipeline.devices.data:
            raise at_op(graph, f"the pipeline plan runs on {pipeline.devices.data} devices; "
                        f"drop jax{{devices={devices}}}")
        program = pipeline_program(graph, pipeline, options)
    else:
        emitter = _Emitter(graph, devices or graph_devices(graph), options=options,
                           used_only=True)
        if not options.is_default():
            layouts = emitter.param_layouts()
            manual = manual_of(graph, emitter.axes, layouts[3])
            emitter.reduced = reduced_layers(graph, emitter.axes, emitter.names, layouts,
                                             manual[0], options)
        program = emitter.program()
        if not options.is_default():
            program = with_training(program, options, *layouts, manual=manual)
    return with_model_weights(program) if with_weights else program


SEEDED_LINE = ("        initial, inputs = seeded(PARAMS, rng, float_type), "
               "seeded(INPUTS, rng, float_type)\n")
"""The line of `MAIN` that seeds the params; the model's weights replace them after it."""

WEIGHTS_LOADER = f'''\
def model_weights(initial, inputs):
    """The model's weights, from the .npz beside this program (written by pase-opt with
    it), in place of the seeded params: all of them, each of its param's shape; and the
    inputs whose values the model fixes (the constant indices of a table lookup, e.g.
    T5's relative-position buckets), in place of seeded ones."""
    import os

    path = os.path.splitext(os.path.abspath(__file__))[0] + "{weights.WEIGHTS_SUFFIX}"
    try:
        with np.load(path) as data:
            values = dict(data)
    except OSError as error:
        fail(f"cannot read the model's weights {{path}}: {{error}} (or give --data)")
    for name, (shape, _, _, _) in PARAMS.items():
        if name not in values or tuple(values[name].shape) != tuple(shape):
            fail(f"{{path}} has no weights of shape {{list(shape)}} for param '{{name}}'")
    fixed = {{name: values[name].astype(inputs[name].dtype) for name in INPUTS
              if name in values and tuple(values[name].shape) == tuple(INPUTS[name][0])}}
    # (copy=False: the weights as read, not a second copy of them on the host)
    return ({{name: values[name].astype(initial[name].dtype, copy=False) for name in PARAMS}},
            inputs | fixed)


'''


def with_model_weights(program: str) -> str:
    """`program` starting from the model's weights (`model_weights`) unless --data."""
    assert program.count(SEEDED_LINE) == 1
    assert program.count("\ndef main(") == 1
    loaded = SEEDED_LINE + "        initial, inputs = model_weights(initial, inputs)\n"
    program = program.replace(SEEDED_LINE, loaded)
    return program.replace("\ndef main(", "\n" + WEIGHTS_LOADER + "def main(", 1)


RESERVED = {"jax", "jnp", "np", "P", "mesh", "params", "batch", "layout", "received",
            *HELPERS}


class _Emitter:
    """Writes the program of one graph; a small class because every statement needs the
    graph's names, the mesh and the helpers it used."""

    def __init__(self, graph: dnn.GraphOp, devices: int,
                 layers: Sequence[dnn.LayerOp] | None = None,
                 options: StepOptions | None = None, used_only: bool = False):
        """`layers`: only these have layouts, on the mesh of their grids (a pipeline
        stage's, `jax_pipeline`); by default all the graph's. `options`: the training
        step (`pase.training`). `used_only`: the mesh holds only the devices some layer
        uses (`used_mesh`), not the `devices` of the plan."""
        self.graph = graph
        self.devices = self.plan_devices = devices
        self.options = options or StepOptions()
        self.names = {value: _identifier(name) for value, name in graph.value_names().items()}
        self.layers = graph.layer_names()
        self.placements = {layer: Placement.of([d.name for d in layer.iteration_space().dims],
                                               layer.config.splits if layer.config else {})
                           for layer in (self.layers if layers is None else layers)}
        for layer, placement in self.placements.items():
            if prod(placement.shape) > devices:
                raise at_op(layer, f"this layer's grid needs {prod(placement.shape)} devices, "
                            f"more than the {devices} the jax target was given")
        self.shape = mesh_shape(devices, [(layer, p.shape) for layer, p in
                                          self.placements.items() if p.axes], self.layers)
        if used_only:
            self.shape = used_mesh(self.shape, max(
                [prod(p.shape) for p in self.placements.values()] + [1]))
            self.devices = prod(self.shape)
        self.axes = {layer: grid_axes(p, self.shape) for layer, p in self.placements.items()}
        self.helpers: set[str] = set()
        self.reduced: dict[dnn.LayerOp, tuple[int, ...]] = {}  # (jax_reduced)
        self.stacked: dict[dnn.LayerOp, dict[int, tuple[str, ...]]] = {}  # (jax_stacked)
        self.seeds: dict[SSAValue, Seed] | None = None
        self.counted: str | None = None
        """The whole batch's count of labels kept, where a pipeline's micro-batch reads
        it (a cross-entropy with an ignore_index then divides by it)."""

    def program(self) -> str:
        ops = list(self.graph.body.block.ops)
        body = (checkpointed(ops, self.statement, self.names, self.options)
                if self.options.recompute != "none"
                else [line for op in ops for line in self.statement(op)])
        helpers = [HELPERS[name] for name in sorted(self.helpers)]
        return "\n".join([
            PRELUDE.format(graph=self.graph.sym_name.data, devices=self.devices),
            f"DEVICES = {self.devices}" + (
                f"  # of the plan's {self.plan_devices}: the others are idle in every layer"
                if self.devices < self.plan_devices else ""),
            f"PLAN_DEVICES = {self.plan_devices}",
            f"MESH_SHAPE = {self.shape!r}",
            f"MESH_AXES = {tuple(f'm{k}' for k in range(len(self.shape)))!r}",
            f"X64 = {any(ELEMENTS[t].bytes == 8 for t in self.elements())}",
            "",
            self.table("PARAMS", dnn.ParamOp),
            self.table("INPUTS", dnn.InputOp),
            rate_table({self.names[v]: k for v, k in rate_scales(self.graph).items()}),
            "",
            *helpers,
            "",
            "def loss_fn(mesh, params, batch):",
            '    """The forward: the loss of one batch, each layer in its layout."""',
            "",
            "    def layout(value, spec):",
            "        return jax.lax.with_sharding_constraint(value, NamedSharding(mesh, spec))",
            "",
            *[f"    {line}" if line else "" for line in body],
            "",
            with_ignored_labels(MAIN) if self.ignores_labels() else MAIN])

    def ignores_labels(self) -> bool:
        """Whether an input's seed is "ignored" (labels of a loss with an ignore_index)."""
        return any(self.init(op.output, op.output.type.shape)[0] == "ignored"
                   for op in self.graph.body.block.ops if isinstance(op, dnn.InputOp))

    def elements(self) -> set[str]:
        return {op.output.type.shape.element for op in self.graph.body.block.ops
                if isinstance(op, dnn.InputOp | dnn.ParamOp)}

    def table(self, name: str, kind: type[dnn.InputOp] | type[dnn.ParamOp]) -> str:
        """`NAME = {value: (shape, dtype, layout, init)}` of the graph's inputs or params."""
        rows = []
        for op in self.graph.body.block.ops:
            if isinstance(op, kind):
                shape = op.output.type.shape
                rows.append(f"    {self.names[op.output]!r}: ({shape.sizes!r}, "
                            f"{ELEMENTS[shape.element].numpy!r}, {self.held(op.output)}, "
                            f"{self.init(op.output, shape)!r}),")
        return "\n".join([f"{name} = {{  # name: (shape, dtype, layout, seeded init)",
                          *rows, "}"])

    def param_layouts(self) -> tuple[dict[str, Spec], dict[str, tuple[tuple[str, int], ...]],
                                     dict[str, int], dict[str, int]]:
        """For `jax_training.with_training`: each param's held layout (its first
        reader's operand layout), the mesh axes (name, size) it is replicated on, its
        ZeRO stage (its first reader's), and the mesh's axis sizes."""
        mesh = {f"m{k}": size for k, size in enumerate(self.shape)}
        layouts: dict[str, Spec] = {}
        replicas: dict[str, tuple[tuple[str, int], ...]] = {}
        stages: dict[str, int] = {}
        for op in self.graph.body.block.ops:
            if not isinstance(op, dnn.ParamOp):
                continue
            name = self.names[op.output]
            reader = next((use for use in op.output.uses
                           if isinstance(use.operation, dnn.LayerOp)), None)
            if reader is None:
                layouts[name], stages[name] = (), 0
            else:
                layer = reader.operation
                assert isinstance(layer, dnn.LayerOp)
                axes = self.axes[layer]
                dims = layer.iteration_space().operands[reader.index]
                layouts[name] = spec_entries(dims, axes)
                stages[name] = zero_stage(layer, self.options)
            used = {a for entry in layouts[name] if entry is not None
                    for a in ((entry,) if isinstance(entry, str) else entry)}
            replicas[name] = tuple((a, s) for a, s in mesh.items() if a not in used)
        return layouts, replicas, stages, mesh

    def held(self, value: SSAValue) -> str:
        """The layout of an input or param: its first reader's operand layout."""
        for use in value.uses:
            if isinstance(use.operation, dnn.LayerOp):
                space = use.operation.iteration_space()
                return spec(space.operands[use.index], self.axes[use.operation], call="")
        return "()"

    def init(self, value: SSAValue,
             shape: NamedShape) -> tuple[str, float | int | tuple[int, int]]:
        """How `__main__` seeds a tensor: ("normal", std), ("ints", high), ("normal+1",
        std) for a norm's scale, ("ignored", (high, ignore_index)) for a loss's labels, by
        `pase.dialect.dnn.seeding` (pase-run's rule too, which passes its own data
        instead)."""
        if self.seeds is None:
            self.seeds = seeds(self.graph)
        return self.seeds[value].describe()

    def statement(self, op: object) -> list[str]:
        if isinstance(op, dnn.InputOp | dnn.ParamOp):
            table = "batch" if isinstance(op, dnn.InputOp) else "params"
            name = self.names[op.output]
            return [f"{name} = {table}[{name!r}]"]
        if isinstance(op, dnn.ReturnOp):
            return [f"return {self.names[op.values[0]]}"]
        assert isinstance(op, dnn.LayerOp)
        axes = self.axes[op]
        space = op.iteration_space()
        operands = [f"layout({self.names[v]}, {spec(dims, axes)})"
                    for v, dims in zip(op.inputs, space.operands, strict=True)]
        grid = ", ".join(f"{dim} {factor} over {' '.join(axes[dim]) or 'the chunk axis'}"
                         for dim, factor in self.placements[op].axes) or "unsplit"
        result = self.names[op.output]
        expression = self.expression(op, operands)
        if (params := self.reduced.get(op)) is not None:  # its params' gradients reduced
            expression = self.reduced_expression(op, params, operands)
        if (stacks := self.stacked.get(op)) is not None:  # kept apart per replica
            self.helpers.add("stacked_layer")
            bare = [f"v{k}" for k in range(len(operands))]
            expression = stacked_statement(
                f"lambda {', '.join(bare)}: {self.expression(op, bare)}",
                [spec(dims, axes) for dims in space.operands], spec(space.result, axes),
                stacks, [self.names[op.inputs[k]] for k in stacks], operands)
        return ["", f"# %{result} = {op.name[4:]} -> [{', '.join(op.result_shape.dims)}]: {grid}",
                f"{result} = {expression}",
                f"{result} = layout({result}, {spec(space.result, axes)})"]

    def reduced_expression(self, op: dnn.LayerOp, params: tuple[int, ...],
                           operands: list[str]) -> str:
        """The expression of a layer that reduces its params' gradients itself
        (`pase.targets.jax_reduced`)."""
        axes, space = self.axes[op], op.iteration_space()
        specs = [spec(dims, axes) for dims in space.operands]
        names = [self.names[op.inputs[k]] for k in params]
        self.helpers.add("axes_of")
        if isinstance(op, dnn.EinsumOp):
            self.helpers.add("reduced_einsum")
            return reduced_statement(subscripts(op.input_shapes, op.result_shape), names[0],
                                     specs, spec(space.result, axes), params[0], operands)
        if isinstance(op, dnn.LstmOp):
            self.helpers.update(("reduced_lstm", "sigmoid"))
            return reduced_lstm_statement(names[0], specs, spec(space.result, axes), operands)
        self.helpers.add("reduced_layer")
        bare = [f"v{k}" for k in range(len(operands))]
        layer = f"lambda {', '.join(bare)}: {self.expression(op, bare)}"
        return reduced_layer_statement(layer, names, specs, spec(space.result, axes), params,
                                       operands)

    def expression(self, op: dnn.LayerOp, operands: list[str]) -> str:
        """The jax expression of one layer over its (constrained) operands."""
        inputs, result = op.input_shapes, op.result_shape
        match op:
            case dnn.EinsumOp():
                return (f"jnp.einsum({subscripts(inputs, result)!r}, {', '.join(operands)}, "
                        "precision=jax.lax.Precision.HIGHEST)")
            case dnn.Conv2dOp():
                groups = op.count_prop("groups")
                call = "conv2d" if groups == 1 else "grouped_conv2d"
                self.helpers.add(call)
                return (f"{call}({operands[0]}, {operands[1]}, {op.stride.data}, "
                        f"{_pair(op.ints_prop('padding'))}"
                        + (f", {groups})" if groups != 1 else ")"))
            case dnn.Pool2dOp():
                self.helpers.add("pool2d")
                return (f"pool2d({op.kind_prop()!r}, {operands[0]}, "
                        f"{_pair(op.ints_prop('window'))}, {op.stride.data}, "
                        f"{_pair(op.ints_prop('padding'))})")
            case dnn.ClipOp():
                self.helpers.add("clip")
                return (f"clip({operands[0]}, {op.float_prop('min')!r}, "
                        f"{op.float_prop('max')!r})")
            case dnn.MaskOp() if op.kind_prop() == "padding":
                keep = self.aligned(operands[1], inputs[1], inputs[0].dims)
                return f"jnp.where({keep} != 0, {operands[0]}, {op.float_prop('fill')!r})"
            case dnn.MaskOp():
                self.helpers.add("causal_mask")
                q_axis, k_axis = _axes(inputs[0], op.dims_prop("over"))
                return (f"causal_mask({operands[0]}, {q_axis}, {k_axis}, "
                        f"{op.float_prop('fill')!r})")
            case dnn.PowOp():
                return f"jnp.power({operands[0]}, {op.float_prop('exponent')!r})"
            case dnn.UnaryOp():
                self.helpers.add(op.short_name)
                return f"{op.short_name}({operands[0]})"
            case dnn.BinaryOp():
                symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op.short_name]
                lhs, rhs = (self.aligned(operand, shape, result.dims)
                            for operand, shape in zip(operands, inputs, strict=True))
                return f"{lhs} {symbol} {rhs}"
            case dnn.SoftmaxOp():
                self.helpers.add("softmax")
                return f"softmax({operands[0]}, {_axes(inputs[0], op.dims_prop('over'))})"
            case dnn.NormOp():
                self.helpers.add("norm")
                affine = [self.aligned(operand, shape, inputs[0].dims)
                          for operand, shape in zip(operands[1:], inputs[1:], strict=True)]
                return (f"norm({operands[0]}, {_axes(inputs[0], op.dims_prop('over'))}"
                        + "".join(f", {a}" for a in affine) + epsilon_argument(op.properties) + ")")
            case dnn.RmsNormOp():
                self.helpers.add("rms_norm")
                scale = [self.aligned(operand, shape, inputs[0].dims)
                         for operand, shape in zip(operands[1:], inputs[1:], strict=True)]
                return (f"rms_norm({operands[0]}, {_axes(inputs[0], op.dims_prop('over'))}"
                        + "".join(f", {a}" for a in scale) + epsilon_argument(op.properties) + ")")
            case dnn.ReduceOp():
                return (f"jnp.{op.kind_prop()}({operands[0]}, "
                        f"axis={_axes(inputs[0], op.dims_prop('over'))})")
            case dnn.EmbeddingOp():
                return f"jnp.take({operands[1]}, {operands[0]}, axis=0)"
            case dnn.LstmOp():
                self.helpers.update(("lstm", "sigmoid"))
                return f"lstm({', '.join(operands)})"
            case dnn.GruOp():
                self.helpers.update(("gru", "sigmoid"))
                return f"gru({', '.join(operands)})"
            case dnn.ConcatOp():
                axis = shapes.concat_axis(inputs, result)
                return f"jnp.concatenate([{', '.join(operands)}], axis={axis})"
            case dnn.SliceOp():
                (axis,) = _axes(inputs[0], (op.dim.data,))
                start, size = op.start.data, result.sizes[axis]
                return (f"jax.lax.slice_in_dim({operands[0]}, {start}, {start + size}, "
                        f"axis={axis})")
            case dnn.PadOp():
                widths = [(0, 0)] * len(result.dims)
                (axis,) = _axes(inputs[0], (op.dim.data,))
                widths[axis] = (op.before.data, op.after.data)
                mode = {"zeros": "constant"}.get(op.kind_prop(), op.kind_prop())
                return f"jnp.pad({operands[0]}, {widths!r}, mode={mode!r})"
            case dnn.BroadcastOp():
                new = tuple(k for k, d in enumerate(result.dims) if d not in inputs[0].dims)
                return (f"jnp.broadcast_to(jnp.expand_dims({operands[0]}, {new!r}), "
                        f"{result.sizes!r})")
            case dnn.ReshapeOp():
                return f"jnp.reshape({operands[0]}, {result.sizes!r})"
            case dnn.SoftmaxCrossEntropyOp():
                (axis,) = _axes(inputs[0], op.dims_prop("over"))
                if (ignore := op.ignore_index) is not None and self.counted is not None:
                    self.helpers.add("counted_cross_entropy")
                    return (f"counted_cross_entropy({operands[0]}, {operands[1]}, {axis}, "
                            f"{ignore.data}, {self.counted})")
                if ignore is not None:
                    self.helpers.add("ignoring_cross_entropy")
                    return (f"ignoring_cross_entropy({operands[0]}, {operands[1]}, {axis}, "
                            f"{ignore.data})")
                self.helpers.add("softmax_cross_entropy")
                return f"softmax_cross_entropy({operands[0]}, {operands[1]}, {axis})"
        raise at_op(op, f"the jax target has no translation for {op.name}")

    def aligned(self, operand: str, shape: NamedShape, dims: tuple[str, ...]) -> str:
        """`operand` transposed into `dims` order, with size-1 axes where it lacks one
        (broadcasting by name, as the runtime's `align`)."""
        order = [d for d in dims if d in shape.dims]
        if list(shape.dims) == list(dims):
            return operand
        permutation = tuple(shape.dims.index(d) for d in order)
        expanded = tuple(shape.size_of(d) if d in shape.dims else 1 for d in dims)
        if permutation != tuple(range(len(order))):
            operand = f"jnp.transpose({operand}, {permutation!r})"
        return f"jnp.reshape({operand}, {expanded!r})"


def _axes(shape: NamedShape, over: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(shape.dims.index(d) for d in over)


def _pair(values: tuple[int, ...]) -> tuple[int, int]:
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def _identifier(name: str) -> str:
    """A `.dnn` value name as a Python name that shadows nothing the program uses."""
    return f"{name}_" if keyword.iskeyword(name) or name in RESERVED else name


def rate_table(scales: dict[str, float]) -> str:
    """`RATE_SCALES = {param: factor}`: the params SGD and momentum step at lr times a
    factor (`seeding.rate_scales`), as pase-run's `pase-autodiff{selected_rates=true}`.

        >>> rate_table({"w2": 0.5})
        "RATE_SCALES = {'w2': 0.5}  # SGD's rate factor (selected dims; docs/training.md)"
    """
    return f"RATE_SCALES = {scales!r}  # SGD's rate factor (selected dims; docs/training.md)"
