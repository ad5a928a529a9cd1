# A loss exported with the model (a training module's `cross_entropy(model(x), labels)`)
# is pase's own softmax_cross_entropy, its labels the graph input that feeds them: as
# SoftmaxCrossEntropyLoss (both PyTorch exporters' fixtures, models/onnx/classifier_loss.*),
# LogSoftmax + NegativeLogLikelihoodLoss, or LogSoftmax + GatherElements + ReduceMean + Neg.
# The node's ignore_index, whatever its value (a class too), is the op's `ignore N`.
# Any other GatherElements or another reduction: one error.
# RUN: python %s all %t
# RUN: pase-opt %S/../../../../models/onnx/classifier_loss.dynamo.onnx -p 'pase-search{devices=8}' | filecheck %s --check-prefix=DYNAMO
# RUN: pase-opt %S/../../../../models/onnx/classifier_loss.torchscript.onnx -p 'pase-search{devices=8}' | filecheck %s --check-prefix=TORCHSCRIPT
# RUN: pase-opt %t.nll.onnx | filecheck %s --check-prefix=NLL
# RUN: pase-opt %t.picked.onnx | filecheck %s --check-prefix=PICKED
# RUN: pase-opt %t.shifted.onnx | filecheck %s --check-prefix=SHIFTED
# RUN: pase-run %t.shifted.onnx --devices 2 --data-parallel --check | filecheck %s --check-prefix=SHIFTED-CHECK
# RUN: not pase-opt %t.other_gather.onnx 2>&1 | filecheck %s --check-prefix=OTHER-GATHER
# RUN: not pase-opt %t.sum.onnx 2>&1 | filecheck %s --check-prefix=SUM
# RUN: pase-opt %t.ignored_class.onnx | filecheck %s --check-prefix=IGNORED-CLASS
# RUN: not pase-opt %t.reshaped_other_axis.onnx 2>&1 | filecheck %s --check-prefix=RESHAPED-OTHER

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from onnx_case import INT64, graph, main, node, weights  # noqa: E402

import numpy as np  # noqa: E402

# DYNAMO:      %labels = dnn.input {{.*}} !dnn.tensor<[b = 8], i64>
# DYNAMO:      %cross_entropy_loss = dnn.softmax_cross_entropy %linear, %labels over [c2] ignore -100 {{.*}}#pase.config
# DYNAMO-NEXT: dnn.return %cross_entropy_loss
# TORCHSCRIPT: %labels = dnn.input {{.*}} !dnn.tensor<[b = 8], i64>
# TORCHSCRIPT: dnn.softmax_cross_entropy %model_model_4_Gemm, %labels over [c2] ignore -100 {{.*}}#pase.config


def classifier(loss_nodes, constants=None):
    """A linear classifier of 4 rows into 3 classes, then `loss_nodes` from its scores `z`
    and the labels `y` to the scalar `loss`."""
    return graph([node("Gemm", ["x", "w"], ["z"]), *loss_nodes],
                 {"x": [4, 5], "y": ([4], INT64)}, ("loss", []),
                 {"w": weights(5, 3), **(constants or {})})


# NLL:      %y = dnn.input : !dnn.tensor<[b = 4], i64>
# NLL:      %loss = dnn.softmax_cross_entropy %z, %y over [c]
# NLL-NEXT: dnn.return %loss
def case_nll():
    return classifier([node("LogSoftmax", ["z"], ["logp"], axis=1),
                       node("NegativeLogLikelihoodLoss", ["logp", "y"], ["loss"],
                            reduction="mean")])


# PICKED:      %loss = dnn.softmax_cross_entropy %z, %y over [c]
# PICKED-NEXT: dnn.return %loss
def case_picked():
    return classifier([node("LogSoftmax", ["z"], ["logp"], axis=-1),
                       node("Unsqueeze", ["y", "one"], ["index"]),
                       node("GatherElements", ["logp", "index"], ["picked"], axis=1),
                       node("ReduceMean", ["picked"], ["mean"], keepdims=1),
                       node("Squeeze", ["mean"], ["squeezed"]),
                       node("Neg", ["squeezed"], ["loss"])],
                      {"one": np.array([1], dtype=np.int64)})


