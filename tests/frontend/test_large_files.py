"""Large `.dnn` files: memory linear with a small constant, a syntax error found in little.

The parser first checks the syntax building nothing, then builds each statement's op as it
reduces it (`dnn._Streaming`), so no tree of the whole file exists; memory is measured with
tracemalloc (Python's own allocations, the same on every host), never time.
"""

from __future__ import annotations

import signal

import pytest

from pase.core import signals
from pase.core.diagnostics import Diagnostic
from pase.frontend import parse_text
from pase.frontend.dnn import BYTES_PER_OPERAND, BYTES_PER_STATEMENT, DEFAULT_MEMORY_GIB
from tests.traced import traced

STATEMENTS = 1500
KIB = 1024


def chain(statements: int, last: str = "") -> str:
    """A graph of `statements` layers in a chain; `last` is appended to its return."""
    lines = ["graph @big(b = 64, d = 256) {", "  %x = input [b, d]"]
    previous = "x"
    for i in range(statements):
        lines.append(f"  %v{i} = add %{previous}, %x" if i % 2 else f"  %v{i} = relu %{previous}")
        previous = f"v{i}"
    return "\n".join([*lines, f"  return %{previous}{last}", "}"]) + "\n"


def traced_peak(text: str, memory_gib: float = DEFAULT_MEMORY_GIB
                ) -> tuple[int, Diagnostic | None]:
    """The most memory `parse_text(text)` held at once, and its diagnostic if any."""
    return traced(lambda: parse_text(text, "big.dnn", memory_gib))


def test_a_syntax_error_on_the_last_line_is_located_with_little_memory() -> None:
    peak, error = traced_peak(chain(STATEMENTS, " )"))
    assert error is not None
    assert str(error).startswith(f"big.dnn:{STATEMENTS + 3}:17: error: unexpected ')'")
    # A tree of the whole file held 2.5 KiB per statement; the ops built so far, 1.4; the
    # syntax check builds nothing (measured: 72 bytes a statement here, mostly fixed cost).
    assert peak < KIB // 4 * STATEMENTS


def test_a_valid_file_takes_linear_memory_with_a_small_constant() -> None:
    peak, error = traced_peak(chain(STATEMENTS))
    assert error is None
    # The tree and the IR together held 5.2 KiB per statement; the IR alone, about 2.1.
    assert peak < 3 * KIB * STATEMENTS
    # ...which the memory budget's estimate does not undercount
    assert peak < BYTES_PER_STATEMENT * (STATEMENTS + 2)


def test_a_file_whose_ir_is_over_the_memory_budget_is_refused_before_it_is_built() -> None:
    """The parse is bounded by its memory budget: a million statements took 2.3 GB that
    nothing counted. The syntax check counts the statements and operands; past the budget
    the parse stops there, having built nothing."""
    needed = (STATEMENTS + 2) * BYTES_PER_STATEMENT + (STATEMENTS * 3 // 2) * BYTES_PER_OPERAND
    peak, error = traced_peak(chain(STATEMENTS), memory_gib=(needed - 1) / (1 << 30))
    assert str(error) == (f"big.dnn: error: the IR of the file's {STATEMENTS + 2:,} "
                          f"statements takes about {needed:,} bytes, over the memory budget "
                          f"of {needed - 1:,} bytes; raise it with -f 'dnn{{memory-gib=G}}'")
    assert peak < KIB // 4 * STATEMENTS
    assert traced_peak(chain(STATEMENTS), memory_gib=needed / (1 << 30))[1] is None


def test_a_signal_python_dropped_stops_the_parse_at_the_next_statement() -> None:
    """A SIGTERM whose `Terminated` Python dropped (raised inside a garbage collector's
    callback) is in `core.signals._received`; the parse stops at its next statement
    (it went on through the whole file, and the passes after it, before)."""
    text = chain(2_000)
    with signals.signals_raise():
        signals._received.append(signal.SIGTERM)
        calls = 0
        real = signals.raise_if_received

        def counted() -> None:
            nonlocal calls
            calls += 1
            real()

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("pase.frontend.dnn.raise_if_received", counted)
            with pytest.raises(signals.Terminated):
                parse_text(text)
    assert calls == 1
