"""A loss exported with the model: SoftmaxCrossEntropyLoss (what both PyTorch exporters
write for `nn.functional.cross_entropy`) as pase's own `softmax_cross_entropy`, its labels
the graph input that feeds them. `loss_patterns` turns the other spellings of the same loss
(LogSoftmax with NegativeLogLikelihoodLoss, or with GatherElements and ReduceMean) into
this node before import.

    SoftmaxCrossEntropyLoss(z [8, 10], labels [8], reduction="mean")
    ->  %loss = dnn.softmax_cross_entropy %z, %labels over [c]   (labels: an i64 input [b])
"""

from __future__ import annotations

from typing import Any

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


@importer("SoftmaxCrossEntropyLoss",
          attributes=("reduction", "ignore_index", CLASS_AXIS, SOFTMAX_AXIS))
def softmax_cross_entropy(graph: GraphState, node: Any) -> list[Value]:
    """The mean softmax cross-entropy of scores [N, C, D1, ...] (classes on axis 1)
    against integer labels [N, D1, ...]: the scalar `softmax_cross_entropy` pase trains
    with. Labels outside [0, C) are not read: an `ignore_index` inside that range, class
    weights or a reduction other than the mean (a different loss) are errors. Labels may
    keep a size-1 class axis (the index of a GatherElements)."""
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
    if softmax != position:
        raise graph.error(f"its log-softmax is over axis {softmax} but the labels pick "
                          f"along axis {position}: not a cross-entropy loss")
    ignored = graph.attribute(node, "ignore_index")
    if ignored is not None and 0 <= ignored < graph.dims.size(classes):
        raise graph.error(f"ignore_index={ignored} is one of the "
                          f"{graph.dims.size(classes)} classes; pase's loss reads every "
                          "label: export with an ignore_index outside the classes "
                          "(PyTorch's default is -100)")
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
    loss = graph.build(dnn.SoftmaxCrossEntropyOp, [logits, labels.value], node.output[0],
                       None, {"over": graph.dim_array([classes])})
    return [Value((), loss)]
