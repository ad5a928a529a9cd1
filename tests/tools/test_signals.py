"""Signals, as processes: SIGINT, SIGTERM and SIGHUP end pase-opt and pase-run with
128 + the signal's number, leaving no temporary file and no process behind; a killed worker
fails the run naming its device; a pase-run killed outright takes its workers with it.

Every test waits for a state it can see (a temporary file, the workers in /proc, CPU time
spent), never for a fixed time."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from processes import MODELS, Proc, start, wait_for, workers_of

MLP = str(MODELS / "mlp.dnn")
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
# Long enough that the run is still training whenever a test signals it.
ENDLESS_RUN = [MLP, "--devices", "2", "--backend", "processes", "--steps", "1000000"]


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".pase-*"))


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda signum: signum.name)
def test_a_signal_while_outputs_are_pending_removes_their_temporaries(
        tmp_path: Path, signum: signal.Signals) -> None:
    strategy, fifo = tmp_path / "s.json", tmp_path / "out.fifo"
    strategy.write_text("old", encoding="utf-8")
    os.mkfifo(fifo)
    # The strategy's temporary is written, then pase-opt waits to open the FIFO for -o,
    # which nothing reads: a run caught between its outputs.
    tool = start("pase-opt", [MLP, "-p", f'pase-search{{devices=8 export="{strategy}"}}',
                              "-o", str(fifo)])
    wait_for(lambda: temporaries(tmp_path), "the strategy's temporary file")
    tool.send_signal(signum)
    stdout, stderr = tool.communicate(timeout=60)
    assert (tool.returncode, stdout, stderr) == (128 + signum, b"", b"")
    assert temporaries(tmp_path) == []
    assert strategy.read_text(encoding="utf-8") == "old"


def test_sigterm_stops_a_long_search(tmp_path: Path) -> None:
    tool = start("pase-opt", [str(MODELS / "transformer.dnn"), "-p",
                              'pase-search{devices=256 export="s.json"}', "-o", "out.mlir"],
                 cwd=tmp_path)
    # pase-opt parses and verifies this model and searches it at 8 devices in ~1.5 s of
    # CPU time; at 256 devices the search takes a minute and more.
    wait_for(lambda: cpu_seconds(tool.pid) > 2.0, "two seconds of searching")
    tool.send_signal(signal.SIGTERM)
    stdout, stderr = tool.communicate(timeout=60)
    assert (tool.returncode, stdout, stderr) == (143, b"", b"")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda signum: signum.name)
def test_a_signal_to_pase_run_ends_every_worker(signum: signal.Signals) -> None:
    tool = start("pase-run", ENDLESS_RUN)
    procs = wait_for(lambda: workers_of(tool.pid, 2), "two worker processes")
    tool.send_signal(signum)
    stdout, stderr = tool.communicate(timeout=60)
    assert (tool.returncode, stdout) == (128 + signum, b"")
    assert b"Traceback" not in stderr
    wait_for(lambda: not any(proc.alive() for proc in procs), f"the end of {procs}")


def test_a_hang_up_of_the_whole_process_group_prints_nothing() -> None:
    """As a terminal's hang-up: SIGHUP reaches pase-run, its workers and multiprocessing's
    resource tracker at once. The tracker died of it, and the one started in its place
    printed a KeyError traceback per shared block the parent then unregistered."""
    tool = start("pase-run", ENDLESS_RUN, start_new_session=True)
    procs = wait_for(lambda: workers_of(tool.pid, 2), "two worker processes")
    os.killpg(tool.pid, signal.SIGHUP)
    stdout, stderr = tool.communicate(timeout=60)
    assert (tool.returncode, stdout, stderr) == (128 + signal.SIGHUP, b"", b"")
    wait_for(lambda: not any(proc.alive() for proc in procs), f"the end of {procs}")


def test_a_killed_worker_fails_the_run_naming_its_device() -> None:
    tool = start("pase-run", ENDLESS_RUN)
    procs = wait_for(lambda: workers_of(tool.pid, 2), "two worker processes")
    victim = next(proc for proc in procs if "spawn_main" in proc.cmdline())
    os.kill(victim.pid, signal.SIGKILL)
    stdout, stderr = tool.communicate(timeout=60)
    assert (tool.returncode, stdout) == (1, b"")
    assert re.fullmatch(r"pase-run: error: device [01] failed: its process was killed by "
                        r"SIGKILL before reporting \(see its stderr\)\n", stderr.decode())
    wait_for(lambda: not any(proc.alive() for proc in procs), f"the end of {procs}")


def test_workers_end_when_pase_run_is_killed() -> None:
    tool = start("pase-run", ENDLESS_RUN)
    procs = wait_for(lambda: workers_of(tool.pid, 2), "two worker processes")
    tool.kill()  # SIGKILL: pase-run runs no handler, its workers must notice on their own
    tool.communicate(timeout=60)
    assert tool.returncode == -signal.SIGKILL
    wait_for(lambda: not any(proc.alive() for proc in procs), f"the end of {procs}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process."""
    fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_proc_tells_a_dead_process_from_a_live_one() -> None:
    assert Proc(os.getpid()).alive()
    tool = start("pase-opt", ["--version"])
    proc = Proc(tool.pid)
    tool.communicate(timeout=60)
    assert not proc.alive()


# A tool whose import is interrupted: a stand-in for pase.tools.pase_opt that sends its
# process SIGINT while it is being imported, then waits (a real import of xDSL and numpy
# takes a second or more on a loaded machine).
SIGNAL_DURING_IMPORT = """
import importlib.abc, importlib.util, os, signal, sys, time
class Interrupted(importlib.abc.Loader, importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pase.tools.pase_opt":
            return importlib.util.spec_from_loader(name, self)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(60)
sys.meta_path.insert(0, Interrupted())
from pase.tools.launch import pase_opt
pase_opt()
"""


def test_a_signal_while_the_tool_imports_ends_it_quietly() -> None:
    # Was Python's KeyboardInterrupt traceback from inside an import, status 1.
    done = subprocess.run([sys.executable, "-c", SIGNAL_DURING_IMPORT], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "")
