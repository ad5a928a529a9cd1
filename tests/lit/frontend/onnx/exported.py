# The ONNX spellings of layers that PyTorch's exporters write, and the dnn ops they become.
# RUN: python %s mobile %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=MOBILE
# RUN: python %s qkv %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=QKV
# RUN: python %s norm %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=NORM
# RUN: python %s shared %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=SHARED
# RUN: python %s gather %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=GATHER
# RUN: python %s gather_computed %t.onnx && not pase-opt %t.onnx 2>&1 | filecheck %s --check-prefix=GATHER-COMPUTED
# RUN: python %s layernorm %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=LAYERNORM
# RUN: python %s lstm %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=LSTM
# RUN: python %s lstm_sizes %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=LSTM-SIZES

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402


# MobileNetV2's block: a depthwise convolution (group = channels), ReLU6 as Clip 0 6, a
# 1x1 pointwise convolution whose filter keeps its size-1 window axes.
# MOBILE:      %dw = dnn.conv2d %x, %wd stride 1 padding 1 groups 4 : ({{.*}}, !dnn.tensor<[c1 = 4, d = 1, kh = 3, kw = 3], f32>) -> !dnn.tensor<[b = 2, c1 = 4, h1 = 8, w1 = 8], f32>
# MOBILE-NEXT: %r6 = dnn.clip %dw min 0.0 max 6.0
# MOBILE-NEXT: %wp = dnn.param : !dnn.tensor<[c2 = 8, c1 = 4, kh1 = 1, kw1 = 1], f32>
# MOBILE-NEXT: %pw = dnn.conv2d %r6, %wp stride 1 padding 0
def case_mobile():
    return graph([node("Conv", ["x", "wd"], ["dw"], group=4, pads=[1, 1, 1, 1]),
                  node("Clip", ["dw", "low", "high"], ["r6"]),
                  node("Conv", ["r6", "wp"], ["pw"]),
                  node("GlobalAveragePool", ["pw"], ["g"]), node("Flatten", ["g"], ["y"])],
                 {"x": [2, 4, 8, 8]}, ("y", [2, 8]),
                 {"wd": weights(4, 1, 3, 3), "low": np.float32(0), "high": np.float32(6),
                  "wp": weights(8, 4, 1, 1)})


# GPT-2's attention: one projection split into q, k, v (Split: slices), the scores under
# a constant causal mask (Where: mask causal), position ids as consecutive constant
# indices (Gather: a slice of the table).
# QKV:      %q = dnn.slice %qkv along d1 from 0 : {{.*}} -> !dnn.tensor<[b = 2, s = 4, d2 = 8], f32>
# QKV-NEXT: %k = dnn.slice %qkv along d1 from 8
# QKV-NEXT: %v = dnn.slice %qkv along d1 from 16
# QKV:      %m = dnn.mask causal %scores over [s, t] fill -10000.0
# QKV:      %pos = dnn.slice %table along v from 0 : (!dnn.tensor<[v = 6, c = 8], f32>) -> !dnn.tensor<[s = 4, c = 8], f32>
def case_qkv():
    causal = np.tril(np.ones((4, 4), dtype=bool))
    return graph([node("MatMul", ["x", "w"], ["qkv"]),
                  node("Split", ["qkv"], ["q", "k", "v"], axis=2, num_outputs=3),
                  node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                  node("MatMul", ["q", "kt"], ["scores"]),
                  node("Where", ["causal", "scores", "fill"], ["m"]),
                  node("Softmax", ["m"], ["p"]), node("MatMul", ["p", "v"], ["c"]),
                  node("Gather", ["table", "ids"], ["pos"]),
                  node("Add", ["c", "pos"], ["y"])],
                 {"x": [2, 4, 8]}, ("y", [2, 4, 8]),
                 {"w": weights(8, 24), "causal": causal, "fill": np.float32(-1e4),
                  "table": weights(6, 8), "ids": np.arange(4)}, opset=18)


