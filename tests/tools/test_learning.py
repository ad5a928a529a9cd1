"""Programs that learn: with pase's seeding (`pase.dialect.dnn.seeding`) and the default
learning rate, a model's loss on its fixed seeded batch falls to half within 30 SGD steps.

AlexNet is the model that did not learn when conv filters were seeded with another
fan-in (their loss stayed at ln of the class count); scaled by 0.0625 it trains in about
3 seconds on one device of pase's runtime.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.frontend import parse_file
from pase.passes.scale import scale_module
from pase.tools.run.check import make_data
from pase.tools.run.load import forward_graph, with_configs
from pase.tools.run.runtime import RuntimeBackend

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize(("model", "factor"), [("mlp", 0.25), ("alexnet", 0.0625)])
def test_loss_halves_within_30_steps(model: str, factor: float) -> None:
    module = with_configs(scale_module(parse_file(str(MODELS / f"{model}.dnn")), factor), None)
    data = make_data(forward_graph(module), seed=0)
    losses = RuntimeBackend(1).train(module, data, 30, LEARNING_RATE, None).losses
    assert min(losses[1:]) <= losses[0] / 2, losses
