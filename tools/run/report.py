"""What pase-run prints: the losses and errors of a run, the words it moved, the pipeline
it trained, and (with `--engine jax`) XLA's collectives.

    print_report(report, seconds)        # the table of steps, errors and words
    print_pipeline(module)               # the stages of a pipelined run
    print_collectives(jax_report)        # XLA's collectives next to pase's prediction
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from pase.core.shapes import ELEMENTS
from pase.dialect.pase import pipeline_of, stage_of
from pase.tools.run.check import F64_TOLERANCE, RING_SLACK, TrainingReport, divergence
from pase.tools.run.jax import KINDS, Collective, JaxReport
from pase.tools.run.load import forward_graph


def print_report(report: TrainingReport, seconds: float, engine: str = "") -> None:
    """The losses, errors and (pase's runtime) words of a run; `engine` names the sharded
    side when it is not pase's runtime."""
    print(f"@{report.graph} on {report.devices} {engine + ' ' if engine else ''}devices "
          f"({report.element}), {seconds:.1f} s")
    sharded = f"loss ({engine or 'sharded'})"
    print(f"step  {sharded:<19} loss (1 device)     rel. error")
    for step, (loss, reference, error) in enumerate(zip(
            report.losses, report.reference_losses, report.loss_errors, strict=True), 1):
        print(f"{step:<5} {loss:<19.10g} {reference:<19.10g} {error:.2e}")
    print(f"max rel. error: gradients {report.gradient_error:.2e}, "
          f"updated parameters {report.parameter_error:.2e} "
          f"(tolerance {report.tolerance():.1e})")
    if report.diverged:
        print(divergence(report))
    if report.noise and report.element in ("bf16", "fp16"):
        print(f"{report.element} rounding alone moves the 1-device result by "
              f"{report.noise:.2e} (its error against an fp32 run), so the tolerance is "
              "twice that (at least the format's unit roundoff)")
    elif report.noise:
        print(f"f32 rounding alone moves the 1-device result by {report.noise:.2e} "
              "(its error against an f64 run), so the tolerance is twice that")
    if report.exact_error is not None:
        verdict = ("so the f32 difference is rounding, e.g. a ReLU input within rounding "
                   "of zero taken on opposite sides" if report.exact_agrees()
                   else f"above {F64_TOLERANCE:.0e}: the runs differ beyond rounding")
        print(f"the f32 errors exceed that; in f64 the runs differ by "
              f"{report.exact_error:.2e}, {verdict}")
    if engine:
        return
    rows = [row for row in report.words if row.measured or row.predicted]
    if not rows:
        print("words moved per step: none, no layer or edge communicates")
        return
    print(f"words moved per step (most any device received), {len(rows)} layers and edges "
          "that communicate:")
    width = max([len(row.name) for row in rows] + [10])
    print(f"  {'layer/edge':<{width}}  {'measured':>12}  {'predicted':>12}")
    for row in rows:
        print(f"  {row.name:<{width}}  {row.measured:>12.0f}  {row.predicted:>12.1f}")
    total = sum(row.measured for row in rows), sum(row.predicted for row in rows)
    print(f"  {'total':<{width}}  {total[0]:>12.0f}  {total[1]:>12.1f}")
    if any(row.rings and row.measured != row.predicted for row in rows):
        print(f"  (a ring all-reduce of W words on g devices moves 2(g-1)W/g words per device "
              f"on average;\n  its chunks are whole elements, so a device may receive up to "
              f"{RING_SLACK} words more per all-reduce)")


def print_unsplit(module: ModuleOp) -> None:
    """Say so when the plan splits no layer: the whole step runs on one device, nothing is
    communicated, and the check compares a one-device run with another."""
    graph = forward_graph(module)
    pipeline = pipeline_of(graph)
    if pipeline is not None and pipeline.stages.data > 1 or any(
            factor > 1 for layer in graph.layers if layer.config is not None
            for factor in layer.config.splits.values()):
        return
    strategy = graph.strategy
    why = ("at these sizes the cost model finds that every split costs more in "
           "communication than it saves in compute")
    if strategy is not None and strategy.data_parallel.data > strategy.total.data:
        why += (f" (data parallelism {strategy.data_parallel.data:.4g} s per step, one "
                f"device {strategy.total.data:.4g} s, at full size on "
                f"{strategy.machine.data}: the 'predicted speedup' of pase-search's report "
                "is over data parallelism, not over one device)")
    print(f"the plan splits no layer: {why}; the whole step runs on device 0 and the "
          f"other devices idle, so the check compares a one-device run with another")


def print_pipeline(module: ModuleOp) -> None:
    """The plan a pipelined run trained: its stages, their devices and layers."""
    graph = forward_graph(module)
    pipeline = pipeline_of(graph)
    if pipeline is None:
        return
    names = graph.layer_names()
    stages_count, micro = pipeline.stages.data, pipeline.microbatches.data
    print(f"pipeline: {stages_count} stage{'s' if stages_count > 1 else ''} x {micro} "
          f"micro-batch{'es' if micro > 1 else ''}, {pipeline.schedule.data}; modelled at "
          f"full size on {pipeline.machine.data}: step {pipeline.step.data:.4g} s, bubble "
          f"{pipeline.bubble.data:.3f}")
    stages: dict[int, list[str]] = {}
    groups: dict[int, range] = {}
    for layer in graph.layers:
        stage = stage_of(layer)
        assert stage is not None  # pase-partition-stages put one on every layer
        stages.setdefault(stage.index.data, []).append(names[layer])
        groups[stage.index.data] = stage.device_ids
    for index, layers in sorted(stages.items()):
        devices = groups[index]
        span = layers[0] if len(layers) == 1 else f"{layers[0]} .. {layers[-1]}"
        print(f"  stage {index}: devices {devices.start}-{devices.stop - 1}, "
              f"{len(layers)} layer{'s' if len(layers) > 1 else ''} ({span})")


def print_collectives(report: JaxReport) -> None:
    """XLA's collectives per kind next to the words pase's cost model predicts: those of
    the HLO XLA's SPMD partitioner leaves where the run has it (`Compiled.partitioned`),
    else the compiled HLO's (a run on one device), and the header says which. Under
    bf16/fp16, where a step's collectives may hold f32 as well as 2-byte tensors, what a
    device receives is in bytes, each collective's by its HLO element type, beside pase's
    words in bytes."""
    element = report.training.element
    width = 2 if element in ("bf16", "fp16") else ELEMENTS[element].bytes
    in_bytes = width == 2
    scale = 1 if in_bytes else width
    received = "received B" if in_bytes else "words"
    compiled = report.compiled
    print(f"XLA compile {compiled.compile_seconds:.2f} s, step "
          f"{compiled.step_seconds * 1e3:.1f} ms")
    print(("collectives of the step as XLA's SPMD partitioner writes it, in the program's "
           "types (" if compiled.partitioned else "collectives of the compiled step, where "
           "XLA's CPU backend has widened bf16/fp16 collectives to f32 (") + (
        "received B: bytes received per device, ring formulas, each collective's by its "
        "HLO element type" if in_bytes else "words: received per device, ring formulas")
        + "):")
    print(f"  {'kind':<20} {'count':>5}  {'group sizes':<12} {'bytes':>12} {received:>12}")
    total = 0.0
    for kind in KINDS:
        ops = [c for c in compiled.collectives if c.kind == kind]
        if not ops:
            continue
        amount = sum(c.words() * _element_bytes_of(c) / scale for c in ops)
        total += amount
        groups = ",".join(str(g) for g in sorted({c.group for c in ops}))
        print(f"  {kind:<20} {len(ops):>5}  {groups:<12} {sum(c.bytes for c in ops):>12} "
              f"{amount:>12.0f}")
    print(f"  {'total (XLA)':<20} {'':>5}  {'':<12} {'':>12} {total:>12.0f}")
    layer, edge, gather = (compiled.predicted.get(kind, 0.0)
                           for kind in ("layer", "edge", "gather"))
    again = f", {gather * width / scale:.0f} ZeRO 3's gathers before the backward" \
        if gather else ""
    if in_bytes:
        print(f"  pase predicts {(layer + edge + gather) * width:.0f} bytes "
              f"({layer + edge + gather:.0f} words of {width} bytes): {layer * width:.0f} "
              f"within layers (all-reduce, all-gather){again}, {edge * width:.0f} between "
              "layers (redistribution)")
        return
    print(f"  pase predicts {layer + edge + gather:.0f} words: {layer:.0f} within layers "
          f"(all-reduce, all-gather){again}, {edge:.0f} between layers (redistribution)")


def _element_bytes_of(collective: Collective) -> float:
    return collective.bytes / collective.elements if collective.elements else 0.0
