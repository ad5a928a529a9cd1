"""The ONNX frontend: a model exported from PyTorch, TensorFlow or JAX as a `dnn` graph.

    pase-opt model.onnx                               # the verified dnn IR
    pase-opt model.onnx -f 'onnx{batch=32 loss=mean}' # a symbolic batch of 32, mean loss
    pase-opt model.onnx -t dnn -o model.dnn           # as .dnn source, to read and edit

Initializers become `dnn.param`s (their values are the initial parameters `pase-run`
uses: `load_model(...).initial_values`), graph inputs become `dnn.input`s, and every
ONNX axis gets a named dimension (`pase.frontend.onnx_dims`). An exported inference
model gets a training loss: by default softmax cross-entropy over the output's last
axis (the classes) against a new `labels` input; `loss=mean` takes the mean of the
output instead; a model whose output is already a scalar keeps it as the loss.

`OPERATORS` is the one table: ONNX op type -> the method that builds its `dnn` ops and
the attributes it reads. Anything else is one diagnostic naming the node:

    model.onnx: error: node 'Conv_12' (Conv): group=32 is not supported

Where pase differs from ONNX: Dropout is the identity (pase trains dropout-free);
BatchNormalization always normalizes with the batch statistics (training mode) and its
running mean and variance are not read; the epsilons of the norms are pase's (1e-5);
the erf-based GELU pattern and Gelu both become `dnn.gelu` (the tanh approximation); a
constant factor (`Div` by a constant, `Mul` by a scalar) becomes a scalar `param` that
starts at the constant's value.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.frontend import Frontend

from pase.core.diagnostics import Diagnostic
from pase.core.shapes import NamedShape, ShapeError, conv_output_size, reshape_groups
from pase.dialect import dnn
from pase.frontend.onnx_dims import DimTable
from pase.frontend.onnx_patterns import fuse_erf_gelu

MIN_OPSET = 13
"""The oldest opset read: Softmax, ReduceSum, Squeeze and Unsqueeze took their current
form in opset 13 (the default of `torch.onnx.export` is 17 or later)."""

LOSSES = ("cross-entropy", "mean")

# TensorProto element types pase has (FLOAT, INT32, INT64, DOUBLE).
ELEMENTS = {1: "f32", 6: "i32", 7: "i64", 11: "f64"}

INSTALL_HINT = "pip install 'pase[onnx]' (or: pip install onnx==1.23.1)"


@dataclass(frozen=True)
class OnnxFrontend(Frontend):
    """`.onnx` files as an xDSL frontend (`-f onnx`, or any `*.onnx` input); options in
    xDSL's spec syntax: `-f 'onnx{batch=32 loss=mean}'`."""

    name = "onnx"

    batch: int = 0
    """The size of a symbolic batch axis (axis 0 of an input); 0: the model has none."""
    loss: str = "cross-entropy"
    """The training loss of a model whose output is not a scalar: cross-entropy or mean."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "<input>") -> ModuleOp:
        return import_model(input.read(), input_name, self.batch, self.loss).module


@dataclass
class Imported:
    """An imported model: its `dnn` module, and its initializers' values by param name."""

    module: ModuleOp
    initial_values: dict[str, np.ndarray]


def load_model(path: str, batch: int = 0, loss: str = "cross-entropy") -> Imported:
    """Import the ONNX file at `path`; raises `Diagnostic` on any error."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise Diagnostic(f"cannot read the file: {error.strerror}", path) from None
    return import_model(data, path, batch, loss)


def import_model(data: bytes, filename: str, batch: int = 0,
                 loss: str = "cross-entropy") -> Imported:
    """Import a serialized ONNX model; raises `Diagnostic` on any error."""
    if loss not in LOSSES:
        raise Diagnostic(f"unknown loss '{loss}'; expected {' or '.join(LOSSES)}", filename)
    if batch < 0:
        raise Diagnostic(f"batch must be a positive size, got {batch}", filename)
    onnx = _import_onnx(filename)
    model = _decode(onnx, data, filename)
    stem = os.path.splitext(os.path.basename(filename))[0]
    return _Importer(onnx, model, filename, _identifier(stem) or "model", batch, loss).run()


def _import_onnx(filename: str) -> Any:
    try:
        import onnx
    except ImportError:
        raise Diagnostic(f"reading ONNX needs the onnx package: {INSTALL_HINT}",
                         filename) from None
    return onnx


def _decode(onnx: Any, data: bytes, filename: str) -> Any:
    """The checked model with inferred shapes, or one diagnostic saying what is wrong."""
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
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    opset = opsets.get("ai.onnx")
    if opset is None:
        raise Diagnostic("the model imports no opset of the default domain (ai.onnx)",
                         filename)
    if not MIN_OPSET <= opset <= latest:
        age = "old" if opset < MIN_OPSET else "new"
        raise Diagnostic(f"opset {opset} is too {age}: pase reads opsets {MIN_OPSET} to "
                         f"{latest}; convert the model with onnx.version_converter."
                         f"convert_version(model, 17), or export it again with "
                         f"opset_version=17", filename)
    external = onnx.TensorProto.EXTERNAL
    if any(init.data_location == external for init in model.graph.initializer):
        raise Diagnostic("the model keeps its weights in external data files; pase reads one "
                         "self-contained file: onnx.save(onnx.load(path), path, "
                         "save_as_external_data=False)", filename)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        raise Diagnostic(f"not a valid ONNX model: {_first_line(error)}", filename) from None
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except onnx.shape_inference.InferenceError as error:
        raise Diagnostic(f"the shapes of the model cannot be inferred: {_first_line(error)}",
                         filename) from None


def _first_line(error: Exception) -> str:
    """The error's message on one line (ONNX's checker spreads a sentence over several)."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return (text[:300] + " ...") if len(text) > 300 else text or type(error).__name__


