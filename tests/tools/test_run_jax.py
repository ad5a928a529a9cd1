"""`pase-run --engine jax` and the `-t jax` program: the models and the probe graphs
against pase's runtime, XLA's collectives, multi-process runs and the errors.

JAX is in the `test` extra, so these tests need it and fail loudly without it. XLA's
CPU compile dominates their time: small scaled models, two steps, one child each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from cli import run_tool
from processes import run_two_processes

from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.frontend import parse_file
from pase.targets.jax import jax_program
from pase.tools.errors import ToolError
from pase.tools.pase_run import main
from pase.tools.run.check import make_data
from pase.tools.run.jax import Collective, child_environment, child_error, collectives
from pase.tools.run.jax import run_program as pase_run_program
from pase.tools.run.load import Stages, forward_graph, strategy_and_scale, with_configs
from pase.tools.run.runtime import RuntimeBackend

ROOT = Path(__file__).resolve().parents[2]
PROBES = sorted((Path(__file__).parent / "jax_probes").glob("*.dnn"))


def pase_run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_tool(main, [*args, "--engine", "jax", "--check", "--steps", "2"], capsys)


# f64 probes put every op and operand gradient where the models never do; JAX's autodiff
# is independent of pase's, so a wrong gradient rule in pase fails here. Each probe runs
# data-parallel on 4 devices (its gradients are JAX's autodiff as on one device, then
# all-reduced); one runs on one device too, the one-device program (XLA's compile is
# most of each case's time).
DATA_PARALLEL = ["--devices", "4", "--data-parallel"]
PROBE_RUNS = [(probe, DATA_PARALLEL) for probe in PROBES] + [
    (probe, ["--devices", "1"]) for probe in PROBES if probe.stem == "elementwise"]


@pytest.mark.parametrize(("probe", "how"), PROBE_RUNS,
                         ids=[f"{'P1' if how[1] == '1' else 'P4-data-parallel'}-{p.stem}"
                              for p, how in PROBE_RUNS])
def test_probe_graphs_match_jax_autodiff(probe: Path, how: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = pase_run([str(probe), *how], capsys)
    assert (status, err) == (0, "")
    assert "(f64)" in out
    assert "check passed" in out


# The other models (and data parallelism for each) pass too, but XLA's CPU compile
# takes 5-70 s each: benchmarks/jax.py runs them all at P = 8.
MODELS = [("mlp", "0.125", ["--data-parallel"]), ("alexnet", "0.125", []),
          ("rnnlm", "0.0625", [])]


@pytest.mark.parametrize(("model", "scale", "extra"), MODELS,
                         ids=[f"{m}{'-dp' if e else ''}" for m, _, e in MODELS])
def test_models_at_8_devices_match_pase(model: str, scale: str, extra: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = pase_run([str(ROOT / "models" / f"{model}.dnn"), "--devices", "8",
                                 "--scale", scale, *extra], capsys)
    assert (status, err) == (0, "")
    assert "check passed" in out
    assert "all-reduce" in out
    assert "pase predicts" in out


def test_a_pipeline_on_jax_matches_pase_and_shows_its_stages(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = pase_run([str(ROOT / "models" / "mlp.dnn"), "--devices", "8",
                                 "--scale", "0.125", "--stages", "2", "--microbatches", "2",
                                 "--schedule", "gpipe"], capsys)
    assert (status, err) == (0, "")
    assert "check passed" in out
    assert "pipeline: 2 stages x 2 micro-batches, gpipe" in out
    assert "  0 (0-3)  total (XLA)" in out
    assert "  1 (4-7)  total (XLA)" in out
    # The activation crossing the boundary moves what the plan charges, both ways.
    crossing = next(line for line in out.splitlines() if line.startswith("  0 -> 1"))
    for direction in ("forward", "gradient back"):
        match = re.search(direction + r" +(\d+) \(pase (\d+)\)", crossing)
        assert match is not None, crossing
        assert match.group(1) == match.group(2)


def test_dump_mlir_writes_the_lowered_module(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "step.mlir"
    status, out, _ = pase_run([str(ROOT / "models" / "mlp.dnn"), "--devices", "8", "--scale",
                               "0.125", "--dump-mlir", str(dump)], capsys)
    assert status == 0
    assert "check passed" in out
    text = dump.read_text()
    assert "func.func public @main" in text
    assert "sdy.mesh" in text


def test_dump_mlir_needs_the_jax_engine(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_tool(main, [str(ROOT / "models" / "mlp.dnn"), "--devices", "2",
                                     "--dump-mlir", "x.mlir"], capsys)
    assert status == 1
    assert err == "pase-run: error: --dump-mlir needs --engine jax\n"


@pytest.fixture(scope="module")
def step_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mlp's -t jax program on 8 devices (searched, then scaled by 1/8)."""
    module = strategy_and_scale(parse_file(str(ROOT / "models" / "mlp.dnn")), 8, 0.125)
    path = tmp_path_factory.mktemp("jax") / "step.py"
    path.write_text(jax_program(module, 8))
    return path


