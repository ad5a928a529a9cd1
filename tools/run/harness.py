"""pase-run's one check procedure: a backend trains the sharded model, pase's runtime the
unsplit one on one device, on the same seeded data; then the errors, the divergence test
and, where f32 rounding alone may explain the errors, an f64 rerun of the reference.

    backend = RuntimeBackend(devices=4)           # or JaxBackend(devices=4)
    report, trained = check_training(module, backend, steps=2)
    report.passed(), report.words_mismatches()

A backend is anything with `train(module, data, steps, lr, float_type) -> Trained`: it
runs the model with its configurations (`pase.config` on every layer) and gives back the
losses, the last step's gradients and the updated parameters as whole tensors, and
what it measured of the words moved (`words`; the JAX backend has XLA's collectives).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from pase.dialect import dnn
from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.dialect.training_options import set_training, training_of
from pase.runtime.program import Program
from pase.tools.run.check import (
    TrainingReport,
    WordsRow,
    make_data,
    needs_rounding_reference,
    normwise_error,
    relative_error,
    tolerance,
)
from pase.tools.run.load import forward_graph, with_configs, with_initial


@dataclass
class Trained:
    """What one backend's run gives back: per step the loss, and the last step's gradients
    and updated parameters by param name, whole (assembled from the devices' blocks)."""

    losses: list[float]
    grads: dict[str, np.ndarray]
    params: dict[str, np.ndarray]
    words: list[WordsRow] = field(default_factory=list)
    """Per layer and edge, the words measured next to the cost model's prediction."""
    spans: list[list[tuple[int, float, float]]] = field(default_factory=list)
    """pase's runtime, recording: per device, when it ran each op of the first step."""
    program: Program | None = None
    """pase's runtime: the sharded program that ran."""


class Backend(Protocol):
    """Runs a model with its configurations: pase's runtime (`RuntimeBackend`) or the
    `-t jax` program (`JaxBackend`)."""

    @property
    def devices(self) -> int: ...

    def train(self, module: ModuleOp, data: dict[str, np.ndarray], steps: int, lr: float,
              float_type: str | None) -> Trained: ...


def element_of(graph: dnn.GraphOp, float_type: str | None = None) -> str:
    """The element type a run computes in: `float_type`, else the first param's, else f32."""
    return float_type or next((op.output.type.shape.element for op in graph.body.block.ops
                               if isinstance(op, dnn.ParamOp)), "f32")


def errors(measured: Trained, reference: Trained) -> list[float]:
    """`measured` against `reference`: per step the loss's relative error, then the
    normwise errors of the gradients and of the updated parameters."""
    losses = [relative_error(np.asarray(a), np.asarray(b))
              for a, b in zip(measured.losses, reference.losses, strict=True)]
    return [*losses, normwise_error(measured.grads, reference.grads),
            normwise_error(measured.params, reference.params)]


def with_step(module: ModuleOp, **options: str | int) -> ModuleOp:
    """A copy of `module` whose `pase.training` has `options` in place of its own."""
    copy = module.clone()
    graph = forward_graph(copy)
    set_training(graph, training_of(graph).overridden(**options))
    return copy


def diverged(run: Trained) -> bool:
    """Whether any loss, gradient or parameter of `run` is not finite (inf or nan)."""
    return not all(np.all(np.isfinite(array)) for array in [
        np.asarray(run.losses), *run.grads.values(), *run.params.values()])


def check_training(module: ModuleOp, backend: Backend, reference: Backend, steps: int = 1,
                   seed: int = 0, lr: float = LEARNING_RATE, float_type: str | None = None,
                   initial: dict[str, np.ndarray] | None = None
                   ) -> tuple[TrainingReport, Trained]:
    """Run `steps` SGD steps of `module` sharded on `backend` and unsplit on `reference`
    (pase's runtime on one device), on the same data seeded by `seed` (`initial` gives
    parameters their starting values by name, an ONNX model's initializers); the report
    and the sharded run. `float_type="f64"` runs an f32 model in double precision.

    Training that overflows (too large an `lr`) shows as losses and errors that are not
    finite, and `report.diverged`; it raises no numpy warnings. When the f32 errors exceed
    1e-4, the reference runs again in f64: its own error against that run is the noise
    that f32 rounding alone makes (`report.noise`), and the tolerance is twice it. When
    the errors exceed even that (two f32 runs on opposite sides of a ReLU's kink: the
    transformer on JAX), the backend runs in f64 too, and the check passes if the f64
    runs agree to 1e-9 (`report.exact_error`)."""
    graph = forward_graph(module)
    precision = training_of(graph).precision
    element = element_of(graph, float_type) if precision == "fp32" else precision
    data = with_initial(make_data(graph, seed, float_type), initial)
    # Recomputation and ZeRO move and keep values differently, not compute others: the
    # reference runs without them, so the check shows they change no number.
    unsplit = with_step(with_configs(module, None), recompute="none", zero=0)
    with np.errstate(all="ignore"):
        trained = backend.train(module, data, steps, lr, float_type)
        expected = reference.train(unsplit, data, steps, lr, float_type)
        found = errors(trained, expected)
        failed = diverged(expected)
        noise = 0.0
        exact_error = None
        if precision != "fp32" and not failed:  # bf16/fp16: their rounding's own size
            noise = max(errors(expected, reference.train(
                with_step(unsplit, precision="fp32"), data, steps, lr, float_type)))
        elif needs_rounding_reference(element, found, failed):
            exact_data = with_initial(make_data(graph, seed, "f64"), initial)
            exact = reference.train(unsplit, exact_data, steps, lr, "f64")
            noise = max(errors(expected, exact))
            if not max(found) <= tolerance(element, noise):
                exact_error = max(errors(backend.train(module, exact_data, steps, lr, "f64"),
                                         exact))
    *loss_errors, gradient_error, parameter_error = found
    report = TrainingReport(graph.sym_name.data, backend.devices, element, trained.losses,
                            expected.losses, loss_errors, gradient_error, parameter_error,
                            trained.words, noise, failed, exact_error, trained.spans,
                            trained.program)
    return report, trained
