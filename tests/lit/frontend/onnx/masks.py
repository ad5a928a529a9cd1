# Attention masks as exporters write them at full size: computed from constants beyond
# onnxscript's folding limits (folded by onnx's reference evaluator), or folded by the
# exporter into an additive float constant, and the batch-expanded constants of one row.
# RUN: python %s all %t
# RUN: pase-opt %t.computed.onnx | filecheck %s --check-prefix=COMPUTED
# RUN: pase-opt %t.additive.onnx | filecheck %s --check-prefix=ADDITIVE
# RUN: pase-opt %t.nothing_hidden.onnx | filecheck %s --check-prefix=NOTHING
# RUN: not pase-opt %t.not_causal.onnx 2>&1 | filecheck %s --check-prefix=NOT-CAUSAL
# RUN: pase-opt %t.one_row.onnx | filecheck %s --check-prefix=ONE-ROW
# RUN: not pase-opt %t.padding.onnx 2>&1 | filecheck %s --check-prefix=PADDING

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402

S = 96  # a [96, 96] mask: over the 8,192 elements onnxscript folds an input of
LOWEST = np.float32(np.finfo(np.float32).min)


def scores(extra):
    """x [2, S, 8] attending to itself, `extra` between the scores and the softmax."""
    return [node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
            node("MatMul", ["x", "xt"], ["scores"]), *extra,
            node("Softmax", ["masked"], ["p"], axis=-1), node("MatMul", ["p", "x"], ["y"])]


# The causal mask Hugging Face computes from positions (Range, LessOrEqual, And, Equal on
# [96, 96]): onnxscript leaves the ops whose inputs are over its limit, the reference
# evaluator folds them, and the Where is the causal mask.
# COMPUTED-NOT: dnn.param
# COMPUTED:     dnn.mask causal %scores over [s, t] fill -3.4e+38
# COMPUTED-NOT: dnn.param
def case_computed():
    return graph(scores([
        node("Range", ["zero", "length", "one"], ["positions"]),
        node("Unsqueeze", ["positions", "axis1"], ["queries"]),
        node("Unsqueeze", ["positions", "axis0"], ["keys"]),
        node("LessOrEqual", ["keys", "queries"], ["causal"]),
        node("Equal", ["causal", "causal"], ["same"]),
        node("And", ["causal", "same"], ["mask"]),
        node("Where", ["mask", "scores", "lowest"], ["masked"])]),
        {"x": [2, S, 8]}, ("y", [2, S, 8]),
        {"zero": np.int64(0), "length": np.int64(S), "one": np.int64(1),
         "axis0": np.array([0]), "axis1": np.array([1]), "lowest": LOWEST})


# The dynamo exporter's SDPA mask, folded to a [b, q, k] float constant (0 kept, the
# float's lowest hidden) and added to the scores: a mask, not a parameter.
# ADDITIVE-NOT: dnn.param
# ADDITIVE:     %masked = dnn.mask causal %scores over [s, t] fill -3.4e+38
# ADDITIVE-NOT: dnn.param
def case_additive():
    hidden = np.triu(np.ones((S, S), dtype=bool), 1)
    mask = np.broadcast_to(np.where(hidden, LOWEST, np.float32(0)), (2, S, S))
    return graph(scores([node("Add", ["scores", "mask"], ["masked"])]),
                 {"x": [2, S, 8]}, ("y", [2, S, 8]), {"mask": mask.copy()})


# BERT's mask without padding: all zeros, nothing hidden; the scores themselves.
# NOTHING-NOT: dnn.param
# NOTHING-NOT: dnn.add
# NOTHING:     %p = dnn.softmax %scores over [t]
def case_nothing_hidden():
    return graph(scores([node("Add", ["scores", "mask"], ["masked"])]),
                 {"x": [2, S, 8]}, ("y", [2, S, 8]),
                 {"mask": np.zeros((2, S, S), dtype=np.float32)})


# NOT-CAUSAL: error: node 'masked' (Add): an additive attention mask (0 or -3.4e+38) is supported when it is causal (lower-triangular over the last two axes) or hides nothing
def case_not_causal():
    mask = np.zeros((2, S, S), dtype=np.float32)
    mask[..., -1] = LOWEST
    return graph(scores([node("Add", ["scores", "mask"], ["masked"])]),
                 {"x": [2, S, 8]}, ("y", [2, S, 8]), {"mask": mask})


# BERT's token-type embedding, row 0 of its table, folded by the dynamo exporter into a
# [b, s, d] constant whose rows are equal: one trainable row [d].
# ONE-ROW:      %row = dnn.param : !dnn.tensor<[c = 8], f32>
# ONE-ROW-NEXT: %y = dnn.add %x, %row : (!dnn.tensor<[b = 2, s = 4, c = 8], f32>, !dnn.tensor<[c = 8], f32>)
def case_one_row():
    row = np.broadcast_to(weights(8), (2, 4, 8)).copy()
    return graph([node("Add", ["x", "row"], ["y"])], {"x": [2, 4, 8]}, ("y", [2, 4, 8]),
                 {"row": row})


# A padding mask computed from an attention_mask input, And the causal mask: one error at
# the Where, not a list of the ops that compute it.
# PADDING: error: node 'masked' (Where): its condition is computed from the model's input 'attention_mask' (as a padding mask is from an attention_mask); pase reads masks that are constant (causal, or none): export the model without attention_mask, for batches of sequences of one length
def case_padding():
    return graph(scores([
        node("Cast", ["attention_mask"], ["keep"], to=9),
        node("Unsqueeze", ["keep", "axis1"], ["keys"]),
        node("And", ["causal", "keys"], ["mask"]),
        node("Where", ["mask", "scores", "lowest"], ["masked"])]),
        {"x": [2, 4, 8], "attention_mask": ([2, 4], INT64)}, ("y", [2, 4, 8]),
        {"causal": np.tril(np.ones((4, 4), dtype=bool)), "axis1": np.array([1]),
         "lowest": LOWEST})


main(globals())
