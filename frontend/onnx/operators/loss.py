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
    if softmax != position:
        raise graph.error(f"its log-softmax is over axis {softmax} but the labels pick "
                          f"along axis {position}: not a cross-entropy loss")
    ignored = graph.attribute(node, "ignore_index")
    labels = graph.tensor(node.input[1])
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
