"""The models of models/onnx_models.py (an MLP, a CNN with batch norm, a transformer
block, built with onnx.helper as PyTorch exports them): imported, searched, trained with
`--check`, and compared with their hand-written `.dnn` twins."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402

from pase.dialect import dnn  # noqa: E402
from pase.frontend import parse_text  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.passes.strategy import build_problem, solve  # noqa: E402
from pase.tools.run.check import check_problems, make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["mlp", "cnn", "transformer"]


def _load_models() -> dict:
    spec = importlib.util.spec_from_file_location("onnx_models",
                                                  ROOT / "models" / "onnx_models.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


MODELS = _load_models()


def graph_of(module) -> dnn.GraphOp:
    (graph,) = module.ops
    assert isinstance(graph, dnn.GraphOp)
    return graph


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("devices", [4, 8])
def test_the_import_has_the_optimum_of_the_hand_written_twin(name: str, devices: int):
    build, twin = MODELS[name]
    imported = graph_of(import_model(build().SerializeToString(), f"{name}.onnx").module)
    written = graph_of(parse_text(twin, f"{name}.dnn"))
    assert len(imported.layers) == len(written.layers)
    costs = [solve(build_problem(graph, devices)).cost for graph in (imported, written)]
    assert costs[0] == pytest.approx(costs[1], rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_the_import_trains_sharded_like_on_one_device(name: str, tmp_path: Path):
    build, _ = MODELS[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(build(), path)
    from pase.tools.run.load import load_model

    module, initial = load_model(str(path))
    report = train(strategy_and_scale(module, 4), 4, initial=initial)
    assert check_problems(report) == []


def test_the_imported_mlp_computes_what_onnx_computes():
    """The loss pase's 1-device run computes from the initializers equals softmax
    cross-entropy over ONNX's own evaluation of the model (onnx.reference)."""
    build, _ = MODELS["mlp"]
    model = build(batch=8)
    imported = import_model(model.SerializeToString(), "mlp.onnx")
    graph = graph_of(imported.module)
    data = with_initial(make_data(graph, seed=3), imported.initial_values)
    (logits,) = ReferenceEvaluator(model).run(None, {"input": data["input"]})
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected = -log_probs[np.arange(8), data["labels"]].mean()
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    assert report.reference_losses[0] == pytest.approx(float(expected), rel=1e-5)
