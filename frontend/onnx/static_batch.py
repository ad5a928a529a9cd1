"""`-f 'onnx{batch=N}'` (and `pase-run --batch N`) on a model whose batch is static.

A model exported with a fixed batch (no `dynamic_axes` or `dynamic_shapes`) is trained at
batch N when its graph allows it: the inputs' axis 0 (one size B across them) becomes N,
the shapes the file records for its other values are dropped (the outputs keep
their rank), and ONNX's shape inference
finds them again. The graph allows it when the shapes infer at N and every output of rank
1 or more has N along axis 0; a graph that writes B into its shape computations (the
TorchScript exporter's `view(8, 16, 4, 8)` as a constant Reshape shape) fails one of the
two and is refused with one diagnostic that says how to export it. N equal to B changes
nothing.

    static = resize_static_batch(model, 16, "m.onnx")      # 8: resized from 8, 0: not
    check_resized_batch(inferred, 16, static, "m.onnx")    # after shape inference
"""

from __future__ import annotations

from typing import Any

from pase.core.diagnostics import Diagnostic


def static_batch_advice(static: int, batch: int) -> str:
    """The end of every diagnostic of this module: what the user can do."""
    return (f"the model's batch is static ({static}) and its graph fixes it, so -f "
            f"'onnx{{batch={batch}}}' (pase-run --batch {batch}) cannot change it; export "
            "it with a symbolic batch (torch.onnx.export(..., dynamic_axes={'input': {0: "
            "'batch'}}) or dynamic_shapes), or leave out the batch to train at "
            f"{static}")


def resize_static_batch(model: Any, batch: int, filename: str) -> int:
    """The inputs' static axis 0 (of one size B, not `batch`) set to `batch`, and B; 0
    when nothing is resized (no `batch`, a symbolic batch, or B already `batch`). Inputs
    whose first axes differ in size have no batch axis to resize: an error."""
    if not batch:
        return 0
    initializers = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers
              and value.type.tensor_type.shape.dim]
    firsts = [value.type.tensor_type.shape.dim[0] for value in inputs]
    if not firsts or any(not (d.HasField("dim_value") and d.dim_value >= 1) for d in firsts):
        return 0
    sizes = sorted({d.dim_value for d in firsts})
    if sizes == [batch]:
        return 0
    if len(sizes) > 1:
        listed = ", ".join(f"'{v.name}' {d.dim_value}" for v, d in zip(inputs, firsts,
                                                                        strict=True))
        raise Diagnostic(f"-f 'onnx{{batch={batch}}}' sizes the inputs' batch axis (axis "
                         f"0), but their first axes differ ({listed}): the model has no "
                         "one static batch to change; leave out the batch", filename)
    for first in firsts:
        first.dim_value = batch
    del model.graph.value_info[:]
    for output in model.graph.output:
        for dim in output.type.tensor_type.shape.dim:
            dim.Clear()
    return sizes[0]


def check_resized_batch(model: Any, batch: int, static: int, filename: str) -> None:
    """An error unless every output of the inferred `model` of rank 1 or more has `batch`
    along axis 0 (its inputs resized from `static`, when that is not 0)."""
    if not static:
        return
    for output in model.graph.output:
        dims = output.type.tensor_type.shape.dim
        if dims and not (dims[0].HasField("dim_value") and dims[0].dim_value == batch):
            shape = [d.dim_value if d.HasField("dim_value") else "?" for d in dims]
            raise Diagnostic(f"{static_batch_advice(static, batch)} (output '{output.name}' "
                             f"has shape {shape} at batch {batch})", filename)
