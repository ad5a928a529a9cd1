"""The architecture, tested: the import graph of pase's source against its forbidden arrows.

DESIGN.md ("Repository layout") fixes which part may import which. This test reads every
source file with `ast` (nothing is imported), collects every `import` of a `pase` module,
at module level or inside a function, and fails on each arrow the rules forbid, naming the
file and line. A lazy import inside a function is still an arrow: it only hides it.

    pase.core           imports no other part of pase
    outside the engine  imports the engine only through its one door, the package
                        pase.passes.strategy (its __init__.py), never a submodule
    pase.passes.strategy (the engine) imports only pase.core, itself, and
                        (from_ir.py alone, its one IR reader) the dialects
    pase.runtime        imports only pase.core, pase.dialect.dist and itself
    pase.dialect        imports no pass, frontend, runtime, format, target or tool
    pase.frontend       imports no pass, runtime, format, target or tool
    pase.formats        imports no dialect, frontend, runtime, target or tool
    pase.targets        imports no pass, runtime or tool
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
"""The source tree: its top-level folders install as the subpackages of `pase`."""

PARTS = ("core", "dialect", "frontend", "passes", "formats", "targets", "runtime", "tools")


@dataclass(frozen=True)
class Arrow:
    """`source` (a file) imports `target` (a dotted pase module) at `line`."""

    source: str
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


def module_of(source: str) -> str:
    """`dialect/dnn/graph.py` -> `pase.dialect.dnn.graph`; an `__init__.py` is its package."""
    parts = Path(source).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("pase", *parts))


def arrows(root: Path = ROOT) -> list[Arrow]:
    """Every import of a pase module in the source (not in tests, models or benchmarks)."""
    found = []
    for part in PARTS:
        for path in sorted((root / part).rglob("*.py")):
            source = path.relative_to(root).as_posix()
            module = module_of(source)
            package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), source)):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:  # a relative import, resolved against the package
                        parents = package.split(".")[:len(package.split(".")) - node.level + 1]
                        base = ".".join([*parents, base] if base else parents)
                    # `from pase.dialect import dnn` imports the module pase.dialect.dnn
                    names = [f"{base}.{alias.name}" for alias in node.names]
                else:
                    continue
                found += [Arrow(source, node.lineno, name) for name in names
                          if name == "pase" or name.startswith("pase.")]
    return found


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def engine_submodule(target: str, root: Path = ROOT) -> bool:
    """Whether `target` is a module inside the engine (`pase.passes.strategy.cost`), not
    the package itself or a name it exports (`pase.passes.strategy.solve`)."""
    if not within(target, "pase.passes.strategy") or target == "pase.passes.strategy":
        return False
    first = target.split(".")[3]
    folder = root / "passes" / "strategy"
    return (folder / f"{first}.py").exists() or (folder / first).is_dir()


def forbidden(arrow: Arrow) -> str | None:
    """Why `arrow` must not exist, or None when the rules allow it."""
    source = module_of(arrow.source)
    target = arrow.target
    if within(source, "pase.core"):
        if not within(target, "pase.core"):
            return "the shared vocabulary imports no other part of pase"
    elif within(source, "pase.passes.strategy"):
        reader = source == "pase.passes.strategy.from_ir"
        allowed = ["pase.core", "pase.passes.strategy"] + (["pase.dialect"] if reader else [])
        if not within(target, *allowed):
            return ("the engine imports only pase.core and itself (from_ir.py, its one IR "
                    "reader, the dialects too)")
    elif within(source, "pase.runtime"):
        if not within(target, "pase.core", "pase.dialect.dist", "pase.runtime"):
            return "the runtime imports only pase.core and the dist dialect"
    elif within(source, "pase.dialect"):
        if within(target, "pase.passes", "pase.frontend", "pase.runtime", "pase.formats",
                  "pase.targets", "pase.tools"):
            return "a dialect imports no pass, frontend, runtime, format, target or tool"
    elif within(source, "pase.frontend"):
        if within(target, "pase.passes", "pase.runtime", "pase.formats", "pase.targets",
                  "pase.tools"):
            return "the frontend imports no pass, runtime, format, target or tool"
    elif within(source, "pase.targets"):
        if within(target, "pase.passes", "pase.runtime", "pase.tools"):
            return "a target imports no pass, runtime or tool"
    elif within(source, "pase.formats"):
        if within(target, "pase.dialect", "pase.frontend", "pase.runtime", "pase.targets",
                  "pase.tools"):
            return "a format imports no dialect, frontend, runtime, target or tool"
    if not within(source, "pase.passes.strategy") and engine_submodule(target):
        return ("outside the engine, import only its package pase.passes.strategy, not "
                "its modules")
    return None


def test_the_import_graph_has_no_forbidden_arrow() -> None:
    found = arrows()
    assert len(found) > 50  # the reader sees the source: pase imports itself everywhere
    broken = [f"{arrow}: {reason}" for arrow in found if (reason := forbidden(arrow))]
    assert broken == []


@pytest.mark.parametrize(("source", "target", "reason"), [
    ("core/shapes.py", "pase.dialect.dnn", "the shared vocabulary"),
    ("passes/strategy/cost.py", "pase.dialect.dnn", "the engine imports only"),
    ("passes/strategy/dp.py", "pase.frontend", "the engine imports only"),
    ("runtime/executor.py", "pase.passes.strategy.cost", "the runtime imports only"),
    ("runtime/program.py", "pase.dialect.dnn", "the runtime imports only"),
    ("dialect/dnn/graph.py", "pase.passes.autodiff", "a dialect imports no"),
    ("frontend/__init__.py", "pase.passes.search", "the frontend imports no"),
    ("targets/dnn.py", "pase.passes.search", "a target imports no"),
    ("passes/search.py", "pase.passes.strategy.problem.solve", "outside the engine"),
    ("tools/run_check.py", "pase.passes.strategy.cost", "outside the engine"),
    ("formats/report.py", "pase.passes.strategy.pipeline.plan.PipelinePlan",
     "outside the engine"),
])
def test_each_rule_catches_its_arrow(source: str, target: str, reason: str) -> None:
    message = forbidden(Arrow(source, 1, target))
    assert message is not None
    assert message.startswith(reason)


@pytest.mark.parametrize(("source", "target"), [
    ("passes/strategy/from_ir.py", "pase.dialect.dnn"),
    ("runtime/program.py", "pase.dialect.dist"),
    ("tools/pase_run.py", "pase.runtime.executor"),
    ("passes/search.py", "pase.passes.strategy"),
    ("passes/search.py", "pase.passes.strategy.solve"),
    ("passes/strategy/pipeline/walk.py", "pase.passes.strategy.memory.BoundReached"),
    ("dialect/dist/ops.py", "pase.dialect.dnn"),
])
def test_allowed_arrows_pass(source: str, target: str) -> None:
    assert forbidden(Arrow(source, 1, target)) is None


def test_lazy_relative_and_from_imports_are_arrows(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("from . import shapes\n")
    (tmp_path / "core" / "shapes.py").write_text(
        "import os\nfrom pase.dialect import dnn\n\n\ndef f():\n"
        "    import pase.passes.search\n    from .space import IterDim\n")
    assert [str(arrow) for arrow in arrows(tmp_path)] == [
        "core/__init__.py:1 imports pase.core.shapes",
        "core/shapes.py:2 imports pase.dialect.dnn",
        "core/shapes.py:6 imports pase.passes.search",
        "core/shapes.py:7 imports pase.core.space.IterDim",
    ]
    assert [forbidden(a) is None for a in arrows(tmp_path)] == [True, False, False, True]
