"""Rewrites of the ONNX node list before import: exporters' spellings of one layer
(the erf-based GELU) become the one node the frontend maps to a `dnn` op.

    nodes = rewrite_patterns(onnx, list(model.graph.node), constant_of)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def rewrite_patterns(onnx: Any, nodes: list[Any],
                     constant_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """`nodes` with every pattern below replaced by the one node it spells."""
    return drop_nan_guards(onnx, fuse_erf_gelu(onnx, nodes, constant_of))


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
