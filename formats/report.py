"""The human report of a search: a per-layer table and the cost breakdown.

    strategy for @mlp on 8 devices (machine pase-default)
    layer  op          config       cost (s)
    h      einsum      {b=4, h=2}   1.2e-06
    ...
    total 1.49e-06 s = compute 1.0e-06 + collectives 3.0e-07 + redistribution 1.9e-07
    data parallel 2.39e-04 s: predicted speedup 159.81x
    memory 3.171e-04 GiB per device = parameters and gradients 3.052e-04 + activations 1.19e-05

A strategy that splits no layer says so, and why, under the speedup. Under
`device-memory-gib` one more line says whether the strategy is proven optimal
under the cap, or how far above the proven lower bound it may be (`cap_note`), and
where data parallelism does not fit under the cap the report says so in place of a
speedup over it (`data_parallel_line`).
"""

from __future__ import annotations

from pase.passes.strategy import (
    GIB,
    Assignment,
    Breakdown,
    CappedSolution,
    DPResult,
    Memory,
    Problem,
    TrainingConfig,
    gib_up,
)


def format_config(config: dict[str, int]) -> str:
    """`{b=4, h=2}`, and a layer's training choices where it has any: `{b=4} recompute
    zero=1` (`TrainingConfig`).

        >>> format_config(TrainingConfig({"b": 4}, recompute=True, zero=1))
        '{b=4} recompute zero=1'
    """
    shown = "{" + ", ".join(f"{d}={f}" for d, f in config.items()) + "}"
    if isinstance(config, TrainingConfig):
        shown += " recompute" * config.recompute + (f" zero={config.zero}" if config.zero
                                                    else "")
    return shown


def format_report(problem: Problem, assignment: Assignment, breakdown: Breakdown,
                  data_parallel: float, stats: DPResult | None,
                  memory: Memory | None = None, capped: CappedSolution | None = None,
                  data_parallel_memory: float | None = None) -> str:
    """The report; `data_parallel_memory`, the bytes per device of data parallelism,
    says under a cap whether it fits (`data_parallel_line`)."""
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
    lines.append(data_parallel_line(data_parallel, breakdown.total, capped,
                                    data_parallel_memory))
    if problem.devices > 1 and all(factor == 1 for config in assignment.values()
                                   for factor in config.values()):
        lines.append("no layer is split: at these sizes every split costs more in "
                     "communication than it saves in compute, so the step runs on one of the "
                     f"{problem.devices} devices (the speedup is over data parallelism, not "
                     "over one device)")
    if memory is not None and memory.parts is None:
        lines.append(f"memory {memory.total / GIB:.4g} GiB per device = parameters and "
                     f"gradients {memory.parameters / GIB:.4g} + activations "
                     f"{memory.activations / GIB:.4g}")
    if capped is not None:
        lines.append(cap_note(capped))
    if stats is not None and stats.order:
        counted = (f"; dense blocks of {', '.join(map(str, stats.dense_blocks))} layers "
                   "counted first" if stats.dense_blocks else "")
        lines.append(f"search: {len(problem.layers)} layers, largest dependent set "
                     f"{stats.max_dependent_set}, {stats.table_entries:,} table entries"
                     f"{counted}")
    return "\n".join(lines) + "\n"


def data_parallel_line(data_parallel: float, total: float, capped: CappedSolution | None,
                       data_parallel_memory: float | None) -> str:
    """The step of data parallelism and the speedup over it; under a cap it does not
    fit (its bytes per device `data_parallel_memory` over the cap), no speedup over a
    plan that cannot run, but how much it needs.

        >>> data_parallel_line(2e-3, 1e-3, None, None)
        'data parallel 2.0000e-03 s: predicted speedup 2.00x'
    """
    if capped is not None and data_parallel_memory is not None and \
            data_parallel_memory > capped.cap:
        return (f"data parallel {data_parallel:.4e} s does not fit under device-memory-gib="
                f"{capped.cap / GIB:.6g}: it needs {gib_up(data_parallel_memory)} GiB per "
                "device (no speedup over it: it cannot run)")
    speedup = data_parallel / total if total > 0 else 1.0
    return f"data parallel {data_parallel:.4e} s: predicted speedup {speedup:.2f}x"


def cap_note(capped: CappedSolution) -> str:
    """What is known of a strategy found under a memory cap.

        device-memory-gib=0.5: the unconstrained optimum fits (exact)
        device-memory-gib=0.13: optimal under the cap (proven; 5 solves, 3,712 points)
        device-memory-gib=0.13: not proven optimal: within 2.85% of the proven lower
        bound 7.2316e-03 s (stopped by effort=1: 7 solves, 1,204 points)
    """
    cap = f"device-memory-gib={capped.cap / GIB:.6g}"
    if capped.unconstrained_fits:
        return f"{cap}: the unconstrained optimum fits (exact)"
    work = (f"{capped.solves} solve{'s' if capped.solves != 1 else ''}, "
            f"{capped.nodes:,} point{'s' if capped.nodes != 1 else ''}")
    if capped.proven:
        return f"{cap}: optimal under the cap (proven; {work})"
    stopped = f"stopped by effort={capped.effort}: " if capped.stopped else ""
    return (f"{cap}: not proven optimal: within {100 * capped.gap:.3g}% of the proven lower "
            f"bound {capped.lower_bound:.4e} s ({stopped}{work})")
