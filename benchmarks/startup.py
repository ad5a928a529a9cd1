"""How long `pase-opt` takes as a whole process, start-up included, as a user runs it.

    .venv/bin/python benchmarks/startup.py                 # best of 7 runs per case
    .venv/bin/python benchmarks/startup.py --runs 15 --imports 20

Each case runs `--runs` times with its output discarded; the table shows the best and the
median wall-clock time of the whole process (`time.perf_counter` around `subprocess.run`)
and its least CPU time (user + system), which other work on the host disturbs less than
the wall-clock. `pase-opt` is the entry point installed next to this interpreter. The cases:

- `python -c pass`: the interpreter alone (with `site` and the editable install's hook);
- numpy + xDSL's driver: only importing the libraries every search needs (`numpy`,
  `xdsl.xdsl_opt_main`, which loads `xdsl.dialects.builtin`), the floor under the searches;
- `pase-opt --version`: pase-opt's own imports and argument parser, no input;
- `pase-search` on mlp and AlexNet at P=8 and InceptionV3 at P=64: the whole run.

Then one `-X importtime` run of the mlp case: the import time per top-level package (summed
over its modules' own times) and the slowest modules by their own time. Python writes no
bytecode cache where `PYTHONDONTWRITEBYTECODE` is set, and then compiles every pase module
from source on every run unless a cache exists, so the header says which holds.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from common import MODELS_DIR, cpus, markdown_table, positive_int, run_main, versions

from pase.core.usage import UsageParser

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    name: str
    command: tuple[str, ...]


def main() -> None:
    parser = UsageParser(
        description="Measure pase-opt's whole-process time (wall-clock best and median, "
        "least CPU time, of --runs runs) on the start-up cases of issue 13, and where the "
        "import time of one mlp run goes.")
    parser.add_argument("--runs", type=positive_int, default=7,
                        help="runs per case; the table shows the best and the median "
                        "(default: 7)")
    parser.add_argument("--imports", type=positive_int, default=12,
                        help="how many of the slowest modules to list (default: 12)")
    args = parser.parse_args()
    driver = pase_opt_command()
    search = ("-p", "pase-search{devices=8}")
    cases = [
        Case("python -c pass", (sys.executable, "-c", "pass")),
        Case("numpy + xDSL's driver", (sys.executable, "-c",
                                       "import numpy, xdsl.xdsl_opt_main")),
        Case("pase-opt --version", (*driver, "--version")),
        Case("mlp P=8", (*driver, str(MODELS_DIR / "mlp.dnn"), *search)),
        Case("alexnet P=8", (*driver, str(MODELS_DIR / "alexnet.dnn"), *search)),
        Case("inception_v3 P=64", (*driver, str(MODELS_DIR / "inception_v3.dnn"),
                                   "-p", "pase-search{devices=64}")),
    ]
    load_before = os.getloadavg()[0]
    rows = []
    for case in cases:
        walls, cpus_used = zip(*(run_once(case.command) for _ in range(args.runs)), strict=True)
        rows.append([case.name, f"{min(walls):.3f}", f"{statistics.median(walls):.3f}",
                     f"{min(cpus_used):.3f}"])
    load_after = os.getloadavg()[0]
    print(f"Host: {cpus()}, {versions()}; load average {load_before:.1f} before the runs, "
          f"{load_after:.1f} after. {bytecode_state()}")
    print()
    print("\n".join(markdown_table((("case", "<"), (f"wall, best of {args.runs} (s)", ">"),
                                    ("wall, median (s)", ">"), ("CPU, best (s)", ">")),
                                   rows)))
    print()
    print(import_profile(cases[3], args.imports))


def pase_opt_command() -> tuple[str, ...]:
    """The `pase-opt` script installed next to this interpreter, run by it."""
    script = Path(sys.executable).parent / "pase-opt"
    if script.is_file():
        return (sys.executable, str(script))
    return (sys.executable, "-c", "from pase.tools.pase_opt import main; main()")


def run_once(command: tuple[str, ...]) -> tuple[float, float]:
    """The wall-clock and the CPU time (user + system) of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def bytecode_state() -> str:
    cached = Path(importlib.util.cache_from_source(str(ROOT / "tools" / "pase_opt.py")))
    writes = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    return (f"pase's bytecode cache: {'present' if cached.is_file() else 'absent'} "
            f"(PYTHONDONTWRITEBYTECODE {'set' if writes == 'not written' else 'unset'}: "
            f"new caches {writes}).")


def import_profile(case: Case, slowest: int) -> str:
    """One run under `-X importtime`: seconds per top-level package, and the slowest modules."""
    result = subprocess.run((case.command[0], "-X", "importtime", *case.command[1:]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            check=True)
    own: dict[str, int] = {}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_part, _, module = line.split("|")
        own[module.strip()] = int(self_part.split(":")[1])
    by_package: dict[str, int] = defaultdict(int)
    for module, microseconds in own.items():
        top = module.split(".")[0]
        by_package[top if top in ("pase", "xdsl", "numpy", "lark", "llvmlite") else
                   "other (stdlib, site, ...)"] += microseconds
    total = sum(own.values())
    package_rows = [[package, f"{microseconds / 1e6:.3f}"]
                    for package, microseconds in sorted(by_package.items(),
                                                        key=lambda item: -item[1])]
    package_rows.append(["all imports", f"{total / 1e6:.3f}"])
    module_rows = [[module, f"{microseconds / 1e6:.3f}"]
                   for module, microseconds in sorted(own.items(),
                                                      key=lambda item: -item[1])[:slowest]]
    return "\n".join([f"Imports of one {case.name} run (`-X importtime`, which slows them):",
                      "", *markdown_table((("package", "<"), ("own time (s)", ">")),
                                          package_rows),
                      "", *markdown_table((("module", "<"), ("own time (s)", ">")),
                                          module_rows)])


if __name__ == "__main__":
    run_main(main)
