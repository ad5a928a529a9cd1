"""The JAX target for pipeline plans: S stages on sub-meshes, a schedule, M micro-batches.

    pase-opt models/mlp.dnn -p 'pase-partition-stages{devices=8 stages=2 microbatches=2}' \\
        -t jax -o step.py
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python step.py --steps 3

The program is JaxPP's kind (docs/jax.md): each stage a function of its layers on its own
mesh (the stage's devices, `pase.stage`, with the mesh of its layers' grids as
`pase.targets.jax` builds one for a whole graph), jitted three times (the forward of one
micro-batch; its backward, `jax.vjp` of that forward, adding the parameter gradients to
the stage's running sum; the SGD update), and a driver that runs them in the plan's
schedule. A tensor read by a later stage crosses in a jitted `ppermute` over the two
stages' devices, in the layout its first reader there reads it in; its gradient goes back
the same way. The same file runs as several processes (`--coordinator`): each runs the
stages whose devices it holds and takes part in the crossings of its stages.

    program = pipeline_program(graph, pipeline_of(graph))
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Block, Region, SSAValue

from pase.core.diagnostics import at_op
from pase.core.schedule import simulate
from pase.core.shapes import ELEMENTS
from pase.dialect import dnn
from pase.dialect.dnn.microbatch import batch_dim, loss_weight, microbatch_problem
from pase.dialect.dnn.seeding import rate_scales, seed_of
from pase.dialect.pase import PipelineAttr, stage_of
from pase.dialect.training_options import StepOptions, zero_stage
from pase.targets.jax import _Emitter, rate_table
from pase.targets.jax_mesh import spec
from pase.targets.jax_pipeline_source import (
    pipeline_main,
    pipeline_prelude,
    with_counted_labels,
)
from pase.targets.jax_pipeline_training import with_pipeline_training
from pase.targets.jax_source import HELPERS, with_ignored_labels
from pase.targets.jax_stacked import stacked_params
from pase.targets.jax_training import checkpointed

COUNTED = "batch['kept labels']"
"""Where a pipelined stage reads the count of labels the whole batch keeps."""


@dataclass(frozen=True)
class Send:
    """A tensor produced on stage `source` and read on the later stage `target`, in the
    layout `layout` (a PartitionSpec's entries) of the target's mesh."""

    value: str
    source: int
    target: int
    layout: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def key(self) -> str:
        return f"{self.value}>{self.target}"


def microbatch_graph(graph: dnn.GraphOp, microbatches: int, verify: bool = True
                     ) -> dnn.GraphOp:
    """A copy of `graph` whose batch dim is one micro-batch's (batch / M), ops and
    attributes unchanged: what each stage's functions compute on. `verify=False` for a
    chunk of a micro-batch per data-parallel replica, whose configurations still split
    the batch it no longer has (`_PipelineEmitter.chunk` takes those axes out)."""
    batch = batch_dim(graph)
    sizes = {d: s // (microbatches if d == batch else 1) for d, s in graph.dims.items()}
    mapping: dict[SSAValue, SSAValue] = {}
    block = Block()
    for op in graph.body.block.ops:
        types = [dnn.TensorType(r.type.shape.dims, [sizes[d] for d in r.type.shape.dims],
                                r.type.element_type)
                 if isinstance(r.type, dnn.TensorType) else r.type for r in op.results]
        new = type(op).create(operands=[mapping[v] for v in op.operands], result_types=types,
                              properties=dict(op.properties), attributes=dict(op.attributes))
        new.location = op.location
        for old_result, new_result in zip(op.results, new.results, strict=True):
            new_result.name_hint = old_result.name_hint
            mapping[old_result] = new_result
        block.add_op(new)
    micro = dnn.GraphOp.create(
        properties={**graph.properties, "dim_sizes": ArrayAttr(IntAttr(sizes[d])
                                                               for d in graph.dims)},
        attributes=dict(graph.attributes), regions=[Region(block)])
    micro.location = graph.location
    if verify:
        micro.verify()
    return micro


def pipeline_program(graph: dnn.GraphOp, pipeline: PipelineAttr,
                     options: StepOptions | None = None) -> str:
    """The JAX program of `graph`'s pipeline plan (every layer has its `pase.stage`),
    its step the `options` (`pase.training`; default SGD in fp32)."""
    stages, microbatches = pipeline.stages.data, pipeline.microbatches.data
    if (problem := microbatch_problem(graph, microbatches)) is not None:
        raise at_op(graph, f"the jax target cannot run this pipeline plan: {problem}")
    options = options or StepOptions()
    emitter = _PipelineEmitter(graph, microbatch_graph(graph, microbatches), pipeline,
                               stages, microbatches, options)
    program = emitter.program()
    return program if options.is_default() else with_pipeline_training(program, emitter,
                                                                        options)


class _PipelineEmitter:
    """Writes the pipeline program: the stages' functions (one `_Emitter` per stage, on
    the micro-batch graph), the tables that place params, inputs and crossings, and the
    global order of the schedule's work."""

    def __init__(self, graph: dnn.GraphOp, micro: dnn.GraphOp, pipeline: PipelineAttr,
                 stages: int, microbatches: int, options: StepOptions):
        self.graph, self.micro, self.pipeline = graph, micro, pipeline
        self.options = options
        self.stages, self.microbatches = stages, microbatches
        self.per_stage = pipeline.devices.data // stages
        self.stage: dict[dnn.LayerOp, int] = {}
        self.position = {op: index for index, op in enumerate(micro.body.block.ops)}
        for layer, name in micro.layer_names().items():
            attr = stage_of(layer)
            if attr is None:
                raise at_op(layer, f"layer '{name}' has no pase.stage; the jax target "
                            "needs pase-partition-stages to place every layer of a pipeline")
            self.stage[layer] = attr.index.data
        self.emitters = [_Emitter(micro, self.per_stage,
                                  [layer for layer, s in self.stage.items() if s == index])
                         for index in range(stages)]
        self.names = self.emitters[0].names
        ret = micro.body.block.last_op
        assert isinstance(ret, dnn.ReturnOp)
        loss = ret.values[0].owner
        assert isinstance(loss, dnn.LayerOp)  # a graph without a microbatch_problem
        self.loss_stage = self.stage[loss]
        self.loss = self.names[ret.values[0]]
        self.loss_element = loss.result_shape.element
        self.counted = loss if isinstance(loss, dnn.SoftmaxCrossEntropyOp) and \
            loss.ignore_index is not None and microbatches > 1 else None
        """A loss that divides by the labels the whole batch keeps (`kept_labels`)."""
        for emitter in self.emitters if self.counted is not None else ():
            emitter.counted = COUNTED
        self.sends = self.crossings()
        self.shared = any(len(self.first_layouts(op.output)) > 1
                          for op in micro.body.block.ops if isinstance(op, dnn.ParamOp))

    def readers(self, value: SSAValue) -> list[tuple[dnn.LayerOp, int]]:
        """The layers that read `value`, with the operand index, in program order."""
        return sorted(((use.operation, use.index) for use in value.uses
                       if isinstance(use.operation, dnn.LayerOp)
                       and use.operation in self.stage),
                      key=lambda reader: (self.position[reader[0]], reader[1]))

    def layout(self, reader: dnn.LayerOp, index: int) -> str:
        stage = self.stage[reader]
        space = reader.iteration_space()
        return spec(space.operands[index], self.emitters[stage].axes[reader], call="")

    def first_layouts(self, value: SSAValue) -> dict[int, str]:
        """Per stage that reads `value`, the layout its first reader there reads it in."""
        layouts: dict[int, str] = {}
        for reader, index in self.readers(value):
            layouts.setdefault(self.stage[reader], self.layout(reader, index))
        return layouts

    def crossings(self) -> list[Send]:
        sends = []
        for layer, source in self.stage.items():
            for target, layout in self.first_layouts(layer.output).items():
                if target == source:
                    continue
                if target < source:
                    raise at_op(layer, f"layer '{self.names[layer.output]}' of stage {source} "
                                f"is read by stage {target}, an earlier one: the jax target "
                                "sends activations forward only")
                shape = layer.result_shape
                sends.append(Send(self.names[layer.output], source, target, layout,
                                  tuple(shape.sizes), ELEMENTS[shape.element].numpy))
        return sends

    def order(self) -> list[tuple[str, int, int]]:
        """The schedule's work in one global order (the nominal simulation's start
        order, each crossing right after the work that makes it): ("forward" | "backward",
        stage, micro-batch) and ("send" | "return", crossing, micro-batch); then, when a
        param is read in several stages, ("share", -1, -1), where the stages holding a copy
        add each other's gradient sums; then ("update", stage, -1) per stage."""
        steps: list[tuple[str, int, int]] = []
        updates: list[tuple[str, int, int]] = []
        nominal = simulate(self.pipeline.schedule.data, [1.0] * self.stages,
                           [2.0] * self.stages, self.microbatches)
        for event in nominal.events:
            if event.kind == "allreduce":
                updates.append(("update", event.stage, -1))
            elif event.kind == "forward":
                steps.append(("forward", event.stage, event.microbatch))
                steps += [("send", k, event.microbatch) for k, send in enumerate(self.sends)
                          if send.source == event.stage]
            elif event.kind == "backward":
                steps.append(("backward", event.stage, event.microbatch))
                steps += [("return", k, event.microbatch) for k, send in enumerate(self.sends)
                          if send.target == event.stage]
        return steps + [("share", -1, -1)] * bool(self.shared) + updates

    def tables(self) -> list[str]:
        params, inputs, owners, feeds, axes, shared = [], [], [], [], [], []
        values = dict(zip(self.micro.body.block.ops, self.graph.body.block.ops, strict=True))
        scales = rate_scales(self.graph)  # of the whole batch: the loss is its mean
        rates: dict[str, float] = {}
        for op in self.micro.body.block.ops:
            if not isinstance(op, dnn.InputOp | dnn.ParamOp):
                continue
            name = self.names[op.output]
            original = values[op]
            assert isinstance(original, dnn.InputOp | dnn.ParamOp)
            shape = original.output.type.shape
            layouts = self.first_layouts(op.output)
            init = seed_of(original.output).describe()
            if isinstance(op, dnn.ParamOp):
                if original.output in scales:
                    rates[name] = scales[original.output]
                stage, layout = next(iter(layouts.items()), (0, "()"))
                params.append(f"    {name!r}: ({shape.sizes!r}, "
                              f"{ELEMENTS[shape.element].numpy!r}, {layout}, {init!r}),")
                owners.append(f"    {name!r}: {stage},")
                shared += [f"    ({name!r}, {stage}, {other}, {where}, {shape.sizes!r}, "
                           f"{ELEMENTS[shape.element].numpy!r}),"
                           for other, where in list(layouts.items())[1:]]
                continue
            inputs.append(f"    {name!r}: ({shape.sizes!r}, {ELEMENTS[shape.element].numpy!r}, "
                          f"(), {init!r}),")
            feeds.append(f"    {name!r}: {{{', '.join(f'{s}: {v}' for s, v in layouts.items())}}},")
            batch = batch_dim(self.graph)
            axes.append(f"    {name!r}: "
                        f"{shape.dims.index(batch) if batch in shape.dims else None},")
        return [
            "PARAMS = {  # name: (shape, dtype, layout on its stage's mesh, seeded init)",
            *params, "}",
            "INPUTS = {  # name: (shape, dtype, -, seeded init), the whole batch", *inputs, "}",
            "PARAM_STAGE = {  # name: the stage that holds it", *owners, "}",
            "INPUT_STAGES = {  # name: {stage that reads it: its layout there}", *feeds, "}",
            "BATCH_AXIS = {  # name: the axis micro-batches split (None: whole)", *axes, "}",
            "SENDS = [  # (value, from stage, to stage, layout on the target, shape, dtype)",
            *[f"    ({s.value!r}, {s.source}, {s.target}, {s.layout}, {s.shape!r}, "
              f"{s.dtype!r})," for s in self.sends], "]",
            "SHARED = [  # (param, its stage, another stage that reads it, layout there, ...)",
            *shared, "]",
            rate_table(rates),
        ]

    def function(self, index: int, chunk: tuple[dnn.GraphOp, _Emitter] | None = None
                 ) -> list[str]:
        """`stage{index}(mesh, params, batch, received)`: its layers on one micro-batch;
        the tensors later stages read (and on the loss's stage, the loss), by key. With
        `chunk` (a graph of 1/R of a micro-batch and its emitter, the stage's data axes
        taken out of its layouts): `stage{index}_chunk`, what the backward maps over the R
        chunks (`data_axes`)."""
        graph, emitter = chunk or (self.micro, self.emitters[index])
        same = dict(zip(self.micro.body.block.ops, graph.body.block.ops, strict=True))
        stage = {same[layer]: s for layer, s in self.stage.items()}
        layers = [layer for layer, s in stage.items() if s == index]
        devices = range(index * self.per_stage, (index + 1) * self.per_stage)
        wanted = {v for layer in layers for v in layer.operands}
        body = [f"{emitter.names[v]} = received[{emitter.names[v]!r}]" for v in
                dict.fromkeys(v for v in wanted if isinstance(v.owner, dnn.LayerOp)
                              and stage.get(v.owner) != index)]
        ops = [op for op in graph.body.block.ops
               if isinstance(op, dnn.InputOp | dnn.ParamOp) and op.output in wanted
               or isinstance(op, dnn.LayerOp) and op in layers]
        body += checkpointed(ops, emitter.statement, emitter.names, self.options) \
            if self.options.recompute != "none" else [
                line for op in ops for line in emitter.statement(op)]
        for name, held in self.regathered(index).items():  # ZeRO 3: gathered, not kept
            emitter.helpers.add("gathered")
            body[body.index(f"{name} = params[{name!r}]")] = \
                f"{name} = gathered(layout(params[{name!r}], P(*{held})))"
        sent = [f"{s.key!r}: {s.value}" for s in self.sends if s.source == index]
        if index == self.loss_stage:
            sent.append(f"'loss': {self.loss}")
        what = "one chunk of a micro-batch" if chunk else "one micro-batch"
        return [
            f"def stage{index}{'_chunk' if chunk else ''}(mesh, params, batch, received):",
            f'    """Stage {index}, on devices {devices.start}..{devices.stop - 1}: '
            f'{len(layers)} layer{"s" if len(layers) != 1 else ""} on {what}."""',
            "",
            "    def layout(value, spec):",
            "        return jax.lax.with_sharding_constraint(value, NamedSharding(mesh, spec))",
            "",
            *[f"    {line}" if line else "" for line in body],
            "",
            f"    return {{{', '.join(sent)}}}", "", ""]

    def regathered(self, index: int) -> dict[str, str]:
        """Stage `index`'s params at ZeRO 3 (their first reader's there), each with the
        layout it is gathered into: the stage's forward names that gather `gathered`, and
        its pullback keeps every residual but those (`jax_pipeline_training`), so the
        backward gathers again each param it reads, as ZeRO 3 does and the model charges."""
        found = {}
        for op in self.micro.body.block.ops:
            if isinstance(op, dnn.ParamOp) and index in (first := self.first_layouts(op.output)):
                reader = next(layer for layer, _ in self.readers(op.output)
                              if self.stage[layer] == index)
                stacked = op.output in [reader.inputs[k] for k in
                                        self.emitters[index].stacked.get(reader, {})]
                if zero_stage(reader, self.options) >= 3 and not stacked:  # (placed inside)
                    found[self.names[op.output]] = first[index]
        return found

    def kept_labels(self) -> list[str]:
        """`kept_labels(batch)`: the labels one micro-batch's loss reads that are not its
        ignore_index, counted (its inputs and the layers that make the labels, without
        layouts); `main` adds them up before the first micro-batch."""
        assert self.counted is not None
        path: set[object] = set()
        pending = [self.counted.inputs[1]]
        while pending:
            owner = pending.pop().owner
            if isinstance(owner, dnn.InputOp | dnn.LayerOp) and owner not in path:
                path.add(owner)
                pending += owner.inputs if isinstance(owner, dnn.LayerOp) else []
        body = []
        for op in self.micro.body.block.ops:
            if op in path:
                stage = self.stage.get(op, 0) if isinstance(op, dnn.LayerOp) else 0
                body += self.emitters[stage].statement(op)
        assert self.counted.ignore_index is not None
        labels = self.names[self.counted.inputs[1]]
        return ["def kept_labels(batch):",
                '    """The labels of one micro-batch the loss keeps (not its ignore_index)."""',
                "", "    def layout(value, spec):", "        return value", "",
                *[f"    {line}" if line else "" for line in body], "",
                f"    return jnp.sum({labels} != {self.counted.ignore_index.data})", "", ""]

    def data_axes(self, index: int) -> tuple[str, ...]:
        """The mesh axes stage `index` splits the batch over and nothing else, in the same
        order in every layer (its data-parallel replicas): the backward then maps the
        stage over R chunks of a micro-batch, one per replica, and keeps each replica's
        parameter gradients apart (R copies, summed once a step by the update) where the
        plain backward's gradients are all-reduced every micro-batch. () where there are
        none, or where a layer other than the loss reduces over the batch, skips it, or a
        param is shared with another stage."""
        batch = batch_dim(self.micro)
        emitter = self.emitters[index]
        loss = self.micro.body.block.last_op.operands[0].owner  # type: ignore[union-attr]
        common: tuple[str, ...] | None = None
        for layer in [layer for layer, s in self.stage.items() if s == index]:
            space = layer.iteration_space()
            if batch not in [d.name for d in space.dims]:
                return ()
            if layer is not loss and (space.dim(batch).reduction or batch in space.partial):
                return ()
            axes = emitter.axes[layer]
            on_batch = tuple(axes.get(batch, ()))
            if common is not None and on_batch != common:
                return ()
            common = on_batch
            if any(set(mesh) & set(on_batch) for dim, mesh in axes.items() if dim != batch):
                return ()
        if not common or any(len(self.first_layouts(op.output)) > 1 and index in
                             self.first_layouts(op.output) for op in self.micro.body.block.ops
                             if isinstance(op, dnn.ParamOp)):
            return ()
        replicas = prod(emitter.shape[int(axis[1:])] for axis in common)
        if self.micro.dims[batch] % replicas:  # type: ignore[index]
            return ()
        return common

    def chunk(self, index: int, axes: tuple[str, ...]) -> tuple[dnn.GraphOp, _Emitter]:
        """The graph of one of stage `index`'s R chunks of a micro-batch and its emitter:
        the stage's layouts with its data `axes` taken out (the map over the chunks puts
        them on the chunk axis)."""
        emitter = self.emitters[index]
        replicas = prod(emitter.shape[int(axis[1:])] for axis in axes)
        graph = microbatch_graph(self.graph, self.microbatches * replicas, verify=False)
        same = dict(zip(self.micro.body.block.ops, graph.body.block.ops, strict=True))
        layers = [same[layer] for layer, s in self.stage.items() if s == index]
        chunk = _Emitter(graph, self.per_stage, layers)  # type: ignore[arg-type]
        chunk.counted = self.emitters[index].counted
        chunk.axes = {layer: {dim: tuple(a for a in mesh if a not in axes)
                              for dim, mesh in chunk.axes[layer].items()}
                      for layer in chunk.axes}
        return graph, chunk

    def chunk_weights(self, data_axes: list[tuple[str, ...]]) -> list[float]:
        """Per stage, what one of its R chunks' loss weighs in its micro-batch's: 1/R for
        a mean over the batch, 1 for a sum."""
        weights = []
        for index, axes in enumerate(data_axes):
            replicas = prod(self.emitters[index].shape[int(a[1:])] for a in axes)
            weights.append(loss_weight(self.graph, self.microbatches * replicas)
                           / loss_weight(self.graph, self.microbatches))
        return weights

    def stacks(self, emitter: _Emitter) -> dict[str, tuple[str, ...]]:
        """A stage's params whose gradients its stacked layers keep apart per replica
        (`jax_stacked`), with the mesh axes of their replicas."""
        return {self.names[layer.inputs[k]]: axes for layer, params in emitter.stacked.items()
                for k, axes in params.items()}

    def send_batch_axis(self, send: Send) -> int | None:
        """The axis of a crossing tensor's batch dim (None: it has none)."""
        dims = next(op.output.type.shape.dims for op in self.micro.body.block.ops
                    if isinstance(op, dnn.LayerOp) and self.names[op.output] == send.value)
        batch = batch_dim(self.micro)
        return dims.index(batch) if batch in dims else None

    def program(self) -> str:
        data_axes = [self.data_axes(index) for index in range(self.stages)]
        for index, emitter in enumerate(self.emitters):
            layers = [layer for layer, s in self.stage.items() if s == index]
            emitter.stacked = stacked_params(layers, emitter.axes)
            read = {v for layer in layers for v in layer.inputs if isinstance(v.owner, dnn.ParamOp)}
            if read <= {layer.inputs[k] for layer, ks in emitter.stacked.items() for k in ks}:
                data_axes[index] = ()  # every param's sums kept apart by its layer
            elif data_axes[index]:  # the stage's backward mapped over its replicas' chunks
                emitter.stacked = {}
        functions = [line for index in range(self.stages) for line in self.function(index)]
        chunks = {index: self.chunk(index, axes) for index, axes in enumerate(data_axes)
                  if axes}
        functions += [line for index, chunk in chunks.items()
                      for line in self.function(index, chunk)]
        if self.counted is not None:
            functions += self.kept_labels()
        helpers = sorted(set().union(*(e.helpers for e in self.emitters),
                                     *(e.helpers for _, e in chunks.values())))
        elements = {op.output.type.shape.element for op in self.graph.body.block.ops
                    if isinstance(op, dnn.InputOp | dnn.ParamOp)}
        plan = self.pipeline
        meshes = [(e.shape, tuple(f"m{k}" for k in range(len(e.shape)))) for e in self.emitters]
        return "\n".join([
            pipeline_prelude(self.graph.sym_name.data, plan.devices.data, self.stages,
                             self.microbatches, plan.schedule.data),
            f"DEVICES = {plan.devices.data}",
            f"STAGES = {self.stages}",
            f"MICROBATCHES = {self.microbatches}",
            f"SCHEDULE = {plan.schedule.data!r}",
            f"MODELLED_STEP = {plan.step.data!r}  # seconds, pase's cost model",
            f"STAGE_MESHES = {meshes!r}",
            f"LOSS_STAGE = {self.loss_stage}",
            f"LOSS_WEIGHT = {loss_weight(self.graph, self.microbatches)!r}",
            f"LOSS_DTYPE = {ELEMENTS[self.loss_element].numpy!r}",
            f"X64 = {any(ELEMENTS[t].bytes == 8 for t in elements)}",
            "",
            *self.tables(),
            f"ORDER = {self.order()!r}",
            f"DATA_AXES = {data_axes!r}  # per stage: the mesh axes only the batch is split over",
            f"CHUNK_WEIGHTS = {self.chunk_weights(data_axes)!r}  # a chunk's loss in its "
            "micro-batch's",
            "STACKED = [  # per stage: {param: the mesh axes its gradient sums are kept "
            "apart on}",
            *[f"    {self.stacks(emitter)!r}," for emitter in self.emitters], "]",
            "SEND_BATCH_AXIS = {  # crossing tensor: the axis of its batch dim",
            *dict.fromkeys(f"    {s.value!r}: {self.send_batch_axis(s)!r}," for s in self.sends),
            "}",
            "",
            *[HELPERS[name] for name in helpers],
            "",
            *functions,
            f"STAGE_FUNCTIONS = [{', '.join(f'stage{i}' for i in range(self.stages))}]",
            "CHUNK_FUNCTIONS = [" + ", ".join(f"stage{i}_chunk" if i in chunks else "None"
                                              for i in range(self.stages)) + "]",
            "",
            self.main()])

    def main(self) -> str:
        """The driver and `main`, with the "ignored" seed and the count of the labels kept
        where the loss has an ignore_index."""
        text = pipeline_main()
        if self.counted is not None:
            text = with_counted_labels(text)
        return with_ignored_labels(text) if any(
            seed_of(op.output).kind == "ignored" for op in self.graph.body.block.ops
            if isinstance(op, dnn.InputOp)) else text
