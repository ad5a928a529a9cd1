"""`milp_sweep.py --passes`: both passes under a cap, their words checked against the MILP's
optimum (issue 33)."""

from __future__ import annotations

import contextlib
import io
import math

from milp_sweep import TOLERANCE, least_words, load


def through_passes(model: str, fields: dict, cap: float) -> dict:
    """`pase-search{device-memory-gib=G report=true}` and `pase-partition-stages{stages=1
    microbatches=1 device-memory-gib=G}` on the group's model, G = `cap` in GiB (exact:
    a power of two divides it): their steps, the report's cap line, or their diagnostic."""
    from xdsl.context import Context

    from pase.core.diagnostics import Diagnostic
    from pase.dialect.dnn import GraphOp
    from pase.passes.partition_stages import PartitionStagesPass
    from pase.passes.search import PaseSearchPass

    gib = cap / (1 << 30)
    found: dict = {}
    for name, make, read in (
            ("search", lambda: PaseSearchPass(**fields, device_memory_gib=gib, report=True),
             lambda graph: graph.strategy.total.data),
            ("stages", lambda: PartitionStagesPass(**fields, stages=1, microbatches=1,
                                                   device_memory_gib=gib, report=True),
             lambda graph: graph.attributes["pase.pipeline"].step.data)):
        module = load(model)
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                make().apply(Context(), module)
        except Diagnostic as error:
            found[name] = {"error": str(error)}
            continue
        graph = next(op for op in module.walk() if isinstance(op, GraphOp))
        line = next((text for text in stderr.getvalue().splitlines()
                     if "device-memory-gib" in text and any(
                         words in text for words in ("optimal", "fits (exact)"))), "")
        found[name] = {"step": float(read(graph)), "line": line}
    return found


def pass_verdict(passes: dict, milp: dict, least: float) -> str:
    """The passes' answers (at their default effort) against the MILP's: a plan where one
    fits, at the optimum where the report says proven, never below it, and the bound the
    report names (4 digits) at most it."""
    if not milp["optimal"]:
        return "MILP unfinished"
    optimum = milp["cost"]
    problems = []
    for name, got in passes.items():
        if "error" in got:
            if math.isfinite(optimum):
                problems.append(f"{name} says: {got['error']}")
            elif (false := least_words(got["error"], least)):
                problems.append(f"{name} {false}")
            continue
        if not math.isfinite(optimum):
            problems.append(f"{name} finds a plan where the MILP finds none")
            continue
        line = got["line"]
        if got["step"] < milp["relaxed"] * (1 - TOLERANCE):
            problems.append(f"{name} step {got['step']:.9g} below the optimum")
        if ("(proven" in line or "(exact)" in line) and \
                got["step"] > optimum * (1 + TOLERANCE):
            problems.append(f"{name} says proven at {got['step']:.9g}, above the optimum")
        if got["step"] > optimum * (1 + TOLERANCE) and "not proven" not in line:
            problems.append(f"{name} step {got['step']:.9g} above the optimum, unsaid")
        if "lower bound " in line and " s (" in line:  # pase-search: the bound itself
            bound = float(line.split("lower bound ")[1].split(" s")[0])
            if bound > optimum * (1 + 5e-4):
                problems.append(f"{name} names the bound {bound}, above the optimum")
        elif "within " in line:  # pase-partition-stages: the gap, to 0.01 %
            gap = float(line.split("within ")[1].split("%")[0]) / 100
            if got["step"] / (1 + gap) > optimum * (1 + 1e-4):
                problems.append(f"{name}'s gap {gap:.2%} is false")
    return "; ".join(problems) or "yes"
