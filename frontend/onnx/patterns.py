"""Rewrites of the ONNX node list before import: exporters' spellings of one layer
(the erf-based GELU, the decomposed layer and RMS norms, a cross-entropy loss:
`loss_patterns`) become the one node the frontend maps to a `dnn` op.

    nodes = rewrite_patterns(onnx, list(model.graph.node), constant_of, ranks)

`ranks` gives the rank of each value shape inference knows (a ReduceMean over axis 2 of a
rank-3 tensor, as the dynamo exporter writes `nn.RMSNorm`'s, reduces its last axis).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pase.frontend.onnx.loss_patterns import fuse_cross_entropy
from pase.frontend.onnx.pads import fold_zero_pads

Ranks = dict[str, int]
"""Value name -> its rank, where shape inference knows it."""


def rewrite_patterns(onnx: Any, nodes: list[Any], constant_of: Callable[[str], np.ndarray | None],
                     ranks: Ranks | None = None) -> list[Any]:
    """`nodes` with every pattern below replaced by the one node it spells (and zero
    pads folded into the windows that read them: `pads`)."""
    nodes = fold_zero_pads(onnx, nodes, constant_of)
    nodes = fuse_layer_norm(onnx, fuse_erf_gelu(onnx, nodes, constant_of), constant_of,
                            ranks or {})
    nodes = fuse_rms_norm(onnx, nodes, constant_of, ranks or {})
    return fuse_cross_entropy(onnx, drop_nan_guards(onnx, nodes), constant_of)


def uses_of(nodes: list[Any]) -> dict[str, list[Any]]:
    """Each value's consumers, in node order."""
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return consumers


def fuse_layer_norm(onnx: Any, nodes: list[Any],
                    constant_of: Callable[[str], np.ndarray | None],
                    ranks: Ranks | None = None) -> list[Any]:
    """`nodes` with each decomposed layer norm, `(x − mean(x)) / √(var(x) + ε) · γ + β` as
    PyTorch exports `nn.LayerNorm` before opset 17 (and as hand-written norms spell it),
    as one LayerNormalization node (axis -1, its epsilon ε): ReduceMean(x) over the last
    axis with keepdims, Sub(x, mean), Pow(·, 2), ReduceMean over the last axis, Add ε, Sqrt,
    Div(centred, ·), Mul by a 1-D constant γ (either side), Add a 1-D constant β (either
    side). The centred value has exactly its Pow and Div as uses, the others one use."""
    consumers = uses_of(nodes)

    def only_use(name: str, op_type: str) -> Any:
        uses = consumers.get(name, [])
        return uses[0] if len(uses) == 1 and uses[0].op_type == op_type else None

    def vector(node: Any, name: str) -> str | None:
        """The other input of a binary node, if it is a 1-D constant."""
        rest = [i for i in node.input if i != name]
        array = constant_of(rest[0]) if len(rest) == 1 else None
        return rest[0] if array is not None and array.ndim == 1 else None

    removed: set[int] = set()
    replacement: dict[int, Any] = {}
    for mean in nodes:
        if mean.op_type != "ReduceMean" or not last_axis_mean(onnx, mean, constant_of, ranks):
            continue
        x = mean.input[0]
        centre = only_use(mean.output[0], "Sub")
        if centre is None or list(centre.input) != [x, mean.output[0]]:
            continue
        uses = consumers.get(centre.output[0], [])
        if sorted(u.op_type for u in uses) != ["Div", "Pow"]:
            continue
        power, divide = sorted(uses, key=lambda u: u.op_type != "Pow")
        exponent = constant_of(power.input[1])
        if exponent is None or exponent.size != 1 or float(exponent.reshape(())) != 2.0:
            continue
        chain = [mean, centre, power]
        for op_type in ("ReduceMean", "Add", "Sqrt"):
            step = only_use(chain[-1].output[0], op_type)
            if step is None:
                break
            chain.append(step)
        epsilon = None if len(chain) != 6 else added_scalar(chain[4], constant_of)
        if epsilon is None or not last_axis_mean(onnx, chain[3], constant_of, ranks) or \
                list(divide.input) != [centre.output[0], chain[5].output[0]]:
            continue
        scale_node = only_use(divide.output[0], "Mul")
        gamma = None if scale_node is None else vector(scale_node, divide.output[0])
        shift_node = None if gamma is None else only_use(scale_node.output[0], "Add")
        beta = None if shift_node is None else vector(shift_node, scale_node.output[0])
        if beta is None or shift_node is None:
            continue
        matched = [*chain, divide, scale_node, shift_node]
        if removed.intersection(id(n) for n in matched):
            continue
        removed.update(id(n) for n in matched)
        replacement[id(shift_node)] = onnx.helper.make_node(
            "LayerNormalization", [x, gamma, beta], [shift_node.output[0]],
            name=mean.name or shift_node.output[0], axis=-1, epsilon=epsilon)
    return [replacement.get(id(node), node) for node in nodes
            if id(node) not in removed or id(node) in replacement]


