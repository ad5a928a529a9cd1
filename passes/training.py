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

from collections.abc import Callable, Mapping, Sequence

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
    Problem,
    TrainingConfig,
    TrainingCost,
    TrainingOptions,
    Transient,
    gib_down,
    memory_breakdown,
    memory_vectors,
    microbatch_layers,
    over_gib,
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


def unfit_plan(machine: Machine, needed: float, stated: str, least: Callable[[], float]
               ) -> str | None:
    """The error for a plan searched without `device-memory-gib` that needs `needed`
    bytes per device, more than `machine`'s device holds: when the user stated its layout
    (`stated`, e.g. "data-parallel=4"; "" when nothing is pinned), or when no plan fits
    at all (`least()`, a lower bound on the memory every plan needs, more than the
    device holds). None where the plan fits, the device's memory is unknown, or nothing
    is stated and some plan may fit (then `Machine.over_memory`'s warning is the answer:
    without a cap the search returns the least-cost plan, as it always has).

        >>> from pase.passes.strategy import preset
        >>> print(unfit_plan(preset("a100-nvlink"), 50 * GIB, "data-parallel=2",
        ...                  lambda: 30 * GIB))
        the plan searched with the stated layout (data-parallel=2) needs 50 GiB per \
device, more than the 40 GiB of an a100-nvlink device; give device-memory-gib=40 for the \
fastest plan with that layout that fits
        >>> print(unfit_plan(preset("a100-nvlink"), 50 * GIB, "", lambda: 45 * GIB))
        no plan fits an a100-nvlink device: every plan needs at least 45 GiB per device, \
more than its 40 GiB
        >>> unfit_plan(preset("a100-nvlink"), 50 * GIB, "", lambda: 30 * GIB) is None
        True
    """
    capacity = machine.memory_gib * GIB
    if not capacity or needed <= capacity:
        return None
    article = "an" if machine.name[:1] in "aeiou" else "a"
    lowest = least()
    if lowest > capacity:
        plans = (f"every plan with the stated layout ({stated})" if stated
                 else "every plan")
        # A lower bound, so rounded down (gib_down), as far as it still reads above the
        # device's memory.
        least_gib = gib_down(lowest, above=capacity)
        return (f"no plan fits {article} {machine.name} device: {plans} needs at least "
                f"{least_gib} GiB per device, more than its {machine.memory_gib:g} GiB")
    if not stated:
        return None
    needed_gib, memory = over_gib(needed, capacity)
    return (f"the plan searched with the stated layout ({stated}) needs "
            f"{needed_gib} GiB per device, more than the {memory} GiB "
            f"of {article} {machine.name} device; give device-memory-gib="
            f"{machine.memory_gib:g} for the fastest plan with that layout that fits")


def least_memory(problem: Problem) -> float:
    """A lower bound on the bytes per device of every strategy of `problem`: each
    layer's least additive memory, plus the least any strategy recomputes (exact
    without recompute)."""
    additive = sum(float(vector.min()) for vector in memory_vectors(problem))
    transient = Transient.of(problem)
    return additive + (transient.least if transient is not None else 0.0)
