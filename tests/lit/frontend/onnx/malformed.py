# Malformed models that protobuf and onnx.checker let through: one line, exit 1.
# RUN: python %s all %t
# RUN: not pase-opt %t.not_utf8.onnx 2>&1 | filecheck %s --check-prefix=UTF8
# RUN: not pase-opt %t.negative_batch.onnx -f 'onnx{batch=4}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
# RUN: not pase-opt %t.rank.onnx 2>&1 | filecheck %s --check-prefix=RANK

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import graph, main, node, weights  # noqa: E402


def gemm(x_shape):
    return graph([node("Gemm", ["x", "w"], ["y"], name="fc")], {"x": x_shape},
                 ("y", [2, 3]), {"w": weights(4, 3)}, check=False)


# A node name of bytes that are not UTF-8 (onnxscript's optimizer failed on it, naming its
# own serializer).
# UTF8: not_utf8.onnx: error: not a valid ONNX model: model.graph.node[0].name is not UTF-8 text (b'\xff\xfe')
# UTF8-NOT: {{.}}
def case_not_utf8():
    return gemm([2, 4]).SerializeToString().replace(b"fc", b"\xff\xfe")


# A batch axis of size -3 was taken for a symbolic one and given the batch of -f (an axis
# of size 0 likewise).
# NEGATIVE: negative_batch.onnx: error: axis 0 of input 'x' has size -3; pase needs sizes of at least 1
# NEGATIVE-NOT: {{.}}
def case_negative_batch():
    return gemm([-3, 4])


# An input of 33 axes (one of 64 failed inside pase-run: numpy's gathers take at most 63
# index arrays).
# RANK: rank.onnx: error: input 'x' has 33 axes; pase handles tensors of at most 32
# RANK-NOT: {{.}}
def case_rank():
    return graph([node("Relu", ["x"], ["y"])], {"x": [1] * 33}, ("y", [1] * 33))


main(globals())
