"""How long `pase-opt` takes to import a long chain of ONNX nodes (hostile inputs: the
optimizer's rewrite rules were quadratic in the graph; frontend/onnx/optimizer.py).

    .venv/bin/python benchmarks/onnx_chain.py                       # N = 2,000 and 8,000
    .venv/bin/python benchmarks/onnx_chain.py --nodes 8000 --ops Relu

The model: `x [2, 4] @ w [4, 3]` (a Gemm), then N unary nodes in a chain, their op types
taken in turn from `--ops` (default Relu,Tanh: a chain upstream's rules cannot shorten;
Relu alone is fused into one Relu). Each case is one `pase-opt MODEL -o OUT` process; the
table gives its CPU time (user + system of the child) and peak RSS, and a digest of its
output (compare two trees' outputs by it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain(nodes: int, ops: list[str]) -> onnx.ModelProto:
    """The Gemm and `nodes` unary nodes after it, ops in turn."""
    body = [helper.make_node("Gemm", ["x", "w"], ["h0"], name="fc")]
    body += [helper.make_node(ops[i % len(ops)], [f"h{i}"], [f"h{i + 1}"], name=f"h{i + 1}")
             for i in range(nodes)]
    weights = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        body, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(f"h{nodes}", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(weights, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def measure(nodes: int, ops: list[str], folder: str) -> tuple[float, float, str]:
    """CPU seconds and peak RSS (MiB) of one pase-opt import, and its output's digest."""
    model, out = os.path.join(folder, f"chain{nodes}.onnx"), os.path.join(folder, "out.mlir")
    onnx.save(chain(nodes, ops), model)
    pase_opt = os.path.join(os.path.dirname(sys.executable), "pase-opt")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([pase_opt, model, "-o", out], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out, "rb") as file:
        digest = hashlib.sha256(file.read()).hexdigest()[:12]
    return cpu, after.ru_maxrss / 1024, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--ops", default="Relu,Tanh")
    args = parser.parse_args()
    ops = args.ops.split(",")
    print(f"| chain ({'/'.join(ops)}) | CPU (s) | peak RSS (MiB) | output sha256 |")
    print("| --: | --: | --: | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for nodes in args.nodes:
            cpu, rss, digest = measure(nodes, ops, folder)
            print(f"| {nodes:,} | {cpu:.2f} | {rss:.0f} | {digest} |", flush=True)


if __name__ == "__main__":
    main()
