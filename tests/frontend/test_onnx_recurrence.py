"""nn.RNN as the dynamo exporter writes it: unrolled over its steps, named as an RNN.

torch is not installed in CI, so the export is built here as torch 2.14 writes it for
`Recurrent("RNN", batch_first=True)` of models/export_layers.py (rnn_tanh_dynamo): the
input projection, its time steps split off (`unbind`: a Split, a Squeeze per step), and
per step `h = tanh(h W_hh + b_hh + x_t)`. The import stopped at the first Squeeze with an
error about a squeezed axis (benchmarks/RESULTS.md, rnn_tanh_dynamo).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pase.core.diagnostics import Diagnostic  # noqa: E402
from pase.frontend.onnx import import_model  # noqa: E402

B, T, D = 2, 3, 4


def unrolled(activation: str = "Tanh", chained: bool = True) -> bytes:
    nodes = [helper.make_node("MatMul", ["x", "w_ih"], ["xw"]),
             helper.make_node("Add", ["xw", "b_ih"], ["pre"]),
             helper.make_node("Transpose", ["pre"], ["seq"], perm=[1, 0, 2]),
             helper.make_node("Split", ["seq"], [f"part{t}" for t in range(T)], axis=0,
                              num_outputs=T, name="node_unbind_1")]
    state, stacked = "h0", []
    for t in range(T):
        nodes += [helper.make_node("Squeeze", [f"part{t}", "zero"], [f"x{t}"],
                                   name=f"node_unbind_1__{t}"),
                  helper.make_node("MatMul", [state, "w_hh"], [f"hw{t}"]),
                  helper.make_node("Add", [f"hw{t}", "b_hh"], [f"hb{t}"]),
                  helper.make_node("Add", [f"hb{t}", f"x{t}"], [f"z{t}"]),
                  helper.make_node(activation, [f"z{t}"], [f"h{t + 1}"]),
                  helper.make_node("Unsqueeze", [f"h{t + 1}", "zero"], [f"u{t}"])]
        state = f"h{t + 1}" if chained else "h0"
        stacked.append(f"u{t}")
    nodes += [helper.make_node("Concat", stacked, ["out"], axis=0),
              helper.make_node("ReduceMean", ["out"], ["loss"], keepdims=0)]
    rng = np.random.default_rng(0)
    weights = {"w_ih": rng.standard_normal((D, D)).astype(np.float32),
               "w_hh": rng.standard_normal((D, D)).astype(np.float32),
               "b_ih": np.zeros(D, np.float32), "b_hh": np.zeros(D, np.float32),
               "h0": np.zeros((B, D), np.float32), "zero": np.array([0], np.int64)}
    graph = helper.make_graph(
        nodes, "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, D])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(array, name) for name, array in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]
                             ).SerializeToString()


@pytest.mark.parametrize("activation", ["Tanh", "Relu"])
def test_a_dynamo_rnn_is_named_as_an_rnn_not_by_its_first_squeeze(activation: str) -> None:
    with pytest.raises(Diagnostic) as caught:
        import_model(unrolled(activation), "rnn.onnx")
    assert str(caught.value) == (
        f"rnn.onnx: error: node 'node_unbind_1' (Split) and what follows it are a recurrent "
        f"layer unrolled over 3 time steps, a {activation} per step reading the step before "
        "(nn.RNN as torch.onnx.export(dynamo=True) writes it); pase has no plain RNN layer: "
        "its recurrent layers are ONNX LSTM and GRU nodes (nn.LSTM, nn.GRU)")


def test_steps_that_do_not_read_each_other_keep_the_error_of_the_node() -> None:
    with pytest.raises(Diagnostic) as caught:
        import_model(unrolled(chained=False), "steps.onnx")
    assert "node 'node_unbind_1__0' (Squeeze): it squeezes an axis" in str(caught.value)
