"""Training ops written by pase-autodiff: `dnn.vjp` (a layer's gradients), `dnn.sgd`
(one SGD update) and `dnn.update` (one momentum or Adam update with its state).
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, StringAttr, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent
from xdsl.utils.exceptions import VerifyException

from pase.core.space import IterationSpace
from pase.dialect.dnn.graph import GraphOp
from pase.dialect.dnn.layer_op import LayerOp, LayerSignature
from pase.dialect.dnn.layers import LAYER_OPS
from pase.dialect.dnn.types import TensorType, shape_of
from pase.dialect.pase import CONFIG_ATTR_NAME, verify_gradient_attributes


def layer_class(name: str) -> type[LayerOp]:
    """The forward layer op class named `name` (e.g. "dnn.relu")."""
    for op in LAYER_OPS:
        if op.name == name:
            return op
    raise VerifyException(f"unknown layer op '{name}'")


@irdl_op_definition
class VjpOp(IRDLOperation):
    """The gradients of some operands of a forward layer (its vector-Jacobian product).

    Operands: the forward layer's operands, its result, and the gradient of its result
    (absent for the loss, whose gradient is 1). `wrt` lists the forward operands whose
    gradients are the results. The forward layer's kind and clauses follow in its own
    syntax, so the op has the forward layer's iteration space and takes its
    configuration:

        %dx, %dw = dnn.vjp "dnn.conv2d" [0, 1] (%x, %w) -> %y grad %dy stride 1 padding 0
        %dz = dnn.vjp "dnn.pool2d" max [0] (%z) -> %p grad %dp window [2, 2] stride 2 ...
            : (!dnn.tensor<...>, !dnn.tensor<...>), !dnn.tensor<...> -> (..., ...)
    """

    name = "dnn.vjp"

    inputs = var_operand_def(TensorType)
    result = operand_def(TensorType)
    cotangent = opt_operand_def(TensorType)
    gradients = var_result_def(TensorType)
    forward = prop_def(StringAttr)
    wrt = prop_def(ArrayAttr[IntAttr])
    kind = opt_prop_def(StringAttr)
    over = opt_prop_def(ArrayAttr[StringAttr])
    window = opt_prop_def(ArrayAttr[IntAttr])
    stride = opt_prop_def(IntAttr)
    padding = opt_prop_def(ArrayAttr[IntAttr])
    groups = opt_prop_def(IntAttr)
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)
    dim = opt_prop_def(StringAttr)
    start = opt_prop_def(IntAttr)
    fill = opt_prop_def(FloatAttr)
    exponent = opt_prop_def(FloatAttr)
    ignore_index = opt_prop_def(IntAttr)
    before = opt_prop_def(IntAttr)
    after = opt_prop_def(IntAttr)
    epsilon = opt_prop_def(FloatAttr)

    traits = traits_def(HasParent(GraphOp))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    FORWARD_PROPERTIES: ClassVar[tuple[str, ...]] = ("kind", "over", "window", "stride",
                                                      "padding", "groups", "min", "max",
                                                      "dim", "start", "fill", "exponent",
                                                      "ignore_index", "before", "after",
                                                      "epsilon")

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(i.data for i in self.wrt.data)

    @property
    def forward_class(self) -> type[LayerOp]:
        return layer_class(self.forward.data)

    def forward_properties(self) -> dict[str, Attribute]:
        return {name: value for name, value in self.properties.items()
                if name in self.FORWARD_PROPERTIES}

    def forward_signature(self) -> LayerSignature:
        """The forward layer as its shape rule and iteration space see it."""
        return LayerSignature(self.forward_class, tuple(shape_of(v) for v in self.inputs),
                              self.forward_properties(), shape_of(self.result))

    def iteration_space(self) -> IterationSpace:
        return self.forward_signature().iteration_space()

    def verify_(self) -> None:
        indices = self.indices
        if len(indices) != len(self.gradients):
            raise VerifyException(f"dnn.vjp has {len(self.gradients)} results for "
                                  f"{len(indices)} operands in wrt")
        for index, gradient in zip(indices, self.gradients, strict=True):
            if not 0 <= index < len(self.inputs):
                raise VerifyException(f"dnn.vjp wrt index {index} is not a forward operand")
            if gradient.type != self.inputs[index].type:
                raise VerifyException(f"the gradient of operand {index} must have its type "
                                      f"{self.inputs[index].type}")
        if self.cotangent is not None and self.cotangent.type != self.result.type:
            raise VerifyException("the incoming gradient must have the forward result's type")
        if self.cotangent is None and shape_of(self.result).dims:
            raise VerifyException("only a scalar loss may leave out its incoming gradient")
        verify_gradient_attributes(self)
        self.forward_signature().verify(self.attributes.get(CONFIG_ATTR_NAME))

    @classmethod
    def parse(cls, parser: Parser) -> VjpOp:
        forward = parser.parse_str_literal(" (the forward op name)")
        try:
            forward_class = layer_class(forward)
        except VerifyException as error:
            parser.raise_error(str(error))
        kind = None
        if forward_class.KIND is not None:
            kind = parser.parse_identifier(context_msg=f" ({' or '.join(forward_class.KIND[1])})")
        wrt = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
        start = parser.pos
        inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                   parser.parse_unresolved_operand)
        parser.parse_punctuation("->")
        result = parser.parse_unresolved_operand()
        cotangent = (parser.parse_unresolved_operand()
                     if parser.parse_optional_keyword("grad") is not None else None)
        properties = forward_class.parse_clauses(parser)
        if kind is not None:
            properties["kind"] = StringAttr(kind)
        properties["forward"] = StringAttr(forward)
        properties["wrt"] = ArrayAttr(IntAttr(i) for i in wrt)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        input_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                        parser.parse_type)
        parser.parse_punctuation(",")
        result_type = parser.parse_type()
        parser.parse_punctuation("->")
        gradient_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                           parser.parse_type)
        operands = [parser.resolve_operands(inputs, input_types, start),
                    [parser.resolve_operand(result, result_type)],
                    [] if cotangent is None else [parser.resolve_operand(cotangent,
                                                                         result_type)]]
        return cls.build(operands=operands, result_types=[gradient_types],
                         properties=properties, attributes=attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.forward.data}"')
        if self.kind is not None:
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" [")
        printer.print_string(", ".join(str(i) for i in self.indices) + "] (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") -> ")
        printer.print_operand(self.result)
        if self.cotangent is not None:
            printer.print_string(" grad ")
            printer.print_operand(self.cotangent)
        self.forward_class.print_clauses(printer, self.properties)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([v.type for v in self.inputs], printer.print_attribute)
        printer.print_string("), ")
        printer.print_attribute(self.result.type)
        printer.print_string(" -> (")
        printer.print_list([v.type for v in self.gradients], printer.print_attribute)
        printer.print_string(")")


@irdl_op_definition
class SgdOp(IRDLOperation):
    """One SGD step on a parameter: `%w2 = dnn.sgd %w, %dw lr 0.01 : !dnn.tensor<...>`."""

    name = "dnn.sgd"

    param = operand_def(TensorType)
    gradient = operand_def(TensorType)
    output = result_def(TensorType)
    lr = prop_def(FloatAttr)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = ("$param `,` $gradient `lr` $lr attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, param: SSAValue, gradient: SSAValue, lr: float):
        super().__init__(operands=[param, gradient], result_types=[param.type],
                         properties={"lr": FloatAttr(lr, f64)})

    def verify_(self) -> None:
        if not self.param.type == self.gradient.type == self.output.type:
            raise VerifyException("dnn.sgd needs the parameter, its gradient and the result "
                                  "to have one type")
        verify_hyperparameters(self)
        verify_gradient_attributes(self)


def verify_hyperparameters(op: Operation) -> None:
    """An optimizer step's `lr` is finite and at least 0 (as pase-autodiff's option),
    `beta1` and `beta2` are in [0, 1) and `eps` is finite and above 0."""
    for name, low, high, closed in (("lr", 0.0, math.inf, True), ("beta1", 0.0, 1.0, True),
                                    ("beta2", 0.0, 1.0, True), ("eps", 0.0, math.inf, False)):
        attr = op.properties.get(name)
        if not isinstance(attr, FloatAttr):
            continue
        value = attr.value.data
        if not (math.isfinite(value) and (low <= value if closed else low < value)
                and value < high):
            bound = "in [0, 1)" if high == 1.0 else "at least 0" if closed else "above 0"
            raise VerifyException(f"{op.name} {name} must be a finite number {bound}, "
                                  f"got {value}")


OPTIMIZER_STATES = {"momentum": ("m",), "adam": ("m", "v", "t")}
"""The state tensors of each optimizer `dnn.update` runs, by suffix: momentum's velocity
m; Adam's first and second moments m and v, each the parameter's type, and its step count
t, a scalar (for the bias correction)."""

OPTIMIZER_HYPERPARAMETERS = {"momentum": {"beta1": 0.9},
                             "adam": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}}
"""The fixed hyperparameters of each optimizer (PyTorch's and Adam's paper's defaults)."""


@irdl_op_definition
class UpdateOp(IRDLOperation):
    """One optimizer step on a parameter and its state tensors (`OPTIMIZER_STATES`), in
    float arithmetic elementwise; results: the updated parameter, then the updated states.

        %w_next, %w_m_next = dnn.update "momentum" %w, %dw state(%w_m) lr 0.003 beta1 0.9
            : (...) -> (...)

    momentum: m' = beta1 m + g, w' = w - lr m'. adam: t' = t + 1, m' = beta1 m +
    (1 - beta1) g, v' = beta2 v + (1 - beta2) g², w' = w - lr (m' / (1 - beta1^t')) /
    (sqrt(v' / (1 - beta2^t')) + eps).
    """

    name = "dnn.update"

    param = operand_def(TensorType)
    gradient = operand_def(TensorType)
    states = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    optimizer = prop_def(StringAttr)
    lr = prop_def(FloatAttr)
    beta1 = prop_def(FloatAttr)
    beta2 = opt_prop_def(FloatAttr)
    eps = opt_prop_def(FloatAttr)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = ("$optimizer $param `,` $gradient `state` `(` $states `)` `lr` $lr "
                       "`beta1` $beta1 (`beta2` $beta2^)? (`eps` $eps^)? attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, optimizer: str, param: SSAValue, gradient: SSAValue,
                 states: list[SSAValue], lr: float):
        properties: dict[str, Attribute] = {"optimizer": StringAttr(optimizer),
                                            "lr": FloatAttr(lr, f64)}
        properties |= {k: FloatAttr(v, f64)
                       for k, v in OPTIMIZER_HYPERPARAMETERS[optimizer].items()}
        super().__init__(operands=[param, gradient, states],
                         result_types=[[param.type, *(s.type for s in states)]],
                         properties=properties)

    def verify_(self) -> None:
        optimizer = self.optimizer.data
        if optimizer not in OPTIMIZER_STATES:
            raise VerifyException(f"dnn.update runs {' or '.join(OPTIMIZER_STATES)}, not "
                                  f"'{optimizer}'")
        wanted = OPTIMIZER_STATES[optimizer]
        if len(self.states) != len(wanted) or len(self.outputs) != 1 + len(wanted):
            raise VerifyException(f"dnn.update {optimizer} takes {len(wanted)} state "
                                  f"tensors ({', '.join(wanted)}) and returns the parameter "
                                  "and each state")
        if not self.param.type == self.gradient.type == self.outputs[0].type:
            raise VerifyException("dnn.update needs the parameter, its gradient and the "
                                  "first result to have one type")
        for index, (state, kind) in enumerate(zip(self.states, wanted, strict=True)):
            expected = (TensorType([], [], self.param.type.element_type)
                        if kind == "t" else self.param.type)
            if state.type != expected or self.outputs[1 + index].type != expected:
                raise VerifyException(f"dnn.update's state {kind} and its result must have "
                                      f"the type {expected}")
        verify_hyperparameters(self)
        verify_gradient_attributes(self)


def is_gradient(op: Operation) -> bool:
    """Whether `op` belongs to the backward pass pase-autodiff writes: a `dnn.vjp`, a
    `dnn.sgd`, or a layer it marked as a gradient (`LayerOp.is_gradient`). True for
    `%dw = dnn.einsum %dh, %x {pase.layer = "h", ...}`, False for the forward
    `%h = dnn.einsum %x, %w`; false for ops outside the dnn dialect's layers and updates.
    """
    return isinstance(op, VjpOp | SgdOp | UpdateOp) or (isinstance(op, LayerOp) and op.is_gradient)
