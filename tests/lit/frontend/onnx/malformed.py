# Malformed models that protobuf and onnx.checker let through: one line, exit 1.
# RUN: python %s all %t
# RUN: not pase-opt %t.not_utf8.onnx 2>&1 | filecheck %s --check-prefix=UTF8
# RUN: not pase-opt %t.negative_batch.onnx -f 'onnx{batch=4}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
# RUN: not pase-opt %t.rank.onnx 2>&1 | filecheck %s --check-prefix=RANK
# RUN: not pase-opt %t.tile_bomb.onnx 2>&1 | filecheck %s --check-prefix=TILE
# RUN: not pase-opt %t.two_opsets.onnx 2>&1 | filecheck %s --check-prefix=OPSETS
# RUN: pase-opt %t.ai_onnx.onnx | filecheck %s --check-prefix=AIONNX

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
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


# A Tile of a 2 x 2 constant by [2^30, 2^30]: onnxscript's folding evaluated it (its inputs
# are small) before it threw away the result (too large), and the kernel killed the process
# at 16 GiB; now the node is left alone, and named.
# TILE: tile_bomb.onnx: error: 1 node of 1 operator type pase does not read (after folding the static shapes):
# TILE-NEXT: Tile: 1 node, the first 'z'
def case_tile_bomb():
    reps = numpy_helper.from_array(np.array([2**30, 2**30], np.int64))
    ones = numpy_helper.from_array(np.ones((2, 2), np.float32))
    return graph([node("Constant", [], ["r"], value=reps), node("Constant", [], ["k"], value=ones),
                  node("Tile", ["k", "r"], ["z"]),
                  node("ReduceSum", ["z"], ["s"], keepdims=0), node("Add", ["x", "s"], ["y"])],
                 {"x": [2, 2]}, ("y", [2, 2]))


# The default domain imported twice (the last one was read, as if the first were not there).
# OPSETS: two_opsets.onnx: error: the model imports domain 'ai.onnx' twice, as opsets 17 and 9
def case_two_opsets():
    model = gemm([2, 4])
    model.opset_import.append(helper.make_opsetid("", 9))
    return model


# The default domain by its other name, "ai.onnx": onnxscript found no opset for the nodes.
# AIONNX: dnn.einsum
def case_ai_onnx():
    model = gemm([2, 4])
    model.opset_import[0].domain = "ai.onnx"
    return model


main(globals())
