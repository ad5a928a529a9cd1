"""The engine's one door to IR: a `dnn.graph` read into plain layers, edges and pins.

`read_graph` returns everything `Problem.from_layers` needs: the graph's name, its layers
(`vertices.Layer`) and edges in program order, the batch dim (the first input's first
dim) and the pins (the `pase.config` a layer carries in the source). `build_problem`, the
stable API (DESIGN.md), is the composition of the two. No other engine module imports
the dialect.

    >>> from pase.frontend import parse_file
    >>> graph = read_graph(parse_file("models/mlp.dnn"))
    >>> [layer.name for layer in graph.layers], graph.batch, graph.pins
    (['h', 'a', 'z', 'l'], 'b', {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from pase.core.shapes import ELEMENTS
from pase.dialect import dnn
from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.cost import Config
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.options import DEFAULT_OPTIONS, SearchOptions
from pase.passes.strategy.pipeline.segments import segments
from pase.passes.strategy.problem import Problem, collector_paused
from pase.passes.strategy.training_cost import mark_checkpoints
from pase.passes.strategy.vertices import Edge, Layer, TensorUse


@dataclass(frozen=True)
class GraphData:
    """One graph as plain data: what `Problem.from_layers` takes."""

    name: str
    layers: list[Layer]
    edges: list[Edge]
    batch: str | None
    """The first input's first dim, which data parallelism splits (None without inputs)."""
    pins: dict[str, Config]
    """`{layer: {dim: factor}}` of the layers that carry `pase.config`."""


def build_problem(graph: dnn.GraphOp | ModuleOp, devices: int,
                  machine: str | Machine = "pase-default",
                  pinned: Mapping[str, Mapping[str, int]] | None = None,
                  options: SearchOptions = DEFAULT_OPTIONS,
                  budget: MemoryBudget | None = None) -> Problem:
    """The search problem of a graph (or of a module's only graph) on `devices` devices.

    `machine` is a `Machine` or a preset's name (`pase.formats.machine_toml.load_machine`
    reads a TOML file into a `Machine`). A layer named in `pinned`, or else carrying
    `pase.config`, keeps that single configuration; the others get the configuration
    space of `options` (its min-shard; its cost model's, `options.model`), charged to
    `budget` (if given) before it is listed.
    """
    with collector_paused():
        data = read_graph(graph)
        layers = data.layers
        if options.training.recompute != "none":
            layers = mark_checkpoints(layers, segments(layers, data.edges))
        return Problem.from_layers(
            layers, data.edges, devices, machine,
            pins={**data.pins, **(pinned or {})}, batch=data.batch,
            min_shard=options.min_shard, graph=data.name, budget=budget,
            model=options.model)


def read_graph(graph: dnn.GraphOp | ModuleOp) -> GraphData:
    """The layers, edges, batch dim and pins of a graph, or of a module's only graph."""
    graph_op = _graph_of(graph)
    layers, edges, batch = _layers_and_edges(graph_op)
    pins = {layer.name: dict(op.config.splits)
            for op, layer in zip(graph_op.layers, layers, strict=True)
            if op.config is not None}
    return GraphData(graph_op.sym_name.data, layers, edges, batch, pins)


def _graph_of(graph: dnn.GraphOp | ModuleOp) -> dnn.GraphOp:
    if isinstance(graph, dnn.GraphOp):
        return graph
    graphs = [op for op in graph.walk() if isinstance(op, dnn.GraphOp)]
    if len(graphs) != 1:
        raise ValueError(f"expected one dnn.graph, found {len(graphs)}; pass the graph op")
    return graphs[0]


def _use(dims: tuple[str | None, ...], value: SSAValue) -> TensorUse:
    shape = dnn.shape_of(value)
    return TensorUse(dims, shape.sizes, ELEMENTS[shape.element].bytes)


def _layers_and_edges(graph: dnn.GraphOp) -> tuple[list[Layer], list[Edge], str | None]:
    """The layers, edges and batch dim of a graph."""
    names = graph.layer_names()
    index = {op: i for i, op in enumerate(graph.layers)}  # forward layers only
    needs_grad: dict[SSAValue, bool] = {}
    batch: str | None = None
    for op in graph.body.block.ops:
        if isinstance(op, dnn.ParamOp):
            needs_grad[op.output] = True
        elif isinstance(op, dnn.InputOp):
            needs_grad[op.output] = False
            if batch is None and op.output.type.shape.dims:
                batch = op.output.type.shape.dims[0]
        elif op in index:  # (the gradient layers pase-autodiff adds read vjp results)
            needs_grad[op.output] = any(needs_grad[v] for v in op.inputs)

    on_loss_path = _reaching_the_loss(graph)
    layers: list[Layer] = []
    edges: list[Edge] = []
    first_reader: dict[SSAValue, tuple[int, TensorUse]] = {}
    last_reader: dict[SSAValue, int] = {}  # of each parameter
    for op in graph.layers:
        space = op.iteration_space()
        operands = tuple(_use(dims, value)
                         for dims, value in zip(space.operands, op.inputs, strict=True))
        over = tuple(op.dims_prop("over")) if "over" in op.properties else ()
        live = op in on_loss_path
        layer = Layer(names[op], op.name.removeprefix("dnn."), space, operands,
                      _use(space.result, op.output),
                      tuple(live and needs_grad[v] for v in op.inputs), over, live,
                      tuple(isinstance(v.owner, dnn.ParamOp) for v in op.inputs))
        consumer = index[op]
        layer = _with_shared(layer, op.inputs, consumer, last_reader)
        for position, (value, use) in enumerate(zip(op.inputs, operands, strict=True)):
            if any(other is value and operands[earlier] == use
                   for earlier, other in enumerate(op.inputs[:position])):
                continue  # read again in the same layout: one edge (autodiff sums the uses)
            producer = value.owner
            if isinstance(producer, dnn.LayerOp):
                edges.append(Edge(index[producer], consumer, layers[index[producer]].result,
                                  use, live and needs_grad[value]))
            elif value in first_reader:
                holder, held = first_reader[value]
                if holder != consumer:
                    edges.append(Edge(holder, consumer, held, use,
                                      live and needs_grad[value], value.name_hint or "v"))
            else:
                first_reader[value] = (consumer, use)
        layers.append(layer)
    return layers, edges, batch


def _with_shared(layer: Layer, values: Sequence[SSAValue], index: int,
                 last_reader: dict[SSAValue, int]) -> Layer:
    """`layer` (number `index`) with `Layer.shared`: for each parameter it reads that an
    earlier layer read last (`last_reader`, which it updates), how many layers back."""
    shared = []
    for value in values:
        earlier = last_reader.get(value) if isinstance(value.owner, dnn.ParamOp) else None
        shared.append(index - earlier if earlier is not None and earlier != index else 0)
        if isinstance(value.owner, dnn.ParamOp):
            last_reader[value] = index
    return replace(layer, shared=tuple(shared)) if any(shared) else layer


def _reaching_the_loss(graph: dnn.GraphOp) -> set[dnn.LayerOp]:
    """The forward layers whose output reaches the first value the graph returns."""
    block = graph.body.block
    returned = block.last_op
    if not isinstance(returned, dnn.ReturnOp) or not returned.values:
        return set(graph.layers)
    forward = set(graph.layers)
    reached: set[dnn.LayerOp] = set()
    pending = [returned.values[0]]
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, dnn.LayerOp) and owner in forward and owner not in reached:
            reached.add(owner)
            pending.extend(owner.inputs)
    return reached
