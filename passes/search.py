"""`pase-search`: the optimal strategy of every graph, written back into the IR.

    pase-opt models/alexnet.dnn -p 'pase-search{devices=32 report=true}'

Attaches `pase.config = #pase.config<...>` to every layer and
`pase.strategy = #pase.strategy<...>` to the graph. Layers that already carry a
`pase.config` keep it, and so do layers named in `strategy=FILE` (a strategy JSON);
the search optimizes the rest. `export=FILE` writes the strategy JSON; `report=true`
prints a per-layer table on stderr. Both give the strategy's memory per device:
its blocks of the parameters and their gradients, and of every layer's result (kept
for the backward pass), pase-partition-stages' formula for one stage and one
micro-batch. Options:

- devices: number of devices P (required, at least 1)
- machine: a preset (pase-default, v100-nvlink, a100-nvlink, h100-nvlink,
  1080ti-pcie, 2080ti-pcie, a100-80gb-dgx, h100-80gb-dgx) or a TOML file
- order: genseq (PaSE's GENERATESEQ), bfs or minfill; under device-memory-gib too (the
  capped search's DP solves and frontier DP: the same least cost, the tie and the points
  counted against effort the order's own)
- method: dp (exact) or exhaustive (brute force, at most 10^7 strategies)
- min-shard: PaSE's cutoff, the smallest shard a split may leave (default 4)
- compat: "" (pase's model: exact volumes under canonical placement) or pase (the
  prototype's cost model, `strategy/prototype.py`)
- memory-gib: the search's memory budget above the process's baseline (default 4 GiB):
  configurations, cost tables, their working arrays, pruning and the DP all count
- jit: auto (the llvmlite kernel for large tables), on, or off (numpy); same results
- device-memory-gib: each device's memory in GiB; 0 (default) for no cap. The search
  returns the least-cost strategy whose memory per device fits (`strategy/memory.py`):
  the unconstrained optimum if it fits (exact); else with method=exhaustive the best of
  every strategy that fits (exact), and with method=dp the optimum proven by Lagrangian
  bounds (the DP on cost + λ·memory) and the DP with a (cost, memory) frontier per
  table entry on the configurations they keep (`strategy/capped.py`, `frontier.py`).
  It is called optimal only when its cost equals the proven lower bound (within 1e-9);
  when `effort` stops the search first, the report (or,
  without report=true, a warning on stderr) says how far above the bound it may be.
- effort: the frontier points, in thousands, after which the capped search stops (a
  count, so the answer is the same on every machine; default 30000); 0 for no bound: it
  runs until the strategy is proven optimal. A search it stops whose bounds were weak is
  made once more with swept bounds and an effort of its own (so about twice N in all;
  under recompute, per node of that search). Only with device-memory-gib and method=dp.
  When even the least memory any strategy needs does not fit, the pass fails saying
  how much that is. `#pase.strategy` does not carry the memory (the report and the
  export do). Without a cap, a strategy over the machine's device memory (a preset's
  `memory_gib`) is a warning, or an error when the user stated its layout
  (data-parallel, strategy=, source pins) or no strategy fits (`training.unfit_plan`).
  Under a cap the report says when data parallelism does not fit under it.
- bounding: true (default) runs the DP on the configurations that lower bounds on the
  cost cannot rule out (`strategy/bound.py`), false on all of them; the same strategy
  bit for bit
- optimizer (sgd, momentum, adam), precision (fp32, bf16, fp16), recompute (none, full,
  auto), zero (0, 1, 2, 3, auto), data-parallel (d: every layer's batch dim split
  exactly d ways; 0, the default, for searched): the training step charged
  (docs/cost-model.md, "The training step"). When one is not the default, the graph
  carries `pase.training` (the four options as strings), and with recompute=auto or
  zero=auto each layer its choices (`pase.recompute`, `pase.zero`); the report and the
  export give the memory per device by part and the FLOP/s per device
- one-mesh: true keeps only the layer grids one mesh of the P devices holds
  (`strategy/one_mesh.py`), so that the JAX target (`-t jax`, `pase-run --engine jax`)
  runs exactly the plan searched (docs/jax.md); default false
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from pase.core.diagnostics import Diagnostic, at_op
from pase.core.numbers import too_many_gib
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import CONFIG_ATTR_NAME, STRATEGY_ATTR_NAME, ConfigAttr, StrategyAttr
from pase.formats.machine_toml import MachineError, load_machine, machine_diagnostic
from pase.formats.report import cap_note, format_report
from pase.formats.strategy_json import StrategyPins, load_strategy, strategy_json, write_json
from pase.passes.options import PasePass, check_training, training_options
from pase.passes.strategy import (
    DEFAULT_EFFORT,
    GIB,
    CappedSolution,
    MemoryBudget,
    MemoryCapError,
    PinError,
    Problem,
    Progress,
    SearchError,
    SearchOptions,
    Solution,
    TrainingOptions,
    build_problem,
    collector_paused,
    memory_parts,
    over_gib,
    solve,
    solve_capped,
    strategy_memory,
)
from pase.passes.training import (
    format_usage,
    graph_batch,
    least_memory,
    mark_training,
    training_json,
    unfit_plan,
    usage,
)


@dataclass(frozen=True)
class PaseSearchPass(PasePass):
    """Find the optimal strategy of each graph and attach it."""

    name = "pase-search"

    devices: int = 0
    machine: str = "pase-default"
    order: str = "genseq"
    method: str = "dp"
    min_shard: int = 4
    compat: str = ""
    memory_gib: float | int = 4.0
    jit: str = "auto"
    strategy: str = ""
    export: str = ""
    report: bool = False
    device_memory_gib: float | int = 0.0
    bounding: bool = True
    effort: int = DEFAULT_EFFORT
    optimizer: str = "sgd"
    precision: str = "fp32"
    recompute: str = "none"
    zero: str | int = "0"
    data_parallel: int = 0
    one_mesh: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self._check_options()
        self.training()
        graphs = [g for g in op.walk() if isinstance(g, GraphOp)]
        exports = [self._search(graph, only_graph=len(graphs) == 1) for graph in graphs]
        if self.export:
            write_json(self.export, exports[0] if len(exports) == 1 else exports)

    def _check_options(self) -> None:
        if self.devices < 1:
            raise Diagnostic("pase-search needs devices=P with P at least 1, "
                             "e.g. pase-search{devices=8}")
        if self.order not in ("genseq", "bfs", "minfill"):
            raise Diagnostic(f"pase-search: unknown order '{self.order}'; use genseq, bfs "
                             "or minfill")
        if self.method not in ("dp", "exhaustive"):
            raise Diagnostic(f"pase-search: unknown method '{self.method}'; use dp or "
                             "exhaustive")
        if self.min_shard < 1:
            raise Diagnostic(f"pase-search: min-shard must be at least 1, got {self.min_shard}")
        if self.compat not in ("", "pase"):
            raise Diagnostic(f"pase-search: unknown compat '{self.compat}'; the only "
                             "mode is compat=pase")
        if self.one_mesh and self.compat:
            raise Diagnostic("pase-search: one-mesh=true needs pase's own cost model, not "
                             "compat=pase")
        if not 0 < self.memory_gib < math.inf:
            raise Diagnostic(f"pase-search: memory-gib must be a positive number, got "
                             f"{self.memory_gib}")
        if self.jit not in ("auto", "on", "off"):
            raise Diagnostic(f"pase-search: jit must be auto, on or off, got '{self.jit}'")
        if not 0 <= self.device_memory_gib < math.inf:
            raise Diagnostic(f"pase-search: device-memory-gib must be a number at least 0, "
                             f"got {self.device_memory_gib}")
        for option, value in (("memory-gib", self.memory_gib),
                              ("device-memory-gib", self.device_memory_gib)):
            if too_many := too_many_gib(option, float(value)):
                raise Diagnostic(f"pase-search: {too_many}")
        if self.effort < 0:
            raise Diagnostic(f"pase-search: effort must be a number of thousands of points "
                             f"at least 0 (0 for no bound), got {self.effort}")

    def training(self) -> TrainingOptions:
        """The training step the options state (one Diagnostic for a bad one)."""
        training = training_options(self.name, self.devices, self.optimizer, self.precision,
                                    self.recompute, self.zero, self.data_parallel)
        if self.compat and not training.is_default:
            raise Diagnostic(f"{self.name}: the training options need pase's own cost "
                             "model, not compat=pase")
        return training

    def search_options(self) -> SearchOptions:
        """The engine's options, from this pass's."""
        return SearchOptions(method=self.method, order=self.order, min_shard=self.min_shard,
                             compat=self.compat, bounding=self.bounding, jit=self.jit,
                             memory_budget=int(float(self.memory_gib) * (1 << 30)),
                             training=self.training(), one_mesh=self.one_mesh)

    def _search(self, graph: GraphOp, only_graph: bool = True) -> dict:
        name = graph.sym_name.data
        pins = (load_strategy(self.strategy, name, self.devices, only_graph,
                              training=self.training())
                if self.strategy else None)
        layers = {name: layer for layer, name in graph.layer_names().items()}
        if pins:
            pins.check_layers({layer_name: op.name.removeprefix("dnn.")
                               for layer_name, op in layers.items()}, name)
        try:
            # One pause of the cyclic collector for the whole search: resumed in between,
            # it would walk the heap once for all the objects the first step allocated.
            with collector_paused():
                machine = load_machine(self.machine)
                options = self.search_options()
                check_training(self.name, name, options.training, machine,
                               graph_batch(graph))
                budget = MemoryBudget(options.memory_budget)
                problem = build_problem(graph, self.devices, machine,
                                        pins.configs if pins else None, options, budget)
                if (contrary := contrary_pin(problem, options.training.data_parallel)):
                    layer_name, message = contrary
                    if pins and layer_name in pins.configs:
                        raise pins.error(message, layer_name, "config")
                    raise op_diagnostic(layers[layer_name], message, name)
                progress = Progress("pase-search")
                capped: CappedSolution | None = None
                try:
                    if self.device_memory_gib:
                        capped = solve_capped(problem, float(self.device_memory_gib) * GIB,
                                              options.method, options.order, budget,
                                              jit=options.jit, progress=progress,
                                              effort=self.effort or None)
                        solution = Solution(capped.assignment, capped.cost, capped.stats)
                    else:
                        solution = solve(problem, options, memory_budget=budget,
                                         progress=progress)
                finally:
                    progress.done()
        except MachineError as error:
            raise machine_diagnostic(error, self.name) from None
        except PinError as error:
            if pins and error.layer in pins.configs:
                raise pin_diagnostic(pins, error) from None
            raise op_diagnostic(layers[error.layer], str(error), name) from None
        except MemoryCapError as error:
            if self.recompute != "none":  # (a bound, or a strategy found: worded by the search)
                raise Diagnostic(f"pase-search on @{name}: {error}") from None
            raise Diagnostic(f"pase-search on @{name}: no strategy fits in device-memory-gib="
                             f"{self.device_memory_gib}; the least memory any strategy needs "
                             f"is {over_gib(error.least, self.device_memory_gib * GIB)[0]} "
                             "GiB per device") from None
        except (SearchError, ValueError) as error:
            raise Diagnostic(f"pase-search on @{name}: {error}") from None
        memory = memory_parts(problem, solution.assignment)
        if not self.device_memory_gib:
            self._check_fits(problem, memory.total, name, pins)
        breakdown = problem.breakdown(solution.assignment)
        data_parallel = problem.cost(problem.data_parallel())
        for layer_name, layer in layers.items():
            layer.attributes[CONFIG_ATTR_NAME] = ConfigAttr(solution.assignment[layer_name])
        mark_training(graph, options.training, solution.assignment)
        graph.attributes[STRATEGY_ATTR_NAME] = StrategyAttr(
            self.devices, problem.machine.name, breakdown.total, breakdown.compute,
            breakdown.communication, breakdown.redistribution, data_parallel)
        data_parallel_memory = (strategy_memory(problem, problem.data_parallel())
                                if capped is not None else None)
        found = None if memory.parts is None else usage(
            problem.layer_data, {**memory.parts, "total": memory.total}, breakdown.total,
            self.devices)
        if self.report:
            sys.stderr.write(format_report(problem, solution.assignment, breakdown,
                                           data_parallel, solution.stats, memory, capped,
                                           data_parallel_memory))
            if found is not None:
                sys.stderr.write(format_usage(found) + "\n")
        elif capped is not None and not capped.proven:
            sys.stderr.write(f"pase-search on @{name}: warning: {cap_note(capped)}\n")
        if not self.device_memory_gib and (over := problem.machine.over_memory(memory.total)):
            sys.stderr.write(f"pase-search on @{name}: warning: {over}\n")
        exported = strategy_json(problem, solution.assignment, breakdown, data_parallel,
                                 memory, capped)
        if capped is not None:
            assert data_parallel_memory is not None
            exported["device_memory_cap"]["data_parallel_fits"] = \
                data_parallel_memory <= capped.cap
        if found is not None:
            exported.update(found)
            training_json(exported, options.training, solution.assignment, problem.machine)
        return exported

    def _check_fits(self, problem: Problem, needed: float, name: str,
                    pins: StrategyPins | None) -> None:
        """Without a cap, a plan over the device's memory is an error when the user
        stated its layout or no plan fits (`unfit_plan`); else (after the report) a
        warning."""
        if (unfit := unfit_plan(problem.machine, needed, self._stated(problem, pins),
                                lambda: least_memory(problem))):
            raise Diagnostic(f"pase-search on @{name}: {unfit}")

    def _stated(self, problem: Problem, pins: StrategyPins | None) -> str:
        """The layout the user stated, as options ("" for none): `data-parallel=d`,
        `strategy=FILE`, and the layers the source pins with `pase.config`."""
        stated = [f"data-parallel={self.data_parallel}"] if self.data_parallel else []
        filed = set(pins.configs) if pins else set()
        if filed:
            stated.append(f"strategy={self.strategy}")
        if sourced := [layer for layer in problem.pins if layer not in filed]:
            stated.append(f"pase.config on {', '.join(sourced[:3])}"
                          + (f" and {len(sourced) - 3} more" if len(sourced) > 3 else ""))
        return ", ".join(stated)


def contrary_pin(problem: Problem, pinned: int | None) -> tuple[str, str] | None:
    """The first pinned layer (a strategy file's, or the source's `config`) that splits
    its batch otherwise than `data-parallel=pinned` asks, and the error's text; None if
    there is none (or no such option)."""
    batch = problem.batch_dim
    if pinned is None or batch is None:
        return None
    for layer in problem.layer_data:
        config = problem.pins.get(layer.name)
        if config is not None and batch in layer.space.names and \
                config.get(batch, 1) != pinned:
            shown = ", ".join(f"{dim}={factor}" for dim, factor in config.items())
            ways = config.get(batch, 1)
            split = (f"splits its batch {batch} {ways} ways" if ways > 1
                     else f"does not split its batch {batch}")
            return layer.name, (f"layer '{layer.name}' is pinned to {{{shown}}}, which "
                                f"{split}, but data-parallel={pinned} splits every "
                                f"layer's batch {pinned} ways")
    return None


def op_diagnostic(op: Operation, message: str, graph: str) -> Diagnostic:
    """`message` at the op's `file:line:col`; an op without a place is named by its graph."""
    return at_op(op, message, prefix=f"pase-search on @{graph}: ")


def pin_diagnostic(pins: StrategyPins, error: PinError) -> Diagnostic:
    """A pin that does not fit its layer, at its entry in the strategy file (at the
    dimension's key when one dimension is at fault)."""
    within = ("config",) if error.dim is None else ("config", error.dim)
    return pins.error(str(error), error.layer, *within, key=error.dim is not None)


