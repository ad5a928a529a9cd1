"""`pase-run --engine jax`: the `-t jax` program on P XLA devices, against pase's reference.

    report = train_jax(strategy_and_scale(load_model("models/mlp.dnn"), 8, 0.125), 8)
    print_collectives(report)

The JAX program runs in a child process (`XLA_FLAGS=--xla_force_host_platform_device_count=P`
gives a CPU machine P devices) on pase's seeded data, passed to it as an `.npz` in a
temporary folder that is always removed; it returns its losses, last gradients, updated
parameters and the compiled HLO. The reference is pase's runtime on one device
(`run_pipeline.lower` of the unsplit graph), so JAX's autodiff checks pase's gradient
rules. `collectives(hlo)` reads XLA's collectives from the compiled HLO text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from pase.core.shapes import ELEMENTS
from pase.passes.strategy import build_problem
from pase.targets.jax import jax_program
from pase.tools.errors import ToolError
from pase.tools.run_check import (
    TrainingReport,
    make_data,
    needs_rounding_reference,
    normwise_error,
    predicted_words,
    relative_error,
)
from pase.tools.run_pipeline import (
    execute,
    forward_graph,
    layer_configs,
    lower,
    with_configs,
    with_initial,
)

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
"""XLA's collective instructions, as the HLO text names them."""

INSTALL = "pip install 'pase[jax]'"


@dataclass(frozen=True)
class Collective:
    """One collective of the compiled step: its kind, group size, result elements."""

    kind: str
    group: int
    elements: int
    bytes: int
    groups: str

    def words(self) -> float:
        """The words one device receives, by the ring formulas of pase's cost model."""
        g, n = self.group, self.elements
        if g <= 1:
            return 0.0
        return {"all-reduce": 2 * (g - 1) / g * n, "all-gather": (g - 1) / g * n,
                "reduce-scatter": (g - 1) * n, "all-to-all": (g - 1) / g * n,
                "collective-permute": float(n)}[self.kind]


@dataclass
class JaxReport:
    """A `TrainingReport` of the JAX run, with what XLA compiled and pase predicted."""

    training: TrainingReport
    collectives: list[Collective] = field(default_factory=list)
    predicted: dict[str, float] = field(default_factory=dict)
    compile_seconds: float = 0.0
    step_seconds: float = 0.0


HLO_LINE = re.compile(r"=\s*(?P<type>\(.*?\)|\S+)\s+(?P<kind>" + "|".join(KINDS)
                      + r")(?:-start)?\(")
SHAPE = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")


def collectives(hlo: str) -> list[Collective]:
    """The collectives of a compiled HLO module (async pairs counted once, at -start).

        >>> collectives("%a = f32[8,16]{1,0} all-reduce(%d), replica_groups={{0,4},{1,5}}")
        [Collective(kind='all-reduce', group=2, elements=128, bytes=512, groups='{{0,4},{1,5}}')]
    """
    found = []
    partitions = re.search(r"num_partitions=(\d+)", hlo)
    everyone = int(partitions.group(1)) if partitions else 1
    for line in hlo.splitlines():
        match = HLO_LINE.search(line)
        if not match or "-done(" in line:
            continue
        shapes = SHAPE.findall(match["type"])
        elements = [int(np.prod([int(d) for d in dims.split(",") if d])) for _, dims in shapes]
        sizes = [_element_bytes(dtype) for dtype, _ in shapes]
        groups = _groups(line)
        found.append(Collective(match["kind"], _group_size(groups, line, everyone), sum(elements),
                                sum(e * s for e, s in zip(elements, sizes, strict=True)),
                                groups))
    return found


def _element_bytes(dtype: str) -> int:
    bits = re.search(r"\d+", dtype)
    return int(bits.group()) // 8 if bits else 1


def _groups(line: str) -> str:
    match = re.search(r"replica_groups=(\{\{[^=]*?\}\}|\{\}|mesh\[[^\]]*\]\s*\{[^}]*\})", line)
    if match:
        return match.group(1)
    pairs = re.search(r"source_target_pairs=(\{[^=]*\}\})", line)
    return pairs.group(1) if pairs else ""


def _group_size(groups: str, line: str, everyone: int) -> int:
    """The devices in one group: an explicit list, the named axes of a mesh, or (no
    groups, `{}`) all `everyone` devices of the program."""
    if groups.startswith("{{"):
        return len(groups[2:].split("}")[0].split(","))
    if groups.startswith("mesh["):
        sizes = dict(re.findall(r"'([^']+)'=(\d+)", groups))
        chosen = groups[groups.index("]") + 1:]
        size = 1
        for name, sub in re.findall(r"'([^']+)'(:\(\d+\)\d+)?", chosen):
            size *= int(sub.rsplit(")", 1)[1]) if sub else int(sizes[name])
        return size
    if "source_target_pairs" in line:
        return 2 if re.search(r"\{(\d+),(?!\1\})\d+\}", groups) else 1
    return everyone