def fuse_rms_norm(onnx: Any, nodes: list[Any],
                  constant_of: Callable[[str], np.ndarray | None],
                  ranks: Ranks | None = None) -> list[Any]:
    """`nodes` with each decomposed RMS norm (T5's), `x / √(mean(x²) + ε) · scale`, as
    one RMSNormalization node (axis -1, its epsilon ε): Pow(x, 2), ReduceMean over the last
    axis with keepdims, Add ε, Sqrt, then Div(x, ·) or Mul(x, Reciprocal(·) or Div(1, ·)), then Mul
    by a 1-D initializer scale; the intermediate values have no other use."""
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only_use(name: str, op_type: str) -> Any:
        uses = consumers.get(name, [])
        return uses[0] if len(uses) == 1 and uses[0].op_type == op_type else None

    def scalar(name: str) -> float | None:
        array = constant_of(name)
        return float(array.reshape(())) if array is not None and array.size == 1 else None

    removed: set[int] = set()
    replacement: dict[int, Any] = {}
    for power in nodes:
        if power.op_type != "Pow" or scalar(power.input[1]) != 2.0:
            continue
        x = power.input[0]
        chain = [power]
        for op_type in ("ReduceMean", "Add", "Sqrt"):
            step = only_use(chain[-1].output[0], op_type)
            if step is None:
                break
            chain.append(step)
        epsilon = None if len(chain) != 4 else added_scalar(chain[2], constant_of)
        if epsilon is None or not last_axis_mean(onnx, chain[1], constant_of, ranks):
            continue
        normed = divide_by(chain[-1].output[0], x, only_use, producer, scalar, chain)
        if normed is None:
            continue
        scale_node = only_use(normed.output[0], "Mul")
        scale = None if scale_node is None else next(
            (i for i in scale_node.input if i != normed.output[0]), None)
        array = constant_of(scale) if scale else None
        if scale_node is None or array is None or array.ndim != 1:
            continue
        matched = [*chain, normed, scale_node]
        if removed.intersection(id(n) for n in matched):
            continue
        removed.update(id(n) for n in matched)
        replacement[id(scale_node)] = onnx.helper.make_node(
            "RMSNormalization", [x, scale], [scale_node.output[0]],
            name=power.name or scale_node.output[0], axis=-1, epsilon=epsilon)
    return [replacement.get(id(node), node) for node in nodes
            if id(node) not in removed or id(node) in replacement]


def added_scalar(add: Any, constant_of: Callable[[str], np.ndarray | None]) -> float | None:
    """The constant of one element an Add adds (a decomposed norm's epsilon), or None."""
    for name in add.input:
        array = constant_of(name)
        if array is not None and array.size == 1:
            return float(array.reshape(()))
    return None


def last_axis_mean(onnx: Any, node: Any, constant_of: Callable[[str], np.ndarray | None],
                   ranks: Ranks | None = None) -> bool:
    """Whether a ReduceMean keeps its dims and reduces the last axis only (-1, or
    rank - 1 where the rank of its input is known)."""
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    axes = attributes.get("axes")
    if len(node.input) > 1 and node.input[1]:
        array = constant_of(node.input[1])
        axes = None if array is None else array.tolist()
    if attributes.get("keepdims", 1) != 1 or axes is None or len(list(axes)) != 1:
        return False
    rank = (ranks or {}).get(node.input[0])
    return list(axes) == [-1] or (rank is not None and list(axes) == [rank - 1])


def divide_by(root: str, x: str, only_use: Callable[[str, str], Any],
              producer: dict[str, Any], scalar: Callable[[str], float | None],
              chain: list[Any]) -> Any:
    """The node computing x / root (Div, or Mul by its reciprocal); appends the reciprocal
    node to `chain`. None if neither spelling is there."""
    divide = only_use(root, "Div")
    if divide is not None and list(divide.input) == [x, root]:
        return divide
    inverse = divide if divide is not None and scalar(divide.input[0]) == 1.0 else \
        only_use(root, "Reciprocal")
    if inverse is None:
        return None
    product = only_use(inverse.output[0], "Mul")
    if product is None or x not in product.input:
        return None
    chain.append(inverse)
    return product


