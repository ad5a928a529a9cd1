"""Builds the ONNX model a lit test names: `python test.py CASE OUT.onnx`, or all of
them: `python test.py all PREFIX` (`PREFIX.CASE.onnx` each).

A test file defines functions `case_NAME() -> onnx.ModelProto` and ends with
`main(globals())`; `graph(...)` builds a model from nodes, typed inputs and output,
with numpy initializers.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


def graph(nodes, inputs, output, initializers=None, opset=17, output_type=FLOAT,
          check=True):
    """`inputs`: {name: shape} (float) or {name: (shape, type)}; `output`: (name, shape)."""
    values = []
    for name, spec in inputs.items():
        shape, element = spec if isinstance(spec, tuple) else (spec, FLOAT)
        values.append(helper.make_tensor_value_info(name, element, shape))
    out_name, out_shape = output
    inits = [numpy_helper.from_array(np.asarray(array), name)
             for name, array in (initializers or {}).items()]
    model = helper.make_model(
        helper.make_graph(nodes, "g", values,
                          [helper.make_tensor_value_info(out_name, output_type, out_shape)],
                          inits),
        opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model)
    return model


def node(op, inputs, outputs, name=None, **attributes):
    return helper.make_node(op, inputs, outputs, name=name or outputs[0], **attributes)


def weights(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def save(model, path):
    if isinstance(model, bytes):
        with open(path, "wb") as file:
            file.write(model)
    else:
        onnx.save(model, path)


def main(cases):
    """`python test.py CASE OUT.onnx` writes one case; `python test.py all PREFIX` writes
    every case, each to `PREFIX.CASE.onnx` (one interpreter start-up and one import of
    onnx for the whole file, where a line per case would pay them each time)."""
    case, path = sys.argv[1:3]
    if case != "all":
        save(cases[f"case_{case}"](), path)
        return
    for name, build in cases.items():
        if name.startswith("case_") and callable(build):
            save(build(), f"{path}.{name.removeprefix('case_')}.onnx")
