"""An ONNX model's external data (`FILE.onnx.data`, as the dynamo exporter writes it), read
into the model from the model's own folder and within the import's memory budget.

    load_external_data(onnx, model, "m.onnx", limit=4 << 30)  # raises Diagnostic

Every tensor kept outside the model is checked before any byte is read: its location (a
file beside the model: not `../x`, not an absolute path, not a link that leads out of the
folder), its offset and length against the tensor's dims and type and against the file's
size, and the sum of all of them against the budget (`-f 'onnx{memory-gib=G}'`, pase-run's
`--memory-gib`): a model whose data would not fit is refused before it is read, with the
bytes it needs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.frontend.onnx.values import node_label

GIB = 1 << 30

DEFAULT_MEMORY_GIB = 4.0
"""The import's default memory budget, as pase-search's `memory-gib` and pase-run's."""


def budget_bytes(memory_gib: float, filename: str) -> int:
    """`memory_gib` in bytes, or a `Diagnostic` for a value that is no budget."""
    if not 0 < memory_gib < math.inf:
        raise Diagnostic(f"memory-gib must be a finite number above 0, got {memory_gib} "
                         "(-f 'onnx{memory-gib=G}')", filename)
    if memory_gib * GIB >= 1 << 63:
        raise Diagnostic(f"memory-gib={memory_gib:g} is more than 2^33 GiB (2^63 bytes, the "
                         "most pase counts)", filename)
    return max(int(memory_gib * GIB), 1)


def over_budget(what: str, count: int, limit: int, filename: str) -> Diagnostic:
    """The error for `count` bytes of `what` that do not fit in `limit`."""
    return Diagnostic(f"{what} takes {count:,} bytes, over the import's memory budget of "
                      f"{limit:,} bytes; raise it with -f 'onnx{{memory-gib=G}}' (pase-run: "
                      "--memory-gib G)", filename)


def tensors_of(onnx: Any, model: Any) -> Iterator[tuple[Any, str]]:
    """Every tensor the graph holds (initializers, Constant values, tensor attributes),
    with how a diagnostic names its owner."""
    for init in model.graph.initializer:
        yield init, f"initializer '{init.name}'"
    for node in model.graph.node:
        for attribute in node.attribute:
            owner = f"node '{node_label(node)}' ({node.op_type})"
            if attribute.type == onnx.AttributeProto.TENSOR:
                yield attribute.t, owner
            for tensor in attribute.tensors:
                yield tensor, owner


@dataclass(frozen=True)
class _Extent:
    """Where one external tensor's bytes are: checked, not yet read."""

    tensor: Any
    owner: str
    location: str
    path: str
    offset: int
    length: int


def load_external_data(onnx: Any, model: Any, filename: str, limit: int, held: int = 0
                       ) -> None:
    """Read every tensor kept in an external data file into the model. Files are read only
    from the model's own folder: a location that leaves it, or a file too short for the
    tensor, is an error naming both; data that would take more than `limit` bytes with
    the `held` ones (the model's file) is refused unread."""
    external = [(tensor, owner) for tensor, owner in tensors_of(onnx, model)
                if tensor.data_location == onnx.TensorProto.EXTERNAL]
    if not external:
        return
    if not os.path.isfile(filename):
        raise Diagnostic(f"{external[0][1]} keeps its data in an external file, which pase "
                         "reads only beside a model read from a file", filename)
    folder = os.path.realpath(os.path.dirname(os.path.abspath(filename)))
    extents = [_extent(onnx, tensor, owner, folder, filename) for tensor, owner in external]
    total = sum(extent.length for extent in extents)
    if held + total > limit:
        count = f"{len(extents):,} tensor{'s' if len(extents) > 1 else ''}"
        raise over_budget(f"the model with its external data ({count}, {total:,} bytes)",
                          held + total, limit, filename)
    for extent in extents:
        extent.tensor.raw_data = _read(extent, filename)
        del extent.tensor.external_data[:]
        extent.tensor.data_location = onnx.TensorProto.DEFAULT


def _extent(onnx: Any, tensor: Any, owner: str, folder: str, filename: str) -> _Extent:
    """Where the bytes of one external tensor are, in a file inside `folder`: checked
    against the tensor's dims and type and against the file's size, nothing read."""
    entries = {entry.key: entry.value for entry in tensor.external_data}
    location = entries.get("location", "")
    if "\0" in location:
        raise Diagnostic(f"{owner} keeps its data in {location!r}, which is not a file name "
                         "(it holds a NUL byte)", filename)
    path = os.path.realpath(os.path.join(folder, location))
    if not location or os.path.isabs(location) or os.path.commonpath([folder, path]) != folder:
        raise Diagnostic(f"{owner} keeps its data in '{location}', outside the model's "
                         "folder; pase reads external data only from files beside the model",
                         filename)
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError):
        raise Diagnostic(f"{owner}: its external data is of type {tensor.data_type}, which "
                         "pase does not read from a file", filename) from None
    if any(dim < 0 for dim in tensor.dims):
        raise Diagnostic(f"{owner}: its dims {list(tensor.dims)} hold a negative size",
                         filename)
    needed = math.prod(tensor.dims) * itemsize
    try:
        offset = int(entries.get("offset", "0"))
        length = int(entries.get("length", str(needed)))
    except ValueError:
        raise Diagnostic(f"{owner}: the offset or length of its external data in "
                         f"'{location}' is not a number", filename) from None
    if length != needed or offset < 0:
        raise Diagnostic(f"{owner}: its external data in '{location}' is {length:,} bytes "
                         f"at offset {offset:,}; the tensor needs {needed:,}", filename)
    try:
        if not os.path.isfile(path):  # (opening a FIFO would block)
            raise OSError(0, "not a regular file" if os.path.exists(path) else
                          os.strerror(2))
        size = os.stat(path).st_size
    except OSError as error:
        raise Diagnostic(f"{owner}: cannot read its external data file '{location}': "
                         f"{error.strerror}", filename) from None
    if offset + needed > size:  # (an offset past 2^63 cannot even be sought)
        raise Diagnostic(f"{owner}: the external data file '{location}' is too short: "
                         f"{size:,} bytes, the tensor needs {needed:,} bytes from offset "
                         f"{offset:,}", filename)
    return _Extent(tensor, owner, location, path, offset, needed)


def _read(extent: _Extent, filename: str) -> bytes:
    """The bytes of one checked extent (a file that shrank since is an error too)."""
    try:
        with open(extent.path, "rb") as file:
            file.seek(extent.offset)
            data = file.read(extent.length)
    except OSError as error:
        raise Diagnostic(f"{extent.owner}: cannot read its external data file "
                         f"'{extent.location}': {error.strerror}", filename) from None
    if len(data) != extent.length:
        raise Diagnostic(f"{extent.owner}: the external data file '{extent.location}' is "
                         f"too short: the tensor needs {extent.length:,} bytes from offset "
                         f"{extent.offset:,}", filename)
    return data
