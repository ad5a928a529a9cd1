"""A norm's epsilon from the ONNX file to the runtime and the targets: LayerNormalization's
and BatchNormalization's `epsilon`, the added constant of a decomposed layer or RMS norm
(as both PyTorch exporters write LLaMA's and T5's), printed as the layer's `epsilon`
clause where it is not 1e-5, and used by pase's kernels (the first loss equals
onnx.reference's on the file as written) and by the jax target. The epsilons here are
large (0.5, 0.25) so that a norm that dropped one would be far off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
from cli import run_tool  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from reference_loss import cross_entropy  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.dialect import dnn  # noqa: E402
from pase.dialect.dnn.layer_op import float_text  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.pase_opt import main as pase_opt  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import with_configs, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402


def constant(name: str, value: object, dtype: type = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def norms_model(layer_epsilon: float | None = 0.5, rms_epsilon: float = 0.25) -> bytes:
    """x [4, 6] -> LayerNormalization (its `epsilon`, or none: the default) -> the
    decomposed RMS norm (Pow, ReduceMean, Add epsilon, Sqrt, Div, Mul by a scale)."""
    rng = np.random.default_rng(0)
    epsilon = {} if layer_epsilon is None else {"epsilon": layer_epsilon}
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1,
                              **epsilon),
             helper.make_node("Pow", ["n", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq", "last"], ["ms"], keepdims=1),
             helper.make_node("Add", ["ms", "eps"], ["mse"]),
             helper.make_node("Sqrt", ["mse"], ["rms"]),
             helper.make_node("Div", ["n", "rms"], ["normed"]),
             helper.make_node("Mul", ["normed", "scale"], ["y"])]
    initializers = [constant("g", rng.uniform(0.5, 1.5, 6)), constant("b", rng.normal(size=6)),
                    constant("two", 2.0), constant("last", [-1], np.int64),
                    constant("eps", rms_epsilon), constant("scale", rng.uniform(0.5, 2, 6))]
    graph = helper.make_graph(nodes, "norms",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model.SerializeToString()


def batch_norm_model(epsilon: float = 0.5, training: bool = False) -> bytes:
    """x [4, 3, 2, 2] -> BatchNormalization -> the mean over h, w: [4, 3]. pase normalizes
    with the batch's statistics whatever the mode; onnx.reference does `training`."""
    mode = {"training_mode": 1} if training else {}
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "mean", "var"],
                              ["n", *(["running_mean", "running_var"] if training else [])],
                              epsilon=epsilon, **mode),
             helper.make_node("ReduceMean", ["n", "hw"], ["y"], keepdims=0)]
    initializers = [constant("g", [1.0, 2.0, 0.5]), constant("b", [0.0, 0.1, -0.2]),
                    constant("mean", np.zeros(3)), constant("var", np.ones(3)),
                    constant("hw", [2, 3], np.int64)]
    graph = helper.make_graph(nodes, "bn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [4, 3, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model.SerializeToString()


def first_loss_and_reference(data: bytes, reference: bytes | None = None
                             ) -> tuple[float, float]:
    """pase's first loss on one device, and softmax cross-entropy over onnx.reference's
    evaluation of the same file (or of `reference`) on the same inputs and labels."""
    imported = import_model(data, "norms.onnx")
    (graph,) = imported.module.ops
    assert isinstance(graph, dnn.GraphOp)
    inputs = [op.output.name_hint or "" for op in graph.body.block.ops
              if isinstance(op, dnn.InputOp)]
    feeds = with_initial(make_data(graph, seed=0), imported.initial_values)
    evaluator = ReferenceEvaluator(onnx.load_from_string(reference or data))
    (logits,) = evaluator.run(["y"], {"x": feeds[inputs[0]]})
    report = train(with_configs(imported.module, None), 1, initial=imported.initial_values)
    return float(report.reference_losses[0]), cross_entropy(logits, feeds[inputs[-1]])


def norms(data: bytes) -> list[str]:
    """Each norm layer of the import: its name and its epsilon clause, as printed."""
    (graph,) = import_model(data, "norms.onnx").module.ops
    return [op.short_name + op.clause_text(dict(op.properties)).split("]")[-1]
            for op in graph.body.block.ops
            if isinstance(op, dnn.NormOp | dnn.RmsNormOp)]


def test_each_norm_keeps_its_epsilon():
    assert norms(norms_model()) == ["layernorm epsilon 0.5", "rmsnorm epsilon 0.25"]


def test_the_default_epsilon_prints_no_clause():
    """1e-5, given or not, is no clause (ONNX's attribute is a float32: its shortest
    decimal is read, so 1e-5 is the default exactly): the IR is as it was."""
    assert norms(norms_model(None, 1e-5)) == ["layernorm", "rmsnorm"]
    assert norms(norms_model(1e-5, 1e-5)) == ["layernorm", "rmsnorm"]
    assert norms(norms_model(1e-12, 1e-6)) == ["layernorm epsilon 1.0e-12",
                                               "rmsnorm epsilon 1.0e-06"]


def test_the_first_loss_is_onnx_references_with_the_files_epsilon():
    loss, expected = first_loss_and_reference(norms_model())
    assert loss == pytest.approx(expected, rel=1e-5)
    loss, expected = first_loss_and_reference(batch_norm_model(),
                                              batch_norm_model(training=True))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_the_batch_norms_epsilon_is_its_own():
    (graph,) = import_model(batch_norm_model(), "bn.onnx").module.ops
    (norm,) = [op for op in graph.body.block.ops if isinstance(op, dnn.BatchNormOp)]
    assert norm.float_prop("epsilon") == 0.5


@pytest.mark.parametrize("epsilon", [0.0, -1e-5])
def test_a_norm_whose_epsilon_is_not_positive_is_one_error(epsilon: float):
    with pytest.raises(Diagnostic, match=f"epsilon={epsilon} is not supported"):
        import_model(norms_model(epsilon), "norms.onnx")


def test_the_jax_program_passes_the_epsilon(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "norms.onnx"
    path.write_bytes(norms_model())
    program = tmp_path / "step.py"
    status, _, err = run_tool(pase_opt, [str(path), "-p", "pase-search{devices=2}", "-t",
                                         "jax", "-o", str(program)], capsys)
    assert status == 0, err
    text = program.read_text()
    assert ", eps=0.5)" in text
    assert ", eps=0.25)" in text


@pytest.mark.parametrize(("layer_epsilon", "rms_epsilon"), [(0.5, 0.25), (1e-12, 1e-6)])
def test_the_dnn_target_prints_the_epsilon_and_it_round_trips(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], layer_epsilon: float,
        rms_epsilon: float):
    """`-t dnn` of a model whose norms' epsilons are not 1e-5 is `.dnn` source with their
    `epsilon` clauses, which reads back to the same IR (it was refused: `.dnn` had no
    epsilon clause)."""
    path = tmp_path / "norms.onnx"
    path.write_bytes(norms_model(layer_epsilon, rms_epsilon))
    source = tmp_path / "norms.dnn"
    status, _, err = run_tool(pase_opt, [str(path), "-t", "dnn", "-o", str(source)], capsys)
    assert status == 0, err
    text = source.read_text()
    assert f"epsilon {float_text(layer_epsilon)}" in text
    assert f"epsilon {float_text(rms_epsilon)}" in text
    _, imported, _ = run_tool(pase_opt, [str(path), "--print-op-generic"], capsys)
    _, from_source, _ = run_tool(pase_opt, [str(source), "--print-op-generic"], capsys)
    assert from_source == imported


def test_the_dnn_target_prints_no_clause_for_the_default_epsilon(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "norms.onnx"
    path.write_bytes(norms_model(None, 1e-5))
    status, out, err = run_tool(pase_opt, [str(path), "-t", "dnn"], capsys)
    assert status == 0, err
    assert "layernorm" in out
    assert "epsilon" not in out
