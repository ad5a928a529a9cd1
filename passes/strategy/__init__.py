"""The pure search engine behind `pase-search`: plain data in, plain data out.

No IR inside except `from_ir.py`, which reads a graph into plain data once:
iteration spaces, configurations, the cost model, machines, elimination orders, the
exact DP and its JIT kernels. The stable API (DESIGN.md):

    build_problem(graph, devices, machine="pase-default") -> Problem
    Problem.from_layers(layers, edges, devices, machine) -> Problem
    problem.layers, problem.configs(name), problem.cost(assignment)
    problem.subproblem(layers, devices) -> Problem
    solve(problem, method="dp"|"exhaustive", order="genseq"|"bfs"|"minfill") -> Solution
    predicted_words(problem, configs), predicted_pipeline_words(...) -> words per layer/edge

The files pase reads and writes around a search (strategy JSON, machine TOML, the
report) are `pase.formats`'.
"""

from pase.passes.strategy.configs import enumerate_configs, split_factors
from pase.passes.strategy.dp import SearchError, SearchMemoryError
from pase.passes.strategy.from_ir import build_problem, read_graph
from pase.passes.strategy.machines import PRESETS, Machine
from pase.passes.strategy.problem import Breakdown, Problem, Solution, solve
from pase.passes.strategy.words import Words, predicted_pipeline_words, predicted_words

__all__ = [
    "PRESETS", "Breakdown", "Machine", "Problem", "SearchError", "SearchMemoryError", "Solution",
    "Words", "build_problem", "enumerate_configs", "predicted_pipeline_words", "predicted_words",
    "read_graph", "solve", "split_factors",
]
