"""Every user-visible output on the bundled models, written to a folder to diff between trees.

    .venv/bin/python benchmarks/outputs.py OUT                      # this tree's tools
    .venv/bin/python benchmarks/outputs.py OLD --bin ../old/.venv/bin
    diff -r OLD OUT && echo identical

A refactor that keeps behaviour must keep these bytes: the IR `pase-opt` prints, the
reports on stderr, the strategy and plan JSON, the `-t jax` and `-t dnn` programs, the
lowered SPMD programs and `pase-run`'s tables, for every model of `models/` at
P = 4, 8 and 64, with and without pipeline stages and device-memory caps. Each case is one
file `CASE.out` holding the command's exit status, stdout and stderr (and the files it
exported), with the wall-clock times `pase-run` prints masked. Cases run as child
processes, `--jobs` at a time; `--timeout` bounds each one (a timed-out case says so in
its file, which then differs from a finished one). The models are this tree's, so two
trees are compared on the same input; `--bin` picks the tools (`pase-opt`, `pase-run`).

The caps are chosen from the uncapped outputs so that they bind: 90% of the memory the
unconstrained strategy (or plan) needs, printed with 4 significant digits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from common import MODELS_DIR, positive_float, positive_int, run_main

from pase.core.signals import Terminated, signals_held, signals_raise
from pase.core.usage import UsageParser

MODELS = ["mlp", "alexnet", "rnnlm", "transformer", "gpt2_small", "inception_v3", "resnet101"]
DEVICES = [4, 8, 64]
GIB = 1 << 30
LOWERING = ",pase-scale{factor=0.125},pase-autodiff,pase-lower-spmd"
# pase-run prints how long its runs took: the only numbers that change between runs.
SECONDS = re.compile(r"(\(f(?:32|64)\), )[0-9.]+ s$", re.MULTILINE)


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    arguments: tuple[str, ...]
    exports: tuple[str, ...] = ()
    """Files the command writes (names inside the case's own folder), appended to its output."""


def _spec(pass_name: str, **options: object) -> str:
    words = " ".join(f"{key.replace('_', '-')}={value}" for key, value in options.items())
    return f"{pass_name}{{{words}}}"


def first_cases(model: str, devices: int) -> list[Case]:
    """The uncapped cases of one model and device count."""
    path = str(MODELS_DIR / f"{model}.dnn")
    name = f"{model}-p{devices}"
    cases = [
        Case(f"{name}-search", "pase-opt",
             (path, "-p", _spec("pase-search", devices=devices, report="true",
                                export='"search.json"')), ("search.json",)),
        Case(f"{name}-stages", "pase-opt",
             (path, "-p", _spec("pase-partition-stages", devices=devices, report="true",
                                export='"plan.json"')), ("plan.json",)),
    ]
    if devices == 8:
        cases += [
            Case(f"{name}-v100", "pase-opt",
                 (path, "-p", _spec("pase-search", devices=devices, machine="v100-nvlink",
                                    report="true"))),
            Case(f"{name}-compat", "pase-opt",
                 (path, "-p", _spec("pase-search", devices=devices, compat="pase"))),
            Case(f"{name}-jax", "pase-opt",
                 (path, "-p", _spec("pase-search", devices=devices), "-t", "jax")),
            Case(f"{name}-dnn", "pase-opt",
                 (path, "-p", _spec("pase-search", devices=devices), "-t", "dnn")),
            Case(f"{name}-pipeline-jax", "pase-opt",
                 (path, "-p", _spec("pase-partition-stages", devices=devices, stages=2,
                                    microbatches=2), "-t", "jax")),
            Case(f"{name}-stages-gpipe", "pase-opt",
                 (path, "-p", _spec("pase-partition-stages", devices=devices, stages=2,
                                    microbatches=4, schedule="gpipe", report="true"))),
        ]
    if model in ("mlp", "alexnet", "transformer") and devices in (4, 8):
        cases += [
            Case(f"{name}-spmd", "pase-opt",
                 (path, "-p", _spec("pase-search", devices=devices) + LOWERING)),
            Case(f"{name}-spmd-pipeline", "pase-opt",
                 (path, "-p", _spec("pase-partition-stages", devices=devices, stages=2,
                                    microbatches=2) + LOWERING)),
            Case(f"{name}-run", "pase-run",
                 (path, "--devices", str(devices), "--scale", "0.125", "--steps", "2",
                  "--check")),
            Case(f"{name}-run-stages", "pase-run",
                 (path, "--devices", str(devices), "--scale", "0.125", "--steps", "1",
                  "--stages", "2", "--microbatches", "2", "--check")),
        ]
    return cases


KINDS = (("search", "pase-search", "search.json"),
         ("stages", "pase-partition-stages", "plan.json"))
LEAST = re.compile(r"the least memory any (?:strategy|plan) needs is ([0-9.e+-]+) GiB")


def capped_cases(model: str, devices: int, out: Path) -> list[Case]:
    """Caps at 90% of what the uncapped strategy and plan of `first_cases` need."""
    cases = []
    for kind, pass_name, exported in KINDS:
        memory = _exported_memory(out / f"{model}-p{devices}-{kind}" / exported)
        if memory is not None:
            cases.append(_capped(model, devices, kind, pass_name, f"{0.9 * memory / GIB:.4g}"))
    return cases


def least_cases(model: str, devices: int, out: Path) -> list[Case]:
    """Where a 90% cap has no plan, the least memory the error names: a cap that binds."""
    cases = []
    for kind, pass_name, _ in KINDS:
        try:
            text = (out / f"{model}-p{devices}-{kind}-cap.out").read_text()
        except OSError:
            continue
        if least := LEAST.search(text):
            cases.append(_capped(model, devices, kind, pass_name, least.group(1), "-least"))
    return cases


def _capped(model: str, devices: int, kind: str, pass_name: str, cap: str,
            suffix: str = "") -> Case:
    return Case(f"{model}-p{devices}-{kind}-cap{suffix}", "pase-opt",
                (str(MODELS_DIR / f"{model}.dnn"), "-p",
                 _spec(pass_name, devices=devices, report="true", device_memory_gib=cap)))


def _exported_memory(path: Path) -> float | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and "pipeline" in data:
        return float(data["pipeline"]["memory"])
    if isinstance(data, dict) and isinstance(data.get("memory"), dict):
        return float(data["memory"]["per_device"])
    return None


class Children:
    """The cases' processes running now; `stop()` ends them (SIGTERM: each tool removes its
    temporaries and exits) and lets no new one start."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[str]] = set()
        self.stopped = False

    def communicate(self, command: list[str], folder: Path,
                    timeout: float) -> tuple[int, str, str] | None:
        """Run `command` in `folder`: its status, stdout and stderr; None if it timed out."""
        with self.lock:
            if self.stopped:
                raise RuntimeError("stopped")
            process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True,
                                       env={**os.environ, "COLUMNS": "100"})
            self.running.add(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            return process.returncode, stdout, stderr
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
        finally:
            with self.lock:
                self.running.discard(process)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for process in self.running:
                process.terminate()


CHILDREN = Children()


def run(case: Case, tools: Path, out: Path, timeout: float) -> tuple[str, float]:
    """Run one case in its own folder under `out`, write `CASE.out`; its name and seconds."""
    folder = out / case.name
    folder.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    done = CHILDREN.communicate([str(tools / case.tool), *case.arguments], folder, timeout)
    if done is None:
        text = f"timed out after {timeout:g} s\n"
    else:
        text = f"exit {done[0]}\n--- stdout\n{done[1]}--- stderr\n{done[2]}"
    text = SECONDS.sub(r"\1<time> s", text)
    for exported in case.exports:
        exported_path = folder / exported
        body = exported_path.read_text() if exported_path.exists() else "(not written)\n"
        text += f"--- {exported}\n{body}"
    # Paths of this run's folders would differ between runs: name them relatively.
    text = text.replace(str(MODELS_DIR), "models").replace(str(folder), ".")
    (out / f"{case.name}.out").write_text(text)
    return case.name, time.monotonic() - start


def main() -> None:
    parser = UsageParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the folder to write (made if missing)")
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent,
                        help="the folder holding pase-opt and pase-run (default: this "
                             "Python's)")
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--devices", nargs="+", type=positive_int, default=DEVICES)
    parser.add_argument("--jobs", type=positive_int, default=2, help="cases at a time (default 2)")
    parser.add_argument("--timeout", type=positive_float, default=900,
                        help="seconds per case (default 900)")
    parser.add_argument("--no-caps", action="store_true", help="skip the capped cases")
    arguments = parser.parse_args()
    missing = [tool for tool in ("pase-opt", "pase-run")
               if not os.access(arguments.bin / tool, os.X_OK)]
    if missing:
        parser.error(f"--bin {arguments.bin}: no {' and no '.join(missing)} to run there")
    out: Path = arguments.out.resolve()
    if out.exists() and not out.is_dir():
        parser.error(f"{arguments.out} is a file, not a folder to write the outputs in")
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"cannot make the folder {arguments.out}: {error.strerror}")
    # The cases write to a folder beside `out`, moved into it when all are done: a run
    # cut short (an error, Ctrl-C, SIGTERM) leaves `out` as it was and no process behind.
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    finished = False
    try:
        with signals_raise():
            count, seconds = run_waves(arguments, staging)
            with signals_held():
                move_into(staging, out, parser)
            finished = True
    except Terminated as terminated:
        sys.exit(terminated.exit_status)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if made and not finished:
            with contextlib.suppress(OSError):
                out.rmdir()
    print(f"{count} cases in {seconds:.0f} s -> {out}", file=sys.stderr)


def move_into(staging: Path, out: Path, parser: argparse.ArgumentParser) -> None:
    """Move every output of `staging` into `out`, replacing those of an earlier run."""
    entries = sorted(staging.iterdir())
    for entry in entries:
        target = out / entry.name
        if target.is_dir() != entry.is_dir() and target.exists():
            parser.error(f"{target} is in the way of an output of another kind")
    for entry in entries:
        target = out / entry.name
        if target.is_dir():
            shutil.rmtree(target)
        entry.replace(target)


def run_waves(arguments: argparse.Namespace, out: Path) -> tuple[int, float]:
    """Run every case into `out`, `--jobs` at a time: the count of cases and the seconds."""
    tools = arguments.bin.resolve()
    pairs = [(model, devices) for model in arguments.models for devices in arguments.devices]
    # Each wave's caps are read from the outputs of the wave before.
    waves = [first_cases] + ([] if arguments.no_caps else [capped_cases, least_cases])
    start = time.monotonic()
    count = 0
    for wave in waves:
        cases = [case for model, devices in pairs
                 for case in (wave(model, devices) if wave is first_cases
                              else wave(model, devices, out))]
        count += len(cases)
        pool = ThreadPoolExecutor(arguments.jobs)
        try:
            for name, seconds in pool.map(lambda case: run(case, tools, out,
                                                           arguments.timeout), cases):
                print(f"{name:40} {seconds:8.1f} s", file=sys.stderr, flush=True)
        except BaseException:
            CHILDREN.stop()  # or the pool would wait for every running case to finish
            raise
        finally:
            pool.shutdown(cancel_futures=True)
    return count, time.monotonic() - start


if __name__ == "__main__":
    run_main(main)