@pytest.fixture(scope="module")
def pipeline_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mlp's pipelined -t jax program: 2 stages of 4 devices, 2 micro-batches, 1F1B."""
    module = strategy_and_scale(parse_file(str(ROOT / "models" / "mlp.dnn")), 8, 0.125,
                                stages=Stages(2, 2))
    path = tmp_path_factory.mktemp("jax") / "pipeline.py"
    path.write_text(jax_program(module, 8))
    return path


def run_program(path: Path, devices: int, *args: str, python: tuple[str, ...] = (
        sys.executable,)) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*python, str(path), "--steps", "2", *args], capture_output=True,
                          text=True, env=child_environment(devices), timeout=300, check=False)


def test_two_processes_of_four_devices_give_the_losses_of_one_of_eight(
        step_program: Path) -> None:
    single = run_program(step_program, 8)
    assert single.returncode == 0, single.stderr
    losses = run_two_processes(step_program)
    # Gloo's cross-process all-reduce adds in another order than XLA's in-process one,
    # so the losses agree to f32 rounding, not bit for bit.
    expected = [line.split() for line in single.stdout.splitlines()]
    assert [words[:3] for words in losses] == [words[:3] for words in expected]
    assert [float(words[3]) for words in losses] == pytest.approx(
        [float(words[3]) for words in expected], rel=1e-5)
    assert len(losses) == 2


def test_a_pipeline_with_a_stage_per_process_gives_the_losses_of_one_device(
        pipeline_program: Path, tmp_path: Path) -> None:
    # Each process runs one stage; activations and gradients cross between processes.
    # One process of 8 devices gives these losses too (pase-run's pipeline test above).
    module = strategy_and_scale(parse_file(str(ROOT / "models" / "mlp.dnn")), 8, 0.125)
    data = make_data(forward_graph(module), 0)
    np.savez(tmp_path / "data.npz", **data)  # type: ignore[arg-type]
    reference = RuntimeBackend(1, words=False).train(with_configs(module, None), data, 2,
                                                     LEARNING_RATE, None)
    losses = run_two_processes(pipeline_program, "--data", str(tmp_path / "data.npz"))
    assert [words[:2] for words in losses] == [["step", "1"], ["step", "2"]]
    assert [float(words[3]) for words in losses] == pytest.approx(reference.losses, rel=1e-5)


def test_the_program_says_how_to_install_jax_when_it_is_missing(step_program: Path) -> None:
    # -S: no site-packages, so no jax (and no numpy) for this interpreter.
    finished = run_program(step_program, 8, python=(sys.executable, "-S"))
    assert finished.returncode == 1
    assert finished.stdout == ""
    assert finished.stderr.startswith("error: this program needs JAX (No module named 'jax')")
    assert finished.stderr.endswith("pip install 'pase[jax]'\n")
    assert child_error(finished.stderr).startswith("the JAX program failed: this program "
                                                   "needs JAX")


def test_too_few_devices_is_one_error(step_program: Path) -> None:
    finished = run_program(step_program, 2)
    assert (finished.returncode, finished.stdout) == (1, "")
    assert finished.stderr == (
        "error: this step runs on 8 devices, but JAX has 2 (cpu); on a CPU machine run it "
        "with XLA_FLAGS=--xla_force_host_platform_device_count=8\n")