def train_jax(module: ModuleOp, devices: int, steps: int = 1, seed: int = 0,
              lr: float = 0.01, float_type: str | None = None,
              initial: dict[str, np.ndarray] | None = None, timeout: float = 600.0,
              dump_mlir: str | None = None) -> JaxReport:
    """The JAX program of `module`'s strategy on `devices` XLA devices against pase's
    1-device run, on the same data; `dump_mlir` receives the lowered StableHLO text."""
    graph = forward_graph(module)
    configs = layer_configs(graph)
    element = float_type or next((op.output.type.shape.element for op in graph.body.block.ops
                                  if op.name == "dnn.param"), "f32")
    source = jax_program(with_configs(module, configs), devices)
    data = with_initial(make_data(graph, seed, float_type), initial)
    with np.errstate(all="ignore"):
        reference = lower(with_configs(module, None), 1, lr)
        expected, _ = execute(reference, data, steps, "threads", timeout, float_type)
    saved = run_program(source, data, devices, steps, lr, element == "f64", timeout)
    names = list(expected[0].params)
    reference_grads = {n: expected[0].grads[n][1] for n in names}
    reference_params = {n: expected[0].params[n][1] for n in names}
    grads = {n: saved[f"grad/{n}"] for n in names}
    params = {n: saved[f"param/{n}"] for n in names}
    losses = [float(v) for v in saved["losses"]]
    errors = [relative_error(np.asarray(a), np.asarray(b))
              for a, b in zip(losses, expected[0].losses, strict=True)]
    errors += [normwise_error(grads, reference_grads), normwise_error(params, reference_params)]
    diverged = not all(np.all(np.isfinite(a)) for a in [
        np.asarray(expected[0].losses), *reference_grads.values(), *reference_params.values()])
    noise = 0.0
    if needs_rounding_reference(element, errors, diverged):
        exact_data = with_initial(make_data(graph, seed, "f64"), initial)
        with np.errstate(all="ignore"):
            exact, _ = execute(reference, exact_data, steps, "threads", timeout, "f64")
        noise = max(normwise_error(reference_grads, {n: exact[0].grads[n][1] for n in names}),
                    normwise_error(reference_params, {n: exact[0].params[n][1]
                                                      for n in names}))
    *loss_errors, gradient_error, parameter_error = errors
    training = TrainingReport(graph.sym_name.data, devices, element, losses,
                              expected[0].losses, loss_errors, gradient_error,
                              parameter_error, [], noise, diverged)
    if dump_mlir:
        from pase.core.files import write_atomically

        write_atomically(dump_mlir, str(saved["stablehlo"]))
    problem = build_problem(graph, devices, pinned=configs)
    predicted: dict[str, float] = {}
    for (kind, _), words in predicted_words(problem, configs).items():
        predicted[kind] = predicted.get(kind, 0.0) + words
    return JaxReport(training, collectives(str(saved["hlo"])), predicted,
                     float(saved["compile_seconds"]), float(saved["step_seconds"]))


def run_program(source: str, data: dict[str, np.ndarray], devices: int, steps: int,
                lr: float, f64: bool, timeout: float) -> dict[str, np.ndarray]:
    """Run the JAX program `source` on `devices` CPU devices (or the machine's
    accelerators) in a child process; its saved results by name."""
    with tempfile.TemporaryDirectory(prefix="pase-jax-") as folder:
        program, inputs, outputs = (Path(folder) / n for n in ("step.py", "data.npz",
                                                                "result.npz"))
        program.write_text(source, encoding="utf-8")
        np.savez(inputs, **data)  # type: ignore[arg-type]
        command = [sys.executable, str(program), "--steps", str(steps), "--lr", repr(lr),
                   "--data", str(inputs), "--save", str(outputs), *(["--f64"] * f64)]
        try:
            finished = subprocess.run(command, env=child_environment(devices),
                                      capture_output=True, text=True, timeout=timeout,
                                      check=False)
        except subprocess.TimeoutExpired:
            raise ToolError(f"the JAX program did not finish within {timeout:g} s "
                            "(--timeout)") from None
        if finished.returncode != 0:
            raise ToolError(child_error(finished.stderr))
        with np.load(outputs) as saved:
            return dict(saved)


def child_environment(devices: int) -> dict[str, str]:
    """The environment with `devices` host devices for XLA (other XLA flags kept)."""
    env = dict(os.environ)
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", ""))
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def child_error(stderr: str) -> str:
    """The JAX program's one `error:` line (it words its own errors), else its last line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error: "):
            return "the JAX program failed: " + line[len("error: "):]
    return "the JAX program failed: " + (lines[-1] if lines else "no output")


def print_collectives(report: JaxReport) -> None:
    """XLA's collectives per kind next to the words pase's cost model predicts."""
    width = ELEMENTS[report.training.element].bytes
    print(f"XLA compile {report.compile_seconds:.2f} s, step {report.step_seconds * 1e3:.1f} ms")
    print("collectives of the compiled step (words: received per device, ring formulas):")
    print(f"  {'kind':<20} {'count':>5}  {'group sizes':<12} {'bytes':>12} {'words':>12}")
    total = 0.0
    for kind in KINDS:
        ops = [c for c in report.collectives if c.kind == kind]
        if not ops:
            continue
        words = sum(c.words() * _element_bytes_of(c) / width for c in ops)
        total += words
        groups = ",".join(str(g) for g in sorted({c.group for c in ops}))
        print(f"  {kind:<20} {len(ops):>5}  {groups:<12} {sum(c.bytes for c in ops):>12} "
              f"{words:>12.0f}")
    print(f"  {'total (XLA)':<20} {'':>5}  {'':<12} {'':>12} {total:>12.0f}")
    layer, edge = report.predicted.get("layer", 0.0), report.predicted.get("edge", 0.0)
    print(f"  pase predicts {layer + edge:.0f} words: {layer:.0f} within layers "
          f"(all-reduce, all-gather), {edge:.0f} between layers (redistribution)")


def _element_bytes_of(collective: Collective) -> float:
    return collective.bytes / collective.elements if collective.elements else 0.0
