"""Pass options and pase-run flags of 5,000 digits: one diagnostic naming the limit, exit 1
(tests/lit/tools/huge-numbers.dnn covers the files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli import run_tool

from pase.tools import pase_opt, pase_run

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")
HUGE = "9" * 5000


@pytest.mark.parametrize("option", ["devices", "min-shard", "memory-gib"])
def test_a_huge_pass_option_is_located(option: str, capsys: pytest.CaptureFixture[str]):
    devices = "" if option == "devices" else "devices=8 "
    pipeline = f"pase-search{{{devices}{option}={HUGE}}}"
    status, out, err = run_tool(pase_opt.main, [MLP, "-p", pipeline], capsys)
    column = len("pase-search{") + len(devices) + len(option) + 2
    assert (status, out) == (1, "")
    assert err.startswith(f"pase-opt: error: Error parsing pass pipeline specification:\n"
                          f"pass-pipeline:1:{column}\n")
    assert err.endswith(" " * (column - 1) + "an integer of 5,000 digits; options take "
                        "integers of at most 40 digits (devices at most 8,192)\n\n")


@pytest.mark.parametrize("flag", ["--devices", "--steps", "--seed", "--batch"])
def test_a_huge_integer_flag_names_the_limit(flag: str, capsys: pytest.CaptureFixture[str]):
    args = [MLP, flag, HUGE] if flag == "--devices" else [MLP, "--devices", "2", flag, HUGE]
    status, out, err = run_tool(pase_run.main, args, capsys)
    assert (status, out, err) == (1, "", f"pase-run: error: argument {flag}: the value is a "
                                  "number of 5,000 digits; pase handles at most 2^53\n")


@pytest.mark.parametrize("flag", ["--scale", "--lr", "--timeout"])
def test_a_huge_float_flag_is_out_of_range(flag: str, capsys: pytest.CaptureFixture[str]):
    status, out, err = run_tool(pase_run.main, [MLP, "--devices", "2", flag, HUGE], capsys)
    assert (status, out) == (1, "")
    assert err == (f"pase-run: error: argument {flag}: expected a number, got '{HUGE[:30]}...': "
                   "a float reads it as infinity (the largest float is about 1.8e308)\n")


@pytest.mark.parametrize(("shape", "message"), [
    ([4, 1 << 62], "input 'x' of shape [4, 4611686018427387904] has "
                   "18,446,744,073,709,551,616 elements; pase handles at most 2^53 per tensor"),
    ([1] * 33, "input 'x' has 33 axes; pase handles tensors of at most 32"),
])
@pytest.mark.parametrize("tool", [pase_opt.main, pase_run.main])
def test_an_onnx_input_over_pases_limits_is_refused_before_the_folding(
        shape: list[int], message: str, tool: object, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """x [4, 2^62] by w [8, 3]: onnx's shape inference failed on it after the folding had
    imported onnxscript and sympy (seconds); now its declared size is refused first."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from pase.frontend.onnx import model as onnx_model

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "huge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [8, 3], [0.0] * 24)])
    path = tmp_path / "huge.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    monkeypatch.setattr(onnx_model, "simplify", None)  # the folding is never reached
    args = [str(path), "--devices", "2"] if tool is pase_run.main else [str(path)]
    assert run_tool(tool, args, capsys) == (1, "", f"{path}: error: {message}\n")