def test_a_step_xla_cannot_compile_is_one_error(step_program: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(step_program.read_text().replace(
        "precision=jax.lax.Precision.HIGHEST", "precision='none such'", 1))
    finished = run_program(broken, 8)
    assert (finished.returncode, finished.stdout) == (1, "")
    assert finished.stderr.startswith("error: XLA could not compile the step: ")
    assert finished.stderr.count("\n") == 1
    assert "Traceback" not in finished.stderr


def test_collectives_are_read_from_the_compiled_hlo() -> None:
    hlo = """HloModule jit_step, num_partitions=8

  %a = f32[8,16]{1,0} all-reduce(%d), channel_id=6, replica_groups={{0,4},{1,5},{2,6},{3,7}}
  %g = f64[8,8]{1,0} all-gather(%f), replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}
  %t = (f32[1,2,8]{2,1,0}, f32[1,2,8]{2,1,0}) all-to-all(%x, %y), \
replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1':(2)2}
  %p = f32[4,8]{1,0} collective-permute(%c), source_target_pairs={{0,0},{2,1},{1,2}}
  %q = f32[4]{0} add(%a, %b)
  %s = f32[2]{0} all-reduce(%q), replica_groups={}, to_apply=%add
  %i = bf16[512,256]{1,0} all-reduce(%d), channel_id=6, replica_groups=[2,2]<=[2,2]T(1,0), \
use_global_device_ids=true, to_apply=%add.1
"""
    assert collectives(hlo) == [
        Collective("all-reduce", 2, 128, 512, "{{0,4},{1,5},{2,6},{3,7}}"),
        Collective("all-gather", 4, 64, 512, "mesh['axis_0'=2,'axis_1'=4] {'axis_1'}"),
        Collective("all-to-all", 2, 32, 128, "mesh['axis_0'=2,'axis_1'=4] {'axis_1':(2)2}"),
        Collective("collective-permute", 2, 32, 128, "{{0,0},{2,1},{1,2}}"),
        Collective("all-reduce", 8, 2, 8, "{}"),
        # XLA's iota groups: 2 groups of 2 (was read as one group of all 8)
        Collective("all-reduce", 2, 131072, 262144, "[2,2]<=[2,2]T(1,0)")]
    assert [c.words() for c in collectives(hlo)] == [128.0, 48.0, 16.0, 32.0, 3.5, 131072.0]


def test_the_child_gets_its_device_count_and_keeps_other_xla_flags(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false "
                       "--xla_force_host_platform_device_count=3")
    assert child_environment(8)["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false  --xla_force_host_platform_device_count=8")
    assert os.environ["XLA_FLAGS"].endswith("=3")


def test_a_failing_child_says_what_failed_and_keeps_its_output_only_if_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that dies on an exception of its own (no `error:` line) is reported at
    the line that raised it; its whole output and source go to `--jax-log`'s file when
    one is given, and nothing of it outlives the run otherwise."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    source = "import sys\n\n\ndef check(x):\n    assert x > 1\n\n\ncheck(1)\n"
    failed = ("the JAX program failed at step.py line 5 (in check): AssertionError, "
              "raised by `assert x > 1`")
    with pytest.raises(ToolError) as raised:
        pase_run_program(source, {}, 1, 1, 0.01, False, 60.0)
    assert str(raised.value) == (
        failed + " (--jax-log FILE keeps its whole output and the program)")
    assert list((tmp_path / "tmp").iterdir()) == []
    log = tmp_path / "jax.log"
    with pytest.raises(ToolError) as raised:
        pase_run_program(source, {}, 1, 1, 0.01, False, 60.0, str(log))
    assert str(raised.value) == (
        failed + f"; its whole output, and the program, are in {log}")
    text = log.read_text()
    assert "AssertionError" in text
    assert text.endswith(source)
    # A log that cannot be written: the program's failure first, then why (it was
    # "cannot open ..." alone, and the failure was lost).
    with pytest.raises(ToolError) as raised:
        pase_run_program(source, {}, 1, 1, 0.01, False, 60.0, str(tmp_path))
    assert str(raised.value) == (
        failed + f" (--jax-log {tmp_path} could not be written: Is a directory)")


def test_a_child_that_prints_nothing_gives_its_exit_status() -> None:
    assert child_error("", 3) == "the JAX program exited with status 3 and printed nothing"
    assert child_error("\n", -9, "out.log") == (
        "the JAX program was killed by signal 9 and printed nothing; its whole output, and "
        "the program, are in out.log")
