# pase-run trains an ONNX model like a .dnn one: its initializers are the initial
# parameters, --batch sizes a symbolic batch, --loss picks the training loss.
# RUN: python %s mlp %t.onnx
# RUN: pase-run %t.onnx --devices 2 --batch 4 --loss mean --check | filecheck %s
# RUN: not pase-run %t.onnx --devices 2 2>&1 | filecheck %s --check-prefix=NO-BATCH

# CHECK:      @{{.*}} on 2 devices (f32)
# CHECK:      check passed
# NO-BATCH:   error: the batch axis of input 'x' is symbolic ('n'); give its size: -f 'onnx{batch=N}' (pase-run: --batch N)

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import graph, main, node, weights  # noqa: E402


def case_mlp():
    return graph([node("Gemm", ["x", "w", "bias"], ["h"], transB=1), node("Relu", ["h"], ["y"])],
                 {"x": ["n", 8]}, ("y", ["n", 16]), {"w": weights(16, 8), "bias": weights(16)})


main(globals())
