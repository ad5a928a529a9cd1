"""Explicit zero padding as the window's own: a `Pad` of zeros on height and width whose
every reader is a `Conv` or an `AveragePool` (`nn.ZeroPad2d`, `F.pad(x, (1, 1, 1, 1))`
before a convolution, as torchvision, timm and hand-written models export it) is folded
into the readers' `pads`, so that pase's window pads instead:

    Pad(x, pads=[0, 0, 1, 1, 0, 0, 1, 1]) -> Conv(pads=[0, 0, 0, 0])
    becomes Conv(x, pads=[1, 1, 1, 1])

which is exact: a convolution's and a counting average's padding are zeros too (the
AveragePool gets `count_include_pad=1`, as its window then counts the padded zeros). A
Pad of width 0 everywhere (Swin pads its windows by `(−size) mod window`, 0 when the
window divides the size) is an Identity, whatever its mode. Any other Pad (reflect or
edge padding, a MaxPool reader, whose padding is −∞, not 0, or sums of pads pase's
window cannot take: pase pads both ends of an axis equally) is a layer of its own,
`dnn.pad` (`operators.conv.pad`).

    nodes = fold_zero_pads(onnx, nodes, constant_of)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

WINDOW_READERS = ("Conv", "AveragePool")
"""The ops whose own padding is zeros, so that a zero Pad before them folds exactly."""


def pad_widths(node: Any, rank: int,
               constant_of: Callable[[str], np.ndarray | None]) -> np.ndarray | None:
    """The Pad's widths as a `[rank, 2]` array (begin, end per axis), or None when they
    are not constant (or do not fit `rank`).

    ONNX lists the begins of every padded axis, then the ends; opset 18's `axes` input
    names the padded axes (negative from the end):

    >>> from onnx import helper
    >>> constants = {"p": np.array([1, 2, 3, 4]), "a": np.array([-1, 1])}
    >>> pad_widths(helper.make_node("Pad", ["x", "p", "", "a"], ["y"]), 3,
    ...            constants.get).tolist()
    [[0, 0], [2, 4], [1, 3]]
    """
    widths = constant_of(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if widths is None:
        return None
    widths = widths.astype(np.int64).reshape(-1)
    axes = list(range(rank))
    if len(node.input) > 3 and node.input[3]:
        given = constant_of(node.input[3])
        if given is None:
            return None
        axes = [int(a) % rank for a in given.reshape(-1)]
    if widths.size != 2 * len(axes):
        return None
    full = np.zeros((rank, 2), dtype=np.int64)
    for index, axis in enumerate(axes):
        full[axis] = (widths[index], widths[index + len(axes)])
    return full


def pad_mode(onnx: Any, node: Any) -> str:
    for attribute in node.attribute:
        if attribute.name == "mode":
            mode = onnx.helper.get_attribute_value(attribute)
            return mode.decode() if isinstance(mode, bytes) else str(mode)
    return "constant"


def pad_fill(node: Any, constant_of: Callable[[str], np.ndarray | None]) -> float | None:
    """The constant the Pad writes (0 without the input), or None if not a constant."""
    if len(node.input) < 3 or not node.input[2]:
        return 0.0
    fill = constant_of(node.input[2])
    return None if fill is None or fill.size != 1 else float(fill.reshape(()))


def window_rank(node: Any, constant_of: Callable[[str], np.ndarray | None]) -> int | None:
    """The rank of a Conv's or pool's input (2 + its window's), if known."""
    for attribute in node.attribute:
        if attribute.name == "kernel_shape":
            return 2 + len(attribute.ints)
    if node.op_type == "Conv" and len(node.input) > 1:
        filter_value = constant_of(node.input[1])
        return None if filter_value is None else filter_value.ndim
    return None


def folded_pads(onnx: Any, reader: Any, widths: np.ndarray) -> list[int] | None:
    """The reader's pads plus the Pad's spatial widths, if pase's window can take them
    (the same at both ends of each axis) and the reader pads with zeros."""
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in reader.attribute}
    if attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return None
    spatial = len(widths) - 2
    own = list(attributes.get("pads", [0] * 2 * spatial))
    if reader.op_type == "AveragePool" and any(own) and \
            not attributes.get("count_include_pad", 0):
        return None  # its own padding is not counted, the Pad's zeros would be
    pads = [own[i] + int(widths[2 + i % spatial, i // spatial]) for i in range(2 * spatial)]
    return pads if pads[:spatial] == pads[spatial:] else None


def with_pads(onnx: Any, reader: Any, data: str, pads: list[int]) -> Any:
    """A copy of `reader` reading `data`, with `pads` (and counting them, if a pool)."""
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in reader.attribute}
    attributes["pads"] = pads
    if reader.op_type == "AveragePool":
        attributes["count_include_pad"] = 1
    return onnx.helper.make_node(reader.op_type, [data, *reader.input[1:]],
                                 list(reader.output), name=reader.name, **attributes)


def fold_zero_pads(onnx: Any, nodes: list[Any],
                   constant_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """`nodes` with each Pad of width 0 as an Identity, and each zero Pad of height and
    width before Conv or AveragePool readers folded into their pads (the Pad gone)."""
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    replacement: dict[int, Any] = {}
    removed: set[int] = set()
    for pad in nodes:
        if pad.op_type != "Pad" or pad.domain not in ("", "ai.onnx"):
            continue
        given = constant_of(pad.input[1]) if len(pad.input) > 1 and pad.input[1] else None
        if given is not None and not given.any():
            replacement[id(pad)] = onnx.helper.make_node(
                "Identity", [pad.input[0]], [pad.output[0]], name=pad.name)
            continue
        readers = consumers.get(pad.output[0], [])
        folded = fold_into_readers(onnx, pad, readers, constant_of)
        if folded is None or any(id(r) in replacement for r in readers):
            continue
        removed.add(id(pad))
        for reader, pads in zip(readers, folded, strict=True):
            replacement[id(reader)] = with_pads(onnx, reader, pad.input[0], pads)
    return [replacement.get(id(node), node) for node in nodes if id(node) not in removed]


def fold_into_readers(onnx: Any, pad: Any, readers: list[Any],
                      constant_of: Callable[[str], np.ndarray | None]
                      ) -> list[list[int]] | None:
    """Each reader's pads with the Pad's folded in, or None where that is not exact or
    pase's window cannot take them."""
    if pad_mode(onnx, pad) != "constant" or pad_fill(pad, constant_of) != 0.0 or \
            not readers or any(r.op_type not in WINDOW_READERS for r in readers):
        return None
    ranks = {window_rank(r, constant_of) for r in readers}
    if len(ranks) != 1 or None in ranks:
        return None
    widths = pad_widths(pad, ranks.pop() or 0, constant_of)
    if widths is None or widths[:2].any() or (widths < 0).any():
        return None
    folded = [folded_pads(onnx, r, widths) for r in readers]
    return None if any(p is None for p in folded) else [p for p in folded if p is not None]
