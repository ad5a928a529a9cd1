# Attention masks as exporters write them at full size: computed from constants beyond
# onnxscript's folding limits (folded by onnx's reference evaluator), or folded by the
# exporter into an additive float constant, and the batch-expanded constants of one row.
# RUN: python %s all %t
# RUN: pase-opt %t.exported.onnx | filecheck %s --check-prefix=EXPORTED
# RUN: not pase-opt %t.not_causal.onnx 2>&1 | filecheck %s --check-prefix=NOT-CAUSAL
# RUN: pase-opt %t.padding.onnx | filecheck %s --check-prefix=PADDING
# RUN: not pase-opt %t.queries.onnx 2>&1 | filecheck %s --check-prefix=QUERIES
# RUN: pase-opt %t.legacy.onnx | filecheck %s --check-prefix=LEGACY

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402
from onnx import TensorProto  # noqa: E402

S = 96  # a [96, 96] mask: over the 8,192 elements onnxscript folds an input of
LOWEST = np.float32(np.finfo(np.float32).min)
BOOL = TensorProto.BOOL


def scores(extra):
    """x [2, S, 8] attending to itself, `extra` between the scores and the softmax."""
    return [node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
            node("MatMul", ["x", "xt"], ["scores"]), *extra,
            node("Softmax", ["masked"], ["p"], axis=-1), node("MatMul", ["p", "x"], ["y"])]


# One model with each (one pase-opt run): the causal mask Hugging Face computes from
# positions (Range, LessOrEqual, And, Equal on [96, 96]: onnxscript leaves the ops whose
# inputs are over its limit, the reference evaluator folds them), so a Where that is the
# causal mask; then the dynamo exporter's SDPA mask folded to a float constant (0 kept,
# the float's lowest hidden) and added: a mask, not a parameter; then BERT's mask without
# padding, all zeros: nothing; then BERT's token-type row, folded by the dynamo exporter
# into a [b, s, d] constant whose rows are equal: one trainable row [d].
# EXPORTED-NOT: dnn.param : !dnn.tensor<[{{.*}}t = 96
# EXPORTED:     %masked = dnn.mask causal %scores over [s, t] fill -3.4e+38
# EXPORTED-NEXT: %added = dnn.mask causal %masked over [s, t] fill -3.4e+38
# EXPORTED-NEXT: %p = dnn.softmax %added over [t]
# EXPORTED:     %row = dnn.param : !dnn.tensor<[c = 8], f32>
# EXPORTED-NEXT: %y = dnn.add %attended, %row : (!dnn.tensor<[b = 2, s = 96, c = 8], f32>, !dnn.tensor<[c = 8], f32>)
def case_exported():
    hidden = np.triu(np.ones((S, S), dtype=bool), 1)
    additive = np.broadcast_to(np.where(hidden, LOWEST, np.float32(0)), (2, S, S))
    return graph([
        node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        node("MatMul", ["x", "xt"], ["scores"]),
        node("Range", ["zero", "length", "one"], ["positions"]),
        node("Unsqueeze", ["positions", "axis1"], ["queries"]),
        node("Unsqueeze", ["positions", "axis0"], ["keys"]),
        node("LessOrEqual", ["keys", "queries"], ["causal"]),
        node("Equal", ["causal", "causal"], ["same"]),
        node("And", ["causal", "same"], ["mask"]),
        node("Where", ["mask", "scores", "lowest"], ["masked"]),
        node("Add", ["masked", "additive"], ["added"]),
        node("Add", ["added", "zeros"], ["unmasked"]),
        node("Softmax", ["unmasked"], ["p"], axis=-1),
        node("MatMul", ["p", "x"], ["attended"]),
        node("Add", ["attended", "row"], ["y"])],
        {"x": [2, S, 8]}, ("y", [2, S, 8]),
        {"zero": np.int64(0), "length": np.int64(S), "one": np.int64(1),
         "axis0": np.array([0]), "axis1": np.array([1]), "lowest": LOWEST,
         "additive": additive.copy(), "zeros": np.zeros((2, S, S), dtype=np.float32),
         "row": np.broadcast_to(weights(8), (2, S, 8)).copy()})