# A decomposed RMS norm (T5): Pow 2, ReduceMean, Add eps, Sqrt, Div (here: Mul by its
# reciprocal), Mul by the scale is one rmsnorm; without the scale, the ops one by one.
# NORM:      %y = dnn.rmsnorm %x, %scale over [c]
# NORM-NEXT: %sq2 = dnn.pow %y exponent 2.0
# NORM-NEXT: %ms2 = dnn.reduce mean %sq2 over [c]
# NORM:      %rms2 = dnn.sqrt
# NORM-NEXT: %z = dnn.div %y, %rms2
def case_norm():
    return graph([node("Pow", ["x", "two"], ["sq"]),
                  node("ReduceMean", ["sq"], ["ms"], axes=[-1]),
                  node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
                  node("Reciprocal", ["rms"], ["inv"]), node("Mul", ["x", "inv"], ["n"]),
                  node("Mul", ["n", "scale"], ["y"]),
                  node("Pow", ["y", "two"], ["sq2"]),
                  node("ReduceMean", ["sq2"], ["ms2"], axes=[-1]),
                  node("Add", ["ms2", "eps"], ["mse2"]), node("Sqrt", ["mse2"], ["rms2"]),
                  node("Div", ["y", "rms2"], ["z"])],
                 {"x": [2, 4, 8]}, ("z", [2, 4, 8]),
                 {"two": np.float32(2), "eps": np.float32(1e-6), "scale": weights(8)})


# Zero biases merged into one initializer by the exporter: each layer its own param.
# SHARED:      %b = dnn.param : !dnn.tensor<[d1 = 16], f32>
# SHARED:      %b2 = dnn.param : !dnn.tensor<[c = 16], f32>
def case_shared():
    return graph([node("Gemm", ["x", "w1", "b"], ["h"], transB=1),
                  node("Relu", ["h"], ["r"]),
                  node("Gemm", ["r", "w2", "b"], ["y"], transB=1)],
                 {"x": [2, 8]}, ("y", [2, 16]),
                 {"w1": weights(16, 8), "w2": weights(16, 16),
                  "b": np.zeros(16, np.float32)})


# Rows of an initializer table by constant indices that are no slice (T5's relative-position
# buckets): an embedding whose ids are an input of their own, filled by the importer.
# GATHER:      %g_ids = dnn.input : !dnn.tensor<[b = 3], i64>
# GATHER:      %table = dnn.param : !dnn.tensor<[v = 6, c = 8], f32>
# GATHER-NEXT: %g = dnn.embedding %g_ids, %table
def case_gather():
    return graph([node("Gather", ["table", "ids"], ["g"]), node("Add", ["x", "g"], ["y"])],
                 {"x": [3, 8]}, ("y", [3, 8]),
                 {"table": weights(6, 8), "ids": np.array([2, 0, 5])})


# GATHER-COMPUTED: error: node 'g' (Gather): Gather with constant indices is supported for consecutive indices (a slice), one index repeated, or rows (axis 0) of an initializer table, not for these
def case_gather_computed():
    return graph([node("Gather", ["x", "ids"], ["g"], axis=1), node("Add", ["x", "g"], ["y"])],
                 {"x": [3, 8]}, ("y", [3, 8]),
                 {"ids": np.arange(8)[::-1].copy()})



