"""`pase-partition-stages`: layer-wise partitioning into pipeline stages.

    pase-opt models/alexnet.dnn -p 'pase-partition-stages{devices=8 stages=2 microbatches=4}'

Splits the graph's layers, in program order, into S contiguous stages on disjoint groups
of P/S devices (stage s on devices s·P/S .. (s+1)·P/S − 1); each stage's layers get their
PaSE-optimal configurations on P/S devices for a micro-batch of batch/M (the search on
the stage's sub-problem, minimising what the step charges the stage: M micro-batches'
forward and backward and one all-reduce, `stages.StageProblem`). Stage boundaries fall
only at segment ends: the layers' `#pase.segment` if `pase-merge-layers` ran, else the
clean cuts it would choose. The stages minimise the step time of the schedule,
simulated (docs/cost-model.md, "Pipelines"), among the plans whose devices all fit in
`device-memory-gib`.

Under `device-memory-gib`, stage s of a plan must fit holding the activations of the
micro-batches its position keeps at once (`schedule.in_flight`: M under GPipe,
min(S - s, M) under 1F1B): parameters and gradients plus that many times its
activations. A stage whose PaSE-optimal configurations do not fit so is solved under
that cap instead (`memory.solve_capped`: the least-cost configurations of its
sub-problem that fit), and a stage none of whose configurations fit ends the plan.
Where the capped search stops before proving its strategy optimal, the plan says how
far above the optimum it may be: a warning (and `report`'s first line, and "gap" in
the exported plan's stages); and where `effort` stopped any capped stage solve of the
search, in the plan or not, the plan is not called proven (the walk compared plans with
those stages at the cost found): the warning or report says how many were stopped, and
how far the step may be above the least step of every plan (a proven lower bound no
stopped solve enters: "gap" in the exported plan's "pipeline"). When no
plan fits, the error gives the least memory any plan of the S and M tried needs
(`Partitioner.least_memory`, rounded up: that cap has a plan).
The search over S, M and the cuts is exact (`pase.passes.strategy.pipeline`).

Writes `pase.config` (for one micro-batch) and `pase.stage` on every layer and
`pase.pipeline` on the graph (removing a `pase.strategy` an earlier search left).
Options:

- devices: P (required)
- stages: S, a divisor of P, or auto (every divisor of P up to the number of segments)
- microbatches: M, a divisor of the batch, or auto (every divisor of the batch up to 32;
  only 1 for a graph whose math micro-batches would change, such as batch norm: see
  `pase.dialect.dnn.microbatch`, which an explicit M > 1 on it reports as an error)
- schedule: 1f1b (default) or gpipe
- device-memory-gib: each device's memory in GiB; 0 (default) for no cap
- effort: the frontier points, in thousands, after which each stage's search under the
  cap stops (as for pase-search: a count; default 30000; 0 for no bound)
- machine, min-shard: as for pase-search
- method: dp (the stage search with bounds) or exhaustive (every choice of cuts)
- report: true prints per stage its layers, devices, F and B per micro-batch, memory
- export: FILE writes the plan as JSON (the strategy JSON with "pipeline" and "stages")
- strategy: FILE reads such a plan back instead of searching (checked against the graph:
  every layer's configuration, the stages in order), and simulates it anew
- optimizer, precision, recompute, zero, data-parallel: the training step, as for
  pase-search (each stage's layers charged so; under bf16/fp16 the tensors crossing
  stage boundaries move in 2 bytes too); the report and the exported plan's "pipeline"
  give the memory per device by part and the FLOP/s per device
- one-mesh: true keeps only the grids one mesh of a stage's devices holds, as for
  pase-search (the JAX target's stage programs)

With S = 1 and M = 1 the configurations are exactly pase-search's. pase-autodiff and
pase-lower-spmd then turn the plan into one pipelined SPMD program, which pase-run
trains (`pase-run --stages S --microbatches M`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from pase.core.diagnostics import Diagnostic
from pase.core.numbers import too_many_gib
from pase.core.placement import MAX_DEVICES
from pase.dialect.dnn import GraphOp
from pase.dialect.dnn.microbatch import microbatch_problem
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    PIPELINE_ATTR_NAME,
    SCHEDULES,
    STAGE_ATTR_NAME,
    STRATEGY_ATTR_NAME,
    ConfigAttr,
    PipelineAttr,
    StageAttr,
    segment_of,
)
from pase.formats.machine_toml import MachineError, load_machine, machine_diagnostic
from pase.formats.strategy_json import load_plan, write_json
from pase.passes.options import PasePass, check_training, shown_option, training_options
from pase.passes.search import contrary_pin, op_diagnostic
from pase.passes.strategy import (
    DEFAULT_EFFORT,
    CostModel,
    GraphData,
    Machine,
    MemoryCapError,
    Partitioner,
    PinError,
    PipelinePlan,
    PlanSpec,
    Problem,
    Progress,
    SearchError,
    SearchOptions,
    StageSolver,
    TrainingOptions,
    collector_paused,
    evaluate_plan,
    gib_down,
    gib_up,
    graph_at_precision,
    mark_checkpoints,
    read_graph,
    segments,
    solve,
    solve_capped,
)
from pase.passes.training import (
    format_usage,
    mark_training,
    plan_usage,
    training_json,
    unfit_plan,
)

MAX_AUTO_MICROBATCHES = 32
GIB = 1 << 30


@dataclass(frozen=True)
class PartitionStagesPass(PasePass):
    """Split the layers into pipeline stages with per-stage PaSE strategies."""

    name = "pase-partition-stages"

    devices: int = 0
    stages: str | int = "auto"
    microbatches: str | int = "auto"
    schedule: str = "1f1b"
    device_memory_gib: float | int = 0.0
    effort: int = DEFAULT_EFFORT
    machine: str = "pase-default"
    min_shard: int = 4
    method: str = "dp"
    report: bool = False
    export: str = ""
    strategy: str = ""
    optimizer: str = "sgd"
    precision: str = "fp32"
    recompute: str = "none"
    zero: str | int = "0"
    data_parallel: int = 0
    one_mesh: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self._check_options()
        graphs = [g for g in op.walk() if isinstance(g, GraphOp)]
        exports = [self._partition(graph) for graph in graphs]
        if self.export:
            write_json(self.export, exports[0] if len(exports) == 1 else exports)

    def _check_options(self) -> None:
        where = "pase-partition-stages"
        if self.devices < 1:
            raise Diagnostic(f"{where} needs devices=P with P at least 1, e.g. "
                             "pase-partition-stages{devices=8}")
        if self.devices > MAX_DEVICES:  # (before `auto` lists the divisors of P one by one)
            raise Diagnostic(f"{where}: devices must be between 1 and {MAX_DEVICES:,}, got "
                             f"{self.devices:,}")
        if self.stages != "auto" and not (isinstance(self.stages, int) and self.stages >= 1
                                          and self.devices % self.stages == 0):
            raise Diagnostic(f"{where}: stages must be auto or a divisor of the "
                             f"{self.devices} devices, got {shown_option(self.stages)}")
        if self.microbatches != "auto" and not (isinstance(self.microbatches, int)
                                                and self.microbatches >= 1):
            raise Diagnostic(f"{where}: microbatches must be auto or at least 1, got "
                             f"{shown_option(self.microbatches)}")
        if self.schedule not in SCHEDULES:
            raise Diagnostic(f"{where}: unknown schedule '{self.schedule}'; use "
                             f"{' or '.join(SCHEDULES)}")
        if not 0 <= self.device_memory_gib < math.inf:
            raise Diagnostic(f"{where}: device-memory-gib must be a number at least 0, got "
                             f"{self.device_memory_gib}")
        if too_many := too_many_gib("device-memory-gib", float(self.device_memory_gib)):
            raise Diagnostic(f"{where}: {too_many}")
        if self.effort < 0:
            raise Diagnostic(f"{where}: effort must be a number of thousands of points at "
                             f"least 0 (0 for no bound), got {self.effort}")
        if self.method not in ("dp", "exhaustive"):
            raise Diagnostic(f"{where}: unknown method '{self.method}'; use dp or exhaustive")
        if self.min_shard < 1:
            raise Diagnostic(f"{where}: min-shard must be at least 1, got {self.min_shard}")
        if self.data_parallel > 0 and isinstance(self.stages, int) and \
                (self.devices // self.stages) % self.data_parallel:
            raise Diagnostic(f"{where}: data-parallel={self.data_parallel} does not divide "
                             f"the {self.devices // self.stages} devices of a stage "
                             f"({self.devices} devices / stages={self.stages})")
        self.training()

    def training(self) -> TrainingOptions:
        """The training step the options state (one Diagnostic for a bad one)."""
        return training_options(self.name, self.devices, self.optimizer, self.precision,
                                self.recompute, self.zero, self.data_parallel)

    def _partition(self, graph: GraphOp) -> dict:
        name = graph.sym_name.data
        data = read_graph(graph)
        ops = graph.layers
        marked = [segment_of(op) for op in ops]
        index = ([m.index.data for m in marked if m is not None]
                 if all(m is not None for m in marked) else segments(data.layers, data.edges))
        cuts = [i for i in range(1, len(index)) if index[i] != index[i - 1]]
        batch = data.batch
        if batch is None:
            raise Diagnostic(f"pase-partition-stages on @{name}: the graph has no input, "
                             "so no batch to split into micro-batches")
        size = next(d.size for layer in data.layers for d in layer.space.dims
                    if d.name == batch)
        stage_counts = ([self.stages] if isinstance(self.stages, int) else
                        [s for s in range(1, self.devices + 1)
                         if self.devices % s == 0 and s <= len(cuts) + 1
                         and (self.devices // s) % (self.data_parallel or 1) == 0])
        micro_counts = ([self.microbatches] if isinstance(self.microbatches, int) else
                        [m for m in range(1, min(size, MAX_AUTO_MICROBATCHES) + 1)
                         if size % m == 0 and (size // m) % (self.data_parallel or 1) == 0])
        if isinstance(self.microbatches, int) and size % self.microbatches:
            raise Diagnostic(f"pase-partition-stages on @{name}: microbatches="
                             f"{self.microbatches} does not divide the batch {batch} = {size}")
        if isinstance(self.microbatches, int) and self.data_parallel and (
                size // self.microbatches) % self.data_parallel:
            raise Diagnostic(f"pase-partition-stages on @{name}: data-parallel="
                             f"{self.data_parallel} does not divide the micro-batch {batch} = "
                             f"{size // self.microbatches} ({size} / microbatches="
                             f"{self.microbatches})")
        if isinstance(self.microbatches, int) and (
                problem := microbatch_problem(graph, self.microbatches)):
            raise Diagnostic(f"pase-partition-stages on @{name}: {problem}")
        if len(micro_counts) > 1 and microbatch_problem(graph, micro_counts[1]):
            micro_counts = [1]  # auto: micro-batches would change this graph's math
        if isinstance(self.stages, int) and self.stages > len(cuts) + 1:
            raise Diagnostic(f"pase-partition-stages on @{name}: stages={self.stages} but "
                             f"the graph has only {len(cuts) + 1} segments to put in them")
        cap = self.device_memory_gib * GIB if self.device_memory_gib else None
        training = self.training()
        options = SearchOptions(min_shard=self.min_shard, training=training,
                                one_mesh=self.one_mesh)
        if not training.is_default:
            try:
                check_training(self.name, name, training, load_machine(self.machine),
                               (batch, size))
            except MachineError as error:
                raise machine_diagnostic(error, self.name) from None
            layers, edges = graph_at_precision(data.layers, data.edges, training)
            if training.recompute != "none":
                layers = mark_checkpoints(layers, index)
            data = GraphData(data.name, layers, edges, data.batch, data.pins)
        model = None if training.is_default else options.model
        if self.strategy:
            return self._given_plan(graph, data, batch, model, cap)
        if data.pins and stage_counts == [1] and micro_counts == [1]:
            return self._pinned_plan(graph, data, options, cap)
        try:
            with collector_paused():
                machine = load_machine(self.machine)
                partitioner = Partitioner(
                    data.layers, data.edges, batch, self.devices, machine, cuts,
                    StageSolver(machine, batch, options, self.effort or None))
                partitioner.progress = Progress("pase-partition-stages")
                try:
                    best, least_memory = partitioner.search(stage_counts, micro_counts,
                                                            self.schedule, cap, self.method)
                finally:
                    partitioner.progress.done()
        except MachineError as error:
            raise machine_diagnostic(error, self.name) from None
        except (SearchError, ValueError) as error:
            raise Diagnostic(f"pase-partition-stages on @{name}: {error}") from None
        if best is None:
            needs = (f"; the least memory any plan needs is {gib_up(least_memory)} GiB "
                     "per device"
                     if least_memory < math.inf else "")
            if least_memory < math.inf and training.recompute != "none":
                needs = (f"; every plan needs at least "
                         f"{gib_down(least_memory, above=cap or -math.inf)} GiB per device "
                         "(a lower bound under recompute: the results a segment recomputes "
                         "in the backward pass are not counted)")
            raise Diagnostic(f"pase-partition-stages on @{name}: no plan fits in "
                             f"device-memory-gib={self.device_memory_gib}{needs}")
        unproven = partitioner.solver.unproven
        if unproven:  # (the walks compared stages at the costs found: the step's bound)
            best = replace(best, floor=min(best.step, partitioner.floor))
        return self._write(graph, data, best, machine, unproven)

    def _given_plan(self, graph: GraphOp, data: GraphData, batch: str,
                    model: CostModel | None, cap: float | None) -> dict:
        """The plan of the `strategy=` file on `data`, checked against data-parallel=
        and the cap, evaluated and written (`_write`)."""
        name = graph.sym_name.data
        try:
            machine = load_machine(self.machine)
        except MachineError as error:
            raise machine_diagnostic(error, self.name) from None
        spec = load_plan(self.strategy, name, self.devices, len(graphs_in(graph)) == 1,
                         data.layers, batch,
                         lambda micro: microbatch_problem(graph, micro), self.training())
        for layer in data.layers:
            ways = spec.assignment[layer.name].get(batch, 1)
            if self.data_parallel and batch in layer.space.names and \
                    ways != self.data_parallel:
                split = f"splits {ways} ways" if ways > 1 else "does not split"
                raise Diagnostic(f"pase-partition-stages on @{name}: the plan of "
                                 f"{self.strategy} {split} the batch {batch} of layer "
                                 f"'{layer.name}', but data-parallel="
                                 f"{self.data_parallel} splits every layer's batch "
                                 f"{self.data_parallel} ways")
        try:
            loaded = evaluate_plan(data.layers, data.edges, batch, self.devices,
                                   machine, spec, model)
        except ValueError as error:
            raise Diagnostic(f"pase-partition-stages on @{name}: {error}") from None
        if cap is not None and loaded.memory > cap:
            raise Diagnostic(f"pase-partition-stages on @{name}: the plan of "
                             f"{self.strategy} needs {loaded.memory / GIB:.3g} GiB per "
                             f"device, over device-memory-gib={self.device_memory_gib}")
        return self._write(graph, data, loaded, machine)

    def _pinned_plan(self, graph: GraphOp, data: GraphData, options: SearchOptions,
                     cap: float | None) -> dict:
        """At S = 1 and M = 1 the plan is pase-search's strategy, so the layers' source
        `config` pins hold as they do there: the whole graph solved with them (under the
        cap), evaluated as one stage and written (`_write`)."""
        name = graph.sym_name.data
        ops = {layer_name: op for op, layer_name in graph.layer_names().items()}
        try:
            with collector_paused():
                machine = load_machine(self.machine)
                problem = Problem.from_layers(data.layers, data.edges, self.devices, machine,
                                              pins=data.pins, batch=data.batch,
                                              min_shard=self.min_shard, graph=name,
                                              model=options.model)
                if (contrary := contrary_pin(problem, options.training.data_parallel)):
                    raise op_diagnostic(ops[contrary[0]], contrary[1], name)
                capped = solve_capped(problem, cap, effort=self.effort or None) \
                    if cap is not None else None
                assignment = capped.assignment if capped is not None \
                    else solve(problem, options).assignment
                plan = evaluate_plan(data.layers, data.edges, data.batch or "", self.devices,
                                     machine, PlanSpec((0,), 1, self.schedule, assignment),
                                     None if options.training.is_default else options.model)
                if capped is not None and not capped.proven:
                    # (One stage of one micro-batch: its step is the capped search's cost.)
                    plan = replace(plan, stages=(replace(plan.stages[0], gap=capped.gap),),
                                   floor=plan.step / (1 + capped.gap))
        except MachineError as error:
            raise machine_diagnostic(error, self.name) from None
        except PinError as error:
            raise op_diagnostic(ops[error.layer], str(error), name) from None
        except MemoryCapError as error:
            if options.training.recompute != "none":  # (its bound, worded by the search)
                raise Diagnostic(f"pase-partition-stages on @{name}: {error}") from None
            raise Diagnostic(f"pase-partition-stages on @{name}: no plan fits in "
                             f"device-memory-gib={self.device_memory_gib}; the least memory "
                             f"any plan needs is {gib_up(error.least)} GiB per device"
                             ) from None
        except (SearchError, ValueError) as error:
            raise Diagnostic(f"pase-partition-stages on @{name}: {error}") from None
        return self._write(graph, data, plan, machine)

    def _write(self, graph: GraphOp, data: GraphData, best: PipelinePlan,
               machine: Machine, unproven: int = 0) -> dict:
        """Put the plan on the graph's layers; report it (`unproven`, the capped stage
        solves the effort stopped: `proof_note`); its JSON."""
        name = graph.sym_name.data
        stated = ", ".join([f"data-parallel={self.data_parallel}"] * bool(self.data_parallel)
                           + [f"strategy={self.strategy}"] * bool(self.strategy))
        # (a plan read with strategy= is the only plan of its layout: its memory is exact)
        if not self.device_memory_gib and (unfit := unfit_plan(
                machine, best.memory, stated, lambda: best.memory if self.strategy else 0.0)):
            raise Diagnostic(f"pase-partition-stages on @{name}: {unfit}")
        ops = graph.layers
        names = [layer.name for layer in data.layers]
        for s, stage in enumerate(best.stages):
            for i in range(stage.start, stage.stop):
                ops[i].attributes[CONFIG_ATTR_NAME] = ConfigAttr(stage.assignment[names[i]])
                ops[i].attributes[STAGE_ATTR_NAME] = StageAttr(s, stage.offset,
                                                               stage.devices)
        graph.attributes.pop(STRATEGY_ATTR_NAME, None)
        graph.attributes[PIPELINE_ATTR_NAME] = PipelineAttr(
            self.devices, machine.name, len(best.stages), best.microbatches, best.schedule,
            best.step, best.bubble, best.memory)
        training = self.training()
        mark_training(graph, training, best.assignment)
        batch = data.batch or ""
        usage = None if training.is_default else plan_usage(data.layers, best, training,
                                                            self.devices, batch)
        if self.report:
            sys.stderr.write(format_plan(name, best, names, self.device_memory_gib, unproven))
            if usage is not None:
                sys.stderr.write(format_usage(usage) + "\n")
        elif best.gap > 0 or unproven:
            sys.stderr.write(f"pase-partition-stages on @{name}: warning: "
                             f"{gap_note(best, unproven)}\n")
        if not self.device_memory_gib and (over := machine.over_memory(best.memory)):
            sys.stderr.write(f"pase-partition-stages on @{name}: warning: {over}\n")
        exported = plan_json(name, self.devices, machine, best, names)
        if usage is not None:
            exported["pipeline"].update(usage)
            training_json(exported, training, best.assignment, machine)
        return exported


def graphs_in(graph: GraphOp) -> list[GraphOp]:
    """The graphs of the module `graph` is in."""
    module = graph.parent_op()
    return [g for g in module.walk() if isinstance(g, GraphOp)] if module else [graph]


def gap_note(plan: PipelinePlan, unproven: int = 0) -> str:
    """What is known of a plan found while `effort` stopped capped stage solves before
    their proofs (`unproven` of them in the whole search): its own stages' gaps (each
    within that much of its stage's proven lower bound) where they are among them; and
    that the plan is not proven the least, for the walk compared plans with those stages
    at the cost found, not at their optimum's, and how far its step may be above the
    least (`PipelinePlan.step_gap`, where the search gave its `floor`)."""
    stages = [str(s) for s, stage in enumerate(plan.stages) if stage.gap > 0]
    own = (f"stage{'s' if len(stages) > 1 else ''} {', '.join(stages)} solved under "
           f"device-memory-gib not proven optimal: within {plan.gap:.2%} of the proven "
           "lower bound") if stages else ""
    if not unproven:
        return own
    solves = f"{unproven} capped stage solve{'s' if unproven > 1 else ''}"
    proofs = "their proofs" if unproven > 1 else "its proof"
    within = f", its step within {plan.step_gap:.2%} of the proven lower bound on " \
        "every plan's" if plan.floor is not None else ""
    return (f"{own}; " if own else "") + \
        (f"the plan is not proven the least: effort stopped {solves} of the search "
         f"before {proofs}{within} (effort=0 searches until proven)")


def proof_note(plan: PipelinePlan, cap: float, unproven: int = 0) -> str:
    """What `report=true` says of a plan's proof under `device-memory-gib=cap` (none
    without a cap): every (S, M) is searched to the end, so the plan is the proven optimum
    when every capped stage solve of the search is (`unproven` of them were stopped by
    `effort`), and else not (`gap_note`)."""
    if plan.gap > 0 or unproven:
        return f"; {gap_note(plan, unproven)}"
    return f"; device-memory-gib={cap:g}: optimal under the cap (proven)" if cap else ""


def format_plan(graph: str, plan: PipelinePlan, names: list[str], cap: float = 0.0,
                unproven: int = 0) -> str:
    """The per-stage table `report=true` prints."""
    lines = [f"pipeline @{graph}: {len(plan.stages)} stages, {plan.microbatches} "
             f"micro-batches, {plan.schedule}; step {plan.step:.6g} s, bubble "
             f"{plan.bubble:.3f}, memory {plan.memory / GIB:.4g} GiB per device"
             + proof_note(plan, cap, unproven),
             f"{'stage':>5}  {'devices':>9}  {'layers':<32}  {'F (s)':>11}  {'B (s)':>11}  "
             f"{'all-reduce (s)':>14}  {'memory (GiB)':>12}"]
    for s, stage in enumerate(plan.stages):
        first, last = names[stage.start], names[stage.stop - 1]
        span = f"{first} .. {last} ({stage.stop - stage.start})"
        devices = f"{stage.offset}-{stage.offset + stage.devices - 1}"
        lines.append(f"{s:>5}  {devices:>9}  {span:<32}  {stage.cost.forward:>11.4e}  "
                     f"{stage.cost.backward:>11.4e}  {stage.cost.allreduce:>14.4e}  "
                     f"{stage.memory / GIB:>12.4g}")
    return "\n".join(lines) + "\n"


def plan_json(graph: str, devices: int, machine: Machine, plan: PipelinePlan,
              names: list[str]) -> dict:
    """The plan as the strategy JSON with its stages."""
    return {
        "graph": graph, "devices": devices, "machine": machine.to_json(),
        "pipeline": {"stages": len(plan.stages), "microbatches": plan.microbatches,
                     "schedule": plan.schedule, "step": plan.step, "bubble": plan.bubble,
                     "memory": plan.memory, "gap": plan.step_gap},
        "stages": [{"stage": s, "offset": stage.offset, "devices": stage.devices,
                    "layers": names[stage.start:stage.stop], "forward": stage.cost.forward,
                    "backward": stage.cost.backward, "allreduce": stage.cost.allreduce,
                    "memory": stage.memory, "gap": stage.gap}
                   for s, stage in enumerate(plan.stages)],
        "layers": [{"name": name, "config": plan.assignment[name]} for name in names],
    }