def _identifier(text: str) -> str:
    """`text` as a `.dnn` name: `/fc1/Gemm_output_0` -> `fc1_Gemm`, `onnx::Add_7` ->
    `onnx_Add7` (no `_<number>` suffix, which xDSL's printer reserves)."""
    text = re.sub(r"_output_[0-9]+(?=_|$)", "", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    text = re.sub(r"_([0-9]+)$", r"\1", text)
    if text and text[0].isdigit():
        text = "v" + text
    return text


@dataclass
class _Value:
    """An ONNX value: per ONNX axis the dim id it is (None: an axis of size 1 that the
    dnn tensor does not have, as `keepdims` and `Unsqueeze` make), and its dnn value, or
    the constant data of an initializer or Constant not yet used as a tensor."""

    axes: tuple[int | None, ...]
    ssa: SSAValue | None = None
    constant: np.ndarray | None = None

    @property
    def value(self) -> SSAValue:
        """The dnn value (`_Importer.tensor` makes one of a constant)."""
        assert self.ssa is not None
        return self.ssa


@dataclass(frozen=True)
class Operator:
    """How one ONNX op type is imported: the `_Importer` method, the attributes it reads."""

    method: str
    attributes: frozenset[str] = frozenset()
    outputs: int = 1
    """How many outputs the method defines; a use of any other output is an error."""


def _op(method: str, *attributes: str, outputs: int = 1) -> Operator:
    return Operator(method, frozenset(attributes), outputs)


_POOL = ("kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations",
         "storage_order", "count_include_pad")

OPERATORS: dict[str, Operator] = {
    "MatMul": _op("matmul"),
    "Gemm": _op("gemm", "alpha", "beta", "transA", "transB"),
    "Conv": _op("conv", "group", "strides", "pads", "dilations", "kernel_shape", "auto_pad"),
    "MaxPool": _op("pool", *_POOL),
    "AveragePool": _op("pool", *_POOL),
    "GlobalAveragePool": _op("global_average_pool"),
    "Relu": _op("unary"),
    "Gelu": _op("unary", "approximate"),
    "Tanh": _op("unary"),
    "Sigmoid": _op("unary"),
    "Exp": _op("unary"),
    "Add": _op("binary"),
    "Sub": _op("binary"),
    "Mul": _op("binary"),
    "Div": _op("div"),
    "Softmax": _op("softmax", "axis"),
    "LayerNormalization": _op("layer_norm", "axis", "epsilon", "stash_type"),
    "BatchNormalization": _op("batch_norm", "epsilon", "momentum", "training_mode"),
    "ReduceMean": _op("reduce", "axes", "keepdims", "noop_with_empty_axes"),
    "ReduceSum": _op("reduce", "keepdims", "noop_with_empty_axes"),
    "Reshape": _op("reshape", "allowzero"),
    "Flatten": _op("flatten", "axis"),
    "Transpose": _op("transpose", "perm"),
    "Squeeze": _op("squeeze"),
    "Unsqueeze": _op("unsqueeze"),
    "Concat": _op("concat", "axis"),
    "Gather": _op("gather", "axis"),
    "Identity": _op("identity"),
    "Dropout": _op("identity", "seed"),
    "Constant": _op("constant_value", "value", "value_float", "value_floats", "value_int",
                    "value_ints"),
}

UNARY_OPS: dict[str, type[dnn.LayerOp]] = {
    "Relu": dnn.ReluOp, "Gelu": dnn.GeluOp, "Tanh": dnn.TanhOp, "Sigmoid": dnn.SigmoidOp,
    "Exp": dnn.ExpOp,
}
BINARY_OPS: dict[str, type[dnn.LayerOp]] = {"Add": dnn.AddOp, "Sub": dnn.SubOp,
                                            "Mul": dnn.MulOp}

# The role of each axis of a graph input, by rank, for float tensors and for ids.
INPUT_ROLES = {4: ("b", "c", "h", "w"), 3: ("b", "s", "d"), 2: ("b", "d"), 1: ("b",)}
ID_ROLES = {2: ("b", "s"), 1: ("b",)}


@dataclass
class _Importer:
    onnx: Any
    model: Any
    filename: str
    graph_name: str
    batch: int
    loss: str
    dims: DimTable = field(default_factory=DimTable)
    values: dict[str, _Value] = field(default_factory=dict)
    inputs: list[Operation] = field(default_factory=list)
    body: list[Operation] = field(default_factory=list)
    initial: dict[SSAValue, np.ndarray] = field(default_factory=dict)
    used_names: set[str] = field(default_factory=set)
    node: Any = None

    # -- errors, names --

    def error(self, message: str) -> Diagnostic:
        if self.node is None:
            return Diagnostic(message, self.filename)
        return Diagnostic(f"node '{self.node_label(self.node)}' ({self.node.op_type}): "
                          f"{message}", self.filename)

    @staticmethod
    def node_label(node: Any) -> str:
        return node.name or (node.output[0] if node.output else node.op_type)

    def value_name(self, onnx_name: str) -> str:
        base = _identifier(onnx_name) or "v"
        name, count = base, 1
        while name in self.used_names:
            count += 1
            name = f"{base}_v{count}"
        self.used_names.add(name)
        return name

    # -- the walk --

    def run(self) -> Imported:
        graph = self.model.graph
        initializers = {init.name for init in graph.initializer}
        for init in graph.initializer:
            self.values[init.name] = _Value((), constant=self.onnx.numpy_helper.to_array(init))
        for value in graph.input:
            if value.name not in initializers:
                self.graph_input(value)
        nodes = fuse_erf_gelu(self.onnx, list(graph.node), self.constant_of)
        for node in nodes:
            self.node = node
            self.import_node(node)
        self.node = None
        return self.finish(graph)

    def constant_of(self, name: str) -> np.ndarray | None:
        value = self.values.get(name)
        return None if value is None else value.constant

    def import_node(self, node: Any) -> None:
        operator = OPERATORS.get(node.op_type)
        if node.domain not in ("", "ai.onnx") or operator is None:
            domain = f" of domain {node.domain}" if node.domain not in ("", "ai.onnx") else ""
            raise self.error(f"operator {node.op_type}{domain} is not supported; pase reads "
                             + ", ".join(sorted(OPERATORS)))
        for attribute in node.attribute:
            if attribute.name not in operator.attributes:
                raise self.error(f"attribute '{attribute.name}' is not supported")
        method: Callable[[Any], list[_Value]] = getattr(self, operator.method)
        try:
            results = method(node)
        except (ShapeError, VerifyException) as error:  # a tensor type the dialect rejects
            raise self.error(_first_line(error)) from None
        for name, value in zip(node.output[:operator.outputs], results, strict=False):
            if name:
                self.values[name] = value

    def graph_input(self, value: Any) -> None:
        tensor_type = value.type.tensor_type
        element = ELEMENTS.get(tensor_type.elem_type)
        if element is None:
            kind = self.onnx.TensorProto.DataType.Name(tensor_type.elem_type)
            raise self.error(f"input '{value.name}' is {kind}; pase reads FLOAT, DOUBLE, "
                             "INT32 and INT64 tensors")
        shape = tensor_type.shape.dim
        roles = (ID_ROLES if element.startswith("i") else INPUT_ROLES).get(
            len(shape), ("b",) + ("d",) * (len(shape) - 1))
        axes: list[int] = []
        for position, dim in enumerate(shape):
            size = dim.dim_value if dim.HasField("dim_value") else 0
            if size < 1:
                symbol = f"'{dim.dim_param}'" if dim.dim_param else "of unknown size"
                if position != 0:
                    raise self.error(f"axis {position} of input '{value.name}' is symbolic "
                                     f"({symbol}); pase needs static sizes: export the model "
                                     "with a fixed size for it")
                if not self.batch:
                    raise self.error(f"the batch axis of input '{value.name}' is symbolic "
                                     f"({symbol}); give its size: -f 'onnx{{batch=N}}' "
                                     "(pase-run: --batch N)")
                size = self.batch
            axes.append(self.dims.new(size, roles[position] if position < len(roles) else "d"))
        op = dnn.InputOp(self.tensor_type(axes, element))
        op.output.name_hint = self.value_name(value.name)
        self.dims.record(axes)
        self.inputs.append(op)
        self.values[value.name] = _Value(tuple(axes), op.output)

    # -- values --

    def tensor(self, name: str, hints: Sequence[str] = ()) -> _Value:
        """The value `name` as a dnn tensor; a float constant becomes a param (its dims
        named by `hints`, else `d`), its value the param's initial value."""
        if not name:
            raise self.error("an optional input is missing")
        value = self.values.get(name)
        if value is None:
            raise self.error(f"input '{name}' is not an output of a node pase reads (an "
                             "output it does not compute, e.g. a Dropout mask) nor a graph "
                             "input")
        if value.ssa is not None:
            return value
        assert value.constant is not None
        array = value.constant
        element = {np.dtype("float32"): "f32", np.dtype("float64"): "f64"}.get(array.dtype)
        if element is None:
            raise self.error(f"the constant '{name}' ({array.dtype}) is used as a tensor; "
                             "pase's layers take float32 or float64 constants")
        axes = tuple(None if size == 1 else
                     self.dims.new(size, hints[i] if i < len(hints) and hints[i] else "d")
                     for i, size in enumerate(array.shape))
        real = [a for a in axes if a is not None]
        param = dnn.ParamOp(self.tensor_type(real, element))
        param.output.name_hint = self.value_name(name)
        self.dims.record(real)
        self.body.append(param)
        self.initial[param.output] = array.reshape([self.dims.size(a) for a in real])
        value.axes, value.ssa = axes, param.output
        return value

    def constant(self, name: str, what: str) -> np.ndarray:
        array = self.constant_of(name) if name else None
        if array is None:
            raise self.error(f"{what} must be a constant (an initializer or a Constant node) "
                             f"for pase to know the shapes, but '{name}' is not")
        return array

    def tensor_type(self, dims: Sequence[int], element: str) -> dnn.TensorType:
        return dnn.TensorType([self.dims.placeholder(d) for d in dims],
                              [self.dims.size(d) for d in dims], dnn.ELEMENT_TYPES[element])

    def current_type(self, ssa: SSAValue) -> dnn.TensorType:
        shape = dnn.shape_of(ssa)
        return self.tensor_type([int(d[1:]) for d in shape.dims], shape.element)

    def layout(self, value: _Value) -> list[int]:
        """The dims of the dnn tensor in its layout order, as root ids."""
        assert value.ssa is not None
        return [self.dims.find(int(d[1:])) for d in dnn.shape_of(value.ssa).dims]

    def same(self, first: int, second: int) -> bool:
        """Make two axes one dim; False if one tensor holds both (they stay apart)."""
        if self.dims.size(first) != self.dims.size(second):
            raise self.error(f"axes of sizes {self.dims.size(first)} and "
                             f"{self.dims.size(second)} must be equal")
        return self.dims.unify(first, second)

    def build(self, op_class: type[Operation], operands: Sequence[SSAValue], name: str,
              result: Sequence[int] | None = None,
              properties: dict[str, Attribute] | None = None) -> SSAValue:
        """Append a layer; its result type is `result`'s dims, or what its shape rule
        infers. A shape the rule rejects is an error at the node."""
        properties = properties or {}
        element = dnn.shape_of(operands[0]).element
        placeholder = (self.tensor_type(result, element) if result is not None
                       else dnn.TensorType((), ()))
        # Operand types name the dims as they were when built; the shape rule must see
        # them as they are now (merged since), so it checks stand-ins of today's types.
        stand_ins = [dnn.InputOp(self.current_type(o)) for o in operands]
        probe = op_class.create(operands=[s.output for s in stand_ins],
                                result_types=[placeholder], properties=properties)
        assert isinstance(probe, dnn.LayerOp)
        try:
            inferred = probe.infer()
        except ShapeError as error:
            raise self.error(str(error)) from None
        finally:
            probe.drop_all_references()
        op = op_class.create(operands=list(operands), result_types=[
            dnn.TensorType.of(inferred)], properties=properties)
        self.dims.record(int(d[1:]) for d in inferred.dims)
        op.results[0].name_hint = self.value_name(name)
        self.body.append(op)
        return op.results[0]

    def ordered(self, value: _Value, name: str) -> SSAValue:
        """The dnn tensor laid out in ONNX's axis order (as conv2d, reshape and concat
        need): the value itself, or its transpose (a one-operand einsum)."""
        assert value.ssa is not None
        if any(axis is None for axis in value.axes):
            raise self.error("its input has axes of size 1 that pase's named tensors drop "
                             "(from keepdims or Unsqueeze); this op needs them, which pase "
                             "does not support")
        order = [self.dims.find(a) for a in value.axes if a is not None]
        if self.layout(value) == order:
            return value.ssa
        return self.build(dnn.EinsumOp, [value.ssa], f"{name}_transposed", order)

    def rename(self, value: _Value, position: int, dim: int, name: str) -> _Value:
        """`value` with the axis at `position` renamed to `dim` (a dnn.reshape)."""
        old = value.axes[position]
        assert value.ssa is not None
        assert old is not None
        if dim in [self.dims.find(d) for d in self.layout(value)]:
            raise self.error("two axes of one tensor would be one dimension")
        layout = [dim if d == self.dims.find(old) else d for d in self.layout(value)]
        ssa = self.build(dnn.ReshapeOp, [value.ssa], name, layout)
        axes = list(value.axes)
        axes[position] = dim
        return _Value(tuple(axes), ssa)

    def fresh_like(self, dim: int, hint: str | None = None) -> int:
        old_hint = self.dims.hints[self.dims.find(dim)]
        renamed = {"s": "t", "t": "r"}.get(old_hint, old_hint)
        return self.dims.new(self.dims.size(dim), hint or renamed)

    def broadcast(self, first: Sequence[int | None],
                  second: Sequence[int | None]) -> tuple[int | None, ...]:
        """ONNX broadcasting, right-aligned: the axes both have become one dim."""
        rank = max(len(first), len(second))
        a = [None] * (rank - len(first)) + list(first)
        b = [None] * (rank - len(second)) + list(second)
        axes: list[int | None] = []
        for x, y in zip(a, b, strict=True):
            if x is not None and y is not None and not self.same(x, y):
                raise self.error("two axes it broadcasts together are different dimensions "
                                 "of one tensor")
            axes.append(x if x is not None else y)
        return tuple(axes)

    def attribute(self, node: Any, name: str, default: Any = None) -> Any:
        for attribute in node.attribute:
            if attribute.name == name:
                return self.onnx.helper.get_attribute_value(attribute)
        return default

    def axis(self, axis: int, rank: int) -> int:
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return axis % rank

    def real_axis(self, value: _Value, position: int) -> int:
        axis = value.axes[position]
        if axis is None:
            raise self.error(f"axis {position} has size 1 and no dimension of its own in "
                             "pase (it comes from keepdims or Unsqueeze)")
        return axis

    # -- operators: each returns the values of the node's outputs --

    def identity(self, node: Any) -> list[_Value]:
        value = self.values.get(node.input[0])
        return [value if value is not None else self.tensor(node.input[0])]

    def constant_node(self, node: Any) -> np.ndarray:
        attribute = node.attribute[0]
        value = self.onnx.helper.get_attribute_value(attribute)
        if attribute.name == "value":
            return self.onnx.numpy_helper.to_array(value)
        dtype = np.float32 if attribute.name.startswith("value_float") else np.int64
        return np.asarray(value, dtype=dtype)

    def constant_value(self, node: Any) -> list[_Value]:
        if len(node.attribute) != 1:
            raise self.error("a Constant needs exactly one value attribute")
        return [_Value((), constant=self.constant_node(node))]

    def unary(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        approximate = self.attribute(node, "approximate", b"none")
        if approximate not in (b"none", b"tanh", "none", "tanh"):
            raise self.error(f"approximate={approximate!r} is not supported")
        return [_Value(x.axes, self.build(UNARY_OPS[node.op_type], [x.value], node.output[0]))]

    def binary(self, node: Any, op_class: type[dnn.LayerOp] | None = None) -> list[_Value]:
        a, b = self.tensor(node.input[0]), self.tensor(node.input[1])
        return [self.elementwise(op_class or BINARY_OPS[node.op_type], a, b, node.output[0])]

    def elementwise(self, op_class: type[dnn.LayerOp], a: _Value, b: _Value,
                    name: str) -> _Value:
        axes = self.broadcast(a.axes, b.axes)
        first, second = set(self.layout(a)), set(self.layout(b))
        if not (first <= second or second <= first):
            raise self.error("it broadcasts both operands (each has axes the other lacks); "
                             "pase's elementwise layers broadcast one operand into the other")
        return _Value(axes, self.build(op_class, [a.value, b.value], name))

    def div(self, node: Any) -> list[_Value]:
        divisor = self.constant(node.input[1], "the divisor")
        if not np.issubdtype(divisor.dtype, np.floating) or np.any(divisor == 0):
            raise self.error("the divisor must be a nonzero float constant")
        reciprocal = f"{node.input[1]}_reciprocal"
        if reciprocal not in self.values:
            self.values[reciprocal] = _Value((), constant=(1 / divisor).astype(divisor.dtype))
        a, b = self.tensor(node.input[0]), self.tensor(reciprocal)
        return [self.elementwise(dnn.MulOp, a, b, node.output[0])]

    def contract(self, a: _Value, b: _Value, name: str) -> _Value:
        """ONNX MatMul semantics over axis views `a` and `b` (ranks 1 and up)."""
        if len(a.axes) < 1 or len(b.axes) < 1:
            raise self.error("MatMul of a scalar is not supported")
        k_a = self.real_axis(a, len(a.axes) - 1)
        k_position = len(b.axes) - 2 if len(b.axes) >= 2 else 0
        k_b = self.real_axis(b, k_position)
        if not self.same(k_a, k_b):
            b = self.rename(b, k_position, self.dims.find(k_a), f"{name}_rhs")
        m = a.axes[-2] if len(a.axes) >= 2 else None
        n = b.axes[-1] if len(b.axes) >= 2 else None
        if m is not None and n is not None and self.dims.find(m) == self.dims.find(n):
            # Q·Kᵀ: both sides range over the sequence; the keys' becomes its own dim.
            b = self.rename(b, len(b.axes) - 1, self.fresh_like(n), f"{name}_keys")
            n = b.axes[-1]
        batch = self.broadcast(a.axes[:-2], b.axes[:-2])
        axes = (*batch, *([m] if len(a.axes) >= 2 else []), *([n] if len(b.axes) >= 2 else []))
        result = [a for a in axes if a is not None]
        return _Value(axes, self.build(dnn.EinsumOp, [a.value, b.value], name,
                                       [self.dims.find(d) for d in result]))

    def matmul(self, node: Any) -> list[_Value]:
        a = self.tensor(node.input[0])
        b = self.tensor(node.input[1], hints=("d",) * 8)
        return [self.contract(a, b, node.output[0])]

    def gemm(self, node: Any) -> list[_Value]:
        alpha, beta = self.attribute(node, "alpha", 1.0), self.attribute(node, "beta", 1.0)
        if alpha != 1.0:
            raise self.error(f"alpha={alpha:g} is not supported (only 1)")
        has_bias = len(node.input) > 2 and node.input[2]
        if has_bias and beta != 1.0:
            raise self.error(f"beta={beta:g} is not supported (only 1)")
        a, b = self.tensor(node.input[0]), self.tensor(node.input[1], hints=("d", "d"))
        if len(a.axes) != 2 or len(b.axes) != 2:
            raise self.error("Gemm takes matrices")
        if self.attribute(node, "transA", 0):
            a = _Value(a.axes[::-1], a.ssa)
        if self.attribute(node, "transB", 0):
            b = _Value(b.axes[::-1], b.ssa)
        name = node.output[0]
        if not has_bias:
            return [self.contract(a, b, name)]
        product = self.contract(a, b, f"{name}_matmul")
        bias = self.tensor(node.input[2])
        return [self.elementwise(dnn.AddOp, product, bias, name)]

    def window(self, node: Any, kernel: Sequence[int]) -> tuple[int, list[int]]:
        """The one stride and the [height, width] padding pase's 2-D windows take."""
        auto_pad = self.attribute(node, "auto_pad", b"NOTSET")
        if auto_pad not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
            raise self.error(f"auto_pad={auto_pad.decode()} is not supported; export "
                             "with explicit pads")
        dilations = self.attribute(node, "dilations", [1, 1])
        if any(d != 1 for d in dilations):
            raise self.error(f"dilations={list(dilations)} is not supported (only 1)")
        strides = list(self.attribute(node, "strides", [1, 1]))
        if len(set(strides)) != 1:
            raise self.error(f"strides={strides} is not supported (pase has one stride "
                             "for height and width)")
        pads = list(self.attribute(node, "pads", [0, 0, 0, 0]))
        if len(pads) != 4 or pads[0] != pads[2] or pads[1] != pads[3]:
            raise self.error(f"pads={pads} is not supported (only the same padding at both "
                             "ends of an axis)")
        if len(kernel) != 2:
            raise self.error(f"a {len(kernel)}-D window is not supported (only 2-D)")
        return strides[0], pads[:2]

    def conv(self, node: Any) -> list[_Value]:
        group = self.attribute(node, "group", 1)
        if group != 1:
            raise self.error(f"group={group} is not supported")
        x = self.tensor(node.input[0])
        w = self.tensor(node.input[1], hints=("c", "d", "kh", "kw"))
        if len(x.axes) != 4 or len(w.axes) != 4:
            raise self.error("only 2-D convolutions (rank-4 NCHW tensors) are supported")
        stride, padding = self.window(node, [self.dims.size(a) if a is not None else 1
                                             for a in w.axes[2:]])
        in_channels = self.real_axis(x, 1)
        if not self.same(in_channels, self.real_axis(w, 1)):
            raise self.error("its input and filter channels are different dimensions")
        name = node.output[0]
        x_ssa, w_ssa = self.ordered(x, f"{name}_input"), self.ordered(w, f"{name}_filter")
        sizes = dnn.shape_of(x_ssa).sizes
        kernel = dnn.shape_of(w_ssa).sizes[2:]
        spatial = [self.dims.new(conv_output_size(sizes[2 + i], kernel[i], stride,
                                                  padding[i]), hint)
                   for i, hint in enumerate(("h", "w"))]
        has_bias = len(node.input) > 2 and node.input[2]
        result = [self.real_axis(x, 0), self.real_axis(w, 0), *spatial]
        y = self.build(dnn.Conv2dOp, [x_ssa, w_ssa], f"{name}_conv" if has_bias else name,
                       [self.dims.find(d) for d in result], _window_properties(stride, padding))
        output = _Value(tuple(result), y)
        if not has_bias:
            return [output]
        bias = self.tensor(node.input[2])
        bias = _Value((*bias.axes, None, None), bias.ssa)  # [co] broadcasts as [co, 1, 1]
        return [self.elementwise(dnn.AddOp, output, bias, name)]

    def pool(self, node: Any) -> list[_Value]:
        kind = "max" if node.op_type == "MaxPool" else "avg"
        if self.attribute(node, "ceil_mode", 0):
            raise self.error("ceil_mode=1 is not supported")
        if self.attribute(node, "storage_order", 0):
            raise self.error("storage_order=1 is not supported")
        kernel = list(self.attribute(node, "kernel_shape", []))
        stride, padding = self.window(node, kernel)
        if kind == "avg" and any(padding) and not self.attribute(node, "count_include_pad", 0):
            raise self.error("padded AveragePool with count_include_pad=0 is not supported")
        x = self.tensor(node.input[0])
        if len(x.axes) != 4:
            raise self.error("only 2-D pooling (rank-4 NCHW tensors) is supported")
        name = node.output[0]
        x_ssa = self.ordered(x, f"{name}_input")
        sizes = dnn.shape_of(x_ssa).sizes
        spatial = [self.dims.new(conv_output_size(sizes[2 + i], kernel[i], stride,
                                                  padding[i]), hint)
                   for i, hint in enumerate(("h", "w"))]
        result = [self.real_axis(x, 0), self.real_axis(x, 1), *spatial]
        properties = {"kind": StringAttr(kind),
                      "window": ArrayAttr(IntAttr(k) for k in kernel),
                      **_window_properties(stride, padding)}
        y = self.build(dnn.Pool2dOp, [x_ssa], name, [self.dims.find(d) for d in result],
                       properties)
        return [_Value(tuple(result), y)]

    def global_average_pool(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        if len(x.axes) != 4:
            raise self.error("only rank-4 NCHW tensors are supported")
        return [self.reduce_over(x, [2, 3], "mean", True, node.output[0])]

    def reduce_over(self, x: _Value, positions: Sequence[int], kind: str, keepdims: bool,
                    name: str) -> _Value:
        over = [x.axes[p] for p in positions if x.axes[p] is not None]
        kept = tuple(None if p in positions else a for p, a in enumerate(x.axes)
                     if keepdims or p not in positions)
        if not over:  # only axes of size 1: nothing to reduce
            return _Value(kept, x.ssa)
        y = self.build(dnn.ReduceOp, [x.value], name, None,
                       {"kind": StringAttr(kind), "over": self.dim_array(over)})
        return _Value(kept, y)

    def dim_array(self, dims: Sequence[int | None]) -> ArrayAttr[StringAttr]:
        return ArrayAttr(StringAttr(self.dims.placeholder(d)) for d in dims if d is not None)

    def reduce(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        axes = self.attribute(node, "axes")
        if len(node.input) > 1 and node.input[1]:
            axes = self.constant(node.input[1], "the axes")
        keepdims = bool(self.attribute(node, "keepdims", 1))
        if axes is None or len(axes) == 0:
            if self.attribute(node, "noop_with_empty_axes", 0):
                return [x]
            axes = range(len(x.axes))
        positions = sorted({self.axis(int(a), len(x.axes)) for a in axes})
        kind = "mean" if node.op_type == "ReduceMean" else "sum"
        return [self.reduce_over(x, positions, kind, keepdims, node.output[0])]

    def softmax(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        position = self.axis(self.attribute(node, "axis", -1), len(x.axes))
        y = self.build(dnn.SoftmaxOp, [x.value], node.output[0], None,
                       {"over": self.dim_array([self.real_axis(x, position)])})
        return [_Value(x.axes, y)]

    def layer_norm(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        position = self.axis(self.attribute(node, "axis", -1), len(x.axes))
        if len(node.input) < 3 or not node.input[2]:
            raise self.error("LayerNormalization without a bias (B) is not supported")
        over = [self.real_axis(x, p) for p in range(position, len(x.axes))]
        scale, bias = self.tensor(node.input[1]), self.tensor(node.input[2])
        for affine in (scale, bias):
            self.broadcast(x.axes[position:], affine.axes)
        y = self.build(dnn.LayerNormOp, [x.value, scale.value, bias.value], node.output[0], None,
                       {"over": self.dim_array(over)})
        return [_Value(x.axes, y)]

    def batch_norm(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        if len(x.axes) < 2:
            raise self.error("BatchNormalization needs a [batch, channels, ...] input")
        channels = self.real_axis(x, 1)
        scale, bias = self.tensor(node.input[1]), self.tensor(node.input[2])
        for affine in (scale, bias):
            if len(affine.axes) != 1 or not self.same(channels, self.real_axis(affine, 0)):
                raise self.error("its scale and bias must range over the channels")
        over = [a for p, a in enumerate(x.axes) if p != 1 and a is not None]
        y = self.build(dnn.BatchNormOp, [x.value, scale.value, bias.value], node.output[0], None,
                       {"over": self.dim_array(over)})
        return [_Value(x.axes, y)]

    def transpose(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        perm = self.attribute(node, "perm") or list(range(len(x.axes)))[::-1]
        return [_Value(tuple(x.axes[p] for p in perm), x.ssa)]

    def squeeze(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        if len(node.input) > 1 and node.input[1]:
            positions = {self.axis(int(a), len(x.axes))
                         for a in self.constant(node.input[1], "the axes")}
        else:
            positions = {p for p, a in enumerate(x.axes) if a is None}
        if any(x.axes[p] is not None for p in positions):
            raise self.error("it squeezes an axis of size 1 that is a dimension of its own "
                             "in pase; reshape it instead")
        return [_Value(tuple(a for p, a in enumerate(x.axes) if p not in positions), x.ssa)]

    def unsqueeze(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        inserted = self.constant(node.input[1], "the axes")
        rank = len(x.axes) + len(inserted)
        positions = {self.axis(int(a), rank) for a in inserted}
        rest = iter(x.axes)
        return [_Value(tuple(None if p in positions else next(rest) for p in range(rank)),
                       x.ssa)]

    def reshape(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        target = [int(s) for s in self.constant(node.input[1], "the target shape")]
        sizes = [self.dims.size(a) if a is not None else 1 for a in x.axes]
        if not self.attribute(node, "allowzero", 0):
            target = [sizes[i] if s == 0 else s for i, s in enumerate(target)]
        if target.count(-1) == 1:
            known = math.prod(s for s in target if s != -1)
            target[target.index(-1)] = math.prod(sizes) // max(known, 1)
        if math.prod(target) != math.prod(sizes) or any(s < 1 for s in target):
            raise self.error(f"cannot reshape {sizes} into {target}")
        return [self.reshape_to(x, target, node.output[0])]

    def flatten(self, node: Any) -> list[_Value]:
        x = self.tensor(node.input[0])
        position = self.axis(self.attribute(node, "axis", 1), len(x.axes) + 1)
        sizes = [self.dims.size(a) if a is not None else 1 for a in x.axes]
        target = [math.prod(sizes[:position]), math.prod(sizes[position:])]
        return [self.reshape_to(x, target, node.output[0])]

    def reshape_to(self, x: _Value, target: Sequence[int], name: str) -> _Value:
        """`x` as `target`: only a relabelling when the sizes other than 1 stay as they are
        (no layer), else a dnn.reshape merging or splitting consecutive axes."""
        real = [a for a in x.axes if a is not None]
        sizes = [self.dims.size(a) for a in real]
        kept = [j for j, s in enumerate(target) if s != 1]
        if sizes == [target[j] for j in kept]:
            axes: list[int | None] = [None] * len(target)
            for axis, j in zip(real, kept, strict=True):
                axes[j] = axis
            return _Value(tuple(axes), x.ssa)
        source = NamedShape(tuple(f"i{i}" for i in range(len(real))), tuple(sizes))
        result = NamedShape(tuple(f"o{j}" for j in kept), tuple(target[j] for j in kept))
        try:
            groups = reshape_groups(source, result)
        except ShapeError as error:
            raise self.error(str(error).replace(str(source), "its input").replace(
                str(result), "the target")) from None
        dims: list[int] = []
        for in_range, out_range in groups:
            if len(in_range) == 1 and len(out_range) == 1:
                dims.append(real[in_range[0]])
                continue
            hint = self.dims.hints[self.dims.find(real[in_range[0]])] \
                if len(in_range) == 1 else "d"
            dims.extend(self.dims.new(result.sizes[j], hint) for j in out_range)
        ssa = self.build(dnn.ReshapeOp, [self.ordered(x, name)], name,
                         [self.dims.find(d) for d in dims])
        new_axes: list[int | None] = [None] * len(target)
        for dim, j in zip(dims, kept, strict=True):
            new_axes[j] = dim
        return _Value(tuple(new_axes), ssa)

    def concat(self, node: Any) -> list[_Value]:
        values = [self.tensor(name) for name in node.input]
        rank = len(values[0].axes)
        if len(values) < 2 or any(len(v.axes) != rank for v in values):
            raise self.error("Concat takes two or more tensors of one rank")
        position = self.axis(self.attribute(node, "axis", 0), rank)
        for p in range(rank):
            if p == position:
                continue
            column = [v.axes[p] for v in values]
            if any(a is None for a in column):
                raise self.error(f"axis {p} has size 1 in an operand, which pase does not "
                                 "support in Concat")
            for axis in column[1:]:
                assert axis is not None
                assert column[0] is not None
                if not self.same(column[0], axis):
                    raise self.error("its operands' axes cannot be one dimension")
        joined = [self.real_axis(v, position) for v in values]
        dim = self.dims.new(sum(self.dims.size(a) for a in joined),
                            self.dims.hints[self.dims.find(joined[0])])
        axes = list(values[0].axes)
        axes[position] = dim
        name = node.output[0]
        operands = [self.ordered(v, f"{name}_in{i}") for i, v in enumerate(values)]
        y = self.build(dnn.ConcatOp, operands, name,
                       [self.dims.find(a) for a in axes if a is not None])
        return [_Value(tuple(axes), y)]

    def gather(self, node: Any) -> list[_Value]:
        if self.attribute(node, "axis", 0) != 0:
            raise self.error(f"axis={self.attribute(node, 'axis')} is not supported (an "
                             "embedding lookup gathers rows, axis 0)")
        data = self.values.get(node.input[0])
        if data is not None and data.ssa is not None and not isinstance(
                data.ssa.owner, dnn.ParamOp):
            raise self.error("Gather is supported on an embedding table (an initializer), "
                             f"not on the computed '{node.input[0]}'")
        ids = self.values.get(node.input[1])
        if ids is not None and ids.ssa is None:
            raise self.error("Gather with constant indices is not supported")
        table = self.tensor(node.input[0], hints=("v", "d", "d"))
        ids = self.tensor(node.input[1])
        if len(table.axes) < 2:
            raise self.error("the embedding table must be [vocabulary, features...]")
        name = node.output[0]
        table_ssa = self.ordered(table, f"{name}_table")
        y = self.build(dnn.EmbeddingOp, [ids.value, table_ssa], name)
        return [_Value((*ids.axes, *table.axes[1:]), y)]

    # -- the end: the loss, then the graph with readable dim names --

    def finish(self, graph: Any) -> Imported:
        if len(graph.output) != 1:
            names = ", ".join(f"'{o.name}'" for o in graph.output)
            raise self.error(f"the model has {len(graph.output)} outputs ({names}); pase "
                             "trains a model with one")
        output = self.values.get(graph.output[0].name)
        if output is None or output.ssa is None:
            raise self.error(f"the output '{graph.output[0].name}' is not computed by a layer")
        loss = self.loss_of(output)
        ret = dnn.ReturnOp(loss)
        return self.rebuild([*self.inputs, *self.body, ret])

    def loss_of(self, output: _Value) -> SSAValue:
        shape = dnn.shape_of(output.value)
        if not shape.dims:
            return output.value
        real = [a for a in output.axes if a is not None]
        if self.loss == "mean":
            return self.build(dnn.ReduceOp, [output.value], "loss", None,
                              {"kind": StringAttr("mean"), "over": self.dim_array(real)})
        classes = self.dims.find(real[-1])
        self.dims.hints[classes] = "c"
        label_dims = [d for d in self.layout(output) if d != classes]
        labels = dnn.InputOp(self.tensor_type(label_dims, "i64"))
        labels.output.name_hint = self.value_name("labels")
        self.dims.record(label_dims)
        self.inputs.append(labels)
        return self.build(dnn.SoftmaxCrossEntropyOp, [output.value, labels.output], "loss",
                          None, {"over": self.dim_array([classes])})

    def rebuild(self, ops: list[Operation]) -> Imported:
        """The ops again, with the final dim names in place of the placeholders."""
        used = [int(d[1:]) for op in ops for r in op.results
                for d in dnn.shape_of(r).dims]
        names = self.dims.names(used)

        def rename(dim: str) -> str:
            return names[self.dims.find(int(dim[1:]))]

        def rename_attr(value: Attribute) -> Attribute:
            if isinstance(value, ArrayAttr) and all(
                    isinstance(v, StringAttr) and v.data.startswith("_") for v in value.data):
                return ArrayAttr(StringAttr(rename(v.data)) for v in value.data)  # type: ignore[union-attr]
            return value

        mapping: dict[SSAValue, SSAValue] = {}
        rebuilt: list[Operation] = []
        graph_dims: dict[str, int] = {}
        initial: dict[str, np.ndarray] = {}
        for op in ops:
            types = []
            for result in op.results:
                shape = dnn.shape_of(result)
                dims = [rename(d) for d in shape.dims]
                graph_dims.update(zip(dims, shape.sizes, strict=True))
                types.append(dnn.TensorType(dims, shape.sizes, result.type.element_type))  # type: ignore[attr-defined]
            new = type(op).create(
                operands=[mapping[o] for o in op.operands], result_types=types,
                properties={k: rename_attr(v) for k, v in op.properties.items()},
                attributes=dict(op.attributes))
            for old, result in zip(op.results, new.results, strict=True):
                result.name_hint = old.name_hint
                mapping[old] = result
                if old in self.initial and old.name_hint:
                    initial[old.name_hint] = self.initial[old]
            rebuilt.append(new)
            op.drop_all_references()
        graph = dnn.GraphOp(self.graph_name, graph_dims, rebuilt)
        module = ModuleOp([graph])
        try:
            module.verify()
        except VerifyException as error:  # a mapping above that disagrees with the dialect
            raise Diagnostic(f"the imported graph does not verify (a bug in pase's ONNX "
                             f"frontend, please report it): {_first_line(error)}",
                             self.filename) from None
        return Imported(module, initial)


def _window_properties(stride: int, padding: Sequence[int]) -> dict[str, Attribute]:
    return {"stride": IntAttr(stride), "padding": ArrayAttr(IntAttr(p) for p in padding)}
