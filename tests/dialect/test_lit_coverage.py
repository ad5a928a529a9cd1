"""DESIGN.md: every op has a round-trip lit test and an `invalid` lit test of its verifier
messages. This lists the ops of the three dialects and, for each, looks through
tests/lit/dialect for

- a round trip: a file whose RUN lines print and parse again (`PASE_ROUNDTRIP`, or
  `pase-opt %s | pase-opt`) with the op written in it (not in a comment), and
- an invalid test: a file run with `--verify-diagnostics` one of whose CHECK lines is a
  verifier message of the op (`error: 'dnn.update' op ...`).

An op added to a dialect without both tests fails here, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pase.dialect.dist import Dist
from pase.dialect.dnn import Dnn

ROOT = Path(__file__).resolve().parents[2]
LIT = ROOT / "tests" / "lit" / "dialect"
OPS = sorted(op.name for dialect in (Dnn, Dist) for op in dialect.operations)


def _files() -> list[tuple[str, str, str]]:
    """(RUN lines, lines that are not comments, CHECK lines) of each dialect lit test."""
    files = []
    for path in sorted(LIT.glob("*.mlir")):
        lines = path.read_text().splitlines()
        files.append((" ".join(line for line in lines if line.startswith("// RUN:")),
                      "\n".join(line for line in lines if not line.lstrip().startswith("//")),
                      "\n".join(line for line in lines if line.startswith("// CHECK"))))
    return files


FILES = _files()


def round_trips(op: str) -> bool:
    written = re.compile(rf"(^|[=\s\"]){re.escape(op)}\b(?![.\w])", re.MULTILINE)
    return any(("PASE_ROUNDTRIP" in runs or "| pase-opt |" in runs) and written.search(body)
               for runs, body, _ in FILES)


def has_invalid_test(op: str) -> bool:
    return any("--verify-diagnostics" in runs and f"error: '{op}' op" in checks
               for runs, _, checks in FILES)


def test_the_ops_are_found():
    assert len(OPS) >= 50
    assert "dnn.update" in OPS
    assert "dist.all_gather" in OPS
    assert not round_trips("dnn.no_such_op")
    assert not has_invalid_test("dnn.no_such_op")


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_a_round_trip_and_an_invalid_lit_test(op: str):
    assert round_trips(op), f"no round-trip lit test in tests/lit/dialect writes {op}"
    assert has_invalid_test(op), f"no lit test in tests/lit/dialect checks a message of {op}"
