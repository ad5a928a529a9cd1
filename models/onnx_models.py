"""ONNX models built with `onnx.helper`, as PyTorch's exporter writes them (no downloads,
no torch): an MLP, a small CNN with batch norm, and a transformer block.

    python models/onnx_models.py OUT_DIR     # writes mlp.onnx, cnn.onnx, transformer.onnx

Each has a hand-written `.dnn` twin in `MODELS` that pase's ONNX frontend must match
(tests/frontend/test_onnx_models.py compares the optimum strategy costs).
The initializers are seeded, scaled like a framework's default initialization.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as missing:  # run with a Python that lacks the project's packages
    sys.exit(f"{sys.argv[0]}: error: this script needs {missing.name}: run it with the "
             "project's environment (. .venv/bin/activate, after pip install -e '.[onnx]')")

OPSET = 17


class _Graph:
    """Nodes and initializers of one graph, named as torch.onnx.export names them."""

    def __init__(self, seed: int = 0):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def weight(self, name: str, *shape: int, fill: float | None = None) -> str:
        if fill is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            array = self.rng.standard_normal(shape) / np.sqrt(fan_in)
        else:
            array = np.full(shape, fill)
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def constant(self, name: str, values: list[int] | float) -> str:
        dtype = np.int64 if isinstance(values, list) else np.float32
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attributes: object) -> str:
        output = f"/{name}/{op}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"/{name}/{op}",
                                           **attributes))
        return output

    def model(self, name: str, inputs: list[onnx.ValueInfoProto],
              output: str, output_shape: list[int | str]) -> onnx.ModelProto:
        self.nodes.append(helper.make_node("Identity", [output], ["logits"], name="output"))
        graph = helper.make_graph(self.nodes, name, inputs, [helper.make_tensor_value_info(
            "logits", TensorProto.FLOAT, output_shape)], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="pase models/onnx_models.py")
        onnx.checker.check_model(model)
        return model


def mlp(batch: int | str = 64, features: int = 256, hidden: int = 1024,
        classes: int = 10) -> onnx.ModelProto:
    """models/mlp.dnn with biases: Gemm (transB, as nn.Linear exports), Relu, Gemm."""
    g = _Graph(0)
    x = "input"
    h = g.node("Gemm", [x, g.weight("fc1.weight", hidden, features),
                        g.weight("fc1.bias", hidden, fill=0.0)], "fc1", transB=1)
    a = g.node("Relu", [h], "relu")
    z = g.node("Gemm", [a, g.weight("fc2.weight", classes, hidden),
                        g.weight("fc2.bias", classes, fill=0.0)], "fc2", transB=1)
    return g.model("mlp", [helper.make_tensor_value_info(
        x, TensorProto.FLOAT, [batch, features])], z, [batch, classes])


MLP_DNN = """\
graph @mlp(b = 64, d = 256, d1 = 1024, c = 10) {
  %input = input [b, d]
  %fc1_weight = param [d1, d]
  %fc1_Gemm_matmul = einsum %input, %fc1_weight -> [b, d1]
  %fc1_bias = param [d1]
  %fc1_Gemm = add %fc1_Gemm_matmul, %fc1_bias
  %relu_Relu = relu %fc1_Gemm
  %fc2_weight = param [c, d1]
  %fc2_Gemm_matmul = einsum %relu_Relu, %fc2_weight -> [b, c]
  %fc2_bias = param [c]
  %fc2_Gemm = add %fc2_Gemm_matmul, %fc2_bias
  %labels = input [b] : i64
  %loss = softmax_cross_entropy %fc2_Gemm, %labels over c
  return %loss
}
"""


def cnn(batch: int | str = 32, classes: int = 10) -> onnx.ModelProto:
    """Conv-BatchNorm-Relu twice, MaxPool, GlobalAveragePool, Flatten, Gemm."""
    g = _Graph(1)
    x = "image"
    y = x
    channels = 3
    for i, width in enumerate((16, 32)):
        y = g.node("Conv", [y, g.weight(f"conv{i}.weight", width, channels, 3, 3)],
                   f"conv{i}", pads=[1, 1, 1, 1], strides=[1, 1], kernel_shape=[3, 3])
        y = g.node("BatchNormalization", [
            y, g.weight(f"bn{i}.weight", width, fill=1.0), g.weight(f"bn{i}.bias", width,
                                                                    fill=0.0),
            g.weight(f"bn{i}.running_mean", width, fill=0.0),
            g.weight(f"bn{i}.running_var", width, fill=1.0)], f"bn{i}", epsilon=1e-5)
        y = g.node("Relu", [y], f"relu{i}")
        channels = width
        if i == 0:
            y = g.node("MaxPool", [y], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = g.node("GlobalAveragePool", [y], "gap")
    y = g.node("Flatten", [y], "flatten", axis=1)
    z = g.node("Gemm", [y, g.weight("fc.weight", classes, channels),
                        g.weight("fc.bias", classes, fill=0.0)], "fc", transB=1)
    return g.model("cnn", [helper.make_tensor_value_info(
        x, TensorProto.FLOAT, [batch, 3, 16, 16])], z, [batch, classes])


CNN_DNN = """\
graph @cnn(b = 32, c = 3, h = 16, w = 16, c1 = 16, kh = 3, kw = 3, h1 = 16, w1 = 16,
           h2 = 8, w2 = 8, c2 = 32, kh1 = 3, kw1 = 3, h3 = 8, w3 = 8, c3 = 10) {
  %image = input [b, c, h, w]
  %conv0_weight = param [c1, c, kh, kw]
  %conv0_Conv = conv2d %image, %conv0_weight stride 1 padding 1 -> [b, c1, h1, w1]
  %bn0_weight = param [c1]
  %bn0_bias = param [c1]
  %bn0_BatchNormalization = batchnorm %conv0_Conv, %bn0_weight, %bn0_bias over [b, h1, w1]
  %relu0_Relu = relu %bn0_BatchNormalization
  %pool_MaxPool = pool2d max %relu0_Relu window [2, 2] stride 2 -> [b, c1, h2, w2]
  %conv1_weight = param [c2, c1, kh1, kw1]
  %conv1_Conv = conv2d %pool_MaxPool, %conv1_weight stride 1 padding 1 -> [b, c2, h3, w3]
  %bn1_weight = param [c2]
  %bn1_bias = param [c2]
  %bn1_BatchNormalization = batchnorm %conv1_Conv, %bn1_weight, %bn1_bias over [b, h3, w3]
  %relu1_Relu = relu %bn1_BatchNormalization
  %gap_GlobalAveragePool = reduce mean %relu1_Relu over [h3, w3]
  %fc_weight = param [c3, c2]
  %fc_Gemm_matmul = einsum %gap_GlobalAveragePool, %fc_weight -> [b, c3]
  %fc_bias = param [c3]
  %fc_Gemm = add %fc_Gemm_matmul, %fc_bias
  %labels = input [b] : i64
  %loss = softmax_cross_entropy %fc_Gemm, %labels over c3
  return %loss
}
"""


def transformer(batch: int | str = 8, sequence: int = 16, model: int = 64,
                ff: int = 256, vocab: int = 100) -> onnx.ModelProto:
    """Embedding, one pre-norm block (single-head self-attention with the 1/√d scale,
    an erf-GELU feed-forward as exported before opset 20), a final LayerNorm and the
    tied-size output projection to the vocabulary."""
    g = _Graph(2)
    ids = "input_ids"
    x = g.node("Gather", [g.weight("wte.weight", vocab, model), ids], "wte")
    x = g.node("Add", [x, g.weight("wpe.weight", sequence, model)], "pos")
    ln = g.node("LayerNormalization", [x, g.weight("ln1.weight", model, fill=1.0),
                                       g.weight("ln1.bias", model, fill=0.0)], "ln1",
                axis=-1, epsilon=1e-5)
    q = g.node("MatMul", [ln, g.weight("attn.q.weight", model, model)], "q")
    k = g.node("MatMul", [ln, g.weight("attn.k.weight", model, model)], "k")
    v = g.node("MatMul", [ln, g.weight("attn.v.weight", model, model)], "v")
    kt = g.node("Transpose", [k], "kt", perm=[0, 2, 1])
    scores = g.node("MatMul", [q, kt], "scores")
    scaled = g.node("Div", [scores, g.constant("scale", float(np.sqrt(model)))], "scale")
    probs = g.node("Softmax", [scaled], "softmax", axis=-1)
    context = g.node("MatMul", [probs, v], "context")
    attn = g.node("MatMul", [context, g.weight("attn.o.weight", model, model)], "o")
    x = g.node("Add", [x, attn], "res1")
    ln = g.node("LayerNormalization", [x, g.weight("ln2.weight", model, fill=1.0),
                                       g.weight("ln2.bias", model, fill=0.0)], "ln2",
                axis=-1, epsilon=1e-5)
    up = g.node("MatMul", [ln, g.weight("mlp.up.weight", model, ff)], "up")
    # nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2)))
    d = g.node("Div", [up, g.constant("sqrt2", float(np.sqrt(2)))], "gelu_div")
    e = g.node("Erf", [d], "gelu_erf")
    a = g.node("Add", [e, g.constant("one", 1.0)], "gelu_add")
    m = g.node("Mul", [up, a], "gelu_mul")
    gelu = g.node("Mul", [m, g.constant("half", 0.5)], "gelu_half")
    down = g.node("MatMul", [gelu, g.weight("mlp.down.weight", ff, model)], "down")
    x = g.node("Add", [x, down], "res2")
    ln = g.node("LayerNormalization", [x, g.weight("lnf.weight", model, fill=1.0),
                                       g.weight("lnf.bias", model, fill=0.0)], "lnf",
                axis=-1, epsilon=1e-5)
    z = g.node("MatMul", [ln, g.weight("head.weight", model, vocab)], "head")
    return g.model("transformer", [helper.make_tensor_value_info(
        ids, TensorProto.INT64, [batch, sequence])], z, [batch, sequence, vocab])


TRANSFORMER_DNN = """\
graph @transformer(b = 8, s = 16, v = 100, d = 64, d1 = 64, d2 = 64, d3 = 64, t = 16,
                   d4 = 64, d5 = 256, c = 100) {
  %input_ids = input [b, s] : i64
  %wte_weight = param [v, d]
  %wte_Gather = embedding %input_ids, %wte_weight
  %wpe_weight = param [s, d]
  %pos_Add = add %wte_Gather, %wpe_weight
  %ln1_weight = param [d]
  %ln1_bias = param [d]
  %ln1_LayerNormalization = layernorm %pos_Add, %ln1_weight, %ln1_bias over d
  %attn_q_weight = param [d, d1]
  %q_MatMul = einsum %ln1_LayerNormalization, %attn_q_weight -> [b, s, d1]
  %attn_k_weight = param [d, d1]
  %k_MatMul = einsum %ln1_LayerNormalization, %attn_k_weight -> [b, s, d1]
  %attn_v_weight = param [d, d2]
  %v_MatMul = einsum %ln1_LayerNormalization, %attn_v_weight -> [b, s, d2]
  %scores_MatMul_keys = reshape %k_MatMul -> [b, t, d1]
  %scores_MatMul = einsum %q_MatMul, %scores_MatMul_keys -> [b, s, t]
  %scale_reciprocal = param []
  %scale_Div = mul %scores_MatMul, %scale_reciprocal
  %softmax_Softmax = softmax %scale_Div over t
  %context_MatMul_rhs = reshape %v_MatMul -> [b, t, d2]
  %context_MatMul = einsum %softmax_Softmax, %context_MatMul_rhs -> [b, s, d2]
  %attn_o_weight = param [d2, d]
  %o_MatMul = einsum %context_MatMul, %attn_o_weight -> [b, s, d]
  %res1_Add = add %pos_Add, %o_MatMul
  %ln2_weight = param [d]
  %ln2_bias = param [d]
  %ln2_LayerNormalization = layernorm %res1_Add, %ln2_weight, %ln2_bias over d
  %mlp_up_weight = param [d, d5]
  %up_MatMul = einsum %ln2_LayerNormalization, %mlp_up_weight -> [b, s, d5]
  %gelu_erf = gelu %up_MatMul
  %mlp_down_weight = param [d5, d]
  %down_MatMul = einsum %gelu_erf, %mlp_down_weight -> [b, s, d]
  %res2_Add = add %res1_Add, %down_MatMul
  %lnf_weight = param [d]
  %lnf_bias = param [d]
  %lnf_LayerNormalization = layernorm %res2_Add, %lnf_weight, %lnf_bias over d
  %head_weight = param [d, c]
  %head_MatMul = einsum %lnf_LayerNormalization, %head_weight -> [b, s, c]
  %labels = input [b, s] : i64
  %loss = softmax_cross_entropy %head_MatMul, %labels over c
  return %loss
}
"""

MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "mlp": (mlp, MLP_DNN), "cnn": (cnn, CNN_DNN), "transformer": (transformer, TRANSFORMER_DNN),
}
"""Each model's builder and its hand-written `.dnn` twin."""


def main(argv: list[str]) -> None:
    out = argv[0] if argv else "."
    os.makedirs(out, exist_ok=True)
    for name, (build, _) in MODELS.items():
        onnx.save(build(), os.path.join(out, f"{name}.onnx"))
        print(os.path.join(out, f"{name}.onnx"))


if __name__ == "__main__":
    main(sys.argv[1:])
