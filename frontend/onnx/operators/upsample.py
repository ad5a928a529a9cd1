"""The upsampling layers of U-Nets and decoders, where each output pixel comes from one
input pixel, in pase's layers:

- ConvTranspose with the stride equal to its window (nn.ConvTranspose2d(c, o, 2,
  stride=2), a U-Net's up-convolution; no padding, dilation or groups): the windows do
  not overlap, so it is an einsum `[b, c, h, w] x [c, o, kh, kw] -> [b, o, h, kh, w, kw]`
  merged to `[b, o, h·kh, w·kw]` (a `dnn.reshape`), plus its bias;
- Resize in `nearest` mode by whole scale factors along the image axes (nn.Upsample(
  scale_factor=2), F.interpolate(mode="nearest")), the coordinates `asymmetric` and
  rounded down as PyTorch exports them: each pixel repeated, a `dnn.broadcast` to `[b, c,
  h, sh, w, sw]` merged to `[b, c, h·sh, w·sw]`;
- Resize in `linear` mode, `half_pixel` coordinates by whole factors, `align_corners`
  coordinates to any size (operators/interpolate.py).

Anything else (overlapping windows, padding, other interpolation modes) is one error
naming the attribute.
"""

from __future__ import annotations

import math
from typing import Any

from pase.dialect import dnn
from pase.frontend.onnx.operators.shape import expand_to, reshape_to
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


@importer("ConvTranspose", attributes=("group", "strides", "pads", "dilations",
                                       "kernel_shape", "auto_pad", "output_padding",
                                       "output_shape"))
