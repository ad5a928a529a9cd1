"""The first loss a `-t jax` program of an ONNX model prints, recomputed by `onnx.reference`.

    pase-opt model.onnx -p 'pase-search{devices=8 one-mesh=true}' -t jax -o step.py
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python step.py --steps 1
    .venv/bin/python benchmarks/jax_reference.py step.py model.onnx

The program's own batch (its `seeded` ids and labels from `--seed 0`, drawn after the
params as the program draws them) goes through `onnx.reference`'s evaluation of the file
(the model's weights, the logits as its one output), then softmax cross-entropy in f64
against the labels: the number the program's first step should print, within f32
rounding (docs/jax.md, "Plans one mesh holds"). For a model with one id input and its
logits as output (the language models of models/export_torch.py and export_odd_vocabulary.py).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Any

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun


class GatherElements(OpRun):
    """numpy's `take_along_axis`: onnx 1.23's kernel fails on an axis longer than 64
    (bert-base's token-type buffer of 512)."""

    def _run(self, data: np.ndarray, indices: np.ndarray,  # type: ignore[override]
             axis: int | None = None) -> tuple[np.ndarray]:
        return (np.take_along_axis(data, indices, axis=axis or 0),)


def program_batch(program: str) -> dict[str, np.ndarray]:
    """The inputs the program seeds without `--data` (`--seed 0`)."""
    spec = importlib.util.spec_from_file_location("step", program)
    assert spec is not None
    assert spec.loader is not None
    step: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(step)
    rng = np.random.default_rng(0)
    step.seeded(step.PARAMS, rng, None)  # (drawn first, as the program draws them)
    return dict(step.seeded(step.INPUTS, rng, None))


def reference_loss(model_path: str, batch: dict[str, np.ndarray]) -> float:
    """Softmax cross-entropy (mean) of the file's logits on `batch`'s ids, in f64."""
    model = onnx.load(model_path)
    (name,) = [value.name for value in model.graph.input]
    ids = next(value for key, value in batch.items() if key != "labels")
    (logits,) = ReferenceEvaluator(model, new_ops=[GatherElements]).run(None, {name: ids})
    scores = np.asarray(logits, dtype=np.float64)
    top = scores.max(axis=-1, keepdims=True)
    logsumexp = top[..., 0] + np.log(np.exp(scores - top).sum(axis=-1))
    picked = np.take_along_axis(scores, batch["labels"][..., None], axis=-1)[..., 0]
    return float(np.mean(logsumexp - picked))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 1
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # (its jax.py)
    start = time.perf_counter()
    loss = reference_loss(argv[1], program_batch(argv[0]))
    print(f"onnx.reference loss {loss:.10g} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