# NOT-CAUSAL: error: node 'masked' (Add): an additive attention mask (0 or -3.4e+38) is supported when it is causal (lower-triangular over the last two axes) or hides nothing
def case_not_causal():
    mask = np.zeros((2, S, S), dtype=np.float32)
    mask[..., -1] = LOWEST
    return graph(scores([node("Add", ["scores", "mask"], ["masked"])]),
                 {"x": [2, S, 8]}, ("y", [2, S, 8]), {"mask": mask})


# A padding mask computed from an attention_mask input [b, keys] (bool: read as i64), And
# the causal mask, as the Where's condition: the causal mask, then the padding mask by the
# input itself (its axes the scores' batch and keys), the ops that computed it gone.
# PADDING:      %attention_mask = dnn.input : !dnn.tensor<[b = 2, t = 4], i64>
# PADDING-NOT:  dnn.param
# PADDING:      %masked_causal = dnn.mask causal %scores over [s, t] fill -3.4e+38
# PADDING-NEXT: %masked = dnn.mask padding %masked_causal, %attention_mask over [b, t] fill -3.4e+38
# PADDING-NEXT: %p = dnn.softmax %masked over [t]
def case_padding():
    return graph(scores([
        node("Cast", ["attention_mask"], ["keep"], to=9),
        node("Unsqueeze", ["keep", "axis1"], ["keys"]),
        node("And", ["causal", "keys"], ["mask"]),
        node("Where", ["mask", "scores", "lowest"], ["masked"])]),
        {"x": [2, 4, 8], "attention_mask": ([2, 4], BOOL)}, ("y", [2, 4, 8]),
        {"causal": np.tril(np.ones((4, 4), dtype=bool)), "axis1": np.array([1]),
         "lowest": LOWEST})


# A mask computed from an input that is not a padding mask of the keys (here it hides
# queries): one error at the Where, not a list of the ops that compute it.
# QUERIES: error: node 'masked' (Where): its condition is computed from the model's input 'attention_mask' (as a padding mask is from an attention_mask); pase reads masks computed from an input only as an attention_mask's padding mask added to the attention scores (a value 0 where the mask is 1, one fill at most -10,000 elsewhere, with or without the causal mask); export the model without attention_mask, for batches of sequences of one length
def case_queries():
    return graph(scores([
        node("Cast", ["attention_mask"], ["keep"], to=9),
        node("Unsqueeze", ["keep", "axis2"], ["queries"]),
        node("And", ["causal", "queries"], ["mask"]),
        node("Where", ["mask", "scores", "lowest"], ["masked"])]),
        {"x": [2, 4, 8], "attention_mask": ([2, 4], INT64)}, ("y", [2, 4, 8]),
        {"causal": np.tril(np.ones((4, 4), dtype=bool)), "axis2": np.array([2]),
         "lowest": LOWEST})


# The older exporter (`dynamo=False`) writes SDPA's `is_causal=True` as one [q, k]
# constant of 0 and -inf added to the [b, q, k] scores: a mask, not a parameter.
# LEGACY-NOT:  dnn.param
# LEGACY:      %masked = dnn.mask causal %scores over [s, t] fill -3.4e+38
# LEGACY-NEXT: %p = dnn.softmax %masked over [t]
def case_legacy():
    hidden = np.triu(np.ones((S, S), dtype=bool), 1)
    mask = np.where(hidden, np.float32(-np.inf), np.float32(0))
    return graph(scores([node("Add", ["scores", "mask"], ["masked"])]),
                 {"x": [2, S, 8]}, ("y", [2, S, 8]), {"mask": mask})


main(globals())
