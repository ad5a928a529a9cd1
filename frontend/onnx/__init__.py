"""The ONNX frontend: a model exported from PyTorch, TensorFlow or JAX as a `dnn` graph.

    pase-opt model.onnx                               # the verified dnn IR
    pase-opt model.onnx -f 'onnx{batch=32 loss=mean}' # a batch of 32, mean loss
    pase-opt model.onnx -t dnn -o model.dnn           # as .dnn source, to read and edit
    pase-opt big.onnx -f 'onnx{memory-gib=16}'        # a model and weights of up to 16 GiB

The import runs in three steps, one module each:

- `model`: decode and check the file, read its external data (only from the model's own
  folder: that of the file the model's path names, symbolic links resolved, so a link to
  a model reads the data beside its target; `external`), give each Identity-shared
  initializer its own copy, fold the static shape computations to constants
  (onnxscript's optimizer, bounded: `optimizer`; then onnx's reference evaluator for what
  it leaves: `folding`) and infer the shapes;
- `graph`: the walk. Initializers become `dnn.param`s (their values are the initial
  parameters `pase-run` uses: `load_model(...).initial_values`), graph inputs become
  `dnn.input`s, every ONNX axis gets a named dimension (`dims`, `values`), and each node is
  built by the importer registered for its op type (`registry`, `operators/`), after
  `patterns` has replaced the spellings of known layers (erf-GELU) by one node;
- the training loss: by default softmax cross-entropy over the output's last axis (the
  classes) against a new `labels` input; `loss=mean` takes the mean of the output instead;
  a model whose output is already a scalar keeps it as the loss.

A model with nodes of op types pase does not read gets one diagnostic listing them all
(op type, count, the first node's name); any other problem is one diagnostic naming the
node: `model.onnx: error: node 'Conv_12' (Conv): dilations=[2, 2] is not supported (only 1)`.

Where pase differs from ONNX: Dropout is the identity (pase trains dropout-free);
BatchNormalization always normalizes with the batch statistics (training mode) and its
running mean and variance are not read (each norm keeps its epsilon: the `epsilon` of
LayerNormalization, BatchNormalization and RMSNormalization, the added constant of a
decomposed layer or RMS norm); the erf-based GELU pattern and Gelu both become
`dnn.gelu` (the tanh approximation); a constant factor (`Div` by a constant, `Mul` by a
scalar) becomes a scalar `param` that starts at the constant's value.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from pase.core import weights
from pase.core.diagnostics import Diagnostic
from pase.core.files import open_input
from pase.core.options import CheckedOptions
from pase.core.shapes import MAX_ELEMENTS
from pase.frontend.onnx.external import (
    DEFAULT_MEMORY_GIB,
    GIB,
    budget_bytes,
    over_budget,
)
from pase.frontend.onnx.graph import Imported, import_graph
from pase.frontend.onnx.model import INSTALL_HINT, InputsCheck, import_onnx, read_model
from pase.frontend.onnx.registry import OPERATORS
from pase.frontend.onnx.values import identifier

__all__ = ["INSTALL_HINT", "LOSSES", "OPERATORS", "Imported", "OnnxFrontend", "import_model",
           "load_model"]

LOSSES = ("cross-entropy", "mean")
DEFAULT_LIMIT = int(DEFAULT_MEMORY_GIB * GIB)


@dataclass(frozen=True)
class OnnxFrontend(CheckedOptions, Frontend):
    """`.onnx` files as an xDSL frontend (`-f onnx`, or any `*.onnx` input); options in
    xDSL's spec syntax: `-f 'onnx{batch=32 loss=mean}'`."""

    name = "onnx"
    OPTIONS_OF = "-f onnx"

    batch: int = 0
    """The size of a symbolic batch axis (axis 0 of an input); 0: the model has none."""
    loss: str = "cross-entropy"
    """The training loss of a model whose output is not a scalar: cross-entropy or mean."""
    memory_gib: float | int = DEFAULT_MEMORY_GIB
    """The most the model's file and external data may take together, GiB: past it the
    model is refused before it is read."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "<input>") -> ModuleOp:
        """The imported module; its initializers' values go with it (`core.weights`) for
        the targets that write programs (`-t jax`)."""
        limit = budget_bytes(float(self.memory_gib), input_name)
        imported = import_model(read_limited(input, input_name, limit), input_name,
                                self.batch, self.loss, memory_limit=limit,
                                from_file=_reads_file(input, input_name))
        weights.record(imported.module, imported.initial_values)
        return imported.module


def _reads_file(stream: IO[bytes], name: str) -> bool:
    """Whether `stream` is the file `name` names (not the standard input named "stdin")."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(name))
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def load_model(path: str, batch: int = 0, loss: str = "cross-entropy",
               inputs_fit: InputsCheck | None = None,
               memory_limit: int = DEFAULT_LIMIT) -> Imported:
    """Import the ONNX file at `path` (`-`: the standard input, named "stdin" as pase-opt
    names it, without external data); raises `Diagnostic` on any error."""
    if path == "-":
        data = read_limited(sys.stdin.buffer, "stdin", memory_limit)
        return import_model(data, "stdin", batch, loss, inputs_fit, memory_limit, False)
    try:
        with open_input(path, "model") as file:
            data = read_limited(file, path, memory_limit)
    except OSError as error:
        raise Diagnostic(f"cannot read the file: {error.strerror}", path) from None
    return import_model(data, path, batch, loss, inputs_fit, memory_limit)


