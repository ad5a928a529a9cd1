"""Reading an ONNX model before import: decode and check it, load its external data from
the model's own folder, give each Identity-shared initializer its own copy, fold its static
shape computations to constants (and the recurrent layers' weights: `weight_layouts`), and
infer its shapes (the external data: `external`).

    model = read_model(onnx, data, "resnet.onnx")   # raises Diagnostic on any problem

The folding is onnxscript's optimizer (`onnxscript.optimizer.optimize`: ONNX shape
inference, constant folding of Shape, ConstantOfShape, Expand, Range, Slice, Equal, Where,
Cast, Mod, ... on static shapes, and removal of what is then unused), the library the
PyTorch exporter itself uses on the models it writes, with the same results in linear time
and without evaluating what it would discard (`optimizer`); what it leaves for its size
limits, onnx's reference evaluator folds (`folding`).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from pase.core.diagnostics import Diagnostic
from pase.frontend.onnx.export_options import (
    refuse_missing_weights,
    refuse_symbolic_sizes,
    size_the_batch,
)
from pase.frontend.onnx.external import DEFAULT_MEMORY_GIB, GIB, load_external_data
from pase.frontend.onnx.folding import fold_constant_nodes
from pase.frontend.onnx.half_precision import to_float32
from pase.frontend.onnx.malformed import refuse_nonpositive_sizes, refuse_undecodable_names
from pase.frontend.onnx.optimizer import fold_constants, optimize
from pase.frontend.onnx.static_batch import (
    check_resized_batch,
    resize_static_batch,
    static_batch_advice,
)
from pase.frontend.onnx.values import first_line
from pase.frontend.onnx.weight_layouts import fold_recurrent_weights

MIN_OPSET = 13
"""The oldest opset read: Softmax, ReduceSum, Squeeze and Unsqueeze took their current
form in opset 13 (the default of `torch.onnx.export` is 17 or later)."""

FOLDING_ROUNDS = 8
"""How many times the reference evaluator's folding and onnxscript's optimizer take turns."""

INSTALL_HINT = "pip install 'pase[onnx]' (or: pip install onnx==1.23.1 onnxscript==0.7.2)"


def import_onnx(filename: str) -> Any:
    """The `onnx` module, or a diagnostic saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise Diagnostic(f"reading ONNX needs the onnx package: {INSTALL_HINT}",
                         filename) from None
    return onnx


InputsCheck = Callable[[Any], None]
"""Given a decoded model whose graph inputs have positive static sizes, raises
`Diagnostic` to refuse it before it is imported (pase-run's memory budget)."""


def read_model(onnx: Any, data: bytes, filename: str, batch: int = 0,
               inputs_fit: InputsCheck | None = None,
               limit: int = int(DEFAULT_MEMORY_GIB * GIB), from_file: bool = True) -> Any:
    """The checked, simplified model with inferred shapes, or one diagnostic; `batch` is
    the size of a symbolic batch axis (0: the model has none); `inputs_fit` may refuse the
    model by its inputs before anything else is done with it; `limit` bounds the bytes of
    the model and its external data together (refused before they are read); external
    data is read beside `filename` only `from_file` (the model was read from it)."""
    model = decode(onnx, data, filename)
    refuse_undecodable_names(model, filename)
    refuse_nonpositive_sizes(model, filename)
    refuse_symbolic_sizes(model, batch, filename)
    static = resize_static_batch(model, batch, filename)
    size_the_batch(model, batch, filename)
    if inputs_fit is not None:
        inputs_fit(model)
    load_external_data(onnx, model, filename, limit, len(data), from_file)
    to_float32(onnx, model)
    refuse_missing_weights(model, filename)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        raise Diagnostic(f"not a valid ONNX model: {first_line(error)}", filename) from None
    unshare_identity_initializers(onnx, model)
    model = simplify(onnx, model, filename)
    fold_recurrent_weights(onnx, model, filename)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except onnx.shape_inference.InferenceError as error:
        if static:
            raise Diagnostic(f"{static_batch_advice(static, batch)} (at batch {batch}: "
                             f"{first_line(error)})", filename) from None
        raise Diagnostic(f"the shapes of the model cannot be inferred: {first_line(error)}",
                         filename) from None
    check_resized_batch(inferred, batch, static, filename)
    return inferred


def decode(onnx: Any, data: bytes, filename: str) -> Any:
    """The parsed model, with an opset pase reads."""
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeWarning, ValueError) as error:
        raise Diagnostic(f"not an ONNX model: the file is truncated or corrupt ({error})",
                         filename) from None
    if not model.HasField("graph") or not model.graph.node:
        raise Diagnostic("not an ONNX model, or one without nodes: the file is empty, "
                         "truncated or corrupt", filename)
    latest = onnx.defs.onnx_opset_version()
    normalize_default_domain(model)
    opsets: dict[str, int] = {}
    for entry in model.opset_import:
        if opsets.setdefault(entry.domain, entry.version) != entry.version:
            raise Diagnostic(f"the model imports domain '{entry.domain or 'ai.onnx'}' "
                             f"twice, as opsets {opsets[entry.domain]} and {entry.version}",
                             filename)
    opset = opsets.get("")
    if opset is None:
        raise Diagnostic("the model imports no opset of the default domain (ai.onnx)",
                         filename)
    if not MIN_OPSET <= opset <= latest:
        age = "old" if opset < MIN_OPSET else "new"
        raise Diagnostic(f"opset {opset} is too {age}: pase reads opsets {MIN_OPSET} to "
                         f"{latest}; convert the model with onnx.version_converter."
                         f"convert_version(model, 17), or export it again with "
                         f"opset_version=17", filename)
    return model


