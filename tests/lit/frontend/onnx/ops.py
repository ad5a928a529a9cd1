# Each ONNX operator pase reads, and the dnn ops it becomes.
# RUN: python %s all %t
# RUN: pase-opt %t.gemm.onnx | filecheck %s --check-prefix=GEMM
# RUN: pase-opt %t.conv.onnx | filecheck %s --check-prefix=CONV
# RUN: pase-opt %t.attention.onnx | filecheck %s --check-prefix=ATTENTION
# RUN: pase-opt %t.gelu.onnx | filecheck %s --check-prefix=GELU
# RUN: pase-opt %t.shapes.onnx | filecheck %s --check-prefix=SHAPES
# RUN: pase-opt %t.unary.onnx | filecheck %s --check-prefix=UNARY
# RUN: pase-opt %t.embedding.onnx | filecheck %s --check-prefix=EMBEDDING
# RUN: pase-opt %t.batch.onnx -f 'onnx{batch=32 loss=mean}' | filecheck %s --check-prefix=BATCH

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402


# Gemm with transB and a bias (as nn.Linear exports): einsum, then add.
# GEMM:      dnn.graph @{{.*}}(b = 4, d = 8, d1 = 16, c = 3) {
# GEMM-NEXT:   %x = dnn.input : !dnn.tensor<[b = 4, d = 8], f32>
# GEMM-NEXT:   %labels = dnn.input : !dnn.tensor<[b = 4], i64>
# GEMM-NEXT:   %w = dnn.param : !dnn.tensor<[d1 = 16, d = 8], f32>
# GEMM-NEXT:   %h_matmul = dnn.einsum %x, %w : ({{.*}}) -> !dnn.tensor<[b = 4, d1 = 16], f32>
# GEMM-NEXT:   %bias = dnn.param : !dnn.tensor<[d1 = 16], f32>
# GEMM-NEXT:   %h = dnn.add %h_matmul, %bias
# GEMM-NEXT:   %w2 = dnn.param : !dnn.tensor<[d1 = 16, c = 3], f32>
# GEMM-NEXT:   %y = dnn.einsum %h, %w2 : ({{.*}}) -> !dnn.tensor<[b = 4, c = 3], f32>
# GEMM-NEXT:   %loss = dnn.softmax_cross_entropy %y, %labels over [c]
# GEMM-NEXT:   dnn.return %loss
def case_gemm():
    return graph([node("Gemm", ["x", "w", "bias"], ["h"], transB=1),
                  node("MatMul", ["h", "w2"], ["y"])],
                 {"x": [4, 8]}, ("y", [4, 3]),
                 {"w": weights(16, 8), "bias": weights(16), "w2": weights(16, 3)})


