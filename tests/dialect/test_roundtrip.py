"""Property: printing is a fixed point of print -> parse -> print, in custom and generic form.

Checked for every model in models/, every `.dnn` input of the foundation's lit tests that
is meant to parse, and every chunk of the dialect round-trip lit tests. The inputs are globbed at
collection time, so a model added later is covered; a model that does not parse fails.
"""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.shard import Shard
from xdsl.parser import Parser
from xdsl.printer import Printer

from pase.dialect.dist import Dist
from pase.dialect.dnn import Dnn
from pase.dialect.pase import Pase
from pase.frontend import parse_file, parse_text

ROOT = Path(__file__).resolve().parents[2]
LIT = ROOT / "tests" / "lit"


def _failing_inputs() -> set[str]:
    """Inputs that lit tests expect pase-opt to reject (`not pase-opt`, no pass pipeline, no
    target: a usage error such as `-t x86-asm` says nothing of its input)."""
    names: set[str] = set()
    for test in LIT.rglob("*"):
        if test.suffix not in (".mlir", ".dnn") or not test.is_file() or "Output" in test.parts:
            continue  # lit's Output/ holds what the tests generate, some of it not UTF-8
        for line in test.read_text().splitlines():
            if (line.startswith("// RUN:") and "not pase-opt" in line and " -p " not in line
                    and " -t " not in line):
                # Commands chained before the last `&&` prepare the run (a copy of an
                # input under another name); the rejected input is in the last one.
                names.update(re.findall(r"%S/Inputs/([\w.-]+)", line.split("&&")[-1]))
    return names


def _expects_errors(path: Path) -> bool:
    runs = [line for line in path.read_text().splitlines() if line.startswith("// RUN:")]
    if path.parent.name == "Inputs":
        return path.name in _failing_inputs()
    # A test of diagnostics shows them: `not pase-opt %s 2>&1`, or --parsing-diagnostics.
    return any("not pase-opt %s 2>&1" in run or "--parsing-diagnostics" in run for run in runs)


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


MODELS = sorted((ROOT / "models").glob("*.dnn"))
# The .dnn inputs of the foundation's lit tests (the frontend, the driver, the first pass).
_FOUNDATION = [*(LIT / "frontend").rglob("*.dnn"), *(LIT / "tools").rglob("*.dnn"),
               LIT / "passes" / "pase-annotate-configs.dnn"]
# lit's Output/ folders hold what RUN lines generate (tests/lit/tools/nesting.mlir writes
# a deliberately invalid .dnn there), not inputs.
DNN_INPUTS = sorted(p for p in _FOUNDATION
                    if "Output" not in p.relative_to(LIT).parts and not _expects_errors(p))
MLIR_CHUNKS = [
    pytest.param(path, index, id=f"{relative(path)}#{index}")
    for path in sorted((LIT / "dialect").glob("*.mlir"))
    if "PASE_ROUNDTRIP" in path.read_text()
    for index, _ in enumerate(path.read_text().split("// -----"))
]


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Dnn, Pase, Dist, Shard):
        ctx.load_dialect(dialect)
    return ctx


def print_module(module: ModuleOp, generic: bool) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def parse_module(text: str) -> ModuleOp:
    module = Parser(context(), text, "roundtrip").parse_module()
    module.verify()
    return module


def assert_fixed_point(module: ModuleOp) -> None:
    custom = print_module(module, generic=False)
    generic = print_module(module, generic=True)
    assert print_module(parse_module(custom), generic=False) == custom
    assert print_module(parse_module(generic), generic=True) == generic
    # Both forms describe the same module.
    assert print_module(parse_module(generic), generic=False) == custom
    assert print_module(parse_module(custom), generic=True) == generic


def test_inputs_are_found():
    assert len(DNN_INPUTS) >= 5
    assert LIT / "frontend" / "ops.dnn" in DNN_INPUTS
    assert LIT / "tools" / "output-file.dnn" in DNN_INPUTS
    assert LIT / "frontend" / "errors.dnn" not in DNN_INPUTS
    assert not any("diagnostics" in p.parts for p in DNN_INPUTS)
    assert LIT / "tools" / "Inputs" / "tiny.dnn" in DNN_INPUTS
    assert LIT / "tools" / "Inputs" / "undefined-value.dnn" not in DNN_INPUTS


@pytest.mark.parametrize("path", MODELS, ids=relative)
def test_models_round_trip(path: Path):
    assert_fixed_point(parse_file(str(path)))


@pytest.mark.parametrize("path", DNN_INPUTS, ids=relative)
def test_lit_dnn_inputs_round_trip(path: Path):
    chunks = path.read_text().split("// -----") if "--split-input-file" in path.read_text() \
        else [path.read_text()]
    for chunk in chunks:
        assert_fixed_point(parse_text(chunk, str(path)))


@pytest.mark.parametrize(("path", "index"), MLIR_CHUNKS)
def test_lit_mlir_round_trip(path: Path, index: int):
    chunk = path.read_text().split("// -----")[index]
    assert_fixed_point(parse_module(chunk))
