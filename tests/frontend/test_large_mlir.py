"""Large `.mlir` files: the IR's memory is bounded before any op is built, as `.dnn`'s is
(`-f 'mlir{memory-gib=G}'`, default 4 GiB). The estimate charges each token
`BYTES_PER_TOKEN`; memory is measured with tracemalloc (Python's own allocations, the same
on every host), never time."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest
from xdsl.context import Context

from pase.core.diagnostics import Diagnostic
from pase.frontend.mlir import BYTES_PER_TOKEN, LocatedMlirFrontend, count_tokens
from pase.tools.pase_opt import main as pase_opt
from pase.tools.run.load import _context
from tests.cli import run_tool
from tests.traced import traced

OPS = 600
# The forms of the most IR a token (measured: 168, 193, 123 and 110 bytes a token).
FORMS = {
    "no operand": lambda i: '"a.b"() : () -> ()\n',
    "one result": lambda i: f'%v{i} = "a.b"() : () -> i32\n',
    "a region": lambda i: '"a.b"() ({\n}) : () -> ()\n',
    # 378 bytes a token when the lexer's one word of the dims counted once
    "a shape of 30 dims": lambda i: f'"a.b"() : () -> tensor<{"x".join(["2"] * 30)}xf32>\n',
}


def traced_peak(text: str, memory_gib: float = 4.0) -> tuple[int, Diagnostic | None]:
    """The most memory the parse of `text` held at once, and its diagnostic if any."""
    context: Context = _context()
    context.allow_unregistered = True
    frontend = LocatedMlirFrontend(memory_gib=memory_gib)
    return traced(lambda: frontend.parse(context, BytesIO(text.encode()), "big.mlir"))


@pytest.mark.parametrize("form", FORMS)
def test_the_estimate_does_not_undercount_the_ir(form: str) -> None:
    text = "".join(FORMS[form](i) for i in range(OPS))
    peak, error = traced_peak(text)
    assert error is None
    assert peak < BYTES_PER_TOKEN * count_tokens(text, "big.mlir")


def test_a_file_over_the_memory_budget_is_refused_before_it_is_built() -> None:
    """The parse was unbounded: only the file's size (256 MiB) was, and a file of that
    size builds some 20 GiB of IR. Now the tokens are counted first, building nothing."""
    text = "".join(FORMS["one result"](i) for i in range(OPS))
    tokens = count_tokens(text, "big.mlir")
    needed = tokens * BYTES_PER_TOKEN
    peak, error = traced_peak(text, memory_gib=(needed - 1) / (1 << 30))
    assert str(error) == (f"big.mlir: error: the IR of the file's {tokens:,} tokens takes "
                          f"about {needed:,} bytes, over the memory budget of {needed - 1:,} "
                          "bytes; raise it with -f 'mlir{memory-gib=G}'")
    assert peak < 8 * len(text)  # the text, its bytes, and the lexer's tokens one at a time
    assert traced_peak(text, memory_gib=needed / (1 << 30))[1] is None


def test_pase_opt_takes_the_budget_as_an_option_of_f_mlir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "m.mlir"
    source.write_text('"a.b"() : () -> ()\n')
    base = [str(source), "--allow-unregistered-dialect"]
    assert run_tool(pase_opt, [*base, "-f", "mlir{memory-gib=1e-6}"], capsys) == (
        1, "", f"{source}: error: the IR of the file's 9 tokens takes about 2,304 bytes, over "
               "the memory budget of 1,073 bytes; raise it with -f 'mlir{memory-gib=G}'\n")
    status, out, _ = run_tool(pase_opt, [*base, "-f", "mlir{memory-gib=1}"], capsys)
    assert (status, out.count('"a.b"()')) == (0, 1)
    for option, message in (
            ("memory-gib=0", f"{source}: error: memory-gib must be a finite number above 0, "
                             "got 0.0 (-f 'mlir{memory-gib=G}')\n"),
            ("devices=4", "pase-opt: error: -f mlir: unknown option 'devices'; its options "
                          "are memory-gib\n")):
        assert run_tool(pase_opt, [*base, "-f", f"mlir{{{option}}}"], capsys) == (
            1, "", message)
    status, out, _ = run_tool(pase_opt, ["--help"], capsys)
    assert "-f 'mlir{memory-gib=4}'" in out
