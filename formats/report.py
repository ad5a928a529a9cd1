"""The human report of a search: a per-layer table and the cost breakdown.

    strategy for @mlp on 8 devices (machine pase-default)
    layer  op          config       cost (s)
    h      einsum      {b=4, h=2}   1.2e-06
    ...
    total 1.49e-06 s = compute 1.0e-06 + collectives 3.0e-07 + redistribution 1.9e-07
    data parallel 2.39e-04 s: predicted speedup 159.81x
"""

from __future__ import annotations

from pase.passes.strategy.dp import DPResult
from pase.passes.strategy.problem import Assignment, Breakdown, Problem


def format_config(config: dict[str, int]) -> str:
    return "{" + ", ".join(f"{d}={f}" for d, f in config.items()) + "}"


def format_report(problem: Problem, assignment: Assignment, breakdown: Breakdown,
                  data_parallel: float, stats: DPResult | None) -> str:
    rows = [("layer", "op", "config", "cost (s)")]
    for layer in problem.layer_data:
        rows.append((layer.name, layer.kind, format_config(assignment[layer.name]),
                     f"{breakdown.per_layer[layer.name]:.3e}"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"strategy for @{problem.graph} on {problem.devices} devices "
             f"(machine {problem.machine.name})"]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                        strict=False))
                     + "  " + row[3])
    lines.append(f"total {breakdown.total:.4e} s = compute {breakdown.compute:.4e} "
                 f"+ collectives {breakdown.communication:.4e} "
                 f"+ redistribution {breakdown.redistribution:.4e}")
    speedup = data_parallel / breakdown.total if breakdown.total > 0 else 1.0
    lines.append(f"data parallel {data_parallel:.4e} s: predicted speedup {speedup:.2f}x")
    if stats is not None and stats.order:
        lines.append(f"search: {len(problem.layers)} layers, largest dependent set "
                     f"{stats.max_dependent_set}, {stats.table_entries:,} table entries")
    return "\n".join(lines) + "\n"
