"""`one-mesh=true`: searching only the plans one JAX mesh holds, on a vocabulary that 8
devices do not divide (models/onnx/bert_v510: 510 words, as bert-base's 30,522 split 2,
3 or 6 ways, never 4 or 8). On a machine whose compute is slow against its links, the
search at 8 devices splits the output layer over a grid of 6 devices, as it splits
bert-base's on pase-default; `-t jax` cannot lay that on a mesh of 8 and says which
option searches a plan it can; with the option the program is written, its mesh holds
every layer's grid, and `pase-run --engine jax` searches with it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from cli import run_tool  # noqa: E402

from pase.tools.pase_opt import main as pase_opt  # noqa: E402
from pase.tools.run.load import pipeline_spec  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "models" / "onnx" / "bert_v510.torchscript.onnx"
MACHINE = """name = "compute-bound"
flops = 1e11
intra_node_bandwidth = 1e9
inter_node_bandwidth = 1e9
"""
DECODER = "model_cls_predictions_decoder_MatMul"


def search(machine: Path, options: str) -> str:
    return f'pase-search{{devices=8 machine="{machine}" {options}}}'


def test_a_vocabulary_8_does_not_divide_is_searched_onto_one_mesh(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = tmp_path / "compute-bound.toml"
    machine.write_text(MACHINE)
    step = tmp_path / "step.py"
    status, _, err = run_tool(pase_opt, [str(FIXTURE), "-p", search(machine, ""), "-t", "jax",
                                         "-o", str(step)], capsys)
    assert status == 1
    assert err.startswith(f"error: layer '{DECODER}': the jax target cannot express this "
                          "layer's grid 2x3 on 8 devices: 6 devices do not divide 8")
    assert "search with one-mesh=true" in err
    assert not step.exists()

    status, _, err = run_tool(pase_opt, [str(FIXTURE), "-p",
                                         search(machine, "one-mesh=true report=true"),
                                         "-t", "jax", "-o", str(step)], capsys)
    assert status == 0
    decoder = next(line.split() for line in err.splitlines() if line.startswith(DECODER))
    assert " ".join(decoder[2:-1]) == "{b=2, s=2, c=2}"
    program = step.read_text()
    assert "MESH_SHAPE = (2, 2, 2)" in program
    assert f"# %{DECODER} = einsum -> [b, s, c]: b 2 over m0, s 2 over m1, c 2 over m2" \
        in program
    assert (tmp_path / "step.weights.npz").exists()


def test_pase_run_searches_one_mesh_plans_for_the_jax_engine() -> None:
    assert pipeline_spec(8, one_mesh=True).startswith("pase-search{devices=8 one_mesh=true}")
    assert "one_mesh" not in pipeline_spec(8)
