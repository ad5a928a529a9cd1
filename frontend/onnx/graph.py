"""The walk over an ONNX graph: its inputs, every node through its registered importer,
then the training loss and the `dnn.graph` with readable dim names.

    imported = import_graph(onnx, model, "model.onnx", "model", batch=0,
                            loss="cross-entropy")
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import MAX_ELEMENTS, MAX_RANK, ShapeError
from pase.dialect import dnn
from pase.frontend.onnx import operators  # noqa: F401  (registers the importers)
from pase.frontend.onnx.input_masks import check_input_masks, rewrite_input_masks
from pase.frontend.onnx.loss_patterns import ONLY_IN_A_LOSS
from pase.frontend.onnx.patterns import rewrite_patterns
from pase.frontend.onnx.recurrence import unrolled_recurrence
from pase.frontend.onnx.registry import OPERATORS
from pase.frontend.onnx.values import ELEMENTS, GraphState, Value, first_line, node_label

# The role of each axis of a graph input, by rank, for float tensors and for ids.
INPUT_ROLES = {4: ("b", "c", "h", "w"), 3: ("b", "s", "d"), 2: ("b", "d"), 1: ("b",)}
ID_ROLES = {2: ("b", "s"), 1: ("b",)}


@dataclass
class Imported:
    """An imported model: its `dnn` module, and its initializers' values by param name."""

    module: ModuleOp
    initial_values: dict[str, np.ndarray]


def import_graph(onnx: Any, model: Any, filename: str, graph_name: str, batch: int,
                 loss: str) -> Imported:
    """The model's graph as a verified `dnn` module with a training loss."""
    graph = model.graph
    state = GraphState(onnx, filename)
    initializers = {init.name for init in graph.initializer}
    for init in graph.initializer:
        state.values[init.name] = Value((), constant=onnx.numpy_helper.to_array(init))
    nodes = rewrite_patterns(onnx, list(graph.node), state.constant_of, ranks_of(graph))
    inputs = {v.name: v for v in graph.input if v.name not in initializers}
    nodes = rewrite_input_masks(onnx, nodes, inputs, state.constant_of, filename)
    check_input_masks(nodes, list(inputs), state.constant_of, filename)
    check_supported(nodes, filename)
    for value in graph.input:
        if value.name not in initializers:
            graph_input(state, value, batch)
    try:
        for node in nodes:
            state.node = node
            import_node(state, node)
    except Diagnostic:
        construct = unrolled_recurrence(nodes)
        if construct is None:
            raise
        raise Diagnostic(construct, filename) from None
    state.node = None
    return finish(state, graph, graph_name, loss)


def ranks_of(graph: Any) -> dict[str, int]:
    """The rank of each value of `graph` whose shape is known (inferred, an input or
    output, an initializer)."""
    ranks = {value.name: len(value.type.tensor_type.shape.dim)
             for value in [*graph.value_info, *graph.input, *graph.output]
             if value.type.tensor_type.HasField("shape")}
    ranks.update((init.name, len(init.dims)) for init in graph.initializer)
    return ranks


def check_supported(nodes: list[Any], filename: str) -> None:
    """One diagnostic listing every op type pase does not read: how many nodes, the first."""
    missing: Counter[str] = Counter()
    first: dict[str, str] = {}
    for node in nodes:
        default = node.domain in ("", "ai.onnx")
        if default and node.op_type in OPERATORS:
            continue
        kind = node.op_type if default else f"{node.op_type} of domain {node.domain}"
        missing[kind] += 1
        first.setdefault(kind, node_label(node))
    if not missing:
        return
    lines = [f"  {kind}: {count} node{'s' if count > 1 else ''}, the first '{first[kind]}'"
             + (f" ({ONLY_IN_A_LOSS[kind]})" if kind in ONLY_IN_A_LOSS else "")
             for kind, count in sorted(missing.items())]
    total = sum(missing.values())
    raise Diagnostic(f"{total} node{'s' if total > 1 else ''} of {len(missing)} operator "
                     f"type{'s' if len(missing) > 1 else ''} pase does not read (after "
                     "folding the static shapes):\n" + "\n".join(lines)
                     + "\npase reads " + ", ".join(sorted(OPERATORS)), filename)


def import_node(state: GraphState, node: Any) -> None:
    """Build the node's dnn ops through its importer and record its outputs."""
    operator = OPERATORS[node.op_type]
    for attribute in node.attribute:
        if attribute.name not in operator.attributes:
            raise state.error(f"attribute '{attribute.name}' is not supported")
    try:
        results = operator.function(state, node)
    except (ShapeError, VerifyException) as error:  # a tensor type the dialect rejects
        raise state.error(first_line(error)) from None
    for name, value in zip(node.output[:operator.outputs], results, strict=False):
        if name:
            state.values[name] = value


