"""Bilinear upsampling by whole factors (`F.interpolate(x, scale_factor=f,
mode="bilinear")`, `nn.Upsample(mode="bilinear")`: ONNX's Resize in `linear` mode with
`half_pixel` coordinates) in pase's layers, one image axis at a time.

Along an axis of n entries upsampled f times, output `f·k + r` reads the input at
`k + o_r` with `o_r = (r + 1/2) / f - 1/2`: between entries `k + ⌊o_r⌋` and the next,
weighted `1 - w_r` and `w_r = o_r - ⌊o_r⌋`, the same for every k. Coordinates outside
the axis are clamped to its ends, which is the input with its edge entry repeated once
at each end. So each phase r is a weighted sum of two slices of that padded input
(`dnn.pad edge`, two `dnn.slice`, elementwise products and a sum), and the f phases
are joined along a new axis of f (`dnn.concat` along the axis, then a `dnn.reshape` of
`[f, n]` into `[n·f]`, phases innermost). For f = 2 the weights are 1/4 and 3/4:

    >>> [phase_weights(r, 2) for r in range(2)]
    [(-1, 0.25, 0.75), (0, 0.75, 0.25)]

The weights are scalar params starting at those values, as every other constant factor
of an imported model (`GraphState.tensor`): the first step computes what Resize does.

`align_corners=True` (Resize's `align_corners` coordinates, to any output size) has no
fixed phases: output i of m reads the input at `i·(n − 1)/(m − 1)`, so each axis is a
product with a constant `[n, m]` matrix of those weights (two per column, summing to 1:
`aligned_weights`), an einsum whose matrix is a `dnn.input` the importer fills (as
Swin's masks: not trained, so every step computes what Resize does).

    >>> aligned_weights(3, 5).tolist()   # 3 to 5: outputs at 0, 0.5, 1, 1.5, 2
    [[1.0, 0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.5, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from pase.dialect import dnn
from pase.frontend.onnx.operators.activations import factor
from pase.frontend.onnx.operators.conv import pad_axis
from pase.frontend.onnx.operators.more import constant_input, slice_axis
from pase.frontend.onnx.operators.shape import join, reshape_to
from pase.frontend.onnx.values import GraphState, Value


def phase_weights(r: int, f: int) -> tuple[int, float, float]:
    """Phase r of f: the offset ⌊o_r⌋ of its first input entry, and the two weights."""
    o = (r + 0.5) / f - 0.5
    low = math.floor(o)
    return low, 1.0 - (o - low), o - low


def bilinear(graph: GraphState, x: Value, factors: list[int], name: str) -> Value:
    """`x` [b, c, h, w] upsampled `factors` times along h and w."""
    scaled = [(2 + i, f) for i, f in enumerate(factors) if f > 1]
    for count, (position, f) in enumerate(scaled):
        last = count == len(scaled) - 1
        x = linear_axis(graph, x, position, f, name if last else f"{name}_{count}")
    return x


def linear_axis(graph: GraphState, x: Value, position: int, f: int, name: str) -> Value:
    """`x` upsampled f times along the axis at `position`."""
    n = graph.dims.size(graph.real_axis(x, position))
    padded = pad_axis(graph, x, position, 1, 1, "edge", f"{name}_edges")
    phases = []
    for r in range(f):
        low, first, second = phase_weights(r, f)
        at = f"{name}_phase{r}"
        start = slice_axis(graph, padded, position, 1 + low, n, f"{at}_from")
        phase = graph.elementwise(dnn.MulOp, start, factor(graph, x, first, f"{at}_w0"),
                                  f"{at}_near")
        if second:
            end = slice_axis(graph, padded, position, 2 + low, n, f"{at}_to")
            far = graph.elementwise(dnn.MulOp, end, factor(graph, x, second, f"{at}_w1"),
                                    f"{at}_far")
            phase = graph.elementwise(dnn.AddOp, phase, far, at)
        phases.append(phase)
    stacked = join(graph, phases, position, f"{name}_phases")
    sizes = [graph.dims.size(a) for a in stacked.axes if a is not None]
    split = reshape_to(graph, stacked, [*sizes[:position], f, n, *sizes[position + 1:]],
                       f"{name}_split")
    inner = list(split.axes)
    inner[position], inner[position + 1] = inner[position + 1], inner[position]
    return reshape_to(graph, Value(tuple(inner), split.ssa), sizes, name)


def aligned_weights(n: int, m: int) -> np.ndarray:
    """The `[n, m]` float32 matrix of align_corners interpolation from n entries to m:
    column i weights the two inputs around `i·(n − 1)/(m − 1)` (one of m = 1: input 0)."""
    weights = np.zeros((n, m), np.float64)
    for i in range(m):
        source = i * (n - 1) / (m - 1) if m > 1 else 0.0
        low = min(math.floor(source), n - 1)
        weights[low, i] += 1.0 - (source - low)
        if source > low:
            weights[low + 1, i] += source - low
    return weights.astype(np.float32)


def aligned_corners(graph: GraphState, x: Value, sizes: list[int], name: str) -> Value:
    """`x` [b, c, h, w] resized to `sizes` (NCHW) with align_corners coordinates: per
    image axis whose size changes, an einsum with its constant `aligned_weights`."""
    changed = [p for p in (2, 3) if sizes[p] != graph.dims.size(graph.real_axis(x, p))]
    for count, position in enumerate(changed):
        at = name if count == len(changed) - 1 else f"{name}_{'hw'[position - 2]}"
        axis = graph.real_axis(x, position)
        key = f"{at}_weights"
        graph.values[key] = Value(())
        hint = graph.dims.hints[graph.dims.find(axis)]
        weights = constant_input(graph, key, aligned_weights(graph.dims.size(axis),
                                                             sizes[position]), (hint, hint))
        source, target = weights.axes
        if source is None or target is None:
            raise graph.error(f"resizing an axis of {graph.dims.size(axis)} to "
                              f"{sizes[position]} with align_corners is not supported (only "
                              "axes of 2 or more entries, to 2 or more)")
        graph.same(source, axis)
        axes = tuple(target if p == position else a for p, a in enumerate(x.axes))
        y = graph.build(dnn.EinsumOp, [graph.ordered(x, f"{at}_input"), weights.value], at,
                        [graph.dims.find(a) for a in axes if a is not None])
        x = Value(axes, y)
    return x
