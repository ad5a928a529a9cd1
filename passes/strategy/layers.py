"""The plain data the cost model reads: layers, the tensors they touch, and edges.

`layers_from_graph` turns a `dnn.graph` into `Layer`s and `Edge`s; nothing after it
touches IR. Vertices are the layers; `input` and `param` are not vertices (PaSE): a
parameter lives in the layout its consumer gives it, and input data arrives laid out
as its first consumer needs. A tensor read by several layers without being produced by
one (tied parameters, shared inputs) is held in its first reader's layout and every
other reader pays the redistribution from there.

    >>> from pase.frontend import parse_file
    >>> layers, edges, batch = layers_from_graph(parse_file("models/mlp.dnn").ops.first)
    >>> [layer.name for layer in layers]
    ['h', 'a', 'z', 'l']
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.ir import SSAValue

from pase.core.shapes import ELEMENTS
from pase.core.space import IterationSpace
from pase.dialect import dnn


@dataclass(frozen=True)
class TensorUse:
    """How a layer indexes one tensor: the iteration dim of each tensor dim (or None)."""

    dims: tuple[str | None, ...]
    sizes: tuple[int, ...]
    element_bytes: int = 4

    @property
    def elements(self) -> int:
        return prod(self.sizes)


@dataclass(frozen=True)
class Layer:
    """One vertex: a layer's iteration space and the tensors it reads and writes."""

    name: str
    kind: str
    """The op name without `dnn.`: "einsum", "softmax", ..."""
    space: IterationSpace
    operands: tuple[TensorUse, ...]
    result: TensorUse
    grads: tuple[bool, ...]
    """Whether each operand needs a gradient: it depends on a parameter, and the layer's
    output reaches the loss."""
    over: tuple[str, ...] = ()
    """The dims a softmax, norm or cross-entropy normalizes over."""
    backward: bool = True
    """Whether the layer has a backward pass: its output reaches the loss (the first value
    the graph returns). pase-autodiff differentiates only such layers."""


@dataclass(frozen=True)
class Edge:
    """A tensor moving from `producer`'s layout to what `consumer` needs.

    For a tensor no layer produces (a shared parameter or input), `producer` is its
    first reader and `held` is that reader's use of it.
    """

    producer: int
    consumer: int
    held: TensorUse
    needed: TensorUse
    backward: bool
    """A gradient flows back along the edge (the tensor depends on a parameter)."""
    carried: str = ""
    """The input or param the edge carries from its first reader (its name), or "" for a
    layer's result."""


def _use(dims: tuple[str | None, ...], value: SSAValue) -> TensorUse:
    shape = dnn.shape_of(value)
    return TensorUse(dims, shape.sizes, ELEMENTS[shape.element].bytes)


def layers_from_graph(graph: dnn.GraphOp) -> tuple[list[Layer], list[Edge], str | None]:
    """The layers, edges and batch dim (the first input's first dim) of a graph."""
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
    for op in graph.layers:
        space = op.iteration_space()
        operands = tuple(_use(dims, value)
                         for dims, value in zip(space.operands, op.inputs, strict=True))
        over = tuple(op.dims_prop("over")) if "over" in op.properties else ()
        live = op in on_loss_path
        layer = Layer(names[op], op.name.removeprefix("dnn."), space, operands,
                      _use(space.result, op.output),
                      tuple(live and needs_grad[v] for v in op.inputs), over, live)
        consumer = index[op]
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
        if owner in forward and owner not in reached:
            reached.add(owner)
            pending.extend(owner.inputs)
    return reached
