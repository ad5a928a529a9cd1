"""`pase-run --engine jax --stages S --microbatches M`: what XLA compiled of a pipelined
`-t jax` program, per stage, next to the plan's prediction.

A pipelined program (`pase.targets.jax_pipeline`) saves the HLO of every program it
compiled: per stage its forward and backward (each run M times a step), its update and
the zeroing of its gradient sums (once), and per crossing tensor its send and return
(M times each). `pipeline_compiled` counts their collectives per step; the crossings'
collective-permutes are the transfers between stages, set beside the words the plan
charges each boundary (`predicted_pipeline_words`: each consumer device receives its
whole block forward, each producer device its whole gradient block back); under ZeRO 3 a
stage's layers add the gathers the plain step leaves out (`jax.zero_gathers`: per
micro-batch the forward's and, where the backward reads the param, the backward's).

    compiled = pipeline_compiled(saved, graph, devices=8)
    print_pipeline_collectives(compiled, width=4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from pase.dialect import dnn
from pase.dialect.pase import pipeline_of, stage_of
from pase.formats.machine_toml import load_machine
from pase.passes.strategy import microbatch_layers, read_graph
from pase.tools.run.jax import KINDS, Collective, Compiled, collectives, zero_gathers
from pase.tools.run.load import layer_configs
from pase.tools.run.runtime import predictions

PER_MICROBATCH = frozenset({"forward", "backward", "send", "return"})
"""The programs of a pipelined program a step runs once per micro-batch (the others,
`update` and `zeros`, once)."""


@dataclass(frozen=True)
class StageCollectives:
    """One stage's collectives per step (each with how often a step runs it) and the
    words the plan predicts within its layers and on its edges."""

    index: int
    devices: range
    collectives: list[tuple[Collective, int]]
    predicted_layer: float
    predicted_edge: float


@dataclass(frozen=True)
class Boundary:
    """A tensor crossing from stage `source` to `target`: the words a device receives
    per step forward and back, measured (XLA's collective-permutes) and predicted."""

    value: str
    source: int
    target: int
    forward: float
    backward: float
    predicted_forward: float
    predicted_backward: float
    forward_bytes: float = 0.0
    """The bytes a device receives forward, each collective-permute's by its HLO element
    type (under bf16 the crossings XLA compiles may be f32: 4 bytes a word)."""
    backward_bytes: float = 0.0


@dataclass(frozen=True)
class PipelineCompiled(Compiled):
    """`Compiled` of a pipelined program: the per-stage and per-boundary tables, the
    plan's modelled step, its machine and its schedule."""

    stages: list[StageCollectives] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    modelled_step: float = 0.0
    machine: str = ""
    schedule: str = ""
    microbatches: int = 1


def _per_step(program: str, microbatches: int) -> int:
    return microbatches if program in PER_MICROBATCH else 1


def pipeline_compiled(saved: dict[str, np.ndarray], graph: dnn.GraphOp,
                      devices: int) -> PipelineCompiled:
    """What the pipelined program saved (`hlo/stage{s}/{program}`,
    `hlo/crossing{k}/{send,return}`), per stage and boundary, with the plan's words."""
    pipeline = pipeline_of(graph)
    assert pipeline is not None
    micro, count = pipeline.microbatches.data, pipeline.stages.data
    names = graph.layer_names()
    stage_of_layer = {names[layer]: attr.index.data for layer in names
                      if (attr := stage_of(layer)) is not None}
    predicted = predictions(graph, devices)
    data = read_graph(graph)
    assert data.batch is not None
    gathers = zero_gathers(graph, microbatch_layers(data.layers, data.batch, micro),
                           layer_configs(graph), load_machine(pipeline.machine.data), micro)
    per_stage = devices // count
    stages = []
    for index in range(count):
        found = [(c, _per_step(program, micro)) for key, hlo in saved.items()
                 if (match := re.fullmatch(rf"hlo/stage{index}/(\w+)", key))
                 for program in [match.group(1)] for c in collectives(str(hlo))]
        layer = sum(w for (kind, tag), w in predicted.items()
                    if kind == "layer" and stage_of_layer.get(tag) == index)
        layer += sum(w for tag, w in gathers.items() if stage_of_layer.get(tag) == index)
        edge = sum(w for (kind, tag), w in predicted.items() if kind == "edge"
                   and _edge_stages(tag, stage_of_layer) == (index, index))
        stages.append(StageCollectives(index, range(index * per_stage,
                                                    (index + 1) * per_stage),
                                       found, layer, edge))
    boundaries = []
    sends = [tuple(row) for row in saved.get("sends", np.zeros((0, 3)))]
    for number, (value, source, target) in enumerate(sends):
        crossing = {direction: collectives(str(saved[key])) for direction in ("send", "return")
                    if (key := f"hlo/crossing{number}/{direction}") in saved}
        measured = {direction: sum(c.words() for c in found) * micro
                    for direction, found in crossing.items()}
        measured_bytes = {direction: sum(c.words() * _bytes_of(c) for c in found) * micro
                          for direction, found in crossing.items()}
        forward = backward = 0.0
        for (kind, tag), words in predicted.items():
            if kind == "edge" and _edge_stages(tag, stage_of_layer) == (int(source), int(target)) \
                    and tag.split("->")[0] == value:
                forward += words
            elif kind == "edge" and "<-" in tag and tag.split("<-")[0] == value \
                    and _edge_stages(tag, stage_of_layer) == (int(source), int(target)):
                backward += words
        boundaries.append(Boundary(str(value), int(source), int(target),
                                   measured.get("send", 0.0), measured.get("return", 0.0),
                                   forward, backward, measured_bytes.get("send", 0.0),
                                   measured_bytes.get("return", 0.0)))
    every = [c for stage in stages for c, _ in stage.collectives]
    return PipelineCompiled(every, {}, float(saved["compile_seconds"]),
                            float(saved["step_seconds"]), "", False, stages, boundaries,
                            float(saved["modelled_step"]), pipeline.machine.data,
                            pipeline.schedule.data, micro)


def _edge_stages(tag: str, stage_of_layer: dict[str, int]) -> tuple[int, int] | None:
    """(producer's stage, consumer's stage) of an edge tag "u->v" or "u<-v" (" %x")."""
    arrow = "->" if "->" in tag else "<-"
    upstream, downstream = tag.split(" ", 1)[0].split(arrow, 1)
    if upstream not in stage_of_layer or downstream not in stage_of_layer:
        return None
    return stage_of_layer[upstream], stage_of_layer[downstream]


def print_pipeline_collectives(compiled: PipelineCompiled, width: int) -> None:
    """Per stage XLA's collectives per step next to the plan's words, then the
    transfers between stages, then the measured step beside the modelled one. `width`:
    the bytes of the run's word (the plan's). Under bf16/fp16 (2), where XLA's
    collectives hold f32 (the master weights' all-reduce under ZeRO) as well as 2-byte
    tensors, the table counts bytes, each collective by its HLO element type, beside
    the plan's words in bytes; else words of `width` bytes."""
    in_bytes = width == 2
    unit = "bytes" if in_bytes else "words"
    scale = 1 if in_bytes else width
    print(f"XLA compile {compiled.compile_seconds:.2f} s, step "
          f"{compiled.step_seconds * 1e3:.1f} ms measured; the plan's modelled step "
          f"{compiled.modelled_step * 1e3:.3g} ms (full size, {compiled.machine}, "
          f"{compiled.schedule}, {compiled.microbatches} micro-batches)")
    print(f"collectives per stage and step of the compiled programs (forward and backward x "
          f"micro-batches; {unit}: received per device, ring formulas" + (
              ", each collective's by its HLO element type, which XLA's CPU backend has "
              "widened from bf16/fp16 to f32" if in_bytes else "") + "):")
    print(f"  {'stage':<8} {'kind':<20} {'count':>5}  {'group sizes':<12} {unit:>12}")
    for stage in compiled.stages:
        total = 0.0
        where = f"{stage.index} ({stage.devices.start}-{stage.devices.stop - 1})"
        for kind in KINDS:
            ops = [(c, runs) for c, runs in stage.collectives if c.kind == kind]
            if not ops:
                continue
            amount = sum(runs * c.words() * _bytes_of(c) / scale for c, runs in ops)
            total += amount
            groups = ",".join(str(g) for g in sorted({c.group for c, _ in ops}))
            print(f"  {where:<8} {kind:<20} {sum(r for _, r in ops):>5}  {groups:<12} "
                  f"{amount:>12.0f}")
        predicted = stage.predicted_layer + stage.predicted_edge
        words = f" ({predicted:.0f} words of {width} bytes)" if in_bytes else ""
        print(f"  {where:<8} {'total (XLA)':<20} {'':>5}  {'':<12} {total:>12.0f}   "
              f"pase predicts {predicted * width / scale:.0f}{words}: "
              f"{stage.predicted_layer * width / scale:.0f} within layers, "
              f"{stage.predicted_edge * width / scale:.0f} between layers")
    print(f"transfers between stages per step (collective-permute; {unit} received per "
          "device):")
    for b in compiled.boundaries:
        forward, backward = ((b.forward_bytes, b.backward_bytes) if in_bytes
                             else (b.forward, b.backward))
        print(f"  {b.source} -> {b.target}  %{b.value:<12} forward {forward:>10.0f} "
              f"(pase {b.predicted_forward * width / scale:.0f})   gradient back "
              f"{backward:>10.0f} (pase {b.predicted_backward * width / scale:.0f})")


def _bytes_of(collective: Collective) -> float:
    return collective.bytes / collective.elements if collective.elements else 0.0
