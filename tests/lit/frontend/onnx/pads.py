# ONNX Pad, and a window's uneven pads, as `dnn.pad` (zeros, edge, reflect); a zero Pad
# before a Conv folds into the Conv's padding; ONNX GRU as `dnn.gru`; what is not read,
# one error each.
# RUN: python %s all %t
# RUN: pase-opt %t.uneven.onnx | filecheck %s --check-prefix=UNEVEN
# RUN: pase-opt %t.modes.onnx | filecheck %s --check-prefix=MODES
# RUN: pase-opt %t.folded.onnx | filecheck %s --check-prefix=FOLDED
# RUN: pase-opt %t.gru.onnx | filecheck %s --check-prefix=GRU
# RUN: not pase-opt %t.wrap.onnx 2>&1 | filecheck %s --check-prefix=WRAP
# RUN: not pase-opt %t.value.onnx 2>&1 | filecheck %s --check-prefix=VALUE
# RUN: not pase-opt %t.crop.onnx 2>&1 | filecheck %s --check-prefix=CROP
# RUN: not pase-opt %t.gru_reset.onnx 2>&1 | filecheck %s --check-prefix=GRU-RESET

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402


def pad(mode="constant", pads=(0, 0, 1, 1, 0, 0, 1, 1), value=None):
    inputs = ["x", "pads"] + (["value"] if value is not None else [])
    shape = [size + pads[axis] + pads[4 + axis] for axis, size in enumerate([2, 3, 6, 6])]
    initializers = {"pads": np.array(pads, dtype=np.int64)}
    if value is not None:
        initializers["value"] = np.float32(value)
    return graph([node("Pad", inputs, ["y"], name="Pad_7", mode=mode)],
                 {"x": [2, 3, 6, 6]}, ("y", shape), initializers)


# The "same" padding of a stride-2 convolution (onnxscript folds F.pad(x, (0, 1, 0, 1))
# into the Conv's pads): the extra row and column padded first.
# UNEVEN:      %y_padh = dnn.pad zeros %x along h before 0 after 1 : (!dnn.tensor<[b = 2, c = 3, h = 8, w = 8], f32>) -> !dnn.tensor<[b = 2, c = 3, h1 = 9, w = 8], f32>
# UNEVEN-NEXT: %y_padw = dnn.pad zeros %y_padh along w before 0 after 1 : {{.*}} -> !dnn.tensor<[b = 2, c = 3, h1 = 9, w1 = 9], f32>
# UNEVEN:      dnn.conv2d %y_padw, %w stride 2 padding 0
def case_uneven():
    return graph([node("Conv", ["x", "w"], ["y"], pads=[0, 0, 1, 1], strides=[2, 2])],
                 {"x": [2, 3, 8, 8]}, ("y", [2, 4, 4, 4]), {"w": weights(4, 3, 3, 3)})


# (The output's last axis is named c: the classes of the loss pase adds.)
# MODES:      %r0 = dnn.pad reflect %x along h before 2 after 1 : {{.*}} -> !dnn.tensor<[b = 2, c = 3, h1 = 9, w = 6], f32>
# MODES-NEXT: %r = dnn.pad reflect %r0 along w before 1 after 0 : {{.*}} -> !dnn.tensor<[b = 2, c = 3, h1 = 9, c1 = 7], f32>
# MODES-NEXT: %e = dnn.pad edge %r along c before 0 after 2 : {{.*}} -> !dnn.tensor<[b = 2, c2 = 5, h1 = 9, c1 = 7], f32>
# MODES-NEXT: %y = dnn.relu %e
def case_modes():
    return graph([node("Pad", ["x", "p1"], ["r"], mode="reflect"),
                  node("Pad", ["r", "p2", "", "axes"], ["e"], mode="edge"),
                  node("Relu", ["e"], ["y"])],
                 {"x": [2, 3, 6, 6]}, ("y", [2, 5, 9, 7]),
                 {"p1": np.array([0, 0, 2, 1, 0, 0, 1, 0]), "p2": np.array([0, 2]),
                  "axes": np.array([1])}, opset=18)


# A zero Pad before a Conv is the Conv's padding; a Pad of width 0 is nothing.
# FOLDED-NOT:  dnn.pad
# FOLDED:      dnn.conv2d %x, %w stride 1 padding 1
# FOLDED-NOT:  dnn.pad
def case_folded():
    return graph([node("Pad", ["x", "p"], ["z"]), node("Pad", ["z", "none"], ["p1"]),
                  node("Conv", ["p1", "w"], ["y"], pads=[0, 0, 0, 0])],
                 {"x": [2, 3, 8, 8]}, ("y", [2, 4, 8, 8]),
                 {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1]), "none": np.zeros(8, np.int64),
                  "w": weights(4, 3, 3, 3)})


# GRU-NOT:  error
# (X is [sequence 5, batch 2, 4]: its axes are named b, s, c by position, as every input's.)
# GRU:      dnn.gru %g_transposed, %g_weight, %g_bias_input, %g_bias_hidden : (!dnn.tensor<[s = 2, b = 5, c = 4], f32>, !dnn.tensor<[l = 1, k = 8, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>, !dnn.tensor<[l = 1, n = 12], f32>) -> !dnn.tensor<[s = 2, b = 5, c = 4], f32>
def case_gru(reset=1):
    return graph([node("GRU", ["x", "W", "R", "B"], ["g"], hidden_size=4,
                       linear_before_reset=reset),
                  node("Squeeze", ["g", "one"], ["y"])],
                 {"x": [5, 2, 4]}, ("y", [5, 2, 4]),
                 {"W": weights(1, 12, 4), "R": weights(1, 12, 4, seed=1),
                  "B": weights(1, 24, seed=2), "one": np.array([1], dtype=np.int64)})


# WRAP: error: node 'Pad_7' (Pad): Pad mode 'wrap' is not supported (only constant, reflect and edge)
def case_wrap():
    return pad("wrap")


# VALUE: error: node 'Pad_7' (Pad): a Pad whose value is 1 is not supported (only zeros)
def case_value():
    return pad(value=1.0)


# CROP: error: node 'Pad_7' (Pad): negative pads [0, 0, -1, 0, 0, 0, 0, 0] (cropping) are not supported
def case_crop():
    return pad(pads=(0, 0, -1, 0, 0, 0, 0, 0))


# GRU-RESET: error: node 'g' (GRU): linear_before_reset=0 is not supported: pase's gru applies the reset gate after the recurrent product, as PyTorch's nn.GRU (linear_before_reset=1)
def case_gru_reset():
    return case_gru(reset=0)


main(globals())
