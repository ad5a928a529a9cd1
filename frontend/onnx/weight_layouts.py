"""The recurrent layers' weights as exporters compute them from the parameters: each W, R
and B input of an LSTM node (and its initial states) that is computed from initializers
alone (the dynamo exporter
reorders PyTorch's gates i, f, g, o into ONNX's i, o, f, c with Slice, Concat and Unsqueeze
of `weight_ih_l0`, and folds that only for small layers) is evaluated by onnx's reference
evaluator into an initializer, as it is in a small export; the nodes that computed it go
when nothing else reads them.

    fold_recurrent_weights(onnx, model)   # after `model.simplify` (the parameters are back)

Only these inputs are folded: any other computation on a parameter stays a layer of the
model (a transposed weight is trained as the weight, not as a new constant).
"""

from __future__ import annotations

from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.frontend.onnx.folding import subgraph_runner
from pase.frontend.onnx.values import first_line, node_label

WEIGHT_INPUTS = {"LSTM": (1, 2, 3, 5, 6, 7), "GRU": (1, 2, 3, 5)}
"""The op types whose constant inputs are folded, and their positions (W, R, B, and the
initial states and peepholes, which pase's importer reads as constants too)."""


def fold_recurrent_weights(onnx: Any, model: Any, filename: str = "") -> None:
    """Replace each computed weight input of a recurrent node by an initializer; a
    computation that fails (shapes that do not broadcast, say) is a `Diagnostic` naming
    the value and the node that reads it."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    computed: dict[str, Any] = {}
    for node in graph.node:
        for position in WEIGHT_INPUTS.get(node.op_type, ()):
            name = node.input[position] if position < len(node.input) else ""
            if name and name not in initializers and name not in computed:
                computed[name] = node
    for name, reader in computed.items():
        nodes = ancestors(name, producer, initializers)
        if nodes is None:
            continue
        leaves = {i for n in nodes for i in n.input if i in initializers}
        try:
            value = evaluate(onnx, nodes, name, [initializers[i] for i in sorted(leaves)],
                             opset)
        except Exception as error:  # the reference evaluator's, on the file's constants
            raise Diagnostic(f"input '{name}' of node '{node_label(reader)}' "
                             f"({reader.op_type}) is computed from constants, and computing "
                             f"it failed: {first_line(error)}", filename) from None
        tensor = onnx.numpy_helper.from_array(value, name)
        graph.initializer.append(tensor)
        initializers[name] = tensor
    folded = {name for name in computed if name in initializers}
    if folded:
        kept = [node for node in graph.node if not set(node.output) <= folded]
        del graph.node[:]
        graph.node.extend(kept)
        drop_unused(graph)


def ancestors(name: str, producer: dict[str, Any], initializers: dict[str, Any]
              ) -> list[Any] | None:
    """The nodes computing `name`, in graph order, if they read only initializers."""
    found: dict[int, Any] = {}
    pending = [name]
    while pending:
        value = pending.pop()
        if not value or value in initializers:
            continue
        node = producer.get(value)
        if node is None:  # a graph input: not a constant
            return None
        if id(node) not in found:
            found[id(node)] = node
            pending.extend(node.input)
    order: dict[int, int] = {id(node): index for index, node in enumerate(producer.values())}
    return sorted(found.values(), key=lambda node: order[id(node)])


def evaluate(onnx: Any, nodes: list[Any], name: str, leaves: list[Any], opset: int) -> Any:
    """The value of `name` computed by `nodes` from the initializers `leaves`."""
    return subgraph_runner(onnx, nodes, [], name, leaves, opset)({})


def drop_unused(graph: Any) -> None:
    """Remove the nodes (repeatedly) and initializers whose values nothing reads."""
    while True:
        read = {name for node in graph.node for name in node.input}
        read.update(output.name for output in graph.output)
        kept = [node for node in graph.node if any(out in read for out in node.output)]
        if len(kept) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(kept)
    read = {name for node in graph.node for name in node.input}
    read.update(output.name for output in graph.output)
    unused = [init for init in graph.initializer if init.name not in read]
    for init in unused:
        graph.initializer.remove(init)
