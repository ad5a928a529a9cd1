"""Whether the memory budget bounds the process, and how large files parse.

    .venv/bin/python benchmarks/budgets.py                      # every case
    .venv/bin/python benchmarks/budgets.py --statements 20000   # smaller generated files

Each case runs `pase-opt` in a child process of its own; its peak RSS is the child's
`ru_maxrss` (`os.wait4`) and its time the wall clock around it. The budget cases are
issue 15's: a model on P devices under `pase-search{memory-gib=G}`, and one 8-dim einsum
whose configuration space is counted, not listed, before it is refused. The baseline is
`pase-opt` parsing and searching a one-layer graph (interpreter, imports, parsed module):
a budgeted case should peak under baseline + budget. The file cases are generated in a
temporary folder: a valid `.dnn` of `--statements` statements, the same with a syntax
error on its last line, and the valid one printed as `.mlir` and read back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import (
    BASELINE_GRAPH,
    MODELS_DIR,
    cpus,
    markdown_table,
    positive_float,
    positive_int,
    run_main,
    versions,
)

from pase.core.usage import UsageParser

PASE_OPT = str(Path(sys.executable).parent / "pase-opt")
MIB = 1 << 20

EIGHT_DIMS = """\
graph @wide(a = 64, b = 64, c = 64, d = 64, e = 64, f = 64, g = 64, h = 64) {
  %x = input [a, b, c, d]
  %w = param [e, f, g, h]
  %y = einsum %x, %w -> [a, b, c, d, e, f, g, h]
  return %y
}
"""

# (model, devices, memory-gib): the cases of issue 15 item 9, and two that fit.
BUDGET_CASES = (("alexnet", 8192, 0.6), ("gpt2_small", 1024, 0.35),
                ("gpt2_small", 8192, 3.05), ("inception_v3", 8192, 1.0),
                ("alexnet", 1024, 0.5), ("alexnet", 8192, 2.5))

COLUMNS = (("case", "<"), ("budget (MiB)", ">"), ("peak RSS (MiB)", ">"),
           ("above baseline (MiB)", ">"), ("time (s)", ">"), ("exit", ">"), ("outcome", "<"))


@dataclass(frozen=True)
class Measured:
    peak: int
    seconds: float
    status: int
    stderr: str

    def outcome(self) -> str:
        """The last line of the child's stderr (its diagnostic), or "ok"."""
        lines = [line for line in self.stderr.splitlines()
                 if line and not line.startswith("pase-search: [")]
        if self.status == 0:
            return "ok"
        if self.status == -9:
            return "killed at the timeout"
        return lines[0][:110] if lines else f"exit {self.status}"


def measure(args: list[str], timeout: float, cwd: Path | None = None) -> Measured:
    """Run `pase-opt args` in a child (in `cwd`); its peak RSS (bytes), wall time and exit
    status (-9 when it was killed after `timeout` seconds)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen([PASE_OPT, *args, "-o", os.devnull], stderr=stderr,
                                 stdout=subprocess.DEVNULL, cwd=cwd)
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                child.kill()
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        text = stderr.read()
    return Measured(usage.ru_maxrss * 1024, seconds, child.returncode, text)


def row(name: str, budget: int | None, result: Measured, baseline: int) -> list[str]:
    return [name, f"{budget / MIB:,.0f}" if budget else "-", f"{result.peak / MIB:,.0f}",
            f"{(result.peak - baseline) / MIB:,.0f}", f"{result.seconds:.1f}",
            str(result.status), result.outcome()]


def write_files(folder: Path, statements: int) -> tuple[Path, Path, Path]:
    """A valid chain of `statements` layers, the same with a syntax error on its last
    line, and the valid one printed as IR (by pase-opt)."""
    lines = ["graph @big(b = 64, d = 256) {", "  %x = input [b, d]"]
    previous = "x"
    for i in range(statements):
        lines.append(f"  %v{i} = add %{previous}, %x" if i % 2 else f"  %v{i} = relu %{previous}")
        previous = f"v{i}"
    valid, broken, ir = folder / "big.dnn", folder / "broken.dnn", folder / "big.mlir"
    valid.write_text("\n".join([*lines, f"  return %{previous}", "}"]) + "\n")
    broken.write_text("\n".join([*lines, f"  return %{previous} )", "}"]) + "\n")
    subprocess.run([PASE_OPT, str(valid), "-o", str(ir)], check=True)
    return valid, broken, ir


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=positive_int, default=200_000,
                        help="statements of the generated files (default 200,000: 5 MB)")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="seconds before a case is killed (default 300)")
    parser.add_argument("--skip-files", action="store_true", help="only the budget cases")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "baseline.dnn").write_text(BASELINE_GRAPH)
        (base / "wide.dnn").write_text(EIGHT_DIMS)
        baseline = measure([str(base / "baseline.dnn"), "-p", "pase-search{devices=4}"],
                           args.timeout)
        rows.append(row("baseline: one einsum, P=4", None, baseline, baseline.peak))
        for model, devices, gib in BUDGET_CASES:
            budget = int(gib * (1 << 30))
            result = measure([str(MODELS_DIR / f"{model}.dnn"), "-p",
                              f"pase-search{{devices={devices} memory-gib={gib}}}"],
                             args.timeout)
            rows.append(row(f"{model} P={devices} memory-gib={gib}", budget, result,
                            baseline.peak))
        result = measure([str(base / "wide.dnn"), "-p",
                          "pase-search{devices=8192 min-shard=1 memory-gib=0.004}"],
                         args.timeout)
        rows.append(row("8-dim einsum P=8192 min-shard=1 memory-gib=0.004", 4 << 20, result,
                        baseline.peak))
        if not args.skip_files:
            valid, broken, ir = write_files(base, args.statements)
            for name, path in ((f"valid .dnn, {args.statements:,} statements", valid),
                               ("the same, syntax error on the last line", broken),
                               ("the valid one as .mlir", ir)):
                size = path.stat().st_size / MIB
                rows.append(row(f"{name} ({size:.1f} MiB)", None,
                                measure([path.name], args.timeout, base), baseline.peak))
    print(f"Host: {cpus()}; {versions()}; load average {os.getloadavg()[0]:.2f}")
    print()
    print("\n".join(markdown_table(COLUMNS, rows)))


if __name__ == "__main__":
    run_main(main)