def normalize_default_domain(model: Any) -> None:
    """The default domain spelled "ai.onnx" (the specification's other name for "") as "",
    in the opset imports and the main graph's nodes: onnx's checker takes both, onnxscript
    and onnx's shape inference then found no opset for the nodes' ""."""
    for entry in model.opset_import:
        if entry.domain == "ai.onnx":
            entry.domain = ""
    for node in model.graph.node:
        if node.domain == "ai.onnx":
            node.domain = ""


def unshare_identity_initializers(onnx: Any, model: Any) -> None:
    """Each Identity whose input is an initializer becomes an initializer of its own (a
    copy): the TorchScript exporter shares equal initializers of different layers (the zero
    biases of an eval-mode model) behind Identity nodes, which are not tied in the model.
    An initializer that several nodes read directly stays one (tied) parameter."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    kept = []
    for node in graph.node:
        source = initializers.get(node.input[0]) if node.op_type == "Identity" \
            and node.input else None
        if source is None:
            kept.append(node)
            continue
        copy = onnx.TensorProto()
        copy.CopyFrom(source)
        copy.name = node.output[0]
        graph.initializer.append(copy)
    if len(kept) != len(graph.node):
        del graph.node[:]
        graph.node.extend(kept)
    unshare_constant_fills(onnx, model)


def unshare_constant_fills(onnx: Any, model: Any) -> None:
    """An initializer of one repeated value (all zeros, all ones) that several nodes read
    becomes one copy per node: exporters merge equal initializers (the dynamo exporter
    reads one zero bias in every linear layer of a fresh BERT), which the model does not
    tie; weights it does tie (an embedding and its output layer) are not constant fills."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    readers: dict[str, list[tuple[Any, int]]] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            if name in initializers:
                readers.setdefault(name, []).append((node, position))
    for name, uses in readers.items():
        init = initializers[name]
        if len(uses) < 2 or not is_parameter(onnx, init):
            continue
        values = onnx.numpy_helper.to_array(init)
        if not np.all(values == values.flat[0]):
            continue
        for index, (node, position) in enumerate(uses[1:], start=2):
            copy = onnx.TensorProto()
            copy.CopyFrom(init)
            copy.name = f"{name}_{index}"
            graph.initializer.append(copy)
            node.input[position] = copy.name


def is_parameter(onnx: Any, init: Any) -> bool:
    """Whether an initializer is a trainable parameter (a float tensor of more than one
    element) rather than a constant of the computation (shapes, axes, scalar factors)."""
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
              onnx.TensorProto.BFLOAT16)
    return init.data_type in floats and math.prod(init.dims) > 1


def scattered_values(graph: Any) -> set[str]:
    """The float initializers only ScatterND nodes read, as the values they write: the
    constants of a buffer filled in place (the dynamo exporter's slicing assignments into
    `new_zeros`, Swin's shifted-window mask), folded with the rest, not parameters."""
    readers: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            readers.setdefault(name, []).append((node.op_type, position))
    return {name for name, uses in readers.items()
            if all(op == "ScatterND" and position == 2 for op, position in uses)}


def simplify(onnx: Any, model: Any, filename: str) -> Any:
    """`model` with its static shape computations folded to constants (onnxscript's
    optimizer). The parameters are hidden from it as graph inputs while it runs: to a
    training model they are variables, not constants to fold (it would drop a Gemm's zero
    bias, or fold a transposed weight into a new constant)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import onnxscript.optimizer  # noqa: F401  (installed: else the hint)
    except ImportError:
        raise Diagnostic(f"reading ONNX needs the onnxscript package: {INSTALL_HINT}",
                         filename) from None
    graph = model.graph
    written = scattered_values(graph)
    parameters = [init for init in graph.initializer
                  if is_parameter(onnx, init) and init.name not in written]
    hidden = {init.name for init in parameters} - {value.name for value in graph.input}
    constants = [init for init in graph.initializer
                 if not is_parameter(onnx, init) or init.name in written]
    del graph.initializer[:]
    graph.initializer.extend(constants)
    graph.input.extend(onnx.helper.make_tensor_value_info(init.name, init.data_type,
                                                          init.dims)
                       for init in parameters if init.name in hidden)
    quiet = logging.getLogger("onnxscript")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "Evaluation failed: ..." warnings, not the user's
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize(model)
            # Its folding keeps ConstantOfShape (so as not to grow a model): fold it too,
            # it starts the shape and mask computations exporters write, then go on.
            fold_constants(optimized, lambda node: True if node.op_type == "ConstantOfShape"
                           else None)
            optimized = optimize(optimized)
            # What it leaves (outputs over its 512x512 limit: the attention masks of long
            # sequences), onnx's reference evaluator folds, then it removes what is unused
            # and folds what that made constant; until nothing more folds.
            for _ in range(FOLDING_ROUNDS):
                if not fold_constant_nodes(onnx, optimized, filename):
                    break
                optimized = optimize(optimized)
    except Diagnostic:
        raise
    except MemoryError:
        raise Diagnostic("folding the model's static shapes ran out of memory (onnxscript's "
                         "optimizer)", filename) from None
    except Exception as error:  # the library's own failure: name it, no traceback
        raise Diagnostic(f"folding the model's static shapes failed (onnxscript's "
                         f"optimizer): {first_line(error)}", filename) from None
    finally:
        quiet.setLevel(level)
    inputs = [value for value in optimized.graph.input if value.name not in hidden]
    del optimized.graph.input[:]
    optimized.graph.input.extend(inputs)
    optimized.graph.initializer.extend(parameters)
    return optimized
