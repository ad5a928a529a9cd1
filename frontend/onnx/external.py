"""An ONNX model's external data (`FILE.onnx.data`, as the dynamo exporter writes it), read
into the model from the model's own folder and within the import's memory budget.

    load_external_data(onnx, model, "m.onnx", limit=4 << 30)  # raises Diagnostic

The model's own folder is the folder of the file the model's path names once every
symbolic link is resolved: `ln -s ../exports/m.onnx m.onnx` reads `m.onnx.data` from
`../exports`, beside the file the exporter wrote (as if `../exports/m.onnx` were given).
Nothing outside that folder is read: every tensor kept outside the model, wherever it is
(an initializer, a Constant's value, a tensor attribute, a sparse tensor, the body of an
If, Loop or Scan, a function, a training graph), is checked before any byte is read: its
location (a file in the folder: not `../x`, not an absolute path, not a path whose
links, resolved, lead out of the folder), its offset and length against the tensor's dims
and type and against the file's size, and the sum of all of them against the budget
(`-f 'onnx{memory-gib=G}'`, pase-run's `--memory-gib`): a model whose data would not fit
is refused before it is read, with the bytes it needs. The file is opened without
following a link (`O_NOFOLLOW`, the checked path has none) and must be a regular file, so
a link put in place after the check, or a FIFO, is an error, not a read elsewhere or a
hang. No tensor is left external, so nothing later in the import (onnx's checker,
onnxscript's optimizer, the reference evaluator) looks for a file of its own.
"""

from __future__ import annotations

import errno
import math
import os
import stat
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
    """Every tensor the model holds (initializers, sparse ones, Constant values, tensor
    attributes, in the main graph, in the subgraphs of its nodes, in its functions and in
    its training graphs), with how a diagnostic names its owner."""
    yield from _graph_tensors(onnx, model.graph, "")
    for function in model.functions:
        yield from _node_tensors(onnx, function.node, f" in function '{function.name}'")
    for index, training in enumerate(model.training_info):
        for graph in (training.initialization, training.algorithm):
            yield from _graph_tensors(onnx, graph, f" in training graph {index}")


def _graph_tensors(onnx: Any, graph: Any, where: str) -> Iterator[tuple[Any, str]]:
    for init in graph.initializer:
        yield init, f"initializer '{init.name}'{where}"
    for sparse in graph.sparse_initializer:
        owner = f"sparse initializer '{sparse.values.name}'{where}"
        yield sparse.values, owner
        yield sparse.indices, owner
    yield from _node_tensors(onnx, graph.node, where)


def _node_tensors(onnx: Any, nodes: Any, where: str) -> Iterator[tuple[Any, str]]:
    for node in nodes:
        owner = f"node '{node_label(node)}' ({node.op_type}){where}"
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                yield attribute.t, owner
            elif attribute.type == onnx.AttributeProto.SPARSE_TENSOR:
                yield attribute.sparse_tensor.values, owner
                yield attribute.sparse_tensor.indices, owner
            for tensor in attribute.tensors:
                yield tensor, owner
            for sparse in attribute.sparse_tensors:
                yield sparse.values, owner
                yield sparse.indices, owner
            subgraphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else []
            for graph in [*subgraphs, *attribute.graphs]:
                yield from _graph_tensors(onnx, graph, f" in the {attribute.name} of {owner}")


@dataclass(frozen=True)
class _Extent:
    """Where one external tensor's bytes are: checked, not yet read."""

    tensor: Any
    owner: str
    location: str
    path: str
    offset: int
    length: int


def load_external_data(onnx: Any, model: Any, filename: str, limit: int, held: int = 0,
                       from_file: bool = True) -> None:
    """Read every tensor kept in an external data file into the model. Files are read only
    from the model's own folder: a location that leaves it, or a file too short for the
    tensor, is an error naming both; data that would take more than `limit` bytes with
    the `held` ones (the model's file) is refused unread. A model not read from the file
    `filename` names (`from_file` false: the standard input, whose name is "stdin") has no
    folder, whatever file of that name there is."""
    external = [(tensor, owner) for tensor, owner in tensors_of(onnx, model)
                if tensor.data_location == onnx.TensorProto.EXTERNAL]
    if not external:
        return
    if not (from_file and os.path.isfile(filename)):
        raise Diagnostic(f"{external[0][1]} keeps its data in an external file, which pase "
                         "reads only beside a model read from a file", filename)
    folder = model_folder(filename)
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


def model_folder(filename: str) -> str:
    """The model's own folder: that of the file `filename` names, links resolved."""
    return os.path.dirname(os.path.realpath(filename))


def _extent(onnx: Any, tensor: Any, owner: str, folder: str, filename: str) -> _Extent:
    """Where the bytes of one external tensor are, in a file inside `folder`: checked
    against the tensor's dims and type and against the file's size, nothing read."""
    entries = {entry.key: entry.value for entry in tensor.external_data}
    location = entries.get("location", "")
    if not location:
        raise Diagnostic(f"{owner} keeps its data in an external file but names none (its "
                         "external_data has no \"location\")", filename)
    if "\0" in location:
        raise Diagnostic(f"{owner} keeps its data in {location!r}, which is not a file name "
                         "(it holds a NUL byte)", filename)
    path = os.path.realpath(os.path.join(folder, location))
    if os.path.isabs(location) or os.path.commonpath([folder, path]) != folder:
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
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(extent.path, flags)
        with open(descriptor, "rb") as file:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise OSError(0, "not a regular file")
            file.seek(extent.offset)
            data = file.read(extent.length)
    except OSError as error:
        reason = "a symbolic link" if error.errno == errno.ELOOP else error.strerror
        raise Diagnostic(f"{extent.owner}: cannot read its external data file "
                         f"'{extent.location}': {reason}", filename) from None
    if len(data) != extent.length:
        raise Diagnostic(f"{extent.owner}: the external data file '{extent.location}' is "
                         f"too short: the tensor needs {extent.length:,} bytes from offset "
                         f"{extent.offset:,}", filename)
    return data
