"""The search engine: plain data in, plain data out. This package is its one door.

Every file outside `passes/strategy/` imports the engine from here
(`tests/test_architecture.py` holds them to it). No IR inside except `from_ir.py`, which
reads a graph into plain data once. What it offers (DESIGN.md, docs/architecture.md):

- a problem from IR or from plain layers: `read_graph`, `build_problem`,
  `Problem.from_layers`, `problem.subproblem`;
- the single-graph search: `solve(problem, ...) -> Solution`, and under a device-memory
  cap `solve_capped(problem, cap, ...) -> CappedSolution`, with the predicted memory of a
  strategy (`memory_parts`, `strategy_memory`);
- the pipeline search (`Partitioner` with a `StageSolver`) and a given plan's cost
  (`evaluate_plan(..., PlanSpec)`), the plan types (`PipelinePlan`, `StagePlan`,
  `StageCost`) and the schedules (`simulate`, `in_flight`, `SCHEDULES`);
- the words a strategy or a plan moves, per layer and edge, as `pase-run --check`
  measures them (`predicted_words`, `predicted_pipeline_words`), and the pieces of the cost
  model they are made of (`blocks`, `layer_cost`, `local_elements`, `redistribution_words`,
  `carries_param`, `edges_at`, `microbatch_layers`);
- machines (`Machine`, `PRESETS`, `preset`) and errors (`SearchError`,
  `SearchMemoryError`, `MemoryCapError`, `PinError`).

The files pase reads and writes around a search (strategy JSON, machine TOML, the
report) are `pase.formats`'.
"""

from pase.core.schedule import (
    SCHEDULES,
    Simulation,
    ideal_bubble,
    in_flight,
    simulate,
)
from pase.passes.strategy.budget import (
    MemoryBudget,
    SearchError,
    SearchMemoryError,
    format_bytes,
    over_gib,
)
from pase.passes.strategy.configs import PinError, enumerate_configs, split_factors
from pase.passes.strategy.cost import (
    Config,
    LayerCost,
    blocks,
    local_elements,
    redistribution_words,
)
from pase.passes.strategy.cost_models import CostModel, PaseCost, cost_model
from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.exact import solve
from pase.passes.strategy.from_ir import GraphData, build_problem, read_graph
from pase.passes.strategy.layer_costs import LayerCosts, layer_cost
from pase.passes.strategy.machines import PRESETS, Machine, preset
from pase.passes.strategy.memory import (
    DEFAULT_EFFORT,
    GIB,
    CappedSolution,
    Memory,
    MemoryCapError,
    gib_down,
    gib_up,
    memory_parts,
    memory_vectors,
    solve_capped,
    strategy_memory,
)
from pase.passes.strategy.options import (
    DEFAULT_TRAINING,
    OPTIMIZER_STATE_WORDS,
    PRECISIONS,
    RECOMPUTE,
    SearchOptions,
    TrainingOptions,
)
from pase.passes.strategy.pipeline.evaluate import evaluate_plan
from pase.passes.strategy.pipeline.microbatch import (
    activation_bytes,
    edges_at,
    microbatch_layers,
    parameter_bytes,
)
from pase.passes.strategy.pipeline.plan import PipelinePlan, PlanSpec, StageCost, StagePlan
from pase.passes.strategy.pipeline.search import Partitioner
from pase.passes.strategy.pipeline.segments import segments
from pase.passes.strategy.pipeline.stages import StageSolver, stage_solver
from pase.passes.strategy.pipeline.transfers import carries_param
from pase.passes.strategy.problem import (
    Assignment,
    Breakdown,
    Problem,
    Solution,
    collector_paused,
)
from pase.passes.strategy.progress import Progress
from pase.passes.strategy.prototype import PrototypeCost
from pase.passes.strategy.recomputed import Transient
from pase.passes.strategy.training_cost import (
    MEMORY_PARTS,
    TrainingConfig,
    TrainingCost,
    graph_at_precision,
    mark_checkpoints,
    memory_breakdown,
    step_flops,
    update_bytes,
)
from pase.passes.strategy.vertices import Edge, Layer, TensorUse
from pase.passes.strategy.words import Words, predicted_pipeline_words, predicted_words

__all__ = [
    "OPTIMIZER_STATE_WORDS", "PRECISIONS", "RECOMPUTE",
    "DEFAULT_EFFORT", "DEFAULT_TRAINING", "MEMORY_PARTS", "TrainingConfig", "TrainingCost",
    "TrainingOptions", "graph_at_precision", "mark_checkpoints",
    "memory_breakdown", "step_flops", "update_bytes",
    "GIB", "PRESETS", "SCHEDULES", "Assignment", "Breakdown",
    "CappedSolution", "Config",
    "CostModel", "DPResult", "Edge", "GraphData", "Layer", "LayerCost", "LayerCosts",
    "Machine", "Memory", "MemoryBudget", "MemoryCapError", "Partitioner", "PaseCost",
    "PinError", "PipelinePlan", "PlanSpec", "Problem", "Progress", "PrototypeCost",
    "SearchError", "SearchMemoryError", "SearchOptions", "Simulation", "Solution", "StageCost",
    "StagePlan", "StageSolver", "TensorUse", "Words", "activation_bytes", "blocks", "build_problem",
    "carries_param", "collector_paused", "cost_model", "edges_at", "enumerate_configs",
    "evaluate_plan", "format_bytes", "gib_down", "gib_up", "ideal_bubble", "in_flight",
    "layer_cost", "over_gib",
    "local_elements", "memory_parts", "microbatch_layers", "parameter_bytes",
    "predicted_pipeline_words", "predicted_words", "preset",
    "read_graph", "redistribution_words", "segments", "simulate", "solve", "solve_capped",
    "split_factors", "stage_solver", "strategy_memory", "memory_vectors", "Transient",
]
