"""What `pase-run --check` compares: seeded data, normwise errors, words measured vs predicted.

    data = make_data(graph, seed=0)
    report = TrainingReport(...)          # built by `harness.check_training`
    report.passed(), report.words_mismatches(), check_problems(report)

Errors are normwise: the largest difference over all gradients (or parameters) relative
to the largest value among them. The tolerance is 1e-9 in f64; in f32 it is 1e-4, or
twice the f32 rounding error of the 1-device run itself when a deep model loses more
than that to f32 alone (`tolerance`, `needs_rounding_reference`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pase.dialect import dnn
from pase.dialect.dnn.seeding import ignored_labels, padding_mask, seeds
from pase.passes.strategy import Words
from pase.runtime.executor import DTYPES, UNIT_ROUNDOFF, DeviceResult
from pase.runtime.program import Program

F32_TOLERANCE = 1e-4
F64_TOLERANCE = 1e-9
LOW_PRECISION_ROUNDOFF = UNIT_ROUNDOFF
"""bf16 2^-8, fp16 2^-11: the least tolerance of a mixed-precision check."""

RING_SLACK = 2
"""Words a ring all-reduce may move above the cost model's 2(g-1)/g·W to one device. The
runtime cuts W words into g chunks of whole elements (`numpy.array_split`: the first W mod g
one longer) and device i receives 2W - |c(i-1)| - |c(i)|, which is at most 2W - 2·floor(W/g):
less than 2 words above the average the ring formula gives. Every other transfer (a
redistribution, a send between stages) moves exactly the predicted words."""

DIVERGED = ("the training diverged: the 1-device run's losses, gradients or parameters "
            "are not finite (inf or nan); try a smaller --lr")

NOT_FINITE_AT_START = ("the 1-device run's first loss, before any update, is not finite (inf "
                       "or nan): the model computes it from its inputs and initial values, "
                       "so no --lr helps; look for an inf or nan constant in the model")


def divergence(report: TrainingReport) -> str:
    """Why the 1-device run is not finite: `DIVERGED` (the training overflowed), or
    `NOT_FINITE_AT_START` when even its first loss is (a NaN scale in the model)."""
    first = report.reference_losses[0] if report.reference_losses else 0.0
    return DIVERGED if np.isfinite(first) else NOT_FINITE_AT_START


@dataclass
class WordsRow:
    """Words one layer or edge moved (the most any device received) and the prediction."""

    name: str
    kind: str
    measured: float
    predicted: float
    rings: int = 0
    """The ring all-reduces under this tag in one step: each may move up to `RING_SLACK`
    words more than the prediction to the device that receives the most."""

    def matches(self) -> bool:
        """Whether the measured words are the prediction: equal, or above it by less than
        `RING_SLACK` words per ring all-reduce (the runtime's chunks are whole elements).

            >>> WordsRow("fc", "layer", 2.0, 1.5, rings=1).matches()
            True
            >>> WordsRow("fc", "layer", 8.0, 6.0, rings=1).matches()
            False
            >>> WordsRow("fc->l", "edge", 17.0, 16.0).matches()
            False
        """
        rounding = 1e-9 * max(1.0, abs(self.predicted))
        above = self.measured - self.predicted
        return -rounding <= above and (above < RING_SLACK * self.rings if self.rings
                                       else above <= rounding)


def tolerance(element: str, noise: float = 0.0) -> float:
    """The largest relative error a sharded run may have against the 1-device run.

        >>> tolerance("f64"), tolerance("f32"), tolerance("f32", noise=3e-4)
        (1e-09, 0.0001, 0.0006)
        >>> tolerance("bf16", noise=0.01), tolerance("bf16", noise=1e-4)
        (0.02, 0.00390625)

    `noise` is the 1-device f32 run's own error against an f64 run: f32 rounding alone,
    which deep networks at small scale can push past 1e-4. Under mixed precision
    (`element` "bf16" or "fp16") it is the 1-device low-precision run's error against
    the same run in fp32, the effect of rounding the tensors to 8 (11) bits at all: the
    sharded run rounds the same values, differing only where its fp32 sums in another
    order land on the other side of a rounding boundary, so it lies within `noise` of
    the fp32 run too, and within 2 `noise` of the 1-device run (triangle inequality);
    never less than one rounding, the format's unit roundoff (2^-8, 2^-11)."""
    if element in LOW_PRECISION_ROUNDOFF:
        return max(LOW_PRECISION_ROUNDOFF[element], 2 * noise)
    return F64_TOLERANCE if element == "f64" else max(F32_TOLERANCE, 2 * noise)


def needs_rounding_reference(element: str, errors: list[float], diverged: bool) -> bool:
    """Whether to measure the f32 run's own rounding (an extra f64 run): only when the
    errors exceed the f32 tolerance of 1e-4 (a NaN error counts as exceeding it).

        >>> needs_rounding_reference("f32", [2e-4, 1e-6], False)
        True
        >>> needs_rounding_reference("f32", [5e-5], False), needs_rounding_reference(
        ...     "f64", [1.0], False), needs_rounding_reference("f32", [1.0], True)
        (False, False, False)
    """
    return element == "f32" and not diverged and not float(np.max(errors)) <= F32_TOLERANCE


@dataclass
class TrainingReport:
    graph: str
    devices: int
    element: str
    losses: list[float]
    reference_losses: list[float]
    loss_errors: list[float]
    gradient_error: float
    parameter_error: float
    words: list[WordsRow] = field(default_factory=list)
    noise: float = 0.0
    """The f32 reference's own normwise error against an f64 run (measured only when
    the f32 errors exceed 1e-4): f32 rounding alone, without any sharding."""
    diverged: bool = False
    """The 1-device run's losses, gradients or parameters are not finite (inf or nan):
    the training itself overflowed, e.g. with too large a learning rate."""
    exact_error: float | None = None
    """The sharded run in f64 against the reference in f64, measured only when the f32
    errors exceed even twice `noise`: at f64 no value sits within rounding of a kink
    (a ReLU input at zero, where two f32 runs may take opposite sides and the gradient
    jumps), so agreement to 1e-9 there shows the f32 difference is rounding."""
    spans: list[list[tuple[int, float, float]]] = field(default_factory=list)
    """Per device, when it ran each op of the sharded program in the first step
    (`DeviceResult.spans`; only when `train(record=True)`)."""
    program: Program | None = None
    """The sharded program that ran (with `spans`)."""

    def max_error(self) -> float:
        """The largest relative error (NaN, if any result was not finite)."""
        errors = [*self.loss_errors, self.gradient_error, self.parameter_error]
        return float("nan") if any(np.isnan(errors)) else max(errors)

    def passed(self) -> bool:
        """The errors within the tolerance, or beyond it only in f32 while the f64 runs
        agree (`exact_error`)."""
        return bool(self.max_error() <= self.tolerance()) or self.exact_agrees()

    def exact_agrees(self) -> bool:
        """Whether the f64 runs were compared and agree to `F64_TOLERANCE`."""
        return self.exact_error is not None and self.exact_error <= F64_TOLERANCE

    def tolerance(self) -> float:
        """`tolerance(self.element, self.noise)`."""
        return tolerance(self.element, self.noise)

    def words_mismatches(self) -> list[WordsRow]:
        """Rows whose measured words are not the prediction (`WordsRow.matches`)."""
        return [row for row in self.words if not row.matches()]


def check_problems(report: TrainingReport) -> list[str]:
    """Why `pase-run --check` fails, one sentence per problem (empty: the check passes)."""
    problems = []
    if report.diverged:
        problems.append(divergence(report))
    elif not report.passed():
        problems.append(f"relative error {report.max_error():.2e} exceeds "
                        f"{report.tolerance():.0e}")
    for row in report.words_mismatches():
        allowed = (f" (at most {RING_SLACK * row.rings} more for its {row.rings} ring "
                   f"all-reduce{'s' if row.rings > 1 else ''})" if row.rings else "")
        problems.append(f"{row.name}: measured {row.measured:.0f} words, predicted "
                        f"{row.predicted:.1f}{allowed}")
    return problems


def make_data(graph: dnn.GraphOp, seed: int,
              float_type: str | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs and parameters, named as in the graph, by `pase.dialect.dnn.seeding`
    (the `-t jax` program's rule too): weights fan-in scaled, ids and labels within their
    table or class count (a quarter of a loss's labels ignored where it has an
    ignore_index), padding masks of random lengths."""
    rng = np.random.default_rng(seed)
    data: dict[str, np.ndarray] = {}
    for value, rule in seeds(graph).items():
        shape = value.type.shape  # type: ignore[attr-defined]
        name = value.name_hint or "v"
        if rule.kind == "lengths":
            data[name] = padding_mask(rng, shape.sizes).astype(DTYPES[shape.element])
            continue
        if rule.kind in ("ints", "ignored"):
            labels = rng.integers(0, int(rule.scale), size=shape.sizes)
            if rule.kind == "ignored":
                labels = ignored_labels(rng, labels, rule.ignore)
            data[name] = labels.astype(DTYPES[shape.element])
            continue
        values = (1.0 if rule.kind == "normal+1" else 0.0) + rule.scale * rng.standard_normal(
            shape.sizes)
        data[name] = values.astype(DTYPES[float_type or shape.element])
    return data


def assemble(results: list[DeviceResult], which: str, data: dict[str, np.ndarray]
             ) -> dict[str, np.ndarray]:
    """The whole tensors (`which` = "params" or "grads") from the devices' blocks."""
    arrays: dict[str, np.ndarray] = {}
    for result in results:
        for name, (block, array) in getattr(result, which).items():
            target = arrays.setdefault(name, np.zeros_like(data[name]))
            target[tuple(slice(lo, hi) for lo, hi in block)] = array
    return arrays


def relative_error(measured: np.ndarray, reference: np.ndarray) -> float:
    """max |measured − reference| relative to max |reference| (the difference itself
    when the reference is all zeros)."""
    return normwise_error({"": measured}, {"": reference})


def normwise_error(measured: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> float:
    """max |measured − reference| over all the tensors, relative to max |reference| over
    all of them: the normwise (infinity-norm) relative error of the whole gradient or
    parameter vector. Per tensor, a gradient that is tiny next to the others would
    measure f32 rounding noise rather than the sharding."""
    if not reference:
        return 0.0
    # np.max, not max(): a NaN in any tensor must make the error NaN, whatever the order.
    difference = float(np.max([np.max(np.abs(measured[n].astype(np.float64) - reference[n]))
                               if reference[n].size else 0.0 for n in reference]))
    scale = float(np.max([np.max(np.abs(reference[n])) if reference[n].size else 0.0
                          for n in reference]))
    return difference / scale if scale > 0 else difference


def words_rows(predicted: Words, counters: dict[int, dict[str, dict[str, int]]], steps: int,
               rings: Mapping[str, int] | None = None) -> list[WordsRow]:
    """Per layer and edge, the most words any device received per step next to the
    prediction, with its tag's ring all-reduces per step (`rings`); a tag the cost model
    does not predict is an "unexpected" row."""
    rings = rings or {}
    measured: dict[str, float] = {}
    for tags in counters.values():
        for tag, count in tags.items():
            measured[tag] = max(measured.get(tag, 0.0), float(count["received"]))
    rows = [WordsRow(name, kind, measured.pop(name, 0.0) / steps, words, rings.get(name, 0))
            for (kind, name), words in predicted.items()]
    return rows + [WordsRow(tag, "unexpected", words / steps, 0.0, rings.get(tag, 0))
                   for tag, words in sorted(measured.items())]
