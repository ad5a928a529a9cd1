"""float16 and bfloat16 models (`model.half()`, `model.to(torch.bfloat16)` before the
export) are read as their float32 master copy (frontend/onnx/half_precision.py): built
here as PyTorch's exporters write them, with a weight, a constant scale, casts to float32
around a softmax and back, and a ConstantOfShape; each imports to the very IR of its
float32 twin (the same graph written in float32 with the half values), with the weights'
values exactly. The real exports (models/onnx/*_fp16.*, *_bf16.*) are tested in
test_torch_fixtures.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from pase.frontend.onnx import import_model  # noqa: E402
from pase.tools.run.check import make_data  # noqa: E402
from pase.tools.run.load import strategy_and_scale, with_initial  # noqa: E402
from pase.tools.run.runtime import train  # noqa: E402

F = TensorProto.FLOAT
KINDS = {TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16}


def half_values(elem: int) -> dict[str, np.ndarray]:
    """The weights, drawn in float32 and rounded to the half type."""
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(shape).astype(np.float32).astype(KINDS[elem])
            for name, shape in (("w", (4, 6)), ("head", (6, 3)), ("scale", ()))}


def classifier(elem: int, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """x @ w, times a constant scale, a softmax computed in float32 (Cast to FLOAT, then
    back to `elem`, as the exporters write an autocast softmax), plus a ConstantOfShape
    of zeros, then a head: y [2, 5, 3], all in `elem`."""
    zero = numpy_helper.from_array(np.zeros(1, KINDS[elem]) if elem != F
                                   else np.zeros(1, np.float32), "zero")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="h"),
             helper.make_node("Constant", [], ["scale"], name="scale",
                              value=numpy_helper.from_array(values["scale"], "scale")),
             helper.make_node("Mul", ["h", "scale"], ["s"], name="s"),
             helper.make_node("Cast", ["s"], ["s32"], name="s32", to=F),
             helper.make_node("Softmax", ["s32"], ["p32"], name="p32", axis=-1),
             helper.make_node("Cast", ["p32"], ["p"], name="p", to=elem),
             helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros",
                              value=zero),
             helper.make_node("Add", ["p", "zeros"], ["q"], name="q"),
             helper.make_node("MatMul", ["q", "head"], ["y"], name="y")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, [2, 5, 4])],
        [helper.make_tensor_value_info("y", elem, [2, 5, 3])],
        [numpy_helper.from_array(values["w"], "w"),
         numpy_helper.from_array(values["head"], "head"),
         numpy_helper.from_array(np.array([2, 5, 6]), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def twin(values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The same model in float32, with the half values."""
    return classifier(F, {name: v.astype(np.float32) for name, v in values.items()})


@pytest.mark.parametrize("elem", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_a_half_model_imports_as_its_float32_twin(elem: int):
    values = half_values(elem)
    half = import_model(classifier(elem, values).SerializeToString(), "m.onnx")
    full = import_model(twin(values).SerializeToString(), "m.onnx")
    assert str(half.module) == str(full.module)
    assert "f16" not in str(half.module)  # (nor bf16)
    for name in ("w", "head"):
        assert half.initial_values[name].dtype == np.float32
        assert np.array_equal(half.initial_values[name], values[name].astype(np.float32))


@pytest.mark.parametrize("elem", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_a_half_model_trains_as_onnx_computes_its_float32_twin(elem: int):
    values = half_values(elem)
    imported = import_model(classifier(elem, values).SerializeToString(), "m.onnx")
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
    (logits,) = ReferenceEvaluator(twin(values)).run(None, {"x": data["x"]})
    z = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    expected = -np.take_along_axis(log_p, data["labels"][..., None], -1).mean()
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    assert float(report.reference_losses[0]) == pytest.approx(float(expected), rel=1e-5)
