"""Large `.mlir` files: the IR's memory is bounded as `.dnn`'s is (`-f 'mlir{memory-gib=G}'`,
default 4 GiB), each token counted as the parser reads it. The estimate charges each token
`BYTES_PER_TOKEN`; memory is measured with tracemalloc (Python's own allocations, the same
on every host), never time."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.utils.exceptions import ParseError

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


def test_a_file_over_the_memory_budget_is_refused_once_its_ir_reaches_the_budget() -> None:
    """The parse was unbounded: only the file's size (256 MiB) was, and a file of that
    size builds some 20 GiB of IR. Each token is counted as the parser reads it: the parse
    stops at the first one over the budget, with no more IR than the budget built."""
    text = "".join(FORMS["one result"](i) for i in range(OPS))
    tokens = count_tokens(text, "big.mlir")
    needed = tokens * BYTES_PER_TOKEN
    peak, error = traced_peak(text, memory_gib=(needed - 1) / (1 << 30))
    assert str(error) == (f"big.mlir: error: the IR of the file's first {tokens:,} tokens "
                          f"takes about {needed:,} bytes, over the memory budget of "
                          f"{needed - 1:,} bytes; raise it with -f 'mlir{{memory-gib=G}}'")
    assert peak < needed + 8 * len(text)  # the IR of the tokens read, the text and its bytes
    assert traced_peak(text, memory_gib=needed / (1 << 30))[1] is None
    peak, error = traced_peak(text, memory_gib=(needed // 2 - 1) / (1 << 30))
    assert f"first {tokens // 2:,} tokens" in str(error)
    assert peak < needed // 2 + 8 * len(text)


# Forms the parser reads some tokens of twice (a shape's dims, an affine map, a dense
# attribute): each is counted once, as `count_tokens` counts them.
REREAD = {
    "dims": '"a.b"() : () -> tensor<2x3x?xf32>\n',
    "affine": '"a.b"() {m = affine_map<(d0, d1)[s0] -> (d0 + s0, d1 * 2)>} : () -> ()\n',
    "dense": '"a.b"() {d = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>} : () -> ()\n',
    "strings": '"a.b"() {s = "x // y", t = [1 : i64, 2.5 : f32]} : () -> memref<4xf32>\n',
}


@pytest.mark.parametrize("form", REREAD)
def test_the_parse_counts_each_token_once(form: str) -> None:
    text = REREAD[form] * 3
    tokens = count_tokens(text, "big.mlir")
    needed = tokens * BYTES_PER_TOKEN
    assert traced_peak(text, memory_gib=needed / (1 << 30))[1] is None
    error = traced_peak(text, memory_gib=(needed - 1) / (1 << 30))[1]
    assert f"the IR of the file's first {tokens:,} tokens" in str(error)


def test_an_error_early_in_a_file_over_the_budget_comes_first() -> None:
    """The whole file's tokens were counted before its first op was read: a file over the
    budget was refused as such, however early its error (a 19 MB file with a bad first
    op took 44 s of CPU to say so, 3 s before the budget). Now the error is found first."""
    text = '"a.b"() : () -> (i32\n' + FORMS["no operand"](0) * OPS
    context: Context = _context()
    context.allow_unregistered = True
    limit = count_tokens(text, "big.mlir") * BYTES_PER_TOKEN // 2 / (1 << 30)
    with pytest.raises(ParseError) as error:
        LocatedMlirFrontend(memory_gib=limit).parse(context, BytesIO(text.encode()), "big.mlir")
    assert error.value.span.start == text.index("\n") + 1  # the next line's first token


def test_pase_opt_takes_the_budget_as_an_option_of_f_mlir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "m.mlir"
    source.write_text('"a.b"() : () -> ()\n')
    base = [str(source), "--allow-unregistered-dialect"]
    assert run_tool(pase_opt, [*base, "-f", "mlir{memory-gib=1e-6}"], capsys) == (
        1, "", f"{source}: error: the IR of the file's first 5 tokens takes about 1,280 bytes, "
               "over the memory budget of 1,073 bytes; raise it with -f 'mlir{memory-gib=G}'\n")
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