def drop_nan_guards(onnx: Any, nodes: list[Any]) -> list[Any]:
    """`Where(IsNaN(v), c, v)` as an Identity of `v`: the dynamo exporter's guard on
    scaled-dot-product attention's softmax (rows masked whole), which pase's finite masks
    never make NaN. The IsNaN goes when nothing else reads it."""
    producer = {out: node for node in nodes for out in node.output}
    uses: dict[str, int] = {}
    for node in nodes:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for node in nodes:
        check = producer.get(node.input[0]) if node.op_type == "Where" else None
        if check is None or check.op_type != "IsNaN" or check.input[0] != node.input[2]:
            continue
        replaced[id(node)] = onnx.helper.make_node("Identity", [node.input[2]],
                                                   [node.output[0]], name=node.name)
        if uses[check.output[0]] == 1:
            dropped.add(id(check))
    return [replaced.get(id(node), node) for node in nodes if id(node) not in dropped]


def fuse_erf_gelu(onnx: Any, nodes: list[Any],
                  constant_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """`nodes` with each erf-based GELU, `x·½·(1 + erf(x/√2))` as PyTorch exports
    `nn.GELU()` before opset 20, replaced by one Gelu node.

    Matches Div(x, √2) or Mul(x, 1/√2), Erf, Add 1, then Mul by x and by ½ in either
    order (operands either way round); the intermediate values must have no other use.
    """
    constants: dict[str, np.ndarray] = {}
    for node in nodes:
        if node.op_type == "Constant" and len(node.attribute) == 1 \
                and node.attribute[0].name == "value":
            constants[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)

    def scalar(name: str) -> float | None:
        array = constants.get(name)
        array = constant_of(name) if array is None else array
        return float(array) if array is not None and array.size == 1 else None

    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def other(node: Any, name: str) -> str | None:
        """The other input of a binary node that has `name` as one input."""
        if len(node.input) != 2 or name not in node.input:
            return None
        return node.input[1] if node.input[0] == name else node.input[0]

    def only_use(name: str) -> Any:
        uses = consumers.get(name, [])
        return uses[0] if len(uses) == 1 else None

    def near(value: float | None, target: float) -> bool:
        return value is not None and abs(value - target) <= 1e-3 * abs(target)

    removed: set[int] = set()
    replacement: dict[int, Any] = {}
    for erf in nodes:
        if erf.op_type != "Erf":
            continue
        scaled = producer.get(erf.input[0])
        if scaled is None or only_use(scaled.output[0]) is not erf:
            continue
        if scaled.op_type == "Div" and near(scalar(scaled.input[1]), math.sqrt(2)):
            x = scaled.input[0]
        elif scaled.op_type == "Mul" and any(near(scalar(i), 1 / math.sqrt(2))
                                             for i in scaled.input):
            x = next(i for i in scaled.input if not near(scalar(i), 1 / math.sqrt(2)))
        else:
            continue
        add = only_use(erf.output[0])
        if add is None or add.op_type != "Add" or not near(scalar(other(add, erf.output[0])
                                                                 or ""), 1.0):
            continue
        first = only_use(add.output[0])
        if first is None or first.op_type != "Mul":
            continue
        partner = other(first, add.output[0]) or ""
        half = producer.get(partner)
        if partner == x or near(scalar(partner), 0.5):
            second = only_use(first.output[0])
            want = 0.5 if partner == x else None
            rest = other(second, first.output[0]) if second is not None else None
            if second is None or second.op_type != "Mul" or rest is None or not (
                    near(scalar(rest), 0.5) if want else rest == x):
                continue
            matched, last = [scaled, erf, add, first, second], second
        elif (half is not None and half.op_type == "Mul" and x in half.input
              and near(scalar(other(half, x) or ""), 0.5)
              and only_use(half.output[0]) is first):
            matched, last = [scaled, erf, add, half, first], first
        else:
            continue
        ids = [id(n) for n in matched]
        if removed.intersection(ids):
            continue
        removed.update(ids)
        replacement[id(last)] = onnx.helper.make_node(
            "Gelu", [x], [last.output[0]], name=erf.name or last.output[0])
    return [replacement.get(id(node), node) for node in nodes
            if id(node) not in removed or id(node) in replacement]
