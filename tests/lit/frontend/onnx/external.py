# External data (the weights the default PyTorch exporter writes to FILE.onnx.data) is read
# from the model's own folder only, whatever the current directory: a location that leaves
# the folder, a missing or short file is one error naming the file and the tensor's owner.
# RUN: rm -rf %t && mkdir -p %t/model %t/cwd
# RUN: python %s beside %t/model/m.onnx && cd %t/cwd && pase-opt %t/model/m.onnx | filecheck %s --check-prefix=BESIDE
# RUN: python %s outside %t/model/m.onnx && not pase-opt %t/model/m.onnx 2>&1 | filecheck %s --check-prefix=OUTSIDE
# RUN: python %s constant %t/model/m.onnx && echo secret > %t/cwd/secret.bin && cd %t/cwd && not pase-opt %t/model/m.onnx 2>&1 | filecheck %s --check-prefix=CONSTANT
# RUN: python %s short %t/model/m.onnx && not pase-opt %t/model/m.onnx 2>&1 | filecheck %s --check-prefix=SHORT
# RUN: python %s nameless %t/model/m.onnx && not pase-opt %t/model/m.onnx 2>&1 | filecheck %s --check-prefix=NAMELESS
# RUN: python %s beside %t/model/m.onnx && not pase-opt < %t/model/m.onnx -f onnx 2>&1 | filecheck %s --check-prefix=STDIN
# RUN: mkfifo %t/model/fifo.bin && python %s unreadable %t/model/m.onnx
# RUN: not pase-opt %t/model/m.onnx.far.onnx 2>&1 | filecheck %s --check-prefix=FAR
# RUN: not pase-opt %t/model/m.onnx.nul.onnx 2>&1 | filecheck %s --check-prefix=NUL
# RUN: not pase-opt %t/model/m.onnx.fifo.onnx 2>&1 | filecheck %s --check-prefix=FIFO
# External data past the import's memory budget is refused before a byte of it is read (it
# was read whole first): a sparse file of 64 MiB, under a budget of 32 MiB.
# RUN: python %s huge %t/model/big.onnx
# RUN: not pase-opt %t/model/big.onnx -f 'onnx{memory-gib=0.03125}' 2>&1 | filecheck %s --check-prefix=BUDGET
# RUN: not pase-run %t/model/big.onnx --devices 2 --memory-gib 0.03125 2>&1 | filecheck %s --check-prefix=BUDGET
# RUN: not pase-opt %t/model/m.onnx -f 'onnx{memory-gib=0}' 2>&1 | filecheck %s --check-prefix=ZERO
# A linked model's own folder is its target's: the data beside the file the link names is
# read (it was looked up beside the link), and only that folder is read.
# RUN: rm -rf %t/links && mkdir -p %t/links && python %s beside %t/model/m.onnx
# RUN: ln -s ../model/m.onnx %t/links/m.onnx && pase-opt %t/links/m.onnx | filecheck %s --check-prefix=BESIDE
# RUN: cp %t/model/m.onnx.data %t/links/m.onnx.data && rm %t/model/m.onnx.data
# RUN: not pase-opt %t/links/m.onnx 2>&1 | filecheck %s --check-prefix=LINKED
# Tensors anywhere in the model are read from its folder only: a Constant in an If's
# branch read its location from the current directory (onnxscript folded the If); a link
# in the folder to a file outside it, a sparse initializer, a function's Constant.
# RUN: python %s nested %t/model/n && cd %t/cwd && cp secret.bin %t/model/inside.bin
# RUN: cd %t/cwd && not pase-opt %t/model/n.branch.onnx 2>&1 | filecheck %s --check-prefix=BRANCH
# RUN: ln -sf ../cwd/secret.bin %t/model/out.bin && not pase-opt %t/model/n.link.onnx 2>&1 | filecheck %s --check-prefix=LINK
# RUN: not pase-opt %t/model/n.sparse.onnx 2>&1 | filecheck %s --check-prefix=SPARSE
# RUN: not pase-opt %t/model/n.function.onnx 2>&1 | filecheck %s --check-prefix=FUNCTION
# RUN: cd %t/cwd && pase-opt %t/model/n.inside.onnx | filecheck %s --check-prefix=INSIDE

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import graph, node, weights  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def gemm():
    return graph([node("Gemm", ["x", "w"], ["y"], name="fc")], {"x": [2, 4]}, ("y", [2, 3]),
                 {"w": weights(4, 3)})


