# Every error is one line, `file: error: node 'NAME' (OpType): what is missing`, exit 1.
# RUN: python %s all %t
# RUN: not pase-opt %t.cos.onnx 2>&1 | filecheck %s --check-prefix=COS
# RUN: not pase-opt %t.strides.onnx 2>&1 | filecheck %s --check-prefix=STRIDES
# RUN: not pase-opt %t.pads.onnx 2>&1 | filecheck %s --check-prefix=PADS
# RUN: not pase-opt %t.dilations.onnx 2>&1 | filecheck %s --check-prefix=DILATIONS
# RUN: not pase-opt %t.alpha.onnx 2>&1 | filecheck %s --check-prefix=ALPHA
# RUN: not pase-opt %t.divide.onnx 2>&1 | filecheck %s --check-prefix=DIVIDE
# RUN: not pase-opt %t.computed_shape.onnx 2>&1 | filecheck %s --check-prefix=COMPUTED-SHAPE
# RUN: not pase-opt %t.reshape.onnx 2>&1 | filecheck %s --check-prefix=RESHAPE
# RUN: not pase-opt %t.mask.onnx 2>&1 | filecheck %s --check-prefix=MASK
# RUN: not pase-opt %t.gather.onnx 2>&1 | filecheck %s --check-prefix=GATHER
# RUN: not pase-opt %t.outputs.onnx 2>&1 | filecheck %s --check-prefix=OUTPUTS
# RUN: not pase-opt %t.symbolic.onnx 2>&1 | filecheck %s --check-prefix=SYMBOLIC
# RUN: not pase-opt %t.sequence.onnx -f 'onnx{batch=4}' 2>&1 | filecheck %s --check-prefix=SEQUENCE
# RUN: not pase-opt %t.symbolic.onnx -f 'onnx{batch=999999999999999999999999999999999999999999999}' 2>&1 | filecheck %s --check-prefix=DIGITS
# RUN: not pase-opt %t.symbolic.onnx -f 'onnx{batch=99999999999999999999}' 2>&1 | filecheck %s --check-prefix=BATCH-LIMIT
# RUN: not pase-opt %t.symbolic.onnx -f 'onnx{batch=4000000000000000}' 2>&1 | filecheck %s --check-prefix=BATCH-ELEMENTS
# RUN: not pase-opt %t.huge.onnx 2>&1 | filecheck %s --check-prefix=HUGE
# RUN: not pase-opt %t.lstm_state.onnx 2>&1 | filecheck %s --check-prefix=LSTM-STATE
# RUN: pase-opt %t.input_type.onnx 2>&1 | filecheck %s --check-prefix=INPUT-TYPE
# RUN: not pase-opt %t.old.onnx 2>&1 | filecheck %s --check-prefix=OLD
# RUN: not pase-opt %t.new.onnx 2>&1 | filecheck %s --check-prefix=NEW
# RUN: not pase-opt %t.inference.onnx 2>&1 | filecheck %s --check-prefix=INFERENCE
# RUN: not pase-opt %t.invalid.onnx 2>&1 | filecheck %s --check-prefix=INVALID
# RUN: not pase-opt %t.truncated.onnx 2>&1 | filecheck %s --check-prefix=TRUNCATED
# RUN: not pase-opt %t.text.onnx 2>&1 | filecheck %s --check-prefix=TRUNCATED
# RUN: not pase-opt %t.empty.onnx 2>&1 | filecheck %s --check-prefix=EMPTY
# RUN: not pase-opt %t.dilations.onnx -f 'onnx{loss=sum}' 2>&1 | filecheck %s --check-prefix=LOSS
# RUN: not pase-run %t.dilations.onnx --devices 2 2>&1 | filecheck %s --check-prefix=DILATIONS

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402