LARGEST_MODEL_FILE = (1 << 31) - 1
"""The most bytes of an .onnx file: protobuf's limit of one message (larger weights go to
external data, as the exporters write them)."""


def read_limited(stream: IO[bytes], filename: str, limit: int) -> bytes:
    """All of `stream`, or a `Diagnostic` for one of more than `limit` bytes or past
    `LARGEST_MODEL_FILE` (a regular file's size is known before it is read; a stream,
    /dev/zero, is read no further)."""
    try:
        size = os.fstat(stream.fileno()).st_size if os.path.isfile(filename) else 0
    except (OSError, ValueError):  # (a stream without a descriptor: BytesIO)
        size = 0
    most = min(limit, LARGEST_MODEL_FILE)
    data = stream.read(most + 1) if size <= most else b""
    if size > limit or len(data) > limit:
        raise over_budget("the model's file" if size else "the model's input (read up to "
                          "the budget)", max(size, len(data)), limit, filename)
    if size > LARGEST_MODEL_FILE or len(data) > LARGEST_MODEL_FILE:
        raise Diagnostic("the file is over 2 GiB, more than an ONNX model holds (protobuf's "
                         "limit); its weights belong in external data (torch.onnx.export "
                         "writes them to FILE.onnx.data)", filename)
    return data


def import_model(data: bytes, filename: str, batch: int = 0,
                 loss: str = "cross-entropy", inputs_fit: InputsCheck | None = None,
                 memory_limit: int = DEFAULT_LIMIT, from_file: bool = True) -> Imported:
    """Import a serialized ONNX model; raises `Diagnostic` on any error. External data
    is read from files beside `filename` (the model's path, when `from_file`: `data` was
    read from it), if it fits in `memory_limit` bytes with `data`. `inputs_fit`, given
    the decoded model before any other work (external data, folding, shapes), may refuse
    it by its graph inputs' declared sizes (pase-run's memory budget)."""
    if loss not in LOSSES:
        raise Diagnostic(f"unknown loss '{loss}'; expected {' or '.join(LOSSES)}", filename)
    if batch < 0:
        raise Diagnostic(f"batch must be a positive size, got {batch}", filename)
    if batch > MAX_ELEMENTS:
        raise Diagnostic(f"batch={batch:,} is over pase's limit of 2^53 "
                         "(-f 'onnx{batch=N}', pase-run --batch N)", filename)
    onnx = import_onnx(filename)
    model = read_model(onnx, data, filename, batch, inputs_fit, memory_limit, from_file)
    stem = os.path.splitext(os.path.basename(filename))[0]
    return import_graph(onnx, model, filename, identifier(stem) or "model", batch, loss)
