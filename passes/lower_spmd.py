"""`pase-lower-spmd`: the `dnn` graph with its strategy becomes one SPMD `dist.program`.

Each layer runs on the device grid of its `pase.config` (split dims in iteration-space
order, or `pase.grid_order` for einsum gradients), row-major onto devices 0..q-1. Every
value gets a sharding from the op that produces it; where a consumer needs another
sharding, a `dist.redistribute` is inserted (tag `"u->v"` forward, `"u<-v"` for a
gradient flowing back from v to u); where a layer leaves partial sums (a split reduction
dim, or an operand gradient over split dims it does not range over) a
`dist.all_reduce` follows (tag: the layer). Inputs and parameters enter in the layout
of their first reader. The result moves exactly the words docs/cost-model.md charges,
which `pase-run --check` verifies.

Option `devices=P` (at least 1) sets the program's device count; omitted, it is the
device count of the graph's `pase.strategy`, the one pase-search optimized for.

    pase-opt models/mlp.dnn -p 'pase-search{devices=4},pase-autodiff,pase-lower-spmd'
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from pase.core.diagnostics import Diagnostic
from pase.core.placement import Placement, edge_tag
from pase.core.space import IterationSpace
from pase.dialect import dist, dnn
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    ConfigAttr,
    PipelineAttr,
    StageAttr,
    forward_layer,
    grid_order,
    layout_of,
    pipeline_of,
    stage_of,
)
from pase.passes.microbatch import batch_dim, loss_weight, microbatch_problem
from pase.passes.options import PasePass
from pase.passes.strategy import simulate


def placement(space: IterationSpace, config: ConfigAttr | None,
              order: tuple[str, ...] | None = None) -> Placement:
    return Placement.of(order or space.names, config.splits if config is not None else {})


@dataclass(frozen=True)
class LowerSpmdPass(PasePass):
    """Lower every `dnn.graph` to a `dist.program` on `devices` devices.

    `devices` is at least 1; omitted (None), each graph's program gets the device count
    of its `pase.strategy` (from pase-search):

        pase-lower-spmd              the strategy's device count
        pase-lower-spmd{devices=8}   8 devices (at least as many as the largest layer grid)
    """

    name = "pase-lower-spmd"

    devices: int | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.devices is not None and self.devices < 1:
            raise Diagnostic("pase-lower-spmd: devices must be at least 1, or omitted to use "
                             "the strategy's device count")
        for graph in [g for g in op.walk() if isinstance(g, dnn.GraphOp)]:
            pipeline = pipeline_of(graph)
            devices = self._devices(graph)
            if pipeline is not None and (pipeline.stages.data > 1 or
                                         pipeline.microbatches.data > 1):
                if devices < pipeline.devices.data:
                    raise Diagnostic(f"pase-lower-spmd on @{graph.sym_name.data}: the "
                                     f"pipeline runs on {pipeline.devices.data} devices, "
                                     f"more than devices={devices}")
                program = _PipelineLowering(graph, pipeline.devices.data, pipeline).run()
                if devices > pipeline.devices.data:
                    program.devices = IntAttr(devices)
            else:
                program = _Lowering(graph, devices).run()
            Rewriter.replace_op(graph, program)

    def _devices(self, graph: dnn.GraphOp) -> int:
        if self.devices is not None:
            return self.devices
        pipeline = pipeline_of(graph)
        if pipeline is not None:
            return pipeline.devices.data
        strategy = graph.strategy
        if strategy is None:
            raise Diagnostic(f"pase-lower-spmd on @{graph.sym_name.data}: give devices=P or "
                             "run pase-search first")
        return strategy.devices.data


class _Lowering:
    def __init__(self, graph: dnn.GraphOp, devices: int):
        self.graph = graph
        self.devices = devices
        self.names = graph.layer_names()
        self.by_name = {name: op for op, name in self.names.items()}
        self.block = Block()
        self.grids: dict[str, tuple[int, ...]] = {}
        self.held: dict[SSAValue, SSAValue] = {}
        self.converted: dict[tuple[SSAValue, dist.TensorType, str], SSAValue] = {}
        self.owner_layer: dict[SSAValue, str] = {}
        self.sources: dict[SSAValue, dnn.InputOp | dnn.ParamOp] = {}
        self.offset = 0
        """The first device of the grids of the op being lowered (a pipeline stage's)."""
        self.first: dict[str, int] = {}

    def error(self, message: str) -> Diagnostic:
        return Diagnostic(f"pase-lower-spmd on @{self.graph.sym_name.data}: {message}")

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    # -- layouts --

    def grid(self, where: Placement) -> str:
        name = where.grid + (f"_at{self.offset}" if self.offset else "")
        if name not in self.grids:
            if prod(where.shape) + self.offset > self.devices:
                at = f" from device {self.offset}" if self.offset else ""
                raise self.error(f"a layer's grid {'x'.join(map(str, where.shape))} needs "
                                 f"{prod(where.shape)} devices{at} but the program has "
                                 f"{self.devices}")
            self.grids[name] = where.shape
            if self.offset:
                self.first[name] = self.offset
        return name

    def tensor_type(self, value: SSAValue, dims_map: tuple[str | None, ...], where: Placement,
                    partial: list[int] | None = None) -> dist.TensorType:
        shape = dnn.shape_of(value)
        split = [[a] if (a := where.axis(d)) is not None else [] for d in dims_map]
        grid = self.grid(where)
        local = dist.local_shape(shape.sizes, split, where.shape)
        return dist.TensorType(shape.dims, shape.sizes, local, shape.element, grid, split,
                               sorted(partial or []))

    def operand(self, value: SSAValue, needed: dist.TensorType, consumer: str,
                backward: bool, carried: str = "") -> SSAValue:
        """`value` in the layout `needed`, redistributing (once) if it is held otherwise.

        The transfer's tag is "producer->consumer" (or "consumer<-producer" backward), with
        " %x" added when it carries an input or param `x` (or its gradient) held in its
        first reader's layout, so two tensors between the same layers count apart."""
        if isinstance(value.owner, dnn.InputOp | dnn.ParamOp):
            carried = value.name_hint or "v"
        if value not in self.held:
            source = value.owner
            assert isinstance(source, dnn.InputOp | dnn.ParamOp)
            kind = dist.InputOp if isinstance(source, dnn.InputOp) else dist.ParamOp
            op = kind.create(properties={"value_name": StringAttr(value.name_hint or "v")},
                             result_types=[needed])
            op.results[0].name_hint = value.name_hint
            self.emit(op)
            self.held[value] = op.results[0]
            self.owner_layer[value] = consumer
        current = self.held[value]
        if current.type == needed:
            return current
        # One transfer per consuming layer, even when two need the same layout: the cost
        # model charges every edge (PaSE's pairwise model), and the runtime must match it.
        key = (value, needed, consumer)
        if key not in self.converted:
            producer = self.owner_layer[value]
            tag = (edge_tag(consumer, producer, True, carried) if backward
                   else edge_tag(producer, consumer, False, carried))
            transfer = dist.RedistributeOp.create(operands=[current], result_types=[needed],
                                                  properties={"tag": StringAttr(tag)})
            transfer.results[0].name_hint = value.name_hint
            self.emit(transfer)
            self.converted[key] = transfer.results[0]
        return self.converted[key]

    # -- ops --

    def run(self) -> dist.ProgramOp:
        for op in self.graph.body.block.ops:
            if isinstance(op, dnn.InputOp | dnn.ParamOp):
                continue
            if isinstance(op, dnn.ReturnOp):
                values = [self.held[v] for v in op.values]
                self.emit(dist.ReturnOp.create(operands=values))
            elif isinstance(op, dnn.VjpOp):
                self.lower_vjp(op)
            elif isinstance(op, dnn.SgdOp | dnn.AddOp) and layout_of(op) is not None:
                self.lower_in_layout(op)
            elif isinstance(op, dnn.LayerOp):
                self.lower_layer(op)
            else:
                raise self.error(f"cannot lower {op.name}")
        return self.program()

    def program(self) -> dist.ProgramOp:
        """The program of the ops emitted, with a `shard.grid` for each grid they use."""
        # Inserted at the front one by one: largest first, so they read smallest first.
        for name, shape in sorted(self.grids.items(), key=lambda item: (
                len(item[1]), item[1], self.first.get(item[0], 0)), reverse=True):
            grid = shard.GridOp.build(properties={
                "sym_name": StringAttr(name), "shape": DenseArrayBase.from_list(i64, shape)})
            if name in self.first:
                grid.attributes[dist.FIRST_DEVICE] = IntegerAttr(self.first[name], i64)
            if self.block.first_op is not None:
                self.block.insert_op_before(grid, self.block.first_op)
            else:
                self.block.add_op(grid)
        return dist.ProgramOp.create(
            properties={"sym_name": StringAttr(self.graph.sym_name.data),
                        "devices": IntAttr(self.devices)},
            regions=[Region(self.block)])

    def config(self, op: Operation) -> ConfigAttr | None:
        config = op.attributes.get(CONFIG_ATTR_NAME)
        if config is None:
            raise self.error(f"{op.name} {self.layer_of(op)!r} has no pase.config; run "
                             "pase-search first (or pin every layer)")
        assert isinstance(config, ConfigAttr)
        return config

    def layer_of(self, op: Operation) -> str:
        if isinstance(op, dnn.LayerOp) and op in self.names:
            return self.names[op]
        if (layer := forward_layer(op)) is not None:
            return layer
        if (layout := layout_of(op)) is not None:
            return layout.layer_name
        return op.name

    def layer_op(self, kernel: str, operands: list[SSAValue], properties: dict,
                 where: Placement, stats: list[str], tag: str,
                 result_types: list[dist.TensorType]) -> Operation:
        op = dist.LayerOp.create(
            operands=operands, result_types=result_types,
            properties={"kernel": StringAttr(kernel),
                        "op_properties": DictionaryAttr(properties),
                        "stats_axes": dist.axes_attr(where.axes_of(stats)),
                        "tag": StringAttr(tag)})
        return self.emit(op)

    def complete(self, value: SSAValue, tag: str) -> SSAValue:
        """All-reduce a partial value over its partial axes."""
        value_type = value.type
        assert isinstance(value_type, dist.TensorType)
        if not value_type.partial_axes:
            return value
        op = dist.AllReduceOp.create(
            operands=[value], result_types=[value_type.with_partial(())],
            properties={"grid": value_type.grid, "grid_axes": dist.axes_attr(
                value_type.partial_axes), "tag": StringAttr(tag)})
        op.results[0].name_hint = value.name_hint
        return self.emit(op).results[0]

    def lower_layer(self, op: dnn.LayerOp) -> None:
        space = op.iteration_space()
        where = placement(space, self.config(op), grid_order(op))
        backward = op.is_gradient
        tag = self.layer_of(op)
        operands = [self.operand(v, self.tensor_type(v, dims, where), tag, backward)
                    for v, dims in zip(op.inputs, space.operands, strict=True)]
        result_type = self.tensor_type(op.output, space.result, where,
                                       where.axes_of(space.partial))
        layer = self.layer_op(op.name, operands, dict(op.properties), where,
                              list(space.stats_dims), tag, [result_type])
        layer.results[0].name_hint = op.output.name_hint
        self.held[op.output] = self.finish(op.output, layer.results[0], tag)
        self.owner_layer[op.output] = tag

    def finish(self, value: SSAValue, result: SSAValue, tag: str) -> SSAValue:
        """What the lowered `result` of the dnn `value` is held as: complete."""
        del value
        return self.complete(result, tag)

    def lower_vjp(self, op: dnn.VjpOp) -> None:
        space = op.iteration_space()
        where = placement(space, self.config(op))
        tag = self.layer_of(op)
        operands = [self.operand(v, self.tensor_type(v, dims, where), tag, True)
                    for v, dims in zip(op.inputs, space.operands, strict=True)]
        operands.append(self.operand(op.result, self.tensor_type(op.result, space.result, where),
                                     tag, True))
        if op.cotangent is not None:
            operands.append(self.operand(op.cotangent, self.tensor_type(
                op.cotangent, space.result, where), tag, True))
        result_types = []
        for index in op.indices:
            dims = space.operands[index]
            missing = [d.name for d in space.dims if d.name not in dims
                       and index not in space.kernel_reduced_grads]
            result_types.append(self.tensor_type(op.inputs[index], dims, where,
                                                 where.axes_of(missing)))
        properties = {"wrt": op.wrt, "forward": op.forward, **op.forward_properties()}
        layer = self.layer_op("dnn.vjp", operands, properties, where, list(space.stats_dims),
                              tag, result_types)
        if op.cotangent is None:
            layer.properties["seeded"] = UnitAttr()
        for gradient, result in zip(op.gradients, layer.results, strict=True):
            result.name_hint = gradient.name_hint
            self.held[gradient] = self.finish(gradient, result, tag)
            self.owner_layer[gradient] = tag

    def lower_in_layout(self, op: dnn.SgdOp | dnn.AddOp) -> None:
        layout = layout_of(op)
        assert layout is not None  # run() sends only such ops here
        layer_name, index = layout.layer_name, layout.operand_index
        layer = self.by_name[layer_name]  # GraphOp.verify_layer_references checked both
        space = layer.iteration_space()
        where = placement(space, self.config(layer))
        dims = space.operands[index] if index is not None else space.result
        read = layer.inputs[index] if index is not None else None
        carried = (read.name_hint or "v") if read is not None and isinstance(
            read.owner, dnn.InputOp | dnn.ParamOp) else ""
        operands = [self.operand(v, self.tensor_type(v, dims, where), layer_name, True,
                                 carried) for v in op.operands]
        result_type = self.tensor_type(op.results[0], dims, where)
        kernel = "dnn.sgd" if isinstance(op, dnn.SgdOp) else "dnn.add"
        result = self.layer_op(kernel, operands, dict(op.properties), where, [], layer_name,
                               [result_type]).results[0]
        result.name_hint = op.results[0].name_hint
        self.held[op.results[0]] = result
        self.owner_layer[op.results[0]] = layer_name


class _PipelineLowering(_Lowering):
    """A pipelined step: each stage's layers on its own devices (grids from the stage's
    first device), M micro-batches, in the order of the schedule.

    Per micro-batch the forward and backward ops of each stage are lowered as in one
    step, on batch/M rows (`dist.input ... at [...]` reads the micro-batch's rows), in
    the order `schedule.simulate` starts them; one list of ops, so each device's part
    of it is its stage's `stage_order`. A parameter's gradient is not all-reduced per
    micro-batch: its partial sums accumulate (`dist.accumulate`) and are all-reduced once,
    when its stage has run its last backward, as the cost model charges. Then every
    SGD step runs once, and the loss is the micro-batch losses' sum, or their mean for a
    mean loss (`dist.scale`), as are the gradients.
    """

    def __init__(self, graph: dnn.GraphOp, devices: int, pipeline: PipelineAttr):
        super().__init__(graph, devices)
        self.stages = pipeline.stages.data
        self.microbatches = pipeline.microbatches.data
        self.schedule = pipeline.schedule.data
        self.batch = batch_dim(graph)
        self.microbatch = -1
        self.phase = "forward"
        self.shared: dict[SSAValue, tuple[SSAValue, str]] = {}
        self.shared_converted: dict[tuple[SSAValue, dist.TensorType, str], SSAValue] = {}
        self.states: list[tuple[dict, dict, dict]] = [
            ({}, {}, {}) for _ in range(self.microbatches)]
        self.accumulated: dict[SSAValue, tuple[SSAValue, str]] = {}
        self.loss_sum: SSAValue | None = None

    # -- what runs where --

    def stage(self, op: Operation) -> StageAttr:
        layer = op if isinstance(op, dnn.LayerOp) and op in self.names else None
        if layer is None:
            name = forward_layer(op) or (layout.layer_name if (layout := layout_of(op))
                                         else None)
            layer = self.by_name.get(name) if name is not None else None
        stage = stage_of(layer) if layer is not None else None
        if stage is None:
            raise self.error(f"{op.name} {self.layer_of(op)!r} has no pase.stage; run "
                             "pase-partition-stages first")
        return stage

    def classify(self) -> tuple[dict[tuple[int, str], list[Operation]], list[Operation],
                                set[SSAValue]]:
        """The ops of each (stage, "forward" or "backward") unit, the update ops (the
        SGD steps and the gradient sums that feed only them) and the leaves: the
        gradients from the backward that the update ops read."""
        ops = [op for op in self.graph.body.block.ops
               if not isinstance(op, dnn.InputOp | dnn.ParamOp | dnn.ReturnOp)]
        update: set[Operation] = set()
        for op in reversed(ops):
            if isinstance(op, dnn.SgdOp) or (
                    isinstance(op, dnn.AddOp) and layout_of(op) is not None
                    and op.results[0].uses and all(use.operation in update
                                                   for use in op.results[0].uses)):
                update.add(op)
        units: dict[tuple[int, str], list[Operation]] = {}
        leaves: set[SSAValue] = set()
        for op in ops:
            if op in update:
                leaves.update(v for v in op.operands if v.owner not in update
                              and not isinstance(v.owner, dnn.ParamOp))
                continue
            phase = "forward" if op in self.names else "backward"
            units.setdefault((self.stage(op).index.data, phase), []).append(op)
        return units, [op for op in ops if op in update], leaves

    # -- ops --

    def emit(self, op: Operation) -> Operation:
        if self.microbatch >= 0:
            op.attributes[dist.MICROBATCH] = IntegerAttr(self.microbatch, i64)
        op.attributes[dist.PHASE] = StringAttr(self.phase)
        return super().emit(op)

    def tensor_type(self, value: SSAValue, dims_map: tuple[str | None, ...], where: Placement,
                    partial: list[int] | None = None) -> dist.TensorType:
        full = super().tensor_type(value, dims_map, where, partial)
        if self.microbatches == 1 or self.batch not in full.dim_names:
            return full
        index = full.dim_names.index(self.batch)
        sizes = list(full.global_shape)
        sizes[index] //= self.microbatches
        split = [list(axes) for axes in full.axes]
        shape = tuple(self.grids[full.grid_name])
        return dist.TensorType(full.dim_names, sizes, dist.local_shape(sizes, split, shape),
                               full.element, full.grid_name, split, full.partial_axes)

    def operand(self, value: SSAValue, needed: dist.TensorType, consumer: str,
                backward: bool, carried: str = "") -> SSAValue:
        source = value.owner
        if isinstance(source, dnn.InputOp | dnn.ParamOp) and value not in self.held:
            shape = dnn.shape_of(value)
            if isinstance(source, dnn.ParamOp) or self.batch not in shape.dims:
                if value in self.shared:  # read once per step, by every micro-batch
                    self.held[value], self.owner_layer[value] = self.shared[value]
                else:
                    super().operand(value, needed, consumer, backward, carried)
                    self.shared[value] = (self.held[value], self.owner_layer[value])
            else:
                result = super().operand(value, needed, consumer, backward, carried)
                read = self.held[value].owner
                assert isinstance(read, dist.InputOp)
                rows = shape.sizes[shape.dims.index(self.batch)] // self.microbatches
                starts = [rows * self.microbatch if d == self.batch else 0
                          for d in shape.dims]
                if self.microbatches > 1:
                    read.properties["at"] = DenseArrayBase.from_list(i64, starts)
                return result
        if value in self.shared:
            # Moved once per step, like its gradient (`pipeline.carries_param`).
            converted, self.converted = self.converted, self.shared_converted
            try:
                return super().operand(value, needed, consumer, backward, carried)
            finally:
                self.converted = converted
        return super().operand(value, needed, consumer, backward, carried)

    def finish(self, value: SSAValue, result: SSAValue, tag: str) -> SSAValue:
        if value not in self.leaves:
            return self.complete(result, tag)
        if value in self.accumulated:
            total, _ = self.accumulated[value]
            result = self.emit(dist.AccumulateOp.create(
                operands=[total, result], result_types=[result.type],
                properties={"tag": StringAttr(tag)})).results[0]
            result.name_hint = value.name_hint
        self.accumulated[value] = (result, tag)
        return result

    def enter(self, microbatch: int, phase: str, stage: int | None = None) -> None:
        """Lower the next ops for `microbatch` (-1: the step as a whole)."""
        self.microbatch, self.phase = microbatch, phase
        if microbatch >= 0:
            self.held, self.converted, self.owner_layer = self.states[microbatch]
        if stage is not None:
            self.offset = stage * (self.devices // self.stages)

    def lower(self, op: Operation) -> None:
        if isinstance(op, dnn.VjpOp):
            self.lower_vjp(op)
        elif isinstance(op, dnn.SgdOp | dnn.AddOp) and layout_of(op) is not None:
            self.lower_in_layout(op)
        elif isinstance(op, dnn.LayerOp):
            self.lower_layer(op)
        else:
            raise self.error(f"cannot lower {op.name}")

    def run(self) -> dist.ProgramOp:
        ret = self.graph.body.block.last_op
        assert isinstance(ret, dnn.ReturnOp)  # the graph's verifier checked it
        units, update, self.leaves = self.classify()
        if self.microbatches > 1 and (problem := microbatch_problem(self.graph,
                                                                    self.microbatches)):
            raise self.error(problem)
        loss = ret.values[0] if ret.values else None
        loss_op = loss.owner if loss is not None else None
        loss_tag = self.layer_of(loss_op) if isinstance(loss_op, Operation) else ""
        weight = loss_weight(self.graph, self.microbatches) if self.microbatches > 1 else 1.0
        if self.microbatches > 1 and not update:
            raise self.error(f"a pipeline of {self.microbatches} micro-batches lowers a "
                             "training step; run pase-autodiff first")
        nominal = simulate(self.schedule, [1.0] * self.stages, [2.0] * self.stages,
                           self.microbatches)
        for event in nominal.events:
            if event.kind == "allreduce":
                self.enter(-1, "update", event.stage)
                for value, (total, tag) in self.accumulated.items():
                    assert isinstance(value.owner, Operation)  # a gradient op's result
                    if self.stage(value.owner).index.data == event.stage:
                        self.complete_leaf(value, total, tag, weight)
                continue
            if event.kind not in ("forward", "backward"):
                continue
            self.enter(event.microbatch, event.kind, event.stage)
            for op in units.get((event.stage, event.kind), []):
                self.lower(op)
                if loss is not None and op is loss_op and self.microbatches > 1:
                    self.add_loss(self.held[loss], self.layer_of(op))
        self.enter(-1, "update")
        self.held, self.converted, self.owner_layer = self.updates
        for op in update:
            self.offset = self.stage(op).offset.data
            self.lower(op)
        values = []
        for index, value in enumerate(ret.values):
            if index == 0 and self.loss_sum is not None:
                total = self.loss_sum
                if weight != 1.0:
                    total_type = total.type
                    total = self.emit(dist.ScaleOp.create(
                        operands=[total], result_types=[total_type], properties={
                            "factor": FloatAttr(weight, f64),
                            "tag": StringAttr(loss_tag)})).results[0]
                values.append(total)
            elif value in self.held:
                values.append(self.held[value])
            elif self.microbatches == 1:
                values.append(self.states[0][0][value])
            else:
                raise self.error(f"the graph returns %{value.name_hint or 'a value'}, "
                                 f"one per micro-batch; a pipeline of {self.microbatches} "
                                 "micro-batches returns the loss and the updated parameters")
        self.emit(dist.ReturnOp.create(operands=values))
        program = self.program()
        program.attributes["dist.stages"] = IntegerAttr(self.stages, i64)
        program.attributes["dist.microbatches"] = IntegerAttr(self.microbatches, i64)
        return program

    @property
    def updates(self) -> tuple[dict, dict, dict]:
        if not hasattr(self, "_updates"):
            held = {value: held for value, (held, _) in self.shared.items()}
            owners = {value: owner for value, (_, owner) in self.shared.items()}
            self._updates: tuple[dict, dict, dict] = (held, {}, owners)
        return self._updates

    def complete_leaf(self, value: SSAValue, total: SSAValue, tag: str, weight: float) -> None:
        """A parameter gradient summed over the micro-batches, averaged for a mean loss,
        all-reduced once: what the update reads."""
        if weight != 1.0:
            total = self.emit(dist.ScaleOp.create(
                operands=[total], result_types=[total.type],
                properties={"factor": FloatAttr(weight, f64),
                            "tag": StringAttr(tag)})).results[0]
        held, _, owners = self.updates
        held[value] = self.complete(total, tag)
        owners[value] = self.states[0][2].get(value, tag)

    def add_loss(self, loss: SSAValue, tag: str) -> None:
        if self.loss_sum is None:
            self.loss_sum = loss
            return
        self.loss_sum = self.emit(dist.AccumulateOp.create(
            operands=[self.loss_sum, loss], result_types=[loss.type],
            properties={"tag": StringAttr(tag)})).results[0]