# A causal language model's loss (Hugging Face's `labels=`): the labels padded with the
# ignore_index at the end of the sequence, then shifted by one; the scores and labels
# flattened. pase reads it as the first 3 positions' scores against the labels from 1 on,
# without the two flattening Reshapes (the same mean over the same rows), so the batch
# dim reaches the loss (the labels' is the scores').
# SHIFTED:      %y = dnn.input : !dnn.tensor<[b = 2, s1 = 4], i64>
# SHIFTED:      %shifted = dnn.slice %y along s1 from 1 : (!dnn.tensor<[b = 2, s1 = 4], i64>) -> !dnn.tensor<[b = 2, s2 = 3], i64>
# SHIFTED-NEXT: %shifted_scores = dnn.slice %z along s from 0 : (!dnn.tensor<[b = 2, s = 4, c = 3], f32>) -> !dnn.tensor<[b = 2, s2 = 3, c = 3], f32>
# SHIFTED-NEXT: %loss = dnn.softmax_cross_entropy %shifted_scores, %shifted over [c] ignore -100
# SHIFTED-CHECK: check passed
def case_shifted():
    return graph([node("MatMul", ["x", "w"], ["z"]),
                  node("Pad", ["y", "pads", "ignored"], ["padded"]),
                  node("Slice", ["padded", "one", "last", "one"], ["shifted"]),
                  node("Reshape", ["z", "rows_shape"], ["rows"]),
                  node("Reshape", ["shifted", "flat"], ["targets"]),
                  node("SoftmaxCrossEntropyLoss", ["rows", "targets"], ["loss"],
                       ignore_index=-100)],
                 {"x": [2, 4, 5], "y": ([2, 4], INT64)}, ("loss", []),
                 {"w": weights(5, 3), "pads": np.array([0, 0, 0, 1]),
                  "ignored": np.array(-100), "one": np.array([1]),
                  "last": np.array([np.iinfo(np.int64).max]),
                  "rows_shape": np.array([-1, 3]), "flat": np.array([-1])})


# OTHER-GATHER:      error: 1 node of 1 operator type pase does not read (after folding the static shapes):
# OTHER-GATHER-NEXT:   GatherElements: 1 node, the first 'picked' (pase reads it only in a cross-entropy loss: LogSoftmax, GatherElements by the labels, ReduceMean, Neg; or LogSoftmax, NegativeLogLikelihoodLoss)
def case_other_gather():
    return graph([node("Gemm", ["x", "w"], ["z"]),
                  node("GatherElements", ["z", "index"], ["picked"], axis=1),
                  node("ReduceMean", ["picked"], ["loss"], keepdims=0)],
                 {"x": [4, 5], "index": ([4, 1], INT64)}, ("loss", []), {"w": weights(5, 3)})


# SUM: error: node 'loss' (SoftmaxCrossEntropyLoss): reduction='sum' is not supported: pase's loss is the mean over the labels (reduction='mean')
def case_sum():
    return classifier([node("SoftmaxCrossEntropyLoss", ["z", "y"], ["loss"], reduction="sum")])


# IGNORED-CLASS:      %loss = dnn.softmax_cross_entropy %z, %y over [c] ignore 0 :
# IGNORED-CLASS-NEXT: dnn.return %loss
def case_ignored_class():
    return classifier([node("SoftmaxCrossEntropyLoss", ["z", "y"], ["loss"], ignore_index=0)])


# The log-softmax's result flattened before NegativeLogLikelihoodLoss, as both exporters
# write `nll_loss(log_softmax(z, -1).reshape(-1, C), labels.reshape(-1))`, is read
# (models/onnx/token_loss.*); a log-softmax over another axis than the one the Reshape
# keeps is not a cross-entropy: one error.
# RESHAPED-OTHER: error: node 'logp' (SoftmaxCrossEntropyLoss): the result of its log-softmax is reshaped otherwise than by flattening the axes before the log-softmax's, its last (to [-1, C]): not a cross-entropy loss
def case_reshaped_other_axis():
    return graph([node("MatMul", ["x", "w"], ["z"]),
                  node("LogSoftmax", ["z"], ["logp"], axis=1),
                  node("Reshape", ["logp", "rows_shape"], ["rows"]),
                  node("NegativeLogLikelihoodLoss", ["rows", "y"], ["loss"],
                       ignore_index=-100)],
                 {"x": [2, 4, 5], "y": ([8], INT64)}, ("loss", []),
                 {"w": weights(5, 3), "rows_shape": np.array([-1, 3])})


main(globals())