# Conv with a bias, BatchNormalization in training mode (the running statistics are not
# read), MaxPool, AveragePool, GlobalAveragePool (a mean over height and width), Flatten.
# CONV:      dnn.graph @{{.*}}(b = 2, c = 3, h = 8, w = 8, c1 = 4, kh = 3, kw = 3, h1 = 8, w1 = 8, h2 = 4, w2 = 4, h3 = 3, w3 = 3, c2 = 5)
# CONV:      %y_conv = dnn.conv2d %x, %w stride 1 padding 1 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 4, h1 = 8, w1 = 8], f32>
# CONV-NEXT: %b = dnn.param : !dnn.tensor<[c1 = 4], f32>
# CONV-NEXT: %y = dnn.add %y_conv, %b
# CONV-NEXT: %scale = dnn.param : !dnn.tensor<[c1 = 4], f32>
# CONV-NEXT: %shift = dnn.param : !dnn.tensor<[c1 = 4], f32>
# CONV-NEXT: %n = dnn.batchnorm %y, %scale, %shift over [b, h1, w1]
# CONV-NEXT: %p = dnn.pool2d max %n window [2, 2] stride 2 padding 0 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 4, h2 = 4, w2 = 4], f32>
# CONV-NEXT: %q = dnn.pool2d avg %p window [2, 2] stride 1 padding 0 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 4, h3 = 3, w3 = 3], f32>
# CONV-NEXT: %g = dnn.reduce mean %q over [h3, w3] : {{.*}} -> !dnn.tensor<[b = 2, c1 = 4], f32>
# CONV-NEXT: %fc = dnn.param : !dnn.tensor<[c1 = 4, c2 = 5], f32>
# CONV-NEXT: %z = dnn.einsum %g, %fc
# CONV-NEXT: %loss = dnn.softmax_cross_entropy %z, %labels over [c2]
def case_conv():
    return graph([node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                  node("BatchNormalization", ["y", "scale", "shift", "mean", "var"], ["n"]),
                  node("MaxPool", ["n"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                  node("AveragePool", ["p"], ["q"], kernel_shape=[2, 2]),
                  node("GlobalAveragePool", ["q"], ["g"]),
                  node("Flatten", ["g"], ["f"]),
                  node("MatMul", ["f", "fc"], ["z"])],
                 {"x": [2, 3, 8, 8]}, ("z", [2, 5]),
                 {"w": weights(4, 3, 3, 3), "b": weights(4), "scale": weights(4),
                  "shift": weights(4), "mean": weights(4), "var": np.ones(4, np.float32),
                  "fc": weights(4, 5)})


# Self-attention: Transpose is a renaming (free); Q·Kᵀ would hold the sequence twice, so
# the keys' sequence becomes t (a reshape that only renames); the context contracts t;
# Div by a constant is a mul by a scalar param that starts at 1/8.
# ATTENTION:      dnn.graph @{{.*}}(b = 2, s = 6, d = 8, t = 6)
# ATTENTION:      %scores_keys = dnn.reshape %x : {{.*}} -> !dnn.tensor<[b = 2, t = 6, d = 8], f32>
# ATTENTION-NEXT: %scores = dnn.einsum %x, %scores_keys : {{.*}} -> !dnn.tensor<[b = 2, s = 6, t = 6], f32>
# ATTENTION-NEXT: %scale_reciprocal = dnn.param : !dnn.tensor<[], f32>
# ATTENTION-NEXT: %scaled = dnn.mul %scores, %scale_reciprocal
# ATTENTION-NEXT: %probs = dnn.softmax %scaled over [t]
# ATTENTION-NEXT: %context_rhs = dnn.reshape %x : {{.*}} -> !dnn.tensor<[b = 2, t = 6, d = 8], f32>
# ATTENTION-NEXT: %context = dnn.einsum %probs, %context_rhs : {{.*}} -> !dnn.tensor<[b = 2, s = 6, d = 8], f32>
# ATTENTION-NEXT: %loss = dnn.reduce mean %context over [b, s, d]
def case_attention():
    return graph([node("Identity", ["x"], ["keys"]),
                  node("Transpose", ["keys"], ["kt"], perm=[0, 2, 1]),
                  node("MatMul", ["x", "kt"], ["scores"]),
                  node("Div", ["scores", "scale"], ["scaled"]),
                  node("Softmax", ["scaled"], ["probs"], axis=-1),
                  node("MatMul", ["probs", "x"], ["context"]),
                  node("ReduceMean", ["context"], ["loss"], keepdims=0)],
                 {"x": [2, 6, 8]}, ("loss", []), {"scale": np.float32(8.0)})


# GELU as PyTorch exports nn.GELU() before opset 20 (the erf form, in both orders of the
# two products) and the Gelu op itself: each one dnn.gelu.
# GELU:      %a = dnn.gelu %x
# GELU-NEXT: %b = dnn.gelu %a
# GELU-NEXT: %c = dnn.gelu %b
# GELU-NEXT: %loss = dnn.reduce mean %c
def case_gelu():
    constants = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5),
                 "rsqrt2": np.float32(1 / np.sqrt(2))}
    return graph([node("Div", ["x", "sqrt2"], ["d"]), node("Erf", ["d"], ["e"]),
                  node("Add", ["e", "one"], ["p"]), node("Mul", ["x", "p"], ["m"]),
                  node("Mul", ["m", "half"], ["a"]),
                  node("Mul", ["a", "rsqrt2"], ["d2"]), node("Erf", ["d2"], ["e2"]),
                  node("Add", ["one", "e2"], ["p2"]), node("Mul", ["a", "half"], ["h2"]),
                  node("Mul", ["h2", "p2"], ["b"]),
                  node("Gelu", ["b"], ["c"], approximate="tanh"),
                  node("ReduceMean", ["c"], ["loss"], keepdims=0)],
                 {"x": [2, 4]}, ("loss", []), constants, opset=20)