def conv_transpose(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    w = graph.tensor(node.input[1], hints=("c", "o", "kh", "kw"), keep=(0, 1, 2, 3))
    if len(x.axes) != 4 or len(w.axes) != 4 or None in x.axes[:2]:
        raise graph.error("only 2-D transposed convolutions (rank-4 NCHW tensors) are "
                          "supported")
    window = [graph.dims.size(a) if a is not None else 1 for a in w.axes[2:]]
    check_nonoverlapping(graph, node, window)
    name = node.output[0]
    channels = graph.real_axis(x, 1)
    if not graph.same(channels, graph.real_axis(w, 0)):
        w = graph.rename(w, 0, graph.dims.find(channels), f"{name}_filter")
    b, h, width = (graph.real_axis(x, p) for p in (0, 2, 3))
    o, kh, kw = (graph.real_axis(w, p) for p in (1, 2, 3))
    has_bias = len(node.input) > 2 and node.input[2]
    pieces = graph.build(dnn.EinsumOp, [graph.ordered(x, f"{name}_input"), w.value],
                         f"{name}_windows", [graph.dims.find(d)
                                             for d in (b, o, h, kh, width, kw)])
    sizes = [graph.dims.size(d) for d in (b, o)] + [
        graph.dims.size(h) * window[0], graph.dims.size(width) * window[1]]
    output = reshape_to(graph, Value((b, o, h, kh, width, kw), pieces), sizes,
                        f"{name}_merged" if has_bias else name)
    if not has_bias:
        return [output]
    bias = graph.tensor(node.input[2])
    bias = Value((*bias.axes, None, None), bias.ssa)
    return [graph.elementwise(dnn.AddOp, output, bias, name)]


def check_nonoverlapping(graph: GraphState, node: Any, window: list[int]) -> None:
    """Strides equal to the window; no padding, dilation, groups or output padding."""
    strides = list(graph.attribute(node, "strides", [1, 1]))
    if strides != window:
        raise graph.error(f"strides={strides} with a {window[0]}x{window[1]} window is not "
                          "supported (only strides equal to the window: windows that do "
                          "not overlap)")
    for attribute, neutral in (("pads", [0, 0, 0, 0]), ("dilations", [1, 1]),
                               ("output_padding", [0, 0])):
        value = list(graph.attribute(node, attribute, neutral))
        if value != neutral:
            raise graph.error(f"{attribute}={value} is not supported (only {neutral})")
    if int(graph.attribute(node, "group", 1)) != 1:
        raise graph.error(f"group={graph.attribute(node, 'group')} is not supported (only 1)")
    auto_pad = graph.attribute(node, "auto_pad", b"NOTSET")
    if auto_pad not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        raise graph.error(f"auto_pad={auto_pad!r} is not supported")


@importer("Resize", attributes=("mode", "coordinate_transformation_mode", "nearest_mode",
                                "antialias", "axes", "cubic_coeff_a", "exclude_outside",
                                "extrapolation_value", "keep_aspect_ratio_policy"))
def resize(graph: GraphState, node: Any) -> list[Value]:
    x = graph.tensor(node.input[0])
    if len(x.axes) != 4 or None in x.axes:
        raise graph.error("only the resizing of rank-4 NCHW tensors is supported")
    mode = text(graph.attribute(node, "mode", b"nearest"))
    coordinates = text(graph.attribute(node, "coordinate_transformation_mode", b"half_pixel"))
    rounding = text(graph.attribute(node, "nearest_mode", b"round_prefer_floor"))
    linear = mode == "linear" and coordinates in ("half_pixel", "pytorch_half_pixel")
    aligned = mode == "linear" and coordinates == "align_corners"
    if (mode, coordinates, rounding) != ("nearest", "asymmetric", "floor") and not (
            linear or aligned):
        raise graph.error(f"mode={mode}, coordinate_transformation_mode={coordinates}, "
                          f"nearest_mode={rounding} is not supported (only nearest, "
                          "asymmetric, floor: nn.Upsample's default mode; linear, "
                          "half_pixel: mode='bilinear'; and linear, align_corners: "
                          "mode='bilinear', align_corners=True)")
    if int(graph.attribute(node, "antialias", 0)):
        raise graph.error("antialias=1 is not supported")
    sizes = [graph.dims.size(a) for a in x.axes if a is not None]
    if aligned:
        from pase.frontend.onnx.operators.interpolate import aligned_corners

        return [aligned_corners(graph, x, output_sizes(graph, node, sizes), node.output[0])]
    factors = scale_factors(graph, node, sizes)
    if factors[:2] != [1, 1] or any(f < 1 for f in factors):
        raise graph.error(f"scales {factors} are not supported (only whole factors >= 1 of "
                          "the image axes)")
    name = node.output[0]
    if linear:
        from pase.frontend.onnx.operators.interpolate import bilinear

        return [bilinear(graph, x, factors[2:], name)]
    b, c, h, w = x.axes
    repeated = expand_to(graph, Value((b, c, h, None, w, None), x.ssa),
                         [*sizes[:3], factors[2], sizes[3], factors[3]], f"{name}_repeated")
    return [reshape_to(graph, repeated, [s * f for s, f in zip(sizes, factors, strict=True)],
                       name)]


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def output_sizes(graph: GraphState, node: Any, sizes: list[int]) -> list[int]:
    """Resize's output sizes: `sizes` (input 3), or each input size times its scale
    (input 2) rounded down, as ONNX defines them; the batch and channels kept."""
    if len(node.input) > 3 and node.input[3]:
        wanted = [int(s) for s in graph.constant(node.input[3], "the sizes")]
    else:
        scales = [float(s) for s in graph.constant(node.input[2], "the scales")]
        wanted = [math.floor(size * scale) for size, scale in
                  zip(sizes, scales, strict=False)] if len(scales) == 4 else []
    if len(wanted) != 4 or wanted[:2] != sizes[:2] or min(wanted) < 1:
        raise graph.error(f"output sizes {wanted} are not supported (only the image axes "
                          f"of the input {sizes} resized, each to at least 1)")
    return wanted


def scale_factors(graph: GraphState, node: Any, sizes: list[int]) -> list[int]:
    """Resize's factor per axis, from `scales` (input 2) or `sizes` (input 3); an error
    unless each is a whole number."""
    if len(node.input) > 3 and node.input[3]:
        wanted = [int(s) for s in graph.constant(node.input[3], "the sizes")]
        ratios = [out / size for out, size in zip(wanted, sizes, strict=False)]
    else:
        ratios = [float(s) for s in graph.constant(node.input[2], "the scales")]
    if len(ratios) != 4 or not all(math.isclose(r, round(r)) for r in ratios):
        raise graph.error(f"scales {ratios} are not supported (only whole factors >= 1 of "
                          "the image axes)")
    return [round(r) for r in ratios]
