"""`pase-autodiff{lr=0.01 optimizer=sgd}`: the backward pass and an optimizer step, in the
`dnn` dialect.

For the loss (the first value the graph returns, a scalar), appends before the return:

- for every einsum, the gradient of each operand that needs one as another einsum
  (`dx = einsum(dh, w) -> x's dims`), unless the operand has a dim no other tensor has;
- for every other layer, one `dnn.vjp` computing the gradients of all its operands that
  need one (parameters and what depends on them; never input data or labels);
- where a value feeds several layers, `dnn.add`s summing the contributions (a layer
  that reads a value twice, `mul %e, %e`, sums its own two first, in its layout);
- for every parameter, `dnn.sgd` with learning rate `lr`; the graph then returns the
  loss and the updated parameters, in parameter order;
- with `optimizer=momentum` or `adam` (default: the graph's `pase.training`, else sgd),
  `dnn.update` instead, reading the optimizer's state tensors (`dnn.OPTIMIZER_STATES`):
  one `dnn.param` each, `%w_m`, `%w_v` like the parameter and Adam's step count `%w_t`
  a scalar, all starting at zero; the graph returns the loss, the updated parameters,
  then the updated states. A state lives where its parameter does, so the update moves
  no words;
- with `selected-rates=true` (pase-run and the `-t jax` programs use it), SGD and
  momentum step a param that has a dim an integer operand selects (an embedding's rows,
  the output layer's classes) at `lr` times `seeding.rate_scales` (docs/training.md,
  "Programs that learn").

Backward ops inherit their forward layer's `pase.config`, as PaSE's cost model assumes,
and record the layer in `pase.layer`; einsum gradients also keep the forward layer's
device-grid order in `pase.grid_order`, so they run on the same devices. A sum of
gradient contributions and an SGD step run where the gradient's value lives:
`pase.layout_of = #pase.layout<"h">` (layer h's result) or `#pase.layout<"z", operand 1>`
(operand 1 of layer z, for a parameter, which lives where its first reader needs it, and
for the sum of one layer's contributions). The attributes are the `pase` dialect's.

    %dh = dnn.vjp "dnn.relu" [0] (%h) -> %a grad %da {pase.layer = "a", ...} : ...
    %dw1 = dnn.einsum %x, %dh {pase.layer = "h", ...} : (...) -> !dnn.tensor<[d, h]...>
    %w1_next = dnn.sgd %w1, %dw1 lr 1.000000e-02
        {pase.layout_of = #pase.layout<"h", operand 1>} : ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from pase.core.diagnostics import Diagnostic, at_op
from pase.dialect import dnn
from pase.dialect.dnn.seeding import SELECTED_RATE_OPTIMIZERS, rate_scales
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    GRID_ORDER_ATTR_NAME,
    LAYER_ATTR_NAME,
    LAYOUT_OF_ATTR_NAME,
    LayoutAttr,
)
from pase.dialect.training_options import TrainingOptionError, checked, training_of
from pase.passes.options import PasePass


@dataclass(frozen=True)
class AutodiffPass(PasePass):
    """Append the backward pass and an optimizer update to every graph."""

    name = "pase-autodiff"

    lr: float = 0.01
    optimizer: str = ""
    """sgd, momentum or adam; "" takes the graph's `pase.training` (sgd without one)."""
    selected_rates: bool = False
    """Scale the rate of params with selected dims (`seeding.rate_scales`; sgd, momentum)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 0 <= self.lr < math.inf:  # 0 computes the gradients and keeps the parameters
            raise Diagnostic(f"pase-autodiff: lr must be a finite number at least 0, got "
                             f"{self.lr}")
        for graph in [g for g in op.walk() if isinstance(g, dnn.GraphOp)]:
            try:
                optimizer = (checked("optimizer", self.optimizer) if self.optimizer
                             else training_of(graph).optimizer)
            except TrainingOptionError as error:
                raise Diagnostic(f"pase-autodiff: {error}") from None
            scales = rate_scales(graph) if self.selected_rates \
                and optimizer in SELECTED_RATE_OPTIMIZERS else {}
            _Differentiator(graph, self.lr, optimizer, scales).run()


class _Differentiator:
    def __init__(self, graph: dnn.GraphOp, lr: float, optimizer: str = "sgd",
                 scales: dict[SSAValue, float] | None = None):
        self.graph = graph
        self.lr = lr
        self.scales = scales or {}
        self.optimizer = optimizer
        self.names = graph.layer_names()
        self.layers = graph.layers
        ret = graph.body.block.last_op
        assert isinstance(ret, dnn.ReturnOp)
        self.ret = ret
        self.contributions: dict[SSAValue, list[tuple[SSAValue, str]]] = {}

    def error(self, message: str) -> Diagnostic:
        return Diagnostic(f"pase-autodiff on @{self.graph.sym_name.data}: {message}")

    def insert(self, op: Operation) -> Operation:
        Rewriter.insert_op(op, InsertPoint.before(self.ret))
        return op

    def run(self) -> None:
        block = self.graph.body.block
        if any(isinstance(op, dnn.VjpOp | dnn.SgdOp | dnn.UpdateOp) for op in block.ops):
            raise self.error("the graph already has a backward pass")
        loss = self.ret.values[0]
        if (problem := self.graph.loss_problem()) is not None:
            raise at_op(self.ret, problem, prefix=f"pase-autodiff on @{self.graph.sym_name.data}: ")
        needs_grad = self.needs_grad()
        first_reader = self.first_readers()
        for layer in reversed(self.layers):
            cotangent = None
            if layer.output is not loss:
                parts = self.contributions.pop(layer.output, [])
                if not parts:
                    continue
                cotangent = self.accumulate(layer.output, parts,
                                            LayoutAttr(self.names[layer]))
            wrt = [i for i, v in enumerate(layer.inputs) if needs_grad[v]]
            if wrt:
                self.backward(layer, cotangent, wrt)
        updated: list[SSAValue] = []
        states: list[SSAValue] = []
        taken = set(self.graph.value_names().values())
        for op in [op for op in block.ops if isinstance(op, dnn.ParamOp)]:
            parts = self.contributions.pop(op.output, [])
            if not parts:
                continue
            layout = first_reader[op.output]
            gradient = self.accumulate(op.output, parts, layout)
            name = op.output.name_hint or "param"
            lr = self.lr * self.scales.get(op.output, 1)
            if self.optimizer == "sgd":
                step: Operation = dnn.SgdOp(op.output, gradient, lr)
            else:
                step = dnn.UpdateOp(self.optimizer, op.output, gradient,
                                    self.state_tensors(op.output, name, taken), lr)
            step.attributes[LAYOUT_OF_ATTR_NAME] = layout
            for result, suffix in zip(step.results, ("", *dnn.OPTIMIZER_STATES.get(
                    self.optimizer, ())), strict=True):
                result.name_hint = f"{name}{'_' + suffix if suffix else ''}_next"
            self.insert(step)
            updated.append(step.results[0])
            states.extend(step.results[1:])
        self.ret.operands = [loss, *updated, *states]

    def state_tensors(self, param: SSAValue, name: str, taken: set[str]) -> list[SSAValue]:
        """The optimizer's state tensors of `param` (`dnn.OPTIMIZER_STATES`), new
        `dnn.param`s named after it (`w1_m`, or `w1_m_` if that name is taken)."""
        tensors: list[SSAValue] = []
        param_type = param.type
        assert isinstance(param_type, dnn.TensorType)
        for suffix in dnn.OPTIMIZER_STATES[self.optimizer]:
            tensor_type = param_type if suffix != "t" else dnn.TensorType(
                [], [], param_type.element_type)
            state = dnn.ParamOp(tensor_type)
            state_name = f"{name}_{suffix}"
            while state_name in taken:
                state_name += "_"
            taken.add(state_name)
            state.results[0].name_hint = state_name
            tensors.append(self.insert(state).results[0])
        return tensors

    def needs_grad(self) -> dict[SSAValue, bool]:
        needs: dict[SSAValue, bool] = {}
        for op in self.graph.body.block.ops:
            if isinstance(op, dnn.ParamOp):
                needs[op.output] = True
            elif isinstance(op, dnn.InputOp):
                needs[op.output] = False
            elif isinstance(op, dnn.LayerOp):
                needs[op.output] = any(needs[v] for v in op.inputs)
        return needs

    def first_readers(self) -> dict[SSAValue, LayoutAttr]:
        readers: dict[SSAValue, LayoutAttr] = {}
        for layer in self.layers:
            for index, value in enumerate(layer.inputs):
                readers.setdefault(value, LayoutAttr(self.names[layer], index))
        return readers

    def accumulate(self, value: SSAValue, parts: list[tuple[SSAValue, str]],
                   layout: LayoutAttr) -> SSAValue:
        """The total gradient of `value`: its one contribution, or their sum."""
        total = parts[0][0]
        for gradient, _ in parts[1:]:
            add = dnn.AddOp.create(operands=[total, gradient], result_types=[value.type])
            add.attributes[LAYOUT_OF_ATTR_NAME] = layout
            self.insert(add)
            total = add.results[0]
        total.name_hint = f"d{value.name_hint or 'v'}"
        return total

    def backward(self, layer: dnn.LayerOp, cotangent: SSAValue | None, wrt: list[int]) -> None:
        name = self.names[layer]
        attributes: dict[str, Attribute] = {LAYER_ATTR_NAME: StringAttr(name)}
        if (config := layer.attributes.get(CONFIG_ATTR_NAME)) is not None:
            attributes[CONFIG_ATTR_NAME] = config
        space = layer.iteration_space()
        by_einsum = ([i for i in wrt if self.einsum_gradient_fits(layer, i)]
                     if isinstance(layer, dnn.EinsumOp) and cotangent is not None else [])
        for index in by_einsum:
            assert cotangent is not None
            others = [v for j, v in enumerate(layer.inputs) if j != index]
            gradient = dnn.EinsumOp.create(operands=[cotangent, *others],
                                           result_types=[layer.inputs[index].type])
            gradient.attributes |= attributes
            gradient.attributes[GRID_ORDER_ATTR_NAME] = ArrayAttr(StringAttr(d)
                                                                  for d in space.names)
            self.insert(gradient)
            self.contribute(layer.inputs[index], gradient.results[0], name, index)
        rest = [i for i in wrt if i not in by_einsum]
        if not rest:
            return
        vjp = dnn.VjpOp.build(
            operands=[list(layer.inputs), [layer.output], [] if cotangent is None else
                      [cotangent]],
            result_types=[[layer.inputs[i].type for i in rest]],
            properties={"forward": StringAttr(layer.name), "wrt": ArrayAttr(
                IntAttr(i) for i in rest), **{k: v for k, v in layer.properties.items()
                                            if k in dnn.VjpOp.FORWARD_PROPERTIES}},
            attributes=attributes)
        self.insert(vjp)
        for index, result in zip(rest, vjp.results, strict=True):
            self.contribute(layer.inputs[index], result, name, index)

    @staticmethod
    def einsum_gradient_fits(layer: dnn.LayerOp, index: int) -> bool:
        """An operand's gradient is an einsum when each of its dims appears elsewhere."""
        dims = dnn.shape_of(layer.inputs[index]).dims
        elsewhere = set(layer.result_shape.dims)
        for j, value in enumerate(layer.inputs):
            if j != index:
                elsewhere |= set(dnn.shape_of(value).dims)
        return set(dims) <= elsewhere

    def contribute(self, value: SSAValue, gradient: SSAValue, layer: str, index: int) -> None:
        """Record operand `index` of `layer` as a contribution to the gradient of `value`.

        A layer that reads `value` more than once (`mul %e, %e`) sums its contributions in
        its own layout of the operand first, so one gradient, not one per use, moves back
        to where `value` lives (the cost model has one edge per value and reader).
        """
        parts = self.contributions.setdefault(value, [])
        gradient.name_hint = f"d{value.name_hint or 'v'}_{layer}"
        if parts and parts[-1][1] == layer:
            add = dnn.AddOp.create(operands=[parts[-1][0], gradient], result_types=[value.type])
            add.attributes[LAYOUT_OF_ATTR_NAME] = LayoutAttr(layer, index)
            self.insert(add)
            add.results[0].name_hint = gradient.name_hint
            parts[-1] = (add.results[0], layer)
            return
        parts.append((gradient, layer))
