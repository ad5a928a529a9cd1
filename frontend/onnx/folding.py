"""Constant folding of whatever onnxscript's optimizer leaves: every node whose inputs are
all constants (once the shapes are static) is evaluated by onnx's reference evaluator
(`onnx.reference.ReferenceEvaluator`, the implementation of the ONNX specification kept
with onnx itself) and becomes an initializer, node by node in graph order, so that what it
folds feeds the next (a fixed point in one pass).

    folded = fold_constant_nodes(onnx, model)       # how many nodes became constants

onnxscript's optimizer folds only outputs of up to 512x512 elements and inputs of up to
8,192; the attention masks Hugging Face models compute from `Range`, `CumSum`, `GatherND`,
`LessOrEqual`, `And`, ... are `[b, 1, s, s]` (8M elements for gpt2 at batch 8 and 1,024
positions). Here an output may have up to `MAX_FOLDED_ELEMENTS` elements (2^24, 64 MiB as
float32); a larger one stays a node, and the importer reports it as an op it does not read.
All the constants together (the model's own and those folded) may take `MAX_CONSTANT_BYTES`
(512 MiB): a few bytes of ConstantOfShape nodes can ask for gigabytes of folded constants,
and the optimizer's passes over them take several times as much; a model that would go over
is one error naming the node.
The model's parameters are never constants here: `model.simplify` hides them as graph
inputs while the folding runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pase.core.diagnostics import Diagnostic
from pase.frontend.onnx.values import node_label

MAX_FOLDED_ELEMENTS = 1 << 24
"""The largest output (elements) a folded node may have: 2^24, 64 MiB of float32."""

MAX_CONSTANT_BYTES = 1 << 29
"""The most the model's constants may take once folded: 512 MiB, eight float32 outputs of
`MAX_FOLDED_ELEMENTS` (a causal mask of gpt2 at batch 8 and 1,024 positions is 32 MiB)."""

NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                        "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"})
"""Ops whose result is not a function of their inputs (or that pase reads as a layer)."""


def gather_elements(node: Any, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """ONNX GatherElements: numpy's `take_along_axis` (onnx 1.23's reference kernel fails
    when the gathered axis is over 64 long: BERT's token types gather a [1, 512] buffer).

    >>> from onnx import helper
    >>> node = helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1)
    >>> gather_elements(node, np.arange(100).reshape(1, 100), np.array([[99, -1, 3]]))
    array([[99, 99,  3]])
    """
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    size = data.shape[axis]
    return np.take_along_axis(data, np.where(indices < 0, indices + size, indices), axis)


NUMPY_KERNELS = {"GatherElements": gather_elements}
"""Ops folded by numpy where the reference evaluator's kernel is wrong."""


def fold_constant_nodes(onnx: Any, model: Any, filename: str = "") -> int:
    """Replace every node of `model`'s graph whose inputs are all initializers (or outputs
    of nodes folded before it) and whose outputs have static sizes of at most
    `MAX_FOLDED_ELEMENTS` by initializers holding its outputs; the number folded. Raises
    `Diagnostic` (in `filename`) when the constants would take over `MAX_CONSTANT_BYTES`."""
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    sizes = static_sizes(onnx, model)
    known = {init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    held = sum(array.nbytes for array in known.values())
    kept, folded = [], 0
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            known.update(evaluate(ReferenceEvaluator, node, opset, {}))
        if not foldable(node, known, sizes):
            kept.append(node)
            continue
        results = evaluate(ReferenceEvaluator, node, opset,
                           {name: known[name] for name in node.input if name})
        if not results:
            kept.append(node)
            continue
        held += sum(array.nbytes for array in results.values())
        if held > MAX_CONSTANT_BYTES:
            raise Diagnostic(f"node '{node_label(node)}' ({node.op_type}): folding it to a "
                             f"constant would bring the model's constants to "
                             f"{held:,} bytes, over the {MAX_CONSTANT_BYTES:,} pase "
                             "folds; export the model with smaller static sizes", filename)
        for name, array in results.items():
            known[name] = array
            graph.initializer.append(onnx.numpy_helper.from_array(array, name))
        folded += 1
    if folded:
        del graph.node[:]
        graph.node.extend(kept)
    return folded


def subgraph_runner(onnx: Any, nodes: list[Any], inputs: list[Any], output: str,
                    initializers: list[Any], opset: int
                    ) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """`output` of `nodes` (in graph order) as a function of the graph inputs `inputs`
    (value infos) by onnx's reference evaluator, the `initializers` (TensorProtos) as
    constants: what the exporter's weight layouts and mask subgraphs compute."""
    from onnx.reference import ReferenceEvaluator

    helper = onnx.helper
    graph = helper.make_graph(nodes, "subgraph", inputs,
                              [helper.make_empty_tensor_value_info(output)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    run: Any = ReferenceEvaluator(model).run  # a list of the outputs
    return lambda feeds: np.asarray(run(None, feeds)[0])


def evaluate(evaluator: Any, node: Any, opset: int, inputs: dict[str, np.ndarray]
             ) -> dict[str, np.ndarray]:
    """The node's outputs by name, evaluated on `inputs`; none if the evaluator lacks or
    rejects the op (the node is then left to the importer) or an output is too large."""
    try:
        if node.op_type in NUMPY_KERNELS:
            results = [NUMPY_KERNELS[node.op_type](node, *inputs.values())]
        else:
            results = evaluator(node, opsets={"": opset}).run(None, inputs)
    except Exception:  # the evaluator's own failure: the node stays, the importer names it
        return {}
    arrays = [np.asarray(result) for result in results]
    if any(a.size > MAX_FOLDED_ELEMENTS or a.dtype == object for a in arrays):
        return {}
    return {name: array for name, array in zip(node.output, arrays, strict=False) if name}


def foldable(node: Any, known: dict[str, np.ndarray], sizes: dict[str, int | None]) -> bool:
    """Whether the node is a function of constants only, with small static outputs."""
    if node.domain not in ("", "ai.onnx") or node.op_type in NOT_FOLDED or \
            node.op_type == "Constant" or not any(node.input):
        return False
    if any(a.g.node or a.graphs for a in node.attribute):  # If, Loop, Scan: left alone
        return False
    if not all(name in known for name in node.input if name):
        return False
    return all(sizes.get(name) is not None and sizes[name] <= MAX_FOLDED_ELEMENTS  # type: ignore[operator]
               for name in node.output if name)


def static_sizes(onnx: Any, model: Any) -> dict[str, int | None]:
    """Each value's element count from ONNX's shape inference (None: not static)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    sizes: dict[str, int | None] = {}
    for value in [*inferred.graph.value_info, *inferred.graph.output]:
        shape = value.type.tensor_type.shape
        dims = [d.dim_value if d.HasField("dim_value") else None for d in shape.dim]
        known = value.type.tensor_type.HasField("shape") and None not in dims
        sizes[value.name] = math.prod(dims) if known else None  # type: ignore[arg-type]
    return sizes
