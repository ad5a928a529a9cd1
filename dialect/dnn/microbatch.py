"""When a step may run as M micro-batches with exactly the math of one batch.

A pipeline (pase-partition-stages) runs each step as M micro-batches of batch/M rows and
sums their gradients. That equals the gradient of the whole batch when every layer
treats the rows apart, and only the loss sums (or averages) over them: then the loss of
the batch is the sum of the micro-batch losses, or their mean for a mean loss, and so is
its gradient. A cross-entropy with an `ignore_index` is the mean over the labels the
batch keeps: the count depends on the labels only, so the pipeline counts them for the
whole batch before the first micro-batch and every micro-batch divides by that count;
the micro-batch losses, each a share of the batch's mean, add up to it (weight 1). A
layer that computes statistics over the batch (`batchnorm over [b, ...]`, a softmax
over b) or reduces it anywhere but in the loss (a Gram matrix `einsum [b, i], [b, j] ->
[i, j]` feeding more layers) would see other numbers in a micro-batch, so pase refuses
to micro-batch it rather than train another model silently.

    >>> from pase.frontend import parse_file
    >>> graph = parse_file("models/mlp.dnn").ops.first
    >>> microbatch_problem(graph, 4) is None, loss_weight(graph, 4)
    (True, 0.25)
"""

from __future__ import annotations

from pase.dialect import dnn


def batch_dim(graph: dnn.GraphOp) -> str | None:
    """The batch dim: the first dim of the graph's first input with dims (as the
    search's `GraphData.batch`)."""
    for op in graph.body.block.ops:
        if isinstance(op, dnn.InputOp) and op.output.type.shape.dims:
            return op.output.type.shape.dims[0]
    return None


def _loss_layer(graph: dnn.GraphOp) -> dnn.LayerOp | None:
    ret = graph.body.block.last_op
    if not isinstance(ret, dnn.ReturnOp) or not ret.values:
        return None
    owner = ret.values[0].owner
    return owner if isinstance(owner, dnn.LayerOp) else None


def microbatch_problem(graph: dnn.GraphOp, microbatches: int) -> str | None:
    """Why `graph` cannot run as `microbatches` micro-batches with the same math, or None.

    M = 1 always can. Otherwise every forward layer but the loss keeps the batch dim in
    its result and computes no statistics over it, and the loss reduces over it as a sum
    or a mean; every batch size the batch dim has is a multiple of M."""
    if microbatches == 1:
        return None
    batch = batch_dim(graph)
    name = f"@{graph.sym_name.data}"
    if batch is None:
        return f"{name} has no input, so no batch to split into micro-batches"
    size = graph.dims.get(batch)
    if size is not None and size % microbatches:
        return (f"{microbatches} micro-batches do not divide the batch {batch} = {size} of "
                f"{name}")
    loss = _loss_layer(graph)
    names = graph.layer_names()
    for layer in graph.layers:
        space = layer.iteration_space()
        what = f"layer '{names[layer]}' ({layer.name})"
        if batch in space.stats_dims:
            return (f"{what} computes statistics over the batch dim {batch}, so "
                    f"{microbatches} micro-batches would each use their own: another "
                    "model than one batch; use microbatches=1")
        if layer is loss:
            continue
        if batch not in layer.result_shape.dims and any(
                batch in shape.dims for shape in layer.input_shapes):
            return (f"{what} reduces or reshapes away the batch dim {batch} before the "
                    f"loss, so {microbatches} micro-batches would not add up to one "
                    "batch; use microbatches=1")
    if loss is None or _mean_over_batch(loss, batch) is None:
        return (f"the loss of {name} does not sum or average over the batch dim {batch}, "
                "so micro-batch losses would not add up to it; use microbatches=1")
    return None


def _mean_over_batch(loss: dnn.LayerOp, batch: str) -> bool | None:
    """Whether the loss averages over the batch (True), sums it (False), or neither. A
    cross-entropy with an `ignore_index` sums its micro-batches' shares of the batch's
    mean (each divided by the whole batch's count of labels kept)."""
    if not any(batch in shape.dims for shape in loss.input_shapes):
        return None
    match loss:
        case dnn.SoftmaxCrossEntropyOp():
            return loss.ignore_index is None
        case dnn.ReduceOp():
            return loss.kind.data == "mean" if batch in loss.dims_prop("over") else None
        case dnn.EinsumOp():
            return False
    return None


def loss_weight(graph: dnn.GraphOp, microbatches: int) -> float:
    """What each micro-batch's loss (and gradient) weighs in the step's: 1/M for a mean
    over the batch, 1 for a sum (and for a cross-entropy with an `ignore_index`). Only
    for a graph without a `microbatch_problem`."""
    loss = _loss_layer(graph)
    batch = batch_dim(graph)
    assert loss is not None
    assert batch is not None
    return 1.0 / microbatches if _mean_over_batch(loss, batch) else 1.0
