"""`pase-scale` on every bundled model: a valid graph, shape rules recomputed, strategy kept.

The scaled IR of a small graph and the pass's errors are lit tests
(`tests/lit/passes/pase-scale.dnn`); these are the properties over all models."""

from __future__ import annotations

from functools import cache
from math import gcd
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.core.shapes import conv_output_size
from pase.dialect import dnn
from pase.frontend import parse_file
from pase.passes.scale import ScalePass, scale_module, scaled_size
from pase.passes.search import PaseSearchPass

MODELS = Path(__file__).resolve().parents[2] / "models"
MODEL_NAMES = sorted(path.stem for path in MODELS.glob("*.dnn"))
SCALES = (0.125, 0.0625)


@cache
def _parsed(model: str) -> ModuleOp:
    return parse_file(str(MODELS / f"{model}.dnn"))


def model(name: str) -> ModuleOp:
    return _parsed(name).clone()


def graph_of(module: ModuleOp) -> dnn.GraphOp:
    (graph,) = [op for op in module.walk() if isinstance(op, dnn.GraphOp)]
    return graph


Windowed = tuple[dnn.Conv2dOp | dnn.Pool2dOp, tuple[int, int]]


def windowed(module: ModuleOp) -> list[Windowed]:
    """Every conv and pool with its window (filter height and width, or pool window)."""
    layers: list[Windowed] = []
    for layer in graph_of(module).layers:
        if isinstance(layer, dnn.Conv2dOp):
            layers.append((layer, tuple(layer.input_shapes[1].sizes[2:])))
        elif isinstance(layer, dnn.Pool2dOp):
            layers.append((layer, tuple(layer.ints_prop("window"))))
    return layers


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_model_scales_to_a_valid_graph(name: str, scale: float) -> None:
    original = graph_of(model(name))
    scaled_module = model(name)
    ScalePass(factor=scale).apply(Context(), scaled_module)
    scaled_module.verify()
    scaled = graph_of(scaled_module)
    assert scaled.sym_name == original.sym_name
    assert list(scaled.layer_names().values()) == list(original.layer_names().values())
    assert scaled.dims.keys() == original.dims.keys()
    assert all(1 <= scaled.dims[d] <= size for d, size in original.dims.items())
    assert sum(scaled.dims.values()) < sum(original.dims.values())
    for layer in scaled.layers:
        assert list(layer.result_shape.sizes) == [scaled.dims[d] for d in
                                                  layer.result_shape.dims]


@pytest.mark.parametrize("name", ["alexnet", "inception_v3", "resnet101"])
def test_batch_128_scales_exactly(name: str) -> None:
    assert graph_of(model(name)).dims["b"] == 128
    assert graph_of(scale_module(model(name), 0.125)).dims["b"] == 16
    assert graph_of(scale_module(model(name), 0.0625)).dims["b"] == 8


def test_scaled_size() -> None:
    assert scaled_size(128, 0.125) == 16
    assert scaled_size(64, 0.0625) == 4
    assert scaled_size(12, 0.25) == 3  # whole: kept exactly, even if odd
    assert scaled_size(10, 0.125) == 2  # 1.25, rounded up to keep the factor 2
    assert scaled_size(8, 0.0625) == 8  # 0.5, rounded up to keep the factor 8
    assert scaled_size(50257, 0.125) == 6283  # odd: plain rounding up
    assert scaled_size(3, 0.125) == 1


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", ["alexnet", "inception_v3", "resnet101"])
def test_conv_and_pool_outputs_are_recomputed(name: str, scale: float) -> None:
    original = windowed(model(name))
    scaled = windowed(scale_module(model(name), scale))
    assert len(scaled) == len(original) > 0
    for (layer, window), (_, old_window) in zip(scaled, original, strict=True):
        x, y = layer.input_shapes[0], layer.result_shape
        padding = layer.ints_prop("padding")
        for axis in (0, 1):
            assert y.sizes[2 + axis] == conv_output_size(x.sizes[2 + axis], window[axis],
                                                         layer.stride.data, padding[axis])
        if isinstance(layer, dnn.Conv2dOp):
            assert window == old_window  # filters keep their height and width


def test_images_shrink_only_as_far_as_every_conv_stays_valid() -> None:
    # AlexNet's 11x11 stride-4 conv and three 3x3 stride-2 pools need more than 224/8 = 28
    # pixels: the image stops at 63, where the last pool's output is 1 pixel.
    scaled = graph_of(scale_module(model("alexnet"), 0.125))
    assert scaled.dims["h224"] == scaled.dims["w224"] == 63
    assert scaled.dims["h55"] == 15  # conv1's output, not 55/8 rounded
    assert scaled.dims["h6"] == 1


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", ["inception_v3", "resnet101"])
def test_global_pool_window_follows_its_input(name: str, scale: float) -> None:
    original = windowed(model(name))
    scaled = windowed(scale_module(model(name), scale))
    global_pools = 0
    for (layer, window), (old_layer, old_window) in zip(scaled, original, strict=True):
        if not isinstance(old_layer, dnn.Pool2dOp):
            continue
        old_input = tuple(old_layer.input_shapes[0].sizes[2:])
        if old_window != old_input or tuple(old_layer.result_shape.sizes[2:]) != (1, 1):
            continue
        global_pools += 1
        assert window == tuple(layer.input_shapes[0].sizes[2:])
        assert window != old_window
        assert tuple(layer.result_shape.sizes[2:]) == (1, 1)
    assert global_pools == 1


def test_lstm_weight_follows_its_input() -> None:
    scaled = graph_of(scale_module(model("rnnlm"), 0.125))
    (lstm,) = [layer for layer in scaled.layers if isinstance(layer, dnn.LstmOp)]
    x, w = lstm.input_shapes
    assert w.sizes[0] == graph_of(model("rnnlm")).dims[w.dims[0]]  # layers are not scaled
    assert w.sizes[1:] == (2 * x.sizes[2], 4 * x.sizes[2])


@pytest.mark.parametrize("name", ["alexnet", "transformer"])
def test_searched_strategy_is_kept_and_shrunk(name: str) -> None:
    module = model(name)
    PaseSearchPass(devices=8).apply(Context(), module)
    scaled = graph_of(scale_module(module, 0.0625))
    for old, new in zip(graph_of(module).layers, scaled.layers, strict=True):
        assert old.config is not None
        assert new.config is not None
        sizes = {dim.name: dim.size for dim in new.iteration_space().dims}
        expected = {dim: gcd(factor, sizes[dim]) for dim, factor in old.config.splits.items()}
        assert new.config.splits == {dim: f for dim, f in expected.items() if f > 1}
        for dim, factor in new.config.splits.items():
            assert sizes[dim] % factor == 0
