"""Padding masks given as a model input (Hugging Face's `attention_mask`).

A model called as `model(input_ids, attention_mask)` computes, from the mask input m
[batch, keys] (int64, bool or float, 1 = keep), a value added to its attention scores:
`(1 - m) * lowest`, or `Where(m, 0, lowest)`, And-ed with the causal mask in GPT-2, each
exporter with its own ops (Cast, Reshape, Gather or GatherND to broadcast it, And,
Where). Rather than matching each spelling, `rewrite_input_masks` finds every value
computed from one graph input and small constants only (`mask_values`) that is added to
the scores (`Add`) or is the condition of a `Where` between the scores and a fill, and
asks onnx's reference evaluator what that value is for a few masks (`probe`): when it
is, for every mask m, 0 where `keep[.., q, k] and m[b, k]` and one fill (at most
-10,000, or -inf) elsewhere (or a condition true exactly there), with `keep` all true
or causal, the node becomes one `PaddingMask` node (scores, m), which the importer
below reads as `dnn.mask causal` (if causal) then `dnn.mask padding` of the scores by
the input m:

    nodes = rewrite_input_masks(onnx, nodes, inputs, constant_of)

A BOOL mask input is read as i64 (0 and 1). A mask computed from a model input in any
other way stays one error naming its Where
(`check_input_masks`):

    check_input_masks(nodes, inputs, constant_of, "gpt2.onnx")
    # gpt2.onnx: error: node 'node_Where_95' (Where): its condition is computed from
    # the model's input 'ids_1' (as a padding mask is from an attention_mask) ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, f64

from pase.core.diagnostics import Diagnostic
from pase.dialect import dnn
from pase.frontend.onnx.folding import subgraph_runner
from pase.frontend.onnx.operators.more import ADDITIVE_MASK_LIMIT, FLOAT_LIMIT, causal_mask
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value, node_label

MASK_OPS = frozenset({
    "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Gather", "GatherND", "Expand",
    "Tile", "Transpose", "Identity", "And", "Or", "Not", "Xor", "Equal", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "Where", "Sub", "Mul", "Add", "Neg", "Min", "Max"})
"""The ops through which a mask input is followed to the value the scores meet."""

PROBES = 4
"""How many masks `probe` evaluates (all ones, then random ones of a fixed seed)."""

Constants = Callable[[str], np.ndarray | None]


def rewrite_input_masks(onnx: Any, nodes: list[Any], inputs: dict[str, Any],
                        constant_of: Constants, filename: str = "") -> list[Any]:
    """`nodes` with every padding mask computed from a model input (`inputs`: the graph
    inputs by name, as ValueInfo) as one `PaddingMask` node, and the nodes only it read
    removed. A mask of the inverse convention (PyTorch's `key_padding_mask`: true where a
    key is padding) is one error saying how to export it."""
    derived = mask_values(nodes, inputs, constant_of)
    producer = {out: node for node in nodes for out in node.output}
    probes: dict[tuple[str, str], tuple[bool, float, int] | None] = {}
    replacement: dict[int, Any] = {}
    for node in nodes:
        if any(out in derived for out in node.output):
            continue
        found = masked_operands(node, derived, constant_of)
        if found is None:
            continue
        scores, value, meaning, fill = found
        if (value, meaning) not in probes:
            probes[value, meaning] = probe(onnx, value, derived[value], inputs, producer,
                                           derived, constant_of, meaning)
        form = probes[value, meaning]
        if form is None and probe(onnx, value, derived[value], inputs, producer, derived,
                                  constant_of, meaning, inverted=True) is not None:
            raise Diagnostic(inverted_mask_message(node, derived[value]), filename)
        if form is not None and (fill is None or fill <= ADDITIVE_MASK_LIMIT):
            causal, bias_fill, rank = form
            replacement[id(node)] = onnx.helper.make_node(
                "PaddingMask", [scores, derived[value]], list(node.output),
                name=node_label(node), causal=int(causal),
                fill=bias_fill if fill is None else fill, keep_axes=[-rank, -1])
    if not replacement:
        return nodes
    rewritten = without_unused([replacement.get(id(node), node) for node in nodes],
                               set(derived))
    read_as_ints(onnx, rewritten, inputs)
    return rewritten


def inverted_mask_message(node: Any, source: str) -> str:
    return (f"node '{node_label(node)}' ({node.op_type}): the model's input '{source}' "
            "masks the attention scores where it is true or 1 (as nn.MultiheadAttention's "
            "and nn.Transformer's key_padding_mask: true where a key is padding); pase reads "
            "a padding mask input as an attention_mask, 1 where a key is kept: export the "
            "model with that input and pass `key_padding_mask=(attention_mask == 0)` in its "
            "forward")


def read_as_ints(onnx: Any, nodes: list[Any], inputs: dict[str, Any]) -> None:
    """A BOOL mask input that only `PaddingMask` nodes read becomes INT64 (pase has no
    booleans; its 0 and 1 mean false and true): its ValueInfo is changed in place."""
    readers: dict[str, set[str]] = {}
    for node in nodes:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    for name, value in inputs.items():
        tensor_type = value.type.tensor_type
        if tensor_type.elem_type == onnx.TensorProto.BOOL and \
                readers.get(name) == {"PaddingMask"}:
            tensor_type.elem_type = onnx.TensorProto.INT64


def mask_values(nodes: list[Any], inputs: Iterable[str],
                constant_of: Constants) -> dict[str, str]:
    """Each value computed by `MASK_OPS` from exactly one graph input and constants that
    are not float weights (integers, booleans, floats of at most two values): the input's
    name by the value's."""
    derived = {name: name for name in inputs}
    for node in nodes:
        if node.op_type not in MASK_OPS:
            continue
        sources = {derived[name] for name in node.input if name in derived}
        if len(sources) != 1:
            continue
        rest = [name for name in node.input if name and name not in derived]
        if all(small_constant(constant_of(name)) for name in rest):
            for out in node.output:
                derived[out] = next(iter(sources))
    return derived


