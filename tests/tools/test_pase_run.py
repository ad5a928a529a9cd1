"""`pase-run` in-process: the report and `--check` on success, status 1 and a short stderr on
bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli import lines, run_tool

import pase.tools.pase_run as pase_run
from pase.runtime import executor
from pase.tools import pase_opt
from pase.tools.pase_run import main

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")

OTHER = """\
graph @other(b = 16, d = 16) {
  %x = input [b, d]
  %y = relu %x
  return %y
}
"""

MALFORMED = """\
graph @broken(b = 4) {
  %x = input [b]
  %y = relu %q
  return %y
}
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_tool(main, args, capsys)


def export_strategy(source: Path, target: Path, devices: int,
                    capsys: pytest.CaptureFixture[str]) -> None:
    """`pase-opt SOURCE -p 'pase-search{devices=P export="TARGET"}'`."""
    try:
        pase_opt.main([str(source), "-p", f'pase-search{{devices={devices} export="{target}"}}'])
    except SystemExit as exit_:  # pase-opt exits only on errors
        pytest.fail(f"pase-opt exited with status {exit_.code}: {capsys.readouterr().err}")
    capsys.readouterr()
    assert target.exists()


def test_check_passes_on_the_mlp(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([MLP, "--devices", "4", "--check"], capsys)
    assert (status, err) == (0, "")
    report = lines(out)
    assert report[0].startswith("@mlp on 4 devices (f32), ")
    assert report[1] == "step  loss (sharded)      loss (1 device)     rel. error"
    assert report[2].startswith("1     ")
    assert report[-1] == "check passed"
    assert any(line.split()[0] == "total" for line in report)


def test_data_parallel(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([MLP, "--devices", "4", "--data-parallel", "--check", "--steps",
                            "2"], capsys)
    assert (status, err) == (0, "")
    assert [line.split()[0] for line in lines(out)[2:4]] == ["1", "2"]
    assert lines(out)[-1] == "check passed"


def test_f64_scaled(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([MLP, "--devices", "8", "--scale", "0.125", "--f64", "--check"],
                           capsys)
    assert (status, err) == (0, "")
    assert lines(out)[0].startswith("@mlp on 8 devices (f64), ")
    assert "(tolerance 1.0e-09)" in out
    assert lines(out)[-1] == "check passed"


def test_strategy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strategy = tmp_path / "mlp.json"
    export_strategy(Path(MLP), strategy, 4, capsys)
    status, out, err = run([MLP, "--devices", "4", "--strategy", str(strategy), "--check"],
                           capsys)
    assert (status, err) == (0, "")
    assert lines(out)[-1] == "check passed"


def test_check_fails_when_the_errors_are_too_large(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    train = pase_run.train

    def wrong(*args: object, **kwargs: object) -> pase_run.TrainingReport:
        report = train(*args, **kwargs)  # type: ignore[arg-type]
        report.gradient_error = 0.5
        return report

    monkeypatch.setattr(pase_run, "train", wrong)
    status, out, err = run([MLP, "--devices", "2", "--check"], capsys)
    assert status == 1
    assert "check passed" not in out
    assert lines(err) == ["check failed: relative error 5.00e-01 exceeds 1e-04"]


def test_a_failing_device_is_one_error_naming_it(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    layer = executor._Device.layer

    def failing(self: executor._Device, step: executor.Step) -> list[np.ndarray | None]:
        if self.rank == 1 and step.kernel == "dnn.relu":
            raise RuntimeError("injected failure")
        return layer(self, step)

    monkeypatch.setattr(executor._Device, "layer", failing)
    monkeypatch.delenv("PASE_DEBUG", raising=False)
    status, out, err = run([MLP, "--devices", "2", "--data-parallel", "--timeout", "30"],
                           capsys)
    assert (status, out) == (1, "")
    assert lines(err) == ["pase-run: error: RuntimeError: injected failure",
                          "device 1 failed: RuntimeError: injected failure"]


# --- bad input ---------------------------------------------------------------------------


def assert_one_error(status: int, out: str, err: str, message: str) -> None:
    assert (status, out) == (1, "")
    assert lines(err) == [message]


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.dnn"
    status, out, err = run([str(missing), "--devices", "2"], capsys)
    assert_one_error(status, out, err,
                     f"{missing}: error: cannot read the file: No such file or directory")


def test_malformed_model_names_file_line_and_column(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.dnn"
    broken.write_text(MALFORMED)
    status, out, err = run([str(broken), "--devices", "2"], capsys)
    assert (status, out) == (1, "")
    # the diagnostic, then the source line and a caret under %q
    assert lines(err) == [f"{broken}:3:13: error: undefined value %q", "  %y = relu %q",
                          "            ^^"]


def test_scale_above_one(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([MLP, "--devices", "2", "--scale", "2"], capsys)
    assert_one_error(status, out, err, "pase-run: error: --scale must be in (0, 1], got 2.0")


def test_strategy_of_another_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.dnn"
    other.write_text(OTHER)
    strategy = tmp_path / "other.json"
    export_strategy(other, strategy, 2, capsys)
    status, out, err = run([MLP, "--devices", "2", "--strategy", str(strategy)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [f"{strategy}:2:12: error: the strategy is for graph @other, not @mlp",
                          '  "graph": "other",', "           ^^^^^^^"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--devices", "0"], "pase-run: error: --devices must be at least 1"),
    (["--devices", "1025"], "pase-run: error: --devices 1025 is more than the threads backend "
     "runs on one machine (at most 1024)"),
    (["--devices", "65", "--backend", "processes"], "pase-run: error: --devices 65 is more "
     "than the processes backend runs on one machine (at most 64)"),
    (["--devices", "2", "--steps", "0"], "pase-run: error: --steps must be at least 1"),
    (["--devices", "2", "--seed", "-1"], "pase-run: error: --seed must be at least 0, got -1"),
    (["--devices", "2", "--lr", "nan"],
     "pase-run: error: --lr must be a finite number at least 0, got nan"),
    (["--devices", "2", "--lr", "inf"],
     "pase-run: error: --lr must be a finite number at least 0, got inf"),
    (["--devices", "2", "--lr", "-0.5"],
     "pase-run: error: --lr must be a finite number at least 0, got -0.5"),
    (["--devices", "2", "--timeout", "inf"],
     "pase-run: error: --timeout must be a finite number of seconds above 0, got inf"),
    (["--devices", "2", "--timeout", "nan"],
     "pase-run: error: --timeout must be a finite number of seconds above 0, got nan"),
    (["--devices", "2", "--timeout", "0"],
     "pase-run: error: --timeout must be a finite number of seconds above 0, got 0.0"),
])
def test_usage_errors_name_the_flag(flags: list[str], message: str,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.argv", ["pase-run"])  # argparse names the program after it
    status, out, err = run([MLP, *flags], capsys)
    assert (status != 0, out) == (True, "")
    assert lines(err)[-1] == message
    assert "Traceback" not in err


@pytest.mark.parametrize("flags", [["--devices", "0"], ["--devices", "2", "--steps", "0"],
                                   ["--devices", "2", "--seed", "-1"],
                                   ["--devices", "2", "--lr", "nan"],
                                   ["--devices", "2", "--lr", "1e999"],
                                   ["--devices", "2", "--timeout", "inf"]])
def test_usage_errors_exit_1_with_one_line(flags: list[str], monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.argv", ["pase-run"])
    status, out, err = run([MLP, *flags], capsys)
    assert (status, out) == (1, "")
    assert len(lines(err)) == 1


def test_a_bad_machine_file_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    machine = tmp_path / "neg.toml"
    machine.write_text("flops = -1\nintra_node_bandwidth = 1e9\ninter_node_bandwidth = 1e9\n")
    for how in ([], ["--data-parallel"]):
        status, out, err = run([MLP, "--devices", "2", "--machine", str(machine), *how],
                               capsys)
        assert (status, out) == (1, "")
        assert lines(err) == [f"{machine}:1:1: error: 'flops' must be a number of at least 1, "
                              "got -1", "flops = -1", "^"]
