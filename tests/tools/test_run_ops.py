"""The ops PyTorch exports need (issue 31), sharded equals one device: small graphs in
`op_graphs/`, each layer with a configuration that splits the dims the op may split,
trained for two steps in f64 against the one-device run, moving the words the cost model
charges (as `pase-run --check`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.frontend import parse_file
from pase.passes.scale import scale_module
from pase.passes.search import PaseSearchPass
from pase.tools.run.load import forward_graph, with_configs
from pase.tools.run.runtime import train

GRAPHS = Path(__file__).resolve().parent / "op_graphs"

# graph -> (devices, {layer: config}); layers left out run unsplit.
SPLITS: dict[str, list[tuple[int, dict[str, dict[str, int]]]]] = {
    "conv_groups": [
        # depthwise over batch and channels; 1x1 over both channel dims; grouped with one
        # output per group (x's channels split with co) and with two (x whole).
        (4, {"y": {"b": 2, "c": 2}, "z": {"g": 2, "c": 2}, "u": {"k": 4}, "u2": {"q": 4}}),
        (8, {"y": {"c": 8}, "z": {"b": 2, "c": 4}, "u": {"b": 2, "k": 4},
             "u2": {"b": 4, "q": 2}}),
    ],
    "slice": [(4, {"qkv": {"b": 2, "s": 2}, "q": {"b": 2, "s": 2}, "k": {"b": 4},
                    "v": {"s": 4}, "pos": {"e": 2}, "qp": {"e": 4}})],
    "mask": [(4, {"sc": {"s": 2, "t": 2}, "m": {"s": 2, "t": 2}, "mp": {"b": 2, "t": 2},
                  "p": {"b": 2, "s": 2}}),
             (4, {"m": {"t": 4}, "mp": {"s": 2, "t": 2}, "p": {"s": 4}})],
    "arithmetic": [(4, {"h": {"b": 2, "h": 2}, "r": {"h": 4}, "q": {"h": 4}, "q2": {"b": 4},
                         "n": {"b": 2, "h": 2}, "p": {"h": 2}, "p3": {"b": 4}})],
    "rmsnorm": [(4, {"h": {"d2": 4}, "n": {"d2": 2, "b": 2}, "n2": {"s": 2, "d2": 2}}),
                (4, {"n": {"b": 2, "s": 2}, "n2": {"b": 4}})],
    "class_token": [(4, {"y": {"b": 2, "e": 2}, "pe": {"e": 4}, "cls": {"b": 2, "e": 2},
                         "seq": {"b": 2, "e": 2}, "a": {"b": 4}, "first": {"e": 4}})],
    "clip": [(4, {"h": {"b": 2, "h": 2}, "a": {"h": 4}, "n": {"b": 2, "h": 2}})],
    "pad": [(4, {"zh": {"b": 4}, "zw": {"b": 2, "c": 2}, "y": {"b": 2, "o": 2},
                 "e": {"b": 2, "o": 2}, "r": {"h3": 2, "o": 2}})],
    "gru": [(4, {"y": {"b": 2, "n": 2}, "y2": {"n": 4}, "z": {"b": 2, "s": 2}})],
    "lstm": [(4, {"y": {"b": 2, "n": 2}, "y2": {"n": 4}, "z": {"b": 2, "s": 2}})],
}


def _configs(module: ModuleOp, given: dict[str, dict[str, int]]) -> ModuleOp:
    names = forward_graph(module).layer_names().values()
    return with_configs(module, {name: given.get(name, {}) for name in names})


CASES = [(graph, index) for graph, runs in SPLITS.items() for index in range(len(runs))]


@pytest.mark.parametrize(("graph", "index"), CASES, ids=[f"{g}-{i}" for g, i in CASES])
def test_split_layers_train_as_on_one_device(graph: str, index: int) -> None:
    devices, given = SPLITS[graph][index]
    module = _configs(parse_file(str(GRAPHS / f"{graph}.dnn")), given)
    report = train(module, devices, steps=2, float_type="f64")
    assert not report.diverged
    assert report.passed(), (report.max_error(), report.tolerance())
    assert report.words_mismatches() == []
    assert [row.name for row in report.words if row.kind == "unexpected"] == []
    assert max(row.measured for row in report.words) > 0


@pytest.mark.parametrize("graph", sorted(SPLITS))
def test_searched_and_scaled_train_as_on_one_device(graph: str) -> None:
    module = parse_file(str(GRAPHS / f"{graph}.dnn"))
    PaseSearchPass(devices=4).apply(Context(), module)
    report = train(scale_module(module, 0.5), 4, steps=1, float_type="f64")
    assert report.passed(), (report.max_error(), report.tolerance())
    assert report.words_mismatches() == []
