"""Models exported with an `attention_mask` input (models/onnx/bert_mask.*, gpt2_mask.*:
`torch.onnx.export(model, (ids, attention_mask), ...)`, by models/export_torch.py): the
mask is a `dnn.input` read by `dnn.mask padding`; pase's first loss on one device equals
softmax cross-entropy over onnx.reference's evaluation of the file on the same ids, mask
(pase-run's draw: random lengths, the rest padding) and weights. tests/tools/
test_run_ops.py trains padding masks split over the batch and key dims against one
device; docs/pytorch.md gives the full-size search and `--check`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.dialect import dnn  # noqa: E402
from pase.frontend.onnx import load_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import with_configs, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

FOLDER = Path(__file__).resolve().parents[2] / "models" / "onnx"
FILES = ["bert_mask.dynamo", "bert_mask.torchscript", "gpt2_mask.dynamo"]
"""BERT from both exporters, GPT-2 (its padding mask And-ed with the causal mask) from the
default one (its TorchScript export differs in a Gather for the GatherND; checked the same
way at full size, docs/pytorch.md)."""


@pytest.mark.parametrize("name", FILES)
def test_the_padding_mask_is_an_input_and_computes_what_onnx_computes(name: str):
    path = str(FOLDER / f"{name}.onnx")
    imported = load_model(path)
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    ops = list(graph.body.block.ops)
    masks = [op for op in ops if isinstance(op, dnn.MaskOp) and op.kind_prop() == "padding"]
    assert len(masks) == 2  # one per attention layer
    ids, mask, labels = [op.output for op in ops if isinstance(op, dnn.InputOp)]
    assert all(op.inputs[1] is mask for op in masks)

    data = with_initial(make_data(graph, seed=0), imported.initial_values)
    keep = data[mask.name_hint or ""]
    assert 0 < keep.sum() < keep.size  # pase-run's draw pads some rows
    assert (keep[:, 0] == 1).all()  # each row keeps its first token,
    assert (np.diff(keep, axis=1) <= 0).all()  # then pads to the end
    model = onnx.load(path)
    inputs = [value.name for value in model.graph.input]
    reference = ReferenceEvaluator(model)

    def onnx_loss(attention_mask: np.ndarray) -> float:
        feeds = {inputs[0]: data[ids.name_hint or ""], inputs[1]: attention_mask}
        (logits,) = reference.run(None, feeds)
        return cross_entropy(logits, data[labels.name_hint or ""])

    expected = onnx_loss(keep)
    assert abs(onnx_loss(np.ones_like(keep)) - expected) > 1e-3  # the mask matters

    report = train(with_configs(imported.module, None), 1, initial=imported.initial_values)
    assert report.reference_losses[0] == pytest.approx(expected, rel=1e-5)