def graph_input(state: GraphState, value: Any, batch: int) -> None:
    """A graph input as a `dnn.input`, each axis a new dim named by its role."""
    tensor_type = value.type.tensor_type
    element = ELEMENTS.get(tensor_type.elem_type)
    if element is None:
        kind = state.onnx.TensorProto.DataType.Name(tensor_type.elem_type)
        raise state.error(f"input '{value.name}' is {kind}; pase reads FLOAT, DOUBLE, "
                          "INT32 and INT64 tensors")
    shape = tensor_type.shape.dim
    if len(shape) > MAX_RANK:
        raise state.error(f"input '{value.name}' has {len(shape)} axes; pase handles tensors "
                          f"of at most {MAX_RANK}")
    roles = (ID_ROLES if element.startswith("i") else INPUT_ROLES).get(
        len(shape), ("b",) + ("d",) * (len(shape) - 1))
    sizes = [input_size(state, value.name, position, dim, batch)
             for position, dim in enumerate(shape)]
    elements = int(np.prod(sizes, dtype=object))
    if elements > MAX_ELEMENTS:  # (a symbolic batch too large: size_the_batch)
        raise state.error(f"input '{value.name}' of shape {sizes} has {elements:,} elements"
                          "; pase handles at most 2^53 per tensor")
    axes = [state.dims.new(size, roles[p] if p < len(roles) else "d")
            for p, size in enumerate(sizes)]
    op = dnn.InputOp(state.tensor_type(axes, element))
    op.output.name_hint = state.value_name(value.name)
    state.dims.record(axes)
    state.inputs.append(op)
    state.values[value.name] = Value(tuple(axes), op.output)


def input_size(state: GraphState, name: str, position: int, dim: Any, batch: int) -> int:
    """The static size of an input's axis; a symbolic batch axis takes `batch`."""
    size = dim.dim_value if dim.HasField("dim_value") else 0
    if size >= 1:
        return int(size)
    symbol = f"'{dim.dim_param}'" if dim.dim_param else "of unknown size"
    if position != 0:
        raise state.error(f"axis {position} of input '{name}' is symbolic ({symbol}); pase "
                          "needs static sizes: export the model with a fixed size for it")
    if not batch:
        raise state.error(f"the batch axis of input '{name}' is symbolic ({symbol}); give "
                          "its size: -f 'onnx{batch=N}' (pase-run: --batch N)")
    return batch


def finish(state: GraphState, graph: Any, graph_name: str, loss: str) -> Imported:
    """The loss on the one output, then the graph with its final dim names."""
    if len(graph.output) != 1:
        names = ", ".join(f"'{o.name}'" for o in graph.output)
        raise state.error(f"the model has {len(graph.output)} outputs ({names}); pase "
                          "trains a model with one")
    output = state.values.get(graph.output[0].name)
    if output is None or output.ssa is None:
        raise state.error(f"the output '{graph.output[0].name}' is not computed by a layer")
    ret = dnn.ReturnOp(loss_of(state, output, loss))
    return rebuild(state, [*state.inputs, *state.body, ret], graph_name)


def loss_of(state: GraphState, output: Value, loss: str) -> SSAValue:
    """The scalar loss: the output itself, its mean, or softmax cross-entropy over its
    last axis against a new `labels` input."""
    shape = dnn.shape_of(output.value)
    if not shape.dims:
        return output.value
    real = [a for a in output.axes if a is not None]
    if loss == "mean":
        return state.build(dnn.ReduceOp, [output.value], "loss", None,
                           {"kind": StringAttr("mean"), "over": state.dim_array(real)})
    classes = state.dims.find(real[-1])
    state.dims.hints[classes] = "c"
    label_dims = [d for d in state.layout(output) if d != classes]
    labels = dnn.InputOp(state.tensor_type(label_dims, "i64"))
    labels.output.name_hint = state.value_name("labels")
    state.dims.record(label_dims)
    state.inputs.append(labels)
    return state.build(dnn.SoftmaxCrossEntropyOp, [output.value, labels.output], "loss",
                       None, {"over": state.dim_array([classes])})


def rebuild(state: GraphState, ops: list[Operation], graph_name: str) -> Imported:
    """The ops again, with the final dim names in place of the placeholders."""
    used = [int(d[1:]) for op in ops for r in op.results for d in dnn.shape_of(r).dims]
    names = state.dims.names(used)

    def rename(dim: str) -> str:
        return names[state.dims.find(int(dim[1:]))]

    def rename_attr(value: Attribute) -> Attribute:
        if isinstance(value, ArrayAttr) and all(
                isinstance(v, StringAttr) and v.data.startswith("_") for v in value.data):
            return ArrayAttr(StringAttr(rename(v.data)) for v in value.data)  # type: ignore[union-attr]
        if isinstance(value, StringAttr) and value.data.startswith("_") and \
                value.data[1:].isdigit():
            return StringAttr(rename(value.data))
        return value

    mapping: dict[SSAValue, SSAValue] = {}
    rebuilt: list[Operation] = []
    graph_dims: dict[str, int] = {}
    initial: dict[str, np.ndarray] = {}
    for op in ops:
        types = []
        for result in op.results:
            shape = dnn.shape_of(result)
            dims = [rename(d) for d in shape.dims]
            graph_dims.update(zip(dims, shape.sizes, strict=True))
            types.append(dnn.TensorType(dims, shape.sizes, result.type.element_type))  # type: ignore[attr-defined]
        new = type(op).create(
            operands=[mapping[o] for o in op.operands], result_types=types,
            properties={k: rename_attr(v) for k, v in op.properties.items()},
            attributes=dict(op.attributes))
        for old, result in zip(op.results, new.results, strict=True):
            result.name_hint = old.name_hint
            mapping[old] = result
            if old in state.initial and old.name_hint:
                initial[old.name_hint] = state.initial[old]
        rebuilt.append(new)
        op.drop_all_references()
    module = ModuleOp([dnn.GraphOp(graph_name, graph_dims, rebuilt)])
    try:
        module.verify()
    except VerifyException as error:  # a mapping above that disagrees with the dialect
        raise Diagnostic(f"the imported graph does not verify (a bug in pase's ONNX "
                         f"frontend, please report it): {first_line(error)}",
                         state.filename) from None
    return Imported(module, initial)
