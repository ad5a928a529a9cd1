"""The exporters' spellings of a cross-entropy loss, as the one SoftmaxCrossEntropyLoss
node pase imports (`operators.loss`), before import.

    nodes = fuse_cross_entropy(onnx, nodes)

- `nll_loss(log_softmax(z, 1), labels)`: LogSoftmax, then NegativeLogLikelihoodLoss of it;
- `-log_softmax(z, 1).gather(1, labels[:, None]).mean()`: LogSoftmax, GatherElements by
  the labels with a size-1 class axis, ReduceMean over everything (then Squeeze), with a
  Neg before or after the gather or the mean.

The LogSoftmax's output must have no other use; the importer checks that its axis is the
axis the labels index. Any other GatherElements stays, and is reported as an op pase does
not read.
"""

from __future__ import annotations

from typing import Any

from pase.frontend.onnx.operators.loss import CLASS_AXIS, SOFTMAX_AXIS

ONLY_IN_A_LOSS = {
    op_type: "pase reads it only in a cross-entropy loss: LogSoftmax, GatherElements by "
             "the labels, ReduceMean, Neg; or LogSoftmax, NegativeLogLikelihoodLoss"
    for op_type in ("LogSoftmax", "GatherElements", "NegativeLogLikelihoodLoss")}
"""Why a node of these op types, left after `fuse_cross_entropy`, is not read: the
report of unsupported ops says it."""


def fuse_cross_entropy(onnx: Any, nodes: list[Any]) -> list[Any]:
    """`nodes` with each spelling above replaced by a SoftmaxCrossEntropyLoss node."""
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only_use(name: str) -> Any:
        uses = consumers.get(name, [])
        return uses[0] if len(uses) == 1 else None

    def attributes(node: Any) -> dict[str, Any]:
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    removed: set[int] = set()
    replacement: dict[int, Any] = {}
    for log_softmax in nodes:
        if log_softmax.op_type != "LogSoftmax":
            continue
        softmax_axis = attributes(log_softmax).get("axis", -1)
        chain = [log_softmax]
        while (step := only_use(chain[-1].output[0])) is not None and step.op_type in (
                "Neg", "GatherElements", "ReduceMean", "Squeeze", "NegativeLogLikelihoodLoss"):
            chain.append(step)
            if step.op_type == "NegativeLogLikelihoodLoss":
                break
        kinds = [node.op_type for node in chain[1:]]
        last = chain[-1]
        if kinds == ["NegativeLogLikelihoodLoss"] and last.input[0] == log_softmax.output[0]:
            options = {**attributes(last), CLASS_AXIS: 1}
            inputs = [log_softmax.input[0], *last.input[1:]]
        elif is_picked_mean(kinds, chain, attributes):
            gather = chain[1 + kinds.index("GatherElements")]
            options = {CLASS_AXIS: attributes(gather).get("axis", 0)}
            inputs = [log_softmax.input[0], gather.input[1]]
        else:
            continue
        removed.update(id(node) for node in chain)
        replacement[id(last)] = onnx.helper.make_node(
            "SoftmaxCrossEntropyLoss", inputs, [last.output[0]],
            name=log_softmax.name or last.output[0], **options,
            **{SOFTMAX_AXIS: softmax_axis})
    return [replacement.get(id(node), node) for node in nodes
            if id(node) not in removed or id(node) in replacement]


def is_picked_mean(kinds: list[str], chain: list[Any], attributes: Any) -> bool:
    """Whether the nodes after a LogSoftmax are one GatherElements (of the log-softmax's
    values, not of the labels), one Neg, one ReduceMean over every axis, then at most a
    Squeeze, in that order but for the Neg."""
    without_neg = [kind for kind in kinds if kind != "Neg"]
    if kinds.count("Neg") != 1 or without_neg not in (
            ["GatherElements", "ReduceMean"], ["GatherElements", "ReduceMean", "Squeeze"]):
        return False
    gather = chain[1 + kinds.index("GatherElements")]
    mean = chain[1 + kinds.index("ReduceMean")]
    every_axis = len(mean.input) < 2 or not mean.input[1]
    return gather.input[0] == chain[kinds.index("GatherElements")].output[0] and \
        every_axis and "axes" not in attributes(mean)
