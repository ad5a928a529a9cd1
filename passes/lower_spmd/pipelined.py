"""The pipelined SPMD lowering of `pase-lower-spmd`: S stages, M micro-batches, a schedule.

    program = PipelineLowering(graph, devices=8, pipeline=pipeline_of(graph)).run()

It lowers each op as `plain.Lowering` does, per micro-batch and on its stage's devices.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Operation, SSAValue

from pase.core.placement import Placement
from pase.dialect import dist, dnn
from pase.dialect.dnn.microbatch import batch_dim, loss_weight, microbatch_problem
from pase.dialect.pase import (
    PipelineAttr,
    StageAttr,
    forward_layer,
    grid_order,
    layout_of,
    stage_of,
)
from pase.passes.lower_spmd.plain import Lowering, placement
from pase.passes.strategy import simulate


class PipelineLowering(Lowering):
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

    A cross-entropy with an `ignore_index` divides by the count of labels the whole
    batch keeps: before the first micro-batch the layers that make its labels run for
    every micro-batch (`counted_labels`), each micro-batch's loss reads all M labels
    after its own, and the micro-batch losses, each a share of the batch's mean, add up.
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
        self.counted: tuple[dnn.SoftmaxCrossEntropyOp, list[dnn.LayerOp]] | None = None
        self.step_labels: list[SSAValue] = []
        """The labels of every micro-batch, which the loss reads after its own (an
        ignore_index's count: `counted_labels`)."""

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
            if isinstance(op, dnn.SgdOp | dnn.UpdateOp) or (
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

    # -- a loss that divides by the count of labels the whole batch keeps --

    def counted_loss(self) -> tuple[dnn.SoftmaxCrossEntropyOp, list[dnn.LayerOp]] | None:
        """With M > 1, the cross-entropy with an `ignore_index` the graph returns and the
        layers that make its labels from the inputs, in program order (None otherwise)."""
        ret = self.graph.body.block.last_op
        loss = ret.operands[0].owner if isinstance(ret, dnn.ReturnOp) and ret.operands \
            else None
        if self.microbatches == 1 or not isinstance(loss, dnn.SoftmaxCrossEntropyOp) or \
                loss.ignore_index is None:
            return None
        path: set[Operation] = set()
        pending = [loss.inputs[1]]
        while pending:
            owner = pending.pop().owner
            if isinstance(owner, dnn.LayerOp) and owner not in path:
                path.add(owner)
                pending += owner.inputs
        return loss, [op for op in self.graph.body.block.ops if op in path]

    def counted_labels(self, path: list[dnn.LayerOp]) -> None:
        """Before the first micro-batch, the layers that make the loss's labels, for every
        micro-batch (each on its stage; a micro-batch's forward then finds them made)."""
        for microbatch in range(self.microbatches):
            for op in path:
                self.enter(microbatch, "forward", self.stage(op).index.data)
                self.lower(op)

    def lower_layer(self, op: dnn.LayerOp) -> None:
        if self.counted is None or op is not self.counted[0]:
            super().lower_layer(op)
            return
        labels = op.inputs[1]
        space = op.iteration_space()
        needed = self.tensor_type(labels, space.operands[1], placement(
            space, self.config(op), grid_order(op)))
        microbatch = self.microbatch
        every = []
        for other in range(self.microbatches):  # in the layout the loss reads (once each)
            self.enter(other, "forward")
            every.append(self.operand(labels, needed, self.layer_of(op), False))
        self.enter(microbatch, "forward")
        self.step_labels = every
        super().lower_layer(op)

    def layer_op(self, kernel: str, operands: list[SSAValue], properties: dict,
                 where: Placement, stats: list[str], tag: str,
                 result_types: list[dist.TensorType]) -> Operation:
        operands, self.step_labels = [*operands, *self.step_labels], []
        return super().layer_op(kernel, operands, properties, where, stats, tag,
                                result_types)

    def run(self) -> dist.ProgramOp:
        ret = self.graph.body.block.last_op
        assert isinstance(ret, dnn.ReturnOp)  # the graph's verifier checked it
        units, update, self.leaves = self.classify()
        if self.microbatches > 1 and (problem := microbatch_problem(self.graph,
                                                                    self.microbatches)):
            raise self.error(problem)
        self.counted = self.counted_loss()
        if self.counted is not None:
            self.counted_labels(self.counted[1])
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
                if isinstance(op, dnn.LayerOp) and op.output in self.held:
                    continue  # made before the first micro-batch (`counted_labels`)
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

