# The ONNX spellings of layers that PyTorch's exporters write, and the dnn ops they become.
# RUN: python %s mobile %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=MOBILE
# RUN: python %s qkv %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=QKV
# RUN: python %s norm %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=NORM
# RUN: python %s shared %t.onnx && pase-opt %t.onnx | filecheck %s --check-prefix=SHARED
# RUN: python %s gather %t.onnx && not pase-opt %t.onnx 2>&1 | filecheck %s --check-prefix=GATHER

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


# GATHER: error: node 'g' (Gather): Gather with constant indices is supported for consecutive indices (a slice) or one index repeated, not for these
def case_gather():
    return graph([node("Gather", ["table", "ids"], ["g"]), node("Add", ["x", "g"], ["y"])],
                 {"x": [3, 8]}, ("y", [3, 8]),
                 {"table": weights(6, 8), "ids": np.array([2, 0, 5])})


main(globals())