def conv(**attributes):
    return graph([node("Conv", ["x", "w"], ["y"], name="Conv_12", **attributes)],
                 {"x": [2, 32, 8, 8]}, ("y", ["b", "c", "h", "w"]),
                 {"w": weights(32, 32 // attributes.get("group", 1), 3, 3)})


# Every op type pase does not read, in one report: how many nodes, the first one's name.
# COS:      error: 4 nodes of 3 operator types pase does not read (after folding the static shapes):
# COS-NEXT:   Cos: 2 nodes, the first 'c'
# COS-NEXT:   Custom of domain my.ops: 1 node, the first 'k'
# COS-NEXT:   Sin: 1 node, the first 's'
# COS-NEXT: pase reads Add, AveragePool, {{.*}}, Where
# COS-NOT: {{.}}
def case_cos():
    model = graph([node("Cos", ["x"], ["c"], name="c"), node("Sin", ["c"], ["s"], name="s"),
                   node("Cos", ["s"], ["c2"], name="c2"), node("Relu", ["c2"], ["r"]),
                   helper.make_node("Custom", ["r"], ["y"], name="k", domain="my.ops")],
                  {"x": [2, 4]}, ("y", [2, 4]), check=False)
    model.opset_import.append(helper.make_opsetid("my.ops", 1))
    return model


# STRIDES: error: node 'Conv_12' (Conv): strides=[1, 2] is not supported (pase has one stride for height and width)
def case_strides():
    return conv(strides=[1, 2])


# PADS: error: node 'MaxPool_3' (MaxPool): pads=[1, 1, 0, 0] is not supported (only the same padding at both ends of an axis)
def case_pads():
    """Uneven pads of a max pool (a convolution's and a counting average pool's are
    read: tests/lit/frontend/onnx/pads.py)."""
    return graph([node("MaxPool", ["x"], ["y"], name="MaxPool_3", kernel_shape=[2, 2],
                       pads=[1, 1, 0, 0])], {"x": [2, 4, 8, 8]}, ("y", [2, 4, 8, 8]))


# DILATIONS-NOT: Traceback
# DILATIONS: {{.*}}.onnx: error: node 'Conv_12' (Conv): dilations=[2, 2] is not supported (only 1)
# DILATIONS-NOT: {{.}}
def case_dilations():
    return conv(dilations=[2, 2])


# ALPHA: error: node 'fc' (Gemm): alpha=0.5 is not supported (only 1)
def case_alpha():
    return graph([node("Gemm", ["x", "w"], ["y"], name="fc", alpha=0.5)], {"x": [2, 4]},
                 ("y", [2, 3]), {"w": weights(4, 3)})


# DIVIDE: error: node 'q' (Div): the divisor must be a nonzero float constant
def case_divide():
    return graph([node("Div", ["x", "zero"], ["q"])], {"x": [2, 4]}, ("q", [2, 4]),
                 {"zero": np.zeros(4, dtype=np.float32)})


# COMPUTED-SHAPE: error: node 'r' (Reshape): the target shape must be a constant (an initializer or a Constant node) for pase to know the shapes, but 's' is not
def case_computed_shape():
    return graph([node("Relu", ["x"], ["y"]), node("Reshape", ["y", "s"], ["r"])],
                 {"x": [2, 4], "s": ([2], INT64)}, ("r", ["n", "m"]))


# RESHAPE: error: node 'r' (Reshape): reshape cannot turn its input [2, 3, 4] into the target [3, 8]: it merges or splits consecutive dimensions only
def case_reshape():
    return graph([node("Reshape", ["x", "shape"], ["r"])], {"x": [2, 3, 4]}, ("r", [3, 8]),
                 {"shape": np.array([3, 8])})


# MASK: error: the output 'm' is not computed by a layer
def case_mask():
    return graph([node("Dropout", ["x", "ratio", "training"], ["d", "mask"]),
                  node("Identity", ["mask"], ["m"])],
                 {"x": [2, 4]}, ("m", [2, 4]), {"ratio": np.float32(0.5),
                                               "training": np.bool_(True)},
                 output_type=TensorProto.BOOL)


# GATHER: error: node 'g' (Gather): Gather is supported on an embedding table (an initializer), not on the computed 'r'
def case_gather():
    return graph([node("Relu", ["x"], ["r"]), node("Gather", ["r", "ids"], ["g"])],
                 {"x": [5, 4], "ids": ([2], INT64)}, ("g", [2, 4]))


# OUTPUTS: error: the model has 2 outputs ('y', 'z'); pase trains a model with one
def case_outputs():
    model = graph([node("Relu", ["x"], ["y"]), node("Tanh", ["x"], ["z"])], {"x": [2, 4]},
                  ("y", [2, 4]), check=False)
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4]))
    return model


# SYMBOLIC: error: the batch axis of input 'x' is symbolic ('batch_size'); give its size: -f 'onnx{batch=N}' (pase-run: --batch N)
def case_symbolic():
    return graph([node("Relu", ["x"], ["y"])], {"x": ["batch_size", 4]},
                 ("y", ["batch_size", 4]))


