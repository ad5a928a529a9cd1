"""Malformed models that protobuf and `onnx.checker` let through, refused with one
diagnostic before anything else reads them.

- A name that is not UTF-8 text: ONNX's names are protobuf strings, but its schema is
  proto2, whose parser keeps undecodable bytes as they are; onnxscript's optimizer then
  failed on them with a message about its own serializer.
- An input axis of size 0 or less: the checker accepts it, and pase took it for a
  symbolic axis (on the batch axis, replaced by `-f 'onnx{batch=N}'` without a word).
- An input over pase's limits (2^53 elements, 32 axes): the importer refused it only
  after the folding had imported onnxscript and sympy (seconds), or onnx's shape
  inference failed on it first.

    >>> from onnx import helper, TensorProto
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0])
    >>> graph = helper.make_graph([], "g", [x], [])
    >>> try:
    ...     refuse_nonpositive_sizes(helper.make_model(graph), "m.onnx")
    ... except Diagnostic as error:
    ...     print(str(error).split(";")[0])
    m.onnx: error: axis 1 of input 'x' has size 0
"""

from __future__ import annotations

import math
from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import MAX_ELEMENTS, MAX_RANK


def refuse_undecodable_names(model: Any, filename: str) -> None:
    """An error naming the first string field of the model (a node's, value's or
    attribute's name, an op type, a metadata entry...) whose bytes are not UTF-8."""
    where = _first_undecodable(model, "model")
    if where is not None:
        path, raw = where
        raise Diagnostic(f"not a valid ONNX model: {path} is not UTF-8 text ({raw!r})",
                         filename)


def _first_undecodable(message: Any, path: str) -> tuple[str, bytes] | None:
    """The path to and the bytes of the first string field that protobuf kept as bytes
    (it does so for undecodable ones). Reads only string and message fields, so that a
    tensor's raw data is never copied."""
    for field in message.DESCRIPTOR.fields:
        if field.type == field.TYPE_STRING:
            values = getattr(message, field.name)
            for index, value in enumerate(values if _repeated(field) else [values]):
                if isinstance(value, bytes):
                    suffix = f"[{index}]" if _repeated(field) else ""
                    return f"{path}.{field.name}{suffix}", value
        elif field.type == field.TYPE_MESSAGE:
            label = f"{path}.{field.name}"
            if _repeated(field):
                children = [(f"{label}[{index}]", child)
                            for index, child in enumerate(getattr(message, field.name))]
            elif message.HasField(field.name):
                children = [(label, getattr(message, field.name))]
            else:
                continue
            for child_path, child in children:
                found = _first_undecodable(child, child_path)
                if found is not None:
                    return found
    return None


def _repeated(field: Any) -> bool:
    return bool(field.is_repeated)


def refuse_nonpositive_sizes(model: Any, filename: str) -> None:
    """An error naming the first graph input axis with a static size below 1 (a symbolic
    axis has no size; `refuse_symbolic_sizes` speaks of those), or the first input over
    pase's limits of rank and elements (a symbolic axis counted 1), in the importer's
    words: said before the folding, whose library (onnxscript, and sympy under it) takes
    seconds to import, and before onnx's shape inference fails on such sizes."""
    initializers = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        for position, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value < 1:
                raise Diagnostic(f"axis {position} of input '{value.name}' has size "
                                 f"{dim.dim_value}; pase needs sizes of at least 1", filename)
        if len(dims) > MAX_RANK:
            raise Diagnostic(f"input '{value.name}' has {len(dims)} axes; pase handles "
                             f"tensors of at most {MAX_RANK}", filename)
        sizes = [dim.dim_value or 1 for dim in dims]
        if (elements := math.prod(sizes)) > MAX_ELEMENTS:
            raise Diagnostic(f"input '{value.name}' of shape {sizes} has {elements:,} "
                             "elements; pase handles at most 2^53 per tensor", filename)