def small_constant(array: np.ndarray | None) -> bool:
    return array is not None and (not np.issubdtype(array.dtype, np.floating)
                                  or np.unique(array).size <= 2)


def masked_operands(node: Any, derived: dict[str, str], constant_of: Constants
                    ) -> tuple[str, str, str, float | None] | None:
    """(scores, mask value, its meaning, fill) of a node that masks scores by a value
    computed from an input: `Add(scores, bias)` ("bias": 0 where kept, the fill
    elsewhere), `Where(condition, scores, fill)` ("keep": true where kept) or
    `Where(condition, fill, scores)` ("hide"), the fill a one-element constant. None:
    not such a node."""
    if node.op_type == "Add" and len(node.input) == 2:
        first, second = node.input
        if (first in derived) != (second in derived):
            return (second, first, "bias", None) if first in derived else \
                (first, second, "bias", None)
    if node.op_type == "Where" and len(node.input) == 3 and node.input[0] in derived:
        condition, kept, hidden = node.input
        for scores, fill, meaning in ((kept, hidden, "keep"), (hidden, kept, "hide")):
            constant = constant_of(fill)
            if scores not in derived and constant is not None and constant.size == 1:
                return scores, condition, meaning, float(constant.reshape(()))
    return None


def probe(onnx: Any, value: str, source: str, inputs: dict[str, Any],
          producer: dict[str, Any], derived: dict[str, str], constant_of: Constants,
          meaning: str, inverted: bool = False) -> tuple[bool, float, int] | None:
    """(causal, fill, rank) when `value` is, for all-ones and random masks m of the
    input `source` [batch, keys], a [batch, ..., keys] tensor of that rank that keeps
    where `m[b, k]` and a constant keep[..., q, k], all true or causal; as `meaning`
    says (`masked_operands`): a float bias, 0 where it keeps and `fill` (one value at
    most `ADDITIVE_MASK_LIMIT`) elsewhere; a condition true where it keeps ("keep") or
    where it hides ("hide"). `inverted`: keeps where `m[b, k]` is 0 instead (probed
    first with all zeros). None: it is not such a mask."""
    shape = input_shape(inputs[source])
    if len(shape) != 2:
        return None
    try:
        evaluate = evaluator(onnx, value, source, inputs, producer, derived, constant_of)
        rng = np.random.default_rng(0)
        masks = [np.full(shape, 0 if inverted else 1, dtype=np.int64)] + [
            rng.integers(0, 2, size=shape) for _ in range(PROBES - 1)]
        outputs = [evaluate(mask) for mask in masks]
    except Exception:  # the evaluator's own failure: not a mask this recognises
        return None
    constant: np.ndarray | None = None
    fills: set[float] = set()
    for mask, out in zip(masks, outputs, strict=True):
        if out.ndim < 2 or out.shape[0] != shape[0] or out.shape[-1] != shape[1] or \
                (meaning == "bias") != np.issubdtype(out.dtype, np.floating):
            return None
        kept = out == 0 if meaning == "bias" else out.astype(bool) ^ (meaning == "hide")
        fills.update(np.unique(out[~kept]).tolist() if meaning == "bias" else [-np.inf])
        if constant is None:
            constant = kept
        given = mask.reshape(shape[0], *[1] * (out.ndim - 2), shape[1]) != 0
        expected = constant & (given ^ inverted)
        if not np.array_equal(kept, expected):
            return None
    assert constant is not None
    if len(fills) != 1 or min(fills) > ADDITIVE_MASK_LIMIT:
        return None
    causal = not constant.all()
    if causal and not causal_over_last_axes(constant):
        return None
    return causal, max(float(next(iter(fills))), -FLOAT_LIMIT), len(outputs[0].shape)


