"""The plain SPMD lowering of `pase-lower-spmd`: one step, each layer on its grid.

    program = Lowering(graph, devices=4).run()   # a dist.program

Every value gets a sharding from the op that produces it; a consumer needing another gets a
`dist.redistribute` (tag `"u->v"`, `"u<-v"` for a gradient), a layer leaving partial sums a
`dist.all_reduce` (tag: the layer). `pipelined.py` builds on this class.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects import shard
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from pase.core.diagnostics import Diagnostic
from pase.core.placement import Placement, edge_tag
from pase.core.space import IterationSpace
from pase.dialect import dist, dnn
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    ConfigAttr,
    forward_layer,
    grid_order,
    layout_of,
)


def placement(space: IterationSpace, config: ConfigAttr | None,
              order: tuple[str, ...] | None = None) -> Placement:
    return Placement.of(order or space.names, config.splits if config is not None else {})



class Lowering:
    """One step on one device group: every layer on the grid of its `pase.config`."""

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
            else:
                self.lower(op)
        return self.program()

    def lower(self, op: Operation) -> None:
        """Lower one op of the graph (not an input, param or return) by its kind."""
        if isinstance(op, dnn.VjpOp):
            self.lower_vjp(op)
        elif isinstance(op, dnn.SgdOp | dnn.UpdateOp | dnn.AddOp) and layout_of(op) is not None:
            self.lower_in_layout(op)
        elif isinstance(op, dnn.LayerOp):
            self.lower_layer(op)
        else:
            raise self.error(f"cannot lower {op.name}")

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

    def lower_in_layout(self, op: dnn.SgdOp | dnn.UpdateOp | dnn.AddOp) -> None:
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
        # An optimizer's state lives in its parameter's layout (Adam's step count, a
        # scalar, on every device of the grid), so the update moves no words.
        operands = [self.operand(v, self.tensor_type(v, dims if dnn.shape_of(v).dims else (),
                                                     where), layer_name, True, carried)
                    for v in op.operands]
        result_types = [self.tensor_type(v, dims if dnn.shape_of(v).dims else (), where)
                        for v in op.results]
        kernel = op.name
        lowered = self.layer_op(kernel, operands, dict(op.properties), where, [], layer_name,
                                result_types)
        for value, result in zip(op.results, lowered.results, strict=True):
            result.name_hint = value.name_hint
            self.held[value] = result
            self.owner_layer[value] = layer_name