# Reshape splits and merges consecutive axes (a split keeps the dim's role), Squeeze and
# Unsqueeze only relabel, ReduceSum with keepdims leaves an axis of size 1 that broadcasts
# in the Sub, Concat joins along a new dim.
# SHAPES:      dnn.graph @{{.*}}(b = 2, d = 12, d1 = 3, d2 = 4, d3 = 12, d4 = 24)
# SHAPES:      %split = dnn.reshape %x : {{.*}} -> !dnn.tensor<[b = 2, d1 = 3, d2 = 4], f32>
# SHAPES-NEXT: %sums = dnn.reduce sum %split over [d2] : {{.*}} -> !dnn.tensor<[b = 2, d1 = 3], f32>
# SHAPES-NEXT: %centred = dnn.sub %split, %sums : {{.*}} -> !dnn.tensor<[b = 2, d1 = 3, d2 = 4], f32>
# SHAPES-NEXT: %merged = dnn.reshape %centred : {{.*}} -> !dnn.tensor<[b = 2, d3 = 12], f32>
# SHAPES-NEXT: %joined = dnn.concat %merged, %x : {{.*}} -> !dnn.tensor<[b = 2, d4 = 24], f32>
# SHAPES-NEXT: %loss = dnn.reduce mean %joined over [b, d4]
def case_shapes():
    return graph([node("Reshape", ["x", "shape"], ["split"]),
                  node("Unsqueeze", ["split", "axis0"], ["u"]),
                  node("Squeeze", ["u", "axis0"], ["sq"]),
                  node("ReduceSum", ["sq", "axis2"], ["sums"], keepdims=1),
                  node("Sub", ["sq", "sums"], ["centred"]),
                  node("Reshape", ["centred", "flat"], ["merged"]),
                  node("Concat", ["merged", "x"], ["joined"], axis=1),
                  node("ReduceMean", ["joined"], ["loss"], keepdims=0)],
                 {"x": [2, 12]}, ("loss", []),
                 {"shape": np.array([0, 3, -1]), "axis0": np.array([0]),
                  "axis2": np.array([2]), "flat": np.array([2, 12])})


# Elementwise ops; Identity and Dropout are the identity (pase trains dropout-free).
# The output's last axis is the class dim of the cross-entropy loss, so it is named c.
# UNARY:      dnn.graph @{{.*}}(b = 2, c = 4)
# UNARY-NEXT: %x = dnn.input : !dnn.tensor<[b = 2, c = 4], f32>
# UNARY-NEXT: %labels = dnn.input : !dnn.tensor<[b = 2], i64>
# UNARY-NEXT: %r = dnn.relu %x
# UNARY-NEXT: %t = dnn.tanh %r
# UNARY-NEXT: %s = dnn.sigmoid %t
# UNARY-NEXT: %e = dnn.exp %s
# UNARY-NEXT: %m = dnn.mul %e, %x
# UNARY-NEXT: %gamma = dnn.param : !dnn.tensor<[c = 4], f32>
# UNARY-NEXT: %beta = dnn.param : !dnn.tensor<[c = 4], f32>
# UNARY-NEXT: %n = dnn.layernorm %m, %gamma, %beta over [c]
# UNARY-NEXT: %sm = dnn.softmax %n over [c]
# UNARY-NEXT: %loss = dnn.softmax_cross_entropy %sm, %labels over [c]
def case_unary():
    return graph([node("Relu", ["x"], ["r"]), node("Tanh", ["r"], ["t"]),
                  node("Sigmoid", ["t"], ["s"]), node("Exp", ["s"], ["e"]),
                  node("Dropout", ["e"], ["dropped"]), node("Mul", ["dropped", "x"], ["m"]),
                  node("LayerNormalization", ["m", "gamma", "beta"], ["n"]),
                  node("Softmax", ["n"], ["sm"])],
                 {"x": [2, 4]}, ("sm", [2, 4]),
                 {"gamma": np.ones(4, np.float32), "beta": np.zeros(4, np.float32)})


# Gather on an embedding table is dnn.embedding; the ids are an i64 input [b, s].
# EMBEDDING:      dnn.graph @{{.*}}(b = 2, s = 5, v = 10, d = 4)
# EMBEDDING-NEXT:   %ids = dnn.input : !dnn.tensor<[b = 2, s = 5], i64>
# EMBEDDING-NEXT:   %table = dnn.param : !dnn.tensor<[v = 10, d = 4], f32>
# EMBEDDING-NEXT:   %e = dnn.embedding %ids, %table : {{.*}} -> !dnn.tensor<[b = 2, s = 5, d = 4], f32>
def case_embedding():
    return graph([node("Gather", ["table", "ids"], ["e"]),
                  node("ReduceMean", ["e"], ["loss"], keepdims=0)],
                 {"ids": ([2, 5], INT64)}, ("loss", []), {"table": weights(10, 4)})


# A symbolic batch takes batch=N; loss=mean takes the mean of the output.
# BATCH:      dnn.graph @{{.*}}(b = 32, d = 4, d1 = 3)
# BATCH:      %loss = dnn.reduce mean %y over [b, d1]
def case_batch():
    return graph([node("MatMul", ["x", "w"], ["y"])], {"x": ["N", 4]}, ("y", ["N", 3]),
                 {"w": weights(4, 3)})


main(globals())