def causal_over_last_axes(keep: np.ndarray) -> bool:
    """Whether `keep` is lower-triangular over its last two axes, the same for every
    index of its leading axes."""
    if keep.shape[-1] != keep.shape[-2]:
        return False
    square = np.tril(np.ones(keep.shape[-2:], dtype=bool))
    return bool((keep == square).all())


def input_shape(value_info: Any) -> tuple[int, ...]:
    return tuple(d.dim_value for d in value_info.type.tensor_type.shape.dim)


def evaluator(onnx: Any, value: str, source: str, inputs: dict[str, Any],
              producer: dict[str, Any], derived: dict[str, str], constant_of: Constants
              ) -> Callable[[np.ndarray], np.ndarray]:
    """`value` as a function of the input `source` (the mask), by onnx's reference
    evaluator over the nodes that compute it from the mask and constants."""
    nodes: list[Any] = []
    constants: dict[str, np.ndarray | None] = {}
    stack, seen = [value], set()
    while stack:
        name = stack.pop()
        if name in seen or name == source:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is None or not any(out in derived for out in node.output):
            constants[name] = constant_of(name)
            continue
        nodes.append(node)
        stack.extend(i for i in node.input if i)
    chosen = {id(node) for node in nodes}
    unique = list({id(n): n for n in producer.values() if id(n) in chosen}.values())
    # The ops of MASK_OPS mean the same from opset 13 (the oldest pase reads) to 18.
    run = subgraph_runner(onnx, unique, [inputs[source]], value,
                          [onnx.numpy_helper.from_array(np.asarray(array), name)
                           for name, array in constants.items() if array is not None], 18)
    element = onnx.helper.tensor_dtype_to_np_dtype(
        inputs[source].type.tensor_type.elem_type)
    return lambda mask: run({source: mask.astype(element)})


def without_unused(nodes: list[Any], removable: set[str]) -> list[Any]:
    """`nodes` less those computing mask values (`removable`) that nothing reads."""
    used: set[str] = set()
    kept: list[Any] = []
    for node in reversed(nodes):
        if all(out in removable for out in node.output) and \
                not any(out in used for out in node.output):
            continue
        used.update(node.input)
        kept.append(node)
    return kept[::-1]


@importer("PaddingMask", attributes=("causal", "fill", "keep_axes"))
def padding_mask(graph: GraphState, node: Any) -> list[Value]:
    """The node `rewrite_input_masks` makes: `dnn.mask causal` (when `causal`) then
    `dnn.mask padding` of the scores by the mask input, whose axes are the scores' at
    `keep_axes` (batch, keys)."""
    x = graph.tensor(node.input[0])
    keep = graph.tensor(node.input[1])
    positions = [graph.axis(a, len(x.axes)) for a in graph.attribute(node, "keep_axes")]
    for keep_axis, position in zip(keep.axes, positions, strict=True):
        dim = graph.real_axis(x, position)
        hint = graph.dims.hints[graph.dims.find(dim)]
        if keep_axis is None or not graph.same(keep_axis, dim):
            raise graph.error(f"the attention mask input '{node.input[1]}' cannot be "
                              "laid over the scores' batch and key axes")
        graph.dims.hints[graph.dims.find(dim)] = hint
    fill = max(float(graph.attribute(node, "fill")), -FLOAT_LIMIT)
    if graph.attribute(node, "causal"):
        x = causal_mask(graph, x, fill, f"{node.output[0]}_causal")
    y = graph.build(dnn.MaskOp, [x.value, keep.value], node.output[0], None,
                    {"kind": StringAttr("padding"),
                     "over": graph.dim_array(graph.layout(keep)),
                     "fill": FloatAttr(fill, f64)})
    return [Value(x.axes, y)]


def check_input_masks(nodes: list[Any], inputs: Iterable[str],
                      constant_of: Callable[[str], np.ndarray | None], filename: str) -> None:
    """Raise at the first Where whose condition is computed from a graph input."""
    sources: dict[str, set[str]] = {name: {name} for name in inputs}
    for node in nodes:
        used = set().union(*(sources.get(name, set()) for name in node.input))
        if node.op_type == "Where" and node.input and constant_of(node.input[0]) is None \
                and sources.get(node.input[0]):
            names = ", ".join(f"'{name}'" for name in sorted(sources[node.input[0]]))
            raise Diagnostic(
                f"node '{node_label(node)}' (Where): its condition is computed from the "
                f"model's input {names} (as a padding mask is from an attention_mask); pase "
                "reads masks computed from an input only as an attention_mask's padding "
                "mask added to the attention scores (a value 0 where the mask is 1, one "
                "fill at most -10,000 elsewhere, with or without the causal mask); export "
                "the model without attention_mask, for batches of sequences of one length",
                filename)
        for name in node.output:
            if used:
                sources[name] = used