# SEQUENCE: error: axis 1 of input 'ids' is symbolic ('sequence'); pase needs static sizes: export the model with a fixed size for it
def case_sequence():
    return graph([node("Gather", ["table", "ids"], ["y"])],
                 {"ids": (["batch", "sequence"], INT64)}, ("y", ["batch", "sequence", 4]),
                 {"table": weights(10, 4)})


# Not an error: a float16 model is read as its float32 master copy (frontend/onnx/half_precision.py).
# INPUT-TYPE-NOT: error:
# INPUT-TYPE: %x = dnn.input : !dnn.tensor<[b = 2, c = 4], f32>
# INPUT-TYPE: dnn.relu %x : (!dnn.tensor<[b = 2, c = 4], f32>)
def case_input_type():
    return graph([node("Relu", ["x"], ["y"])], {"x": ([2, 4], TensorProto.FLOAT16)},
                 ("y", [2, 4]), output_type=TensorProto.FLOAT16)


# OLD: error: opset 11 is too old: pase reads opsets 13 to {{[0-9]+}}; convert the model with onnx.version_converter.convert_version(model, 17), or export it again with opset_version=17
def case_old():
    return graph([node("Relu", ["x"], ["y"])], {"x": [2, 4]}, ("y", [2, 4]), opset=11)


# NEW: error: opset 99 is too new: pase reads opsets 13 to {{[0-9]+}}
def case_new():
    return graph([node("Relu", ["x"], ["y"])], {"x": [2, 4]}, ("y", [2, 4]), opset=99,
                 check=False)


# INFERENCE: error: the shapes of the model cannot be inferred: [ShapeInferenceError] {{.*}}MatMul{{.*}}
def case_inference():
    return graph([node("MatMul", ["x", "w"], ["y"])], {"x": [2, 4]}, ("y", [2, 3]),
                 {"w": weights(5, 3)}, check=False)


# INVALID: error: not a valid ONNX model: {{.*}}
def case_invalid():
    model = graph([node("Relu", ["x"], ["y"])], {"x": [2, 4]}, ("y", [2, 4]))
    model.graph.node[0].input[0] = "nowhere"
    return model


# TRUNCATED: error: not an ONNX model: the file is truncated or corrupt ({{.*}})
def case_truncated():
    return case_alpha().SerializeToString()[:60]


def case_text():
    return b"graph @g(b = 2) {}\n"


# EMPTY: error: not an ONNX model, or one without nodes: the file is empty, truncated or corrupt
def case_empty():
    return b""


# DIGITS: pase-opt: error: -f 'onnx{batch=...': an integer of 45 digits; options take integers of at most 40 digits
# BATCH-LIMIT: .onnx: error: batch=99,999,999,999,999,999,999 is over pase's limit of 2^53 (-f 'onnx{batch=N}', pase-run --batch N)
# BATCH-ELEMENTS: error: input 'x' of shape [4000000000000000, 4] has 16,000,000,000,000,000 elements with batch=4,000,000,000,000,000 (-f 'onnx{batch=N}', pase-run --batch N); pase handles at most 2^53 per tensor


# HUGE: error: input 'x' of shape [1099511627776, 1048576] has 1,152,921,504,606,846,976 elements; pase handles at most 2^53 per tensor
def case_huge():
    return graph([node("Relu", ["x"], ["y"])], {"x": [2**40, 2**20]}, ("y", [2**40, 2**20]))


# LOSS: error: unknown loss 'sum'; expected cross-entropy or mean


# A recurrent node's input computed from constants that do not compute (the initial state
# expanded to a batch its constant does not broadcast to) was numpy's bare message.
# LSTM-STATE: lstm_state.onnx: error: input 'h0' of node 'h' (LSTM) is computed from constants, and computing it failed: operands could not be broadcast together with shapes (1,3,4) (1,2,4)
# LSTM-STATE-NOT: {{.}}
def case_lstm_state():
    return graph([node("Expand", ["zeros", "shape"], ["h0"]),
                  node("LSTM", ["x", "w", "r", "", "", "h0"], ["h"], hidden_size=4),
                  node("Squeeze", ["h", "one"], ["y"])],
                 {"x": [5, 2, 4]}, ("y", [5, 2, 4]),
                 {"zeros": np.zeros((1, 3, 4), np.float32), "shape": np.array([1, 2, 4]),
                  "w": weights(1, 16, 4), "r": weights(1, 16, 4), "one": np.array([1])},
                 check=False)


main(globals())
