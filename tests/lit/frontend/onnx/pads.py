# ONNX Pad as `dnn.pad` (reflect, edge, zeros), one per padded axis; a zero Pad before a
# Conv (or an AveragePool) folded into its padding, whose uneven part (the "same" padding of a stride-2
# convolution) is a zero `pad` of the difference first. The Pads that stay one error:
# tests/frontend/test_more_exports.py.
# RUN: python %s all %t
# RUN: pase-opt %t.pads.onnx | filecheck %s

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402


# CHECK:      %r0 = dnn.pad reflect %x along h before 2 after 1 : {{.*}} -> !dnn.tensor<[b = 2, c = 3, h1 = 11, w = 8], f32>
# CHECK-NEXT: %r = dnn.pad reflect %r0 along w before 1 after 0 : {{.*}} -> !dnn.tensor<[b = 2, c = 3, h1 = 11, w1 = 9], f32>
# CHECK-NEXT: %e = dnn.pad edge %r along c before 0 after 2 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 5, h1 = 11, w1 = 9], f32>
# CHECK-NEXT: %w = dnn.param
# The zero Pad (1 each side) and the Conv's pads [0, 0, 1, 1] sum to [1, 1, 2, 2]: the
# extra row and column, then padding 1.
# CHECK-NEXT: %y_padh = dnn.pad zeros %e along h1 before 0 after 1 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 5, h2 = 12, w1 = 9], f32>
# CHECK-NEXT: %y_padw = dnn.pad zeros %y_padh along w1 before 0 after 1 : {{.*}} -> !dnn.tensor<[b = 2, c1 = 5, h2 = 12, w2 = 10], f32>
# CHECK-NEXT: %y = dnn.conv2d %y_padw, %w stride 2 padding 1 : {{.*}} -> !dnn.tensor<[b = 2, c2 = 4, h3 = 6, w3 = 5], f32>
# A zero Pad before an AveragePool is its padding, counted (count_include_pad=1).
# CHECK-NEXT: %a = dnn.pool2d avg %y window [2, 2] stride 1 padding 1 : {{.*}} -> !dnn.tensor<[b = 2, c2 = 4, h4 = 7, c3 = 6], f32>
# CHECK-NOT:  dnn.pad
def case_pads():
    return graph([node("Pad", ["x", "p1"], ["r"], mode="reflect"),
                  node("Pad", ["r", "p2", "", "axes"], ["e"], mode="edge"),
                  node("Pad", ["e", "p3"], ["z"]), node("Pad", ["z", "none"], ["z0"]),
                  node("Conv", ["z0", "w"], ["y"], pads=[0, 0, 1, 1], strides=[2, 2]),
                  node("Pad", ["y", "p3"], ["ya"]),
                  node("AveragePool", ["ya"], ["a"], kernel_shape=[2, 2])],
                 {"x": [2, 3, 8, 8]}, ("a", [2, 4, 7, 6]),
                 {"p1": np.array([0, 0, 2, 1, 0, 0, 1, 0]), "p2": np.array([0, 2]),
                  "axes": np.array([1]), "p3": np.array([0, 0, 1, 1, 0, 0, 1, 1]),
                  "none": np.zeros(8, np.int64), "w": weights(4, 5, 3, 3)}, opset=18)


main(globals())
