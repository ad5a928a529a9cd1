"""`pase-run` on models whose loss is not softmax_cross_entropy, on `.mlir` input (parse
and verifier errors exactly as pase-opt prints them), on IR from later pipeline stages,
and on training that overflows."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli import lines, run_tool

from pase.core.files import LONGEST_SHOWN_LINE
from pase.tools import pase_opt
from pase.tools.pase_run import main

MLP = Path(__file__).resolve().parents[2] / "models" / "mlp.dnn"
SCE = "  %l  = softmax_cross_entropy %z, %t over c"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_tool(main, args, capsys)


def run_opt(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_tool(pase_opt.main, args, capsys)


def model(tmp_path: Path, loss: str, name: str = "model.dnn") -> Path:
    source = MLP.read_text()
    assert SCE in source
    path = tmp_path / name
    path.write_text(source.replace(SCE, loss))
    return path


# --- losses --------------------------------------------------------------------------------

LOSSES = {
    "reduce-mean": "  %l  = reduce mean %z over [b, c]",
    "reshaped": "  %s  = softmax_cross_entropy %z, %t over c\n  %l  = reshape %s -> []",
    "einsum": "  %l  = einsum %x, %w1 -> []",
}
DEVICES = (1, 2, 4)


@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("loss", LOSSES)
def test_a_loss_any_layer_computes_trains_and_checks(loss: str, devices: int, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    path = model(tmp_path, LOSSES[loss])
    status, out, err = run([str(path), "--devices", str(devices), "--check"], capsys)
    assert (status, err) == (0, "")
    assert lines(out)[-1] == "check passed"


@pytest.mark.parametrize("devices", DEVICES)
def test_a_tensor_is_not_a_loss(devices: int, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = model(tmp_path, "  %l  = relu %z")
    status, out, err = run([str(path), "--devices", str(devices)], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [
        f"{path}:11:3: error: the loss %l (the first value @mlp returns) must be a scalar, "
        "but it is [b, c]; reduce it in the model, e.g. `%loss = reduce mean %l over [b, c]`, "
        "and return that",
        "  return %l",
        "  ^"]


def test_training_that_overflows_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # f32 parameters overflow in the second step; no numpy warning reaches stderr (and
    # pytest's -W error would turn one into a failure).
    status, out, err = run([str(MLP), "--devices", "2", "--lr", "1e30", "--steps", "2",
                            "--check"], capsys)
    diverged = ("the training diverged: the 1-device run's losses, gradients or parameters "
                "are not finite (inf or nan); try a smaller --lr")
    assert status == 1
    assert diverged in lines(out)
    assert lines(err) == [f"check failed: {diverged}"]


# --- .mlir input ---------------------------------------------------------------------------


def generic_mlp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    status, out, err = run_opt([str(MLP), "--print-op-generic"], capsys)
    assert (status, err) == (0, "")
    return out


def test_mlir_parse_errors_read_as_pase_opt_prints_them(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    path = tmp_path / "broken.mlir"
    path.write_text(generic_mlp(tmp_path, capsys).replace('"dnn.relu"', '"dnn.relux"'))
    expected = run_opt([str(path)], capsys)
    status, out, err = run([str(path), "--devices", "2"], capsys)
    assert (status, out, err) == expected
    assert lines(err) == [f"{path}:7:21: error: Operation dnn.relux is not registered",
                          '    %a = "dnn.relux"(%h) : (!dnn.tensor<[b = 64, h = 1024], f32>) '
                          "-> !dnn.tensor<[b = 64, h = 1024], f32>",
                          " " * 20 + "^"]


def test_mlir_is_verified_with_located_errors(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad_config.mlir"
    path.write_text(generic_mlp(tmp_path, capsys).replace(
        '"dnn.relu"(%h) :', '"dnn.relu"(%h) {pase.config = #pase.config<h = 3>} :'))
    expected = run_opt([str(path)], capsys)
    status, out, err = run([str(path), "--devices", "4"], capsys)
    assert (status, out, err) == expected
    assert lines(err)[0] == (f"{path}:7:5: error: 'dnn.relu' op split factor 3 does not "
                             "divide dimension 'h' of size 1024")


def test_generic_mlir_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mlp.mlir"
    path.write_text(generic_mlp(tmp_path, capsys))
    status, out, err = run([str(path), "--devices", "2", "--check"], capsys)
    assert (status, err) == (0, "")
    assert lines(out)[-1] == "check passed"


def test_missing_mlir_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.mlir"
    status, out, err = run([str(missing), "--devices", "2"], capsys)
    assert (status, out) == (1, "")
    assert lines(err) == [f"{missing}: error: cannot read the file: No such file or directory"]


@pytest.mark.parametrize(("pipeline", "line", "message"), [
    ("pase-search{devices=4},pase-autodiff", 11,
     "pase-run takes a forward graph, but @mlp already has gradient ops (dnn.vjp, dnn.sgd) "
     "from pase-autodiff; give it the model before pase-autodiff"),
    ("pase-search{devices=4},pase-autodiff,pase-lower-spmd{devices=4}", 2,
     "pase-run takes a forward graph, but this is the dist.program @mlp from "
     "pase-lower-spmd; give it the model before pase-autodiff"),
])
def test_ir_of_later_stages_is_rejected(pipeline: str, line: int, message: str,
                                        tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "later.mlir"
    assert run_opt([str(MLP), "-p", pipeline, "-o", str(path)], capsys)[0] == 0
    status, out, err = run([str(path), "--devices", "4"], capsys)
    assert (status, out) == (1, "")
    assert lines(err)[0] == f"{path}:{line}:{3 if line == 2 else 5}: error: {message}"
    # The source line and a caret, unless the line is too long to show (as pase-opt).
    shown = len(path.read_text().split("\n")[line - 1]) <= LONGEST_SHOWN_LINE
    assert len(lines(err)) == (3 if shown else 1)
