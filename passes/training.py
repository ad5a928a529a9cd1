"""The training step in the IR: what `pase-search` and `pase-partition-stages` record.

When an option of the training step is not the default, the searched `dnn.graph`
carries `pase.training`, a dictionary of the four options as strings (COMMON.md's
contract with `pase-autodiff`, the runtime and `-t jax`, which read it):

    pase.training = {optimizer = "adam", precision = "bf16", recompute = "full", zero = "1"}

With `recompute=auto` or `zero=auto` the search decides per layer, and each layer op
carries its decision: `pase.recompute` (a unit attribute, present when that layer's
forward is recomputed) and `pase.zero = N : i64` (its ZeRO stage). With `recompute=full`
every layer carries its `#pase.segment` (as `pase-merge-layers` writes it, where it did
not run): the last layer of each segment is the checkpoint the cost model keeps, so
that `-t jax` checkpoints the segments the model charged, not the whole forward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, UnitAttr, i64

from pase.dialect.dnn import GraphOp, ParamOp
from pase.dialect.pase import SEGMENT_ATTR_NAME, SegmentAttr, segment_of
from pase.dialect.training_options import RECOMPUTE_ATTR_NAME, TRAINING_ATTR_NAME, ZERO_ATTR_NAME
from pase.passes.strategy import (
    GIB,
    MEMORY_PARTS,
    Config,
    Layer,
    Machine,
    PipelinePlan,
    TrainingConfig,
    TrainingCost,
    TrainingOptions,
    memory_breakdown,
    microbatch_layers,
    read_graph,
    segments,
    step_flops,
)


def graph_batch(graph: GraphOp) -> tuple[str, int] | None:
    """The graph's batch dim (its first input's first dim) and its size, or None."""
    for op in graph.body.block.ops:
        if op.name == "dnn.input":
            shape = op.results[0].type.shape  # type: ignore[attr-defined]
            if shape.dims:
                return shape.dims[0], shape.sizes[0]
    return None


def mark_training(graph: GraphOp, training: TrainingOptions,
                  assignment: Mapping[str, Config]) -> None:
    """Record the training step on `graph` and, where the search chose per layer, on each
    layer; nothing for the default step (today's IR, byte for byte)."""
    if training.is_default:
        return
    graph.attributes[TRAINING_ATTR_NAME] = DictionaryAttr(
        {key: StringAttr(value) for key, value in training.ir_entries().items()})
    if training.recompute == "full" and any(segment_of(op) is None for op in graph.layers):
        data = read_graph(graph)
        for op, index in zip(graph.layers, segments(data.layers, data.edges), strict=True):
            op.attributes[SEGMENT_ATTR_NAME] = SegmentAttr(index)
    for op, name in graph.layer_names().items():
        config = assignment.get(name)
        if not isinstance(config, TrainingConfig):
            continue
        if training.recompute == "auto" and config.recompute:
            op.attributes[RECOMPUTE_ATTR_NAME] = UnitAttr()
        if training.zero == "auto" and any(isinstance(value.owner, ParamOp)
                                           for value in op.operands):
            op.attributes[ZERO_ATTR_NAME] = IntegerAttr(config.zero, i64)


def usage(layers: Sequence[Layer], parts: dict[str, float], step: float,
          devices: int) -> dict[str, object]:
    """What the report and the JSON add under a training step: the memory per device by
    part (`memory_breakdown`) and the achieved FLOP/s per device (the step's FLOPs,
    `step_flops`, over the step and the devices)."""
    flops = step_flops(layers) / step / devices if step > 0 else 0.0
    return {"memory_parts": parts, "flops_per_device": flops}


def plan_usage(layers: Sequence[Layer], plan: PipelinePlan, training: TrainingOptions,
               devices: int, batch: str) -> dict[str, object]:
    """`usage` of a pipeline plan: the breakdown of the device that needs the most memory
    (its stage's layers at micro-batch shapes, the micro-batches it holds at once)."""
    model = TrainingCost(training)
    micro = microbatch_layers(layers, batch, plan.microbatches)
    stage = max(range(len(plan.stages)), key=lambda s: plan.stages[s].memory)
    held = plan.simulation.in_flight[stage] if plan.simulation is not None else 1
    chosen = plan.stages[stage]
    parts = memory_breakdown(model, micro[chosen.start:chosen.stop], chosen.assignment, held)
    return {**usage(layers, parts, plan.step, devices), "memory_stage": stage}


def format_usage(found: Mapping[str, object]) -> str:
    """One line: the memory per device by part, in GiB, and the FLOP/s per device."""
    parts = found["memory_parts"]
    assert isinstance(parts, dict)
    shown = ", ".join(f"{part.replace('_', ' ')} {parts[part] / GIB:.4g}"
                      for part in MEMORY_PARTS)
    flops = found["flops_per_device"]
    assert isinstance(flops, float)
    return (f"memory per device {parts['total'] / GIB:.4g} GiB: {shown} "
            f"(recomputed: the largest segment's results, held again during its "
            f"backward); "
            f"{flops / 1e12:.4g} TFLOP/s per device")


def training_json(exported: dict, training: TrainingOptions,
                  assignment: Mapping[str, Config], machine: Machine) -> None:
    """Add the training step to an exported strategy or plan: "training" (COMMON.md's
    contract), the machine with its low-precision peaks and HBM bandwidth, and, where
    the search chose per layer (recompute=auto, zero=auto), each layer entry's
    "recompute" (true/false) and "zero" (its stage)."""
    exported["training"] = training.json()
    exported["machine"] = machine.to_json(full=True)
    for entry in exported.get("layers", []):
        config = assignment.get(entry["name"])
        if not isinstance(config, TrainingConfig):
            continue
        if training.recompute == "auto":
            entry["recompute"] = config.recompute
        if training.zero == "auto":
            entry["zero"] = config.zero
