"""A loss exported with the model: SoftmaxCrossEntropyLoss (what both PyTorch exporters
write for `nn.functional.cross_entropy`) as pase's own `softmax_cross_entropy`, its labels
the graph input that feeds them. `loss_patterns` turns the other spellings of the same loss
(LogSoftmax with NegativeLogLikelihoodLoss, or with GatherElements and ReduceMean) into
this node before import.

    SoftmaxCrossEntropyLoss(z [8, 10], labels [8], reduction="mean", ignore_index=-100)
    ->  %loss = dnn.softmax_cross_entropy %z, %labels over [c] ignore -100
                                                         (labels: an i64 input [b])
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import IntAttr
from xdsl.ir import Attribute

from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value

CLASS_AXIS = "pase_class_axis"
"""The axis the labels index, as `loss_patterns` writes it for a GatherElements (ONNX's
loss nodes: 1). No ONNX file has this attribute nor the next (the checker refuses
attributes a node's schema lacks)."""
SOFTMAX_AXIS = "pase_softmax_axis"
"""The axis of the LogSoftmax `loss_patterns` folded into the node (default: the
class axis); the loss is pase's only when the two are one axis."""
REFLATTENED = "pase_reflattened"
"""The scores a log-softmax read before `loss_patterns` moved the Reshape that flattened
its result (to [-1, C]) before it: the log-softmax's axis (`SOFTMAX_AXIS`) is one of
theirs, and must be their last and the class axis, which the Reshape keeps."""


@importer("SoftmaxCrossEntropyLoss",
          attributes=("reduction", "ignore_index", CLASS_AXIS, SOFTMAX_AXIS, REFLATTENED))
def softmax_cross_entropy(graph: GraphState, node: Any) -> list[Value]:
    """The mean softmax cross-entropy of scores [N, C, D1, ...] (classes on axis 1)
    against integer labels [N, D1, ...]: the scalar `softmax_cross_entropy` pase trains
    with. The node's `ignore_index` (any value, a class too) is the op's: a label equal
    to it adds nothing, and the mean is over the other labels, as in ONNX and PyTorch.
    Class weights or a reduction other than the mean (a different loss) are errors.
    Labels may keep a size-1 class axis (the index of a GatherElements)."""
    reduction = graph.attribute(node, "reduction", b"mean")
    if reduction not in (b"mean", "mean"):
        kind = reduction.decode() if isinstance(reduction, bytes) else reduction
        raise graph.error(f"reduction='{kind}' is not supported: pase's loss is the mean "
                          "over the labels (reduction='mean')")
    if len(node.input) > 2 and node.input[2]:
        raise graph.error("class weights are not supported: pase's loss weighs every "
                          "label alike")
    scores = graph.tensor(node.input[0])
    labels: Value | None = None
    position = graph.axis(graph.attribute(node, CLASS_AXIS, 1), len(scores.axes))
    classes = graph.real_axis(scores, position)
    softmax = graph.axis(graph.attribute(node, SOFTMAX_AXIS, position), len(scores.axes))
    if (original := graph.attribute(node, REFLATTENED)) is not None:
        unflattened = graph.tensor(original.decode() if isinstance(original, bytes)
                                   else original)
        rank = len(unflattened.axes)
        axis = graph.axis(graph.attribute(node, SOFTMAX_AXIS, -1), rank)
        last = unflattened.axes[-1]
        if axis != rank - 1 or position != len(scores.axes) - 1 or last is None or \
                not graph.same(last, classes):
            raise graph.error("the result of its log-softmax is reshaped otherwise than "
                              "by flattening the axes before the log-softmax's, its last "
                              "(to [-1, C]): not a cross-entropy loss")
        softmax = position
        if (rows := _unflattened(graph, scores, unflattened, node.input[1])) is not None:
            scores, labels, position = unflattened, rows, rank - 1
            softmax = position
    elif softmax == position == 1 and len(scores.axes) == 2 and (
            before := _reshaped_from(graph, scores)) is not None and (
            rows := _unflattened(graph, scores, before, node.input[1])) is not None:
        scores, labels = before, rows  # z.reshape(-1, C) and t.reshape(-1): z and t
        position = softmax = len(before.axes) - 1
    if softmax != position:
        raise graph.error(f"its log-softmax is over axis {softmax} but the labels pick "
                          f"along axis {position}: not a cross-entropy loss")
    ignored = graph.attribute(node, "ignore_index")
    labels = graph.tensor(node.input[1]) if labels is None else labels
    if not dnn.shape_of(labels.value).element.startswith("i"):
        raise graph.error("the labels must be an integer tensor (class indices)")
    rest = [axis for p, axis in enumerate(scores.axes) if p != position]
    label_axes = list(labels.axes)
    if len(label_axes) == len(scores.axes) and label_axes[position] is None:
        del label_axes[position]
    if len(label_axes) != len(rest):
        raise graph.error(f"the labels have {len(labels.axes)} axes; the scores without "
                          f"their classes have {len(rest)}")
    for label_axis, score_axis in zip(label_axes, rest, strict=True):
        if (label_axis is None) != (score_axis is None) or (
                label_axis is not None and score_axis is not None
                and not graph.same(label_axis, score_axis)):
            raise graph.error("the labels' axes do not match the scores' axes")
    graph.dims.hints[graph.dims.find(classes)] = "c"
    order = [graph.dims.find(a) for a in graph.layout(labels)] + [graph.dims.find(classes)]
    logits = scores.value if graph.layout(scores) == order else graph.build(
        dnn.EinsumOp, [scores.value], f"{node.output[0]}_logits", order)
    properties: dict[str, Attribute] = {"over": graph.dim_array([classes])}
    if ignored is not None:
        properties["ignore_index"] = IntAttr(int(ignored))
    loss = graph.build(dnn.SoftmaxCrossEntropyOp, [logits, labels.value], node.output[0],
                       None, properties)
    return [Value((), loss)]


def _unflattened(graph: GraphState, scores: Value, unflattened: Value,
                 labels_name: str) -> Value | None:
    """The labels before their Reshape to [-1], where the loss can read the scores before
    theirs to [-1, C] instead: `nll_loss(z.reshape(-1, C), t.reshape(-1))` is the
    loss of z [b, s, C] against t [b, s], the same mean over the same rows, whose batch
    dim then reaches the loss (micro-batches can split it). Both Reshapes, read by
    nothing else, are dropped. None where the labels are not such a Reshape of a tensor
    shaped like the scores' rows."""
    labels = graph.tensor(labels_name)
    reshape, flat = labels.value.owner, scores.value.owner
    if not isinstance(reshape, dnn.ReshapeOp) or not isinstance(flat, dnn.ReshapeOp) or \
            reshape.output.uses or flat.output.uses or None in unflattened.axes:
        return None
    rows = _reshaped_from(graph, labels)
    axes = [a for a in rows.axes if a is not None] if rows is not None else []
    leading = [a for a in unflattened.axes if a is not None]
    classes = graph.real_axis(scores, 1)
    if rows is None or [graph.dims.size(a) for a in axes] != [
            graph.dims.size(a) for a in leading[:-1]] or \
            graph.dims.size(leading[-1]) != graph.dims.size(classes) or \
            not graph.same(leading[-1], classes):
        return None
    for op in (reshape, flat):
        op.drop_all_references()
        graph.body.remove(op)
    return rows


def _reshaped_from(graph: GraphState, value: Value) -> Value | None:
    """The tensor a Reshape made `value` of, laid out in its ONNX axis order without
    size-1 axes; None if `value` is not a Reshape's."""
    reshape = value.value.owner
    if not isinstance(reshape, dnn.ReshapeOp):
        return None
    before = next((known for known in graph.values.values()
                   if known.ssa is reshape.inputs[0] and None not in known.axes), None)
    if before is None or graph.layout(before) != [graph.dims.find(a) for a in before.axes
                                                  if a is not None]:
        return None
    return before