# A decomposed layer norm (nn.LayerNorm before opset 17): ReduceMean, Sub, Pow 2,
# ReduceMean, Add eps, Sqrt, Div, Mul by the scale, Add the shift is one layernorm.
# LAYERNORM:      %gamma = dnn.param : !dnn.tensor<[c = 8], f32>
# LAYERNORM-NEXT: %beta = dnn.param : !dnn.tensor<[c = 8], f32>
# LAYERNORM-NEXT: %y = dnn.layernorm %x, %gamma, %beta over [c]
def case_layernorm():
    return graph([node("ReduceMean", ["x"], ["mean"], axes=[-1]),
                  node("Sub", ["x", "mean"], ["xc"]), node("Pow", ["xc", "two"], ["sq"]),
                  node("ReduceMean", ["sq"], ["var"], axes=[-1]),
                  node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
                  node("Div", ["xc", "sd"], ["n"]), node("Mul", ["gamma", "n"], ["ng"]),
                  node("Add", ["ng", "beta"], ["y"])],
                 {"x": [2, 4, 8]}, ("y", [2, 4, 8]),
                 {"two": np.float32(2), "eps": np.float32(1e-5), "gamma": weights(8),
                  "beta": weights(8, seed=1)})


def lstm_layer(name, x, size, bias=True):
    """One ONNX LSTM layer as PyTorch exports it: [s, 1, b, h] out, zero initial state."""
    inputs = [x, f"{name}_w", f"{name}_r", f"{name}_b" if bias else "", "", "zeros", "zeros"]
    return node("LSTM", inputs, [name], hidden_size=size)


def lstm_weights(name, size, seed):
    return {f"{name}_w": weights(1, 4 * size, size, seed=seed),
            f"{name}_r": weights(1, 4 * size, size, seed=seed + 1),
            f"{name}_b": weights(1, 8 * size, seed=seed + 2)}


# nn.LSTM(8, 8, num_layers=2): one ONNX LSTM per layer, each a dnn.lstm of one layer
# with its weights stacked [1, 2e, 4e] and its two biases summed [1, 4e].
# LSTM:      %y1_weight = dnn.param : !dnn.tensor<[l = 1, k = 16, n = 32], f32>
# LSTM-NEXT: %y1_bias = dnn.param : !dnn.tensor<[l = 1, n = 32], f32>
# LSTM-NEXT: %y1 = dnn.lstm %{{.*}}, %y1_weight, %y1_bias
# LSTM:      %y2_weight = dnn.param : !dnn.tensor<[l1 = 1, k1 = 16, n1 = 32], f32>
# LSTM-NEXT: %y2 = dnn.lstm %{{.*}}, %y2_weight :
def case_lstm():
    return graph([node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
                  lstm_layer("y1", "xt", 8), node("Squeeze", ["y1", "one"], ["s1"]),
                  lstm_layer("y2", "s1", 8, bias=False),
                  node("Squeeze", ["y2", "one"], ["s2"]),
                  node("Transpose", ["s2"], ["y"], perm=[1, 0, 2])],
                 {"x": [2, 4, 8]}, ("y", [2, 4, 8]),
                 {**lstm_weights("y1", 8, 0), **lstm_weights("y2", 8, 3),
                  "zeros": np.zeros((1, 4, 8), np.float32), "one": np.array([1])})


# An LSTM of 4 units on 8 inputs: a dnn.lstm of the wider side's 8 units (the 4 past the
# hidden size have zero weights, which stay zero), its output sliced to the 4.
# LSTM-SIZES:      %y1_weight = dnn.param : !dnn.tensor<[l = 1, k = 16, n = 32], f32>
# LSTM-SIZES:      %y1_units = dnn.lstm %y1_transposed, %y1_weight, %y1_bias : {{.*}} -> !dnn.tensor<[s = 2, b = 4, d = 8], f32>
# LSTM-SIZES-NEXT: %y1 = dnn.slice %y1_units along d from 0 : {{.*}} -> !dnn.tensor<[s = 2, b = 4, c = 4], f32>
def case_lstm_sizes():
    model = graph([lstm_layer("y1", "x", 4), node("Squeeze", ["y1", "one"], ["y"])],
                  {"x": [4, 2, 8]}, ("y", [4, 2, 4]),
                  {"y1_w": weights(1, 16, 8), "y1_r": weights(1, 16, 4),
                   "y1_b": weights(1, 32), "zeros": np.zeros((1, 2, 4), np.float32),
                   "one": np.array([1])})
    return model


main(globals())
