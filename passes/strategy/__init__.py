"""The pure search engine behind `pase-search`: plain data in, plain data out.

No IR inside (except `build_problem`, which reads a graph into plain data once):
iteration spaces, configurations, the cost model, machines, elimination orders, the
exact DP and its JIT kernel. The stable API (DESIGN.md):

    build_problem(graph, devices, machine="pase-default") -> Problem
    problem.layers, problem.configs(name), problem.cost(assignment)
    solve(problem, method="dp"|"exhaustive", order="genseq"|"bfs"|"minfill") -> Solution
"""

from pase.passes.strategy.configs import enumerate_configs, split_factors
from pase.passes.strategy.dp import SearchError, SearchMemoryError
from pase.passes.strategy.machines import PRESETS, Machine, load_machine
from pase.passes.strategy.problem import Breakdown, Problem, Solution, build_problem, solve

__all__ = [
    "PRESETS", "Breakdown", "Machine", "Problem", "SearchError", "SearchMemoryError", "Solution",
    "build_problem", "enumerate_configs", "load_machine", "solve", "split_factors",
]
