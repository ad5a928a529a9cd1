"""Running the tools as processes, and watching the processes they start, from tests.

    tool = start("pase-run", ["models/mlp.dnn", "--devices", "2", "--backend", "processes"])
    workers = wait_for(lambda: workers_of(tool.pid, 2))    # polls; fails after a minute
    tool.send_signal(signal.SIGTERM)

Everything is polled against a deadline, never slept on: CI is a loaded machine.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
MAINS = {"pase-opt": "pase.tools.pase_opt", "pase-run": "pase.tools.pase_run"}
DEADLINE_SECONDS = 60.0

T = TypeVar("T")


def command(tool: str, args: list[str]) -> list[str]:
    """The command line that runs `tool` (pase-opt or pase-run) with `args`."""
    return [sys.executable, "-c", f"from {MAINS[tool]} import main; main()", *args]


def start(tool: str, args: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """`tool` started with `args`; stdout and stderr are pipes unless `options` say."""
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(command(tool, args), **options)


def wait_for(found: Callable[[], T | None], what: str = "the condition") -> T:
    """The first true value of `found()`, polled until `DEADLINE_SECONDS` have passed."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"{what} did not happen within {DEADLINE_SECONDS:.0f} s")


class Proc:
    """A process as /proc shows it: its pid and start time (so a reused pid is not it)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = _stat(pid)[19]

    def alive(self) -> bool:
        """Running, or stopped: not gone, and not a zombie waiting to be reaped."""
        try:
            fields = _stat(self.pid)
        except (FileNotFoundError, ProcessLookupError):
            return False
        return fields[19] == self.start and fields[0] not in ("Z", "X")

    def cmdline(self) -> str:
        try:
            return (Path("/proc") / str(self.pid) / "cmdline").read_bytes().decode(
                errors="replace").replace("\0", " ")
        except OSError:
            return ""

    def __repr__(self) -> str:
        return f"Proc({self.pid}, {self.cmdline()[:80]!r})"


def children(pid: int) -> list[Proc]:
    """The live processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
            if int(fields[1]) == pid:
                found.append(Proc(int(entry.name)))
        except (OSError, ValueError):
            continue
    return [proc for proc in found if proc.alive()]


def workers_of(pid: int, count: int) -> list[Proc] | None:
    """All of `pid`'s children once `count` of them are multiprocessing workers, else None."""
    procs = children(pid)
    workers = [proc for proc in procs if "spawn_main" in proc.cmdline()]
    return procs if len(workers) == count else None


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name: state, ppid, ... (start time is
    index 19)."""
    text = (Path("/proc") / str(pid) / "stat").read_text()
    return text[text.rindex(")") + 2:].split()


def run_two_processes(program: Path, *args: str, steps: int = 2) -> list[list[str]]:
    """The `-t jax` `program` as 2 processes of 4 CPU devices each (a local coordinator);
    the "step" lines process 0 printed, split. Both children are killed and reaped on
    every exit."""
    from pase.tools.run.jax import child_environment

    with socket.socket() as probe:  # a free port for the coordinator
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    children: list[subprocess.Popen[str]] = []
    try:
        for rank in range(2):
            children.append(subprocess.Popen(
                [sys.executable, str(program), "--steps", str(steps), "--coordinator",
                 f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(rank),
                 *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=child_environment(4)))
        outputs = [child.communicate(timeout=300) for child in children]
    finally:
        for child in children:
            child.kill()
            child.wait()
    assert [child.returncode for child in children] == [0, 0], outputs[0][1][-2000:]
    # Gloo prints its connections on stdout too: keep the losses only.
    return [line.split() for line in outputs[0][0].splitlines() if line.startswith("step ")]
