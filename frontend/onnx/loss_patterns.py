"""The exporters' spellings of a cross-entropy loss, as the one SoftmaxCrossEntropyLoss
node pase imports (`operators.loss`), before import.

    nodes = fuse_cross_entropy(onnx, nodes, constant_of)

- `nll_loss(log_softmax(z, 1), labels)`: LogSoftmax, then NegativeLogLikelihoodLoss of it
  (its `ignore_index` kept), also with the log-softmax's result flattened between
  (`nll_loss(log_softmax(z, -1).reshape(-1, C), labels.reshape(-1))`, both exporters);
- `-log_softmax(z, 1).gather(1, labels[:, None]).mean()`: LogSoftmax, GatherElements by
  the labels with a size-1 class axis, ReduceMean over everything (then Squeeze), with a
  Neg before or after the gather or the mean;
- a causal language model's shifted labels (Hugging Face's `labels=`: the labels padded
  with `ignore_index` at the end of the sequence, then all but the first): the loss of
  the first S - k positions' scores against the labels from k on (`shift_labels`).

The LogSoftmax's output must have no other use; the importer checks that its axis is the
axis the labels index. Any other GatherElements stays, and is reported as an op pase does
not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pase.frontend.onnx.operators.loss import CLASS_AXIS, REFLATTENED, SOFTMAX_AXIS

ONLY_IN_A_LOSS = {
    op_type: "pase reads it only in a cross-entropy loss: LogSoftmax, GatherElements by "
             "the labels, ReduceMean, Neg; or LogSoftmax, NegativeLogLikelihoodLoss"
    for op_type in ("LogSoftmax", "GatherElements", "NegativeLogLikelihoodLoss")}
"""Why a node of these op types, left after `fuse_cross_entropy`, is not read: the
report of unsupported ops says it."""


def fuse_cross_entropy(onnx: Any, nodes: list[Any],
                       constant_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """`nodes` with each spelling above replaced by a SoftmaxCrossEntropyLoss node."""
    nodes = unshift_labels(onnx, nodes, constant_of)
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
                "Neg", "GatherElements", "ReduceMean", "Squeeze", "NegativeLogLikelihoodLoss",
                "Reshape"):
            chain.append(step)
            if step.op_type == "NegativeLogLikelihoodLoss":
                break
        kinds = [node.op_type for node in chain[1:]]
        last = chain[-1]
        before: list[Any] = []
        if kinds == ["NegativeLogLikelihoodLoss"] and last.input[0] == log_softmax.output[0]:
            options = {**attributes(last), CLASS_AXIS: 1}
            inputs = [log_softmax.input[0], *last.input[1:]]
        elif kinds == ["Reshape", "NegativeLogLikelihoodLoss"] and \
                last.input[0] == chain[1].output[0]:
            # Flattened after the log-softmax (scores [b, s, C] to [-1, C]): the same
            # reshape before the loss, whose importer checks that the log-softmax's axis
            # is the scores' last and the class axis (REFLATTENED).
            reshape = chain[1]
            scores = f"{reshape.output[0]}_scores"
            before = [onnx.helper.make_node("Reshape", [log_softmax.input[0],
                                                        *reshape.input[1:]], [scores],
                                            name=reshape.name or scores,
                                            **attributes(reshape))]
            options = {**attributes(last), CLASS_AXIS: 1,
                       REFLATTENED: log_softmax.input[0]}
            inputs = [scores, *last.input[1:]]
        elif is_picked_mean(kinds, chain, attributes):
            gather = chain[1 + kinds.index("GatherElements")]
            options = {CLASS_AXIS: attributes(gather).get("axis", 0)}
            inputs = [log_softmax.input[0], gather.input[1]]
        else:
            continue
        removed.update(id(node) for node in chain)
        replacement[id(last)] = [*before, onnx.helper.make_node(
            "SoftmaxCrossEntropyLoss", inputs, [last.output[0]],
            name=log_softmax.name or last.output[0], **options,
            **{SOFTMAX_AXIS: softmax_axis})]
    return [new for node in nodes if id(node) not in removed or id(node) in replacement
            for new in replacement.get(id(node), [node])]


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


def unshift_labels(onnx: Any, nodes: list[Any],
                   constant_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """`nodes` with each loss of scores [.., S, C] flattened (Reshape to [-1, C]) against
    labels Pad(y, k ignored entries at the end of axis a), Slice(k:) along a, flattened
    (Reshape to [-1]), as the loss of the scores sliced to their first S - k positions
    along a against y sliced from k: the same mean over the labels that count."""
    graph = NodeGraph(onnx, nodes, constant_of)
    inserted: dict[int, list[Any]] = {}
    front: list[Any] = []
    for loss in nodes:
        found = graph.shifted_labels(loss) if loss.op_type == "SoftmaxCrossEntropyLoss" \
            else None
        if found is None:
            continue
        scores, pad, cut, axis, k = found
        name = cut.output[0]
        constants = {f"{name}_{what}": value for what, value in
                     (("axis", [axis]), ("start", [k]), ("end", [-k]), ("zero", [0]))}
        front += [onnx.helper.make_node("Constant", [], [constant], name=constant,
                                        value=onnx.numpy_helper.from_array(
                                            np.array(value, dtype=np.int64)))
                  for constant, value in constants.items()]
        inserted[id(pad)] = []
        inserted[id(cut)] = [onnx.helper.make_node(
            "Slice", [pad.input[0], f"{name}_start", cut.input[2], f"{name}_axis"], [name],
            name=cut.name or name)]
        inserted[id(scores)] = [onnx.helper.make_node(
            "Slice", [scores.input[0], f"{name}_zero", f"{name}_end", f"{name}_axis"],
            [f"{name}_scores"], name=f"{cut.name or name}_scores"), scores]
        scores.input[0] = f"{name}_scores"
    return front + [new for node in nodes for new in inserted.get(id(node), [node])]


class NodeGraph:
    """The producers and use counts of a node list, and its integer constants."""

    def __init__(self, onnx: Any, nodes: list[Any],
                 constant_of: Callable[[str], np.ndarray | None]) -> None:
        self.onnx = onnx
        self.constant_of = constant_of
        self.producer = {out: node for node in nodes for out in node.output}
        self.uses: dict[str, int] = {}
        for node in nodes:
            for name in node.input:
                self.uses[name] = self.uses.get(name, 0) + 1

    def ints(self, name: str) -> list[int] | None:
        array = self.constant_of(name) if name else None
        return None if array is None or array.dtype.kind != "i" else array.ravel().tolist()

    def attribute(self, node: Any, name: str, default: Any = None) -> Any:
        return next((self.onnx.helper.get_attribute_value(a) for a in node.attribute
                     if a.name == name), default)

    def flattened(self, name: str, rank: int) -> Any:
        """The Reshape to [-1] (rank 1) or [-1, n] (rank 2) that alone reads into `name`."""
        reshape = self.producer.get(name)
        if reshape is None or reshape.op_type != "Reshape" or self.uses.get(name) != 1:
            return None
        target = self.ints(reshape.input[1]) if len(reshape.input) > 1 else None
        return reshape if target and len(target) == rank and target[0] == -1 else None

    def shifted_labels(self, loss: Any) -> tuple[Any, Any, Any, int, int] | None:
        """For a loss over shifted labels: the scores' Reshape, the labels' Pad and Slice,
        the axis shifted and by how much."""
        scores, labels = self.flattened(loss.input[0], 2), self.flattened(loss.input[1], 1)
        cut = None if labels is None else self.producer.get(labels.input[0])
        if scores is None or cut is None or cut.op_type != "Slice" or \
                self.uses.get(cut.output[0]) != 1:
            return None
        pad = self.producer.get(cut.input[0])
        if pad is None or pad.op_type != "Pad" or len(pad.input) != 3 or \
                self.uses.get(pad.output[0]) != 1 or \
                self.attribute(pad, "mode", b"constant") not in (b"constant", "constant"):
            return None
        pads, fill = self.ints(pad.input[1]), self.ints(pad.input[2])
        bounds = [self.ints(name) for name in cut.input[1:]]
        if pads is None or fill != [self.attribute(loss, "ignore_index")] or \
                len(bounds) not in (3, 4):
            return None
        rank = len(pads) // 2
        ends = [(axis, k) for axis, k in enumerate(pads[rank:]) if k]
        starts, stops, axes = bounds[0], bounds[1], bounds[2]
        steps = bounds[3] if len(bounds) == 4 else [1]
        if starts is None or stops is None or axes is None or any(pads[:rank]) or \
                len(ends) != 1 or steps != [1] or len(axes) != 1:
            return None
        axis, k = ends[0]
        if axes[0] % rank != axis or starts != [k] or stops[0] < np.iinfo(np.int32).max:
            return None
        return scores, pad, cut, axis, k