def external(tensor, location, offset=0, length=None):
    """Mark `tensor` as kept in `location` (its bytes not in the model)."""
    size = len(tensor.raw_data or numpy_helper.to_array(tensor).tobytes())
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(size if length is None else length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


# BESIDE: %w = dnn.param : !dnn.tensor<[d = 4, c = 3], f32>
# STDIN: error: initializer 'w' keeps its data in an external file, which pase reads only beside a model read from a file
def case_beside(path):
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")  # onnx.save appends to an existing data file
    onnx.save(gemm(), path, save_as_external_data=True, location="m.onnx.data",
              size_threshold=0)


# OUTSIDE: m.onnx: error: initializer 'w' keeps its data in '../secret.bin', outside the model's folder; pase reads external data only from files beside the model
def case_outside(path):
    model = gemm()
    external(model.graph.initializer[0], "../secret.bin")
    onnx.save(model, path)


# CONSTANT: m.onnx: error: node 'k' (Constant): cannot read its external data file 'secret.bin': No such file or directory
def case_constant(path):
    model = gemm()
    w = model.graph.initializer.pop()
    model.graph.node.insert(0, helper.make_node("Constant", [], ["w"], name="k", value=w))
    external(model.graph.node[0].attribute[0].t, "secret.bin")
    onnx.save(model, path)


# SHORT: m.onnx: error: initializer 'w': the external data file 'm.onnx.data' is too short: 40 bytes, the tensor needs 48 bytes from offset 0
def case_short(path):
    case_beside(path)
    with open(path + ".data", "r+b") as file:
        file.truncate(40)


# NAMELESS: m.onnx: error: initializer 'w' keeps its data in an external file but names none (its external_data has no "location")
def case_nameless(path):
    """External data without a "location" (it was "kept in '', outside the folder")."""
    model = gemm()
    external(model.graph.initializer[0], "")
    del model.graph.initializer[0].external_data[0]
    onnx.save(model, path)


# FAR: m.onnx.far.onnx: error: initializer 'w': the external data file 'm.onnx.data' is too short: 48 bytes, the tensor needs 48 bytes from offset 1,000,000,000,000,000,000,000,000,000,000
# NUL: m.onnx.nul.onnx: error: initializer 'w' keeps its data in 'm.onnx.data\x00x', which is not a file name (it holds a NUL byte)
# FIFO: m.onnx.fifo.onnx: error: initializer 'w': cannot read its external data file 'fifo.bin': not a regular file
def case_unreadable(path):
    """Data past the end of any file, a location with a NUL byte, a FIFO (which would
    block the reading for ever): PATH.far.onnx, PATH.nul.onnx, PATH.fifo.onnx."""
    for name, location, offset in (("far", "m.onnx.data", 10**30),
                                   ("nul", "m.onnx.data\0x", 0), ("fifo", "fifo.bin", 0)):
        model = gemm()
        with open(path + ".data", "wb") as file:
            file.write(model.graph.initializer[0].raw_data)
        external(model.graph.initializer[0], location, offset)
        onnx.save(model, f"{path}.{name}.onnx")


# BUDGET: big.onnx: error: the model with its external data (1 tensor, 67,108,864 bytes) takes 67,109,{{[0-9]+}} bytes, over the import's memory budget of 33,554,432 bytes; raise it with -f 'onnx{memory-gib=G}' (pase-run: --memory-gib G)
# ZERO: m.onnx: error: memory-gib must be a finite number above 0, got 0.0 (-f 'onnx{memory-gib=G}')
def case_huge(path):
    """A Gemm whose 4,096 x 4,096 weight (64 MiB) is kept in a sparse file of that size."""
    model = graph([node("Gemm", ["x", "w"], ["y"], name="fc")], {"x": [2, 4096]},
                  ("y", [2, 4096]), {"w": weights(1, 1)})
    w = model.graph.initializer[0]
    w.ClearField("dims")
    w.dims.extend([4096, 4096])
    external(w, "big.onnx.data")
    for entry in w.external_data:
        if entry.key == "length":
            entry.value = str(4096 * 4096 * 4)
    onnx.save(model, path)
    with open(path + ".data", "wb") as file:
        file.truncate(4096 * 4096 * 4)


# LINKED: m.onnx: error: initializer 'w': cannot read its external data file 'm.onnx.data': No such file or directory
# BRANCH: n.branch.onnx: error: node 'a' (Constant) in the then_branch of node 's' (If): cannot read its external data file 'secret.bin': No such file or directory
# LINK: n.link.onnx: error: node 'a' (Constant) in the then_branch of node 's' (If) keeps its data in 'out.bin', outside the model's folder; pase reads external data only from files beside the model
# SPARSE: n.sparse.onnx: error: sparse initializer 'v' keeps its data in '../cwd/secret.bin', outside the model's folder
# FUNCTION: n.function.onnx: error: node 'a' (Constant) in function 'f' keeps its data in '/{{.*}}secret.bin', outside the model's folder
# INSIDE: %r = dnn.param : !dnn.tensor<[], f32>
def case_nested(prefix):
    """PREFIX.branch.onnx: the bytes of an If's constant branch (a Constant) come from
    'secret.bin'; .link.onnx from 'out.bin'; .inside.onnx from 'inside.bin'; .sparse.onnx
    holds a sparse initializer in '../cwd/secret.bin'; .function.onnx a function whose
    Constant is in an absolute path."""
    for name, location in (("branch", "secret.bin"), ("link", "out.bin"),
                           ("inside", "inside.bin")):
        onnx.save(branch_model(location), f"{prefix}.{name}.onnx")
    model = gemm()
    values = numpy_helper.from_array(np.zeros(2, np.float32), "v")
    external(values, "../cwd/secret.bin")
    indices = numpy_helper.from_array(np.array([0, 1], np.int64), "i")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    onnx.save(model, f"{prefix}.sparse.onnx")
    model = gemm()
    value = numpy_helper.from_array(np.zeros(2, np.float32), "v")
    external(value, os.path.abspath(os.path.join(os.path.dirname(prefix), "..", "cwd",
                                                 "secret.bin")))
    body = helper.make_node("Constant", [], ["out"], name="a", value=value)
    model.functions.append(helper.make_function("local", "f", [], ["out"], [body],
                                                [helper.make_opsetid("", 17)]))
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.graph.node.append(helper.make_node("f", [], ["unused"], domain="local"))
    onnx.save(model, f"{prefix}.function.onnx")


def branch_model(location):
    """y = x @ w + sum(If(true, then: the 2 bytes at `location`, else: zeros))."""
    def branch(name, tensor):
        return helper.make_graph([helper.make_node("Constant", [], [name], name=name,
                                                   value=tensor)], name, [],
                                 [helper.make_tensor_value_info(name, TensorProto.UINT8,
                                                                [2])])
    data = numpy_helper.from_array(np.zeros(2, np.uint8), "v")
    external(data, location)
    nodes = [node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True))),
             node("If", ["c"], ["s"], then_branch=branch("a", data),
                  else_branch=branch("b", numpy_helper.from_array(np.zeros(2, np.uint8)))),
             node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
             node("ReduceSum", ["sf"], ["r"], keepdims=0),
             node("Gemm", ["x", "w"], ["y0"], name="fc"), node("Add", ["y0", "r"], ["y"])]
    return graph(nodes, {"x": [2, 4]}, ("y", [2, 3]), {"w": weights(4, 3)}, check=False)


if __name__ == "__main__":
    globals()[f"case_{sys.argv[1]}"](sys.argv[2])
