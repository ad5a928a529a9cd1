"""The graph structure of the `dnn` dialect: `dnn.graph`, its `dnn.input` and
`dnn.param` values and its `dnn.return`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from pase.core import shapes
from pase.dialect.dnn.layer_op import HoldsLayers, LayerOp
from pase.dialect.dnn.types import TensorType
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    StrategyAttr,
    forward_layer,
    layout_of,
    pipeline_of,
    stage_of,
    strategy_of,
)
from pase.dialect.training_options import (
    RECOMPUTE_ATTR_NAME,
    TRAINING_ATTR_NAME,
    ZERO_ATTR_NAME,
    TrainingOptionError,
    training_of,
)
from pase.dialect.traits import OrderedDataflow, VerifyExceptionAt


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A training graph with its dimension table.

    Example: `dnn.graph @mlp(b = 64, d = 256) { ... }`; attributes (such as a
    `pase.strategy`) follow the header as `attributes {...}`.
    """

    name = "dnn.graph"

    sym_name = prop_def(StringAttr)
    dim_names = prop_def(ArrayAttr[StringAttr])
    dim_sizes = prop_def(ArrayAttr[IntAttr])
    body = region_def("single_block")

    # Isolated like func.func: a graph reads only its own inputs and params, and the
    # printer restarts SSA names per graph, so %x stays %x in every graph of a file.
    # A graph is a module's child (graphs do not nest), and its body is dnn ops in
    # dataflow order, which xDSL alone would not check.
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), HoldsLayers(),
                        HasParent(ModuleOp), OrderedDataflow(("dnn.",)))

    def verify_unique_name(self) -> None:
        """No graph before this one in the input has its name. A module's symbol table sees
        only its own graphs; in modules nested in one another, two graphs of one name were
        both searched, and the strategy file exported for them could not be read back
        (`[1] is a second strategy for graph @mlp`): pase names a graph's plans by it."""
        module = self.parent_op()
        if module is None or module.parent_op() is None:
            return  # a module's own graphs: its symbol table checks them
        while (parent := module.parent_op()) is not None:
            module = parent
        pending = _reversed_children(module)  # the modules' ops, in order
        while pending:
            op = pending.pop()
            if op is self:
                return
            if isinstance(op, ModuleOp):
                pending.extend(_reversed_children(op))
            elif isinstance(op, GraphOp) and op.sym_name == self.sym_name:
                raise VerifyException(f"graph @{self.sym_name.data} is defined twice in one "
                                      "input (in nested modules); each graph needs its own "
                                      "name")

    def __init__(self, name: str, dims: dict[str, int], body: Sequence[Operation] = ()):
        from xdsl.ir import Block, Region

        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "dim_names": ArrayAttr(StringAttr(d) for d in dims),
                "dim_sizes": ArrayAttr(IntAttr(s) for s in dims.values()),
            },
            regions=[Region(Block(body))],
        )

    @property
    def dims(self) -> dict[str, int]:
        return {n.data: s.data for n, s in zip(self.dim_names.data, self.dim_sizes.data,
                                               strict=True)}

    @property
    def layers(self) -> list[LayerOp]:
        """The forward layers (not the gradient ops pase-autodiff adds)."""
        return [op for op in self.body.block.ops
                if isinstance(op, LayerOp) and not op.is_gradient]

    @property
    def strategy(self) -> StrategyAttr | None:
        """The `#pase.strategy` pase-search found for this graph, or None before a search."""
        return strategy_of(self)

    def layer_names(self) -> dict[LayerOp, str]:
        """Each forward layer's name: its result's name in `value_names` (`%h` -> `h`,
        an unnamed relu that is the graph's fourth op -> `relu3`). The search, reports,
        strategy files (export and `strategy=`), pase-autodiff, pase-lower-spmd and the
        `.dnn` target all name layers so, hence a strategy exported from any form of a
        graph (IR with `%0`, `%h` and `%h_1`, or its `.dnn` print) reads back on every form.

            >>> from pase.frontend import parse_file
            >>> list(parse_file("models/mlp.dnn").ops.first.layer_names().values())
            ['h', 'a', 'z', 'l']
        """
        names = self.value_names()
        return {op: names[op.output] for op in self.layers}

    def value_names(self) -> dict[SSAValue, str]:
        """A name for every value of the forward graph (inputs, params, forward layers), unique
        in the graph and valid in `.dnn`: its name hint, made a `.dnn` name (`a.b` -> `a_b`;
        no `_<number>` suffix, which the printers use: `%h_1` -> `h1`); an unnamed value is
        named by its op and the op's index in the graph (`relu3`); a name taken already
        gets `_v2`, `_v3`, ... (`%h` twice, printed `%h` and `%h_1`: `h`, `h_v2`). Its
        names, given back as name hints (`-t dnn`, then the frontend), come back unchanged."""
        hints: list[tuple[SSAValue, str]] = []
        layers = set(self.layers)
        for index, op in enumerate(self.body.block.ops):
            if not isinstance(op, InputOp | ParamOp) and op not in layers:
                continue  # the return, and the ops pase-autodiff adds
            for result in op.results:
                hint = re.sub(r"[^A-Za-z0-9_]", "_",
                              result.name_hint or f"{op.name.removeprefix('dnn.')}{index}")
                if not re.match(r"[A-Za-z_]", hint):
                    hint = f"v{hint}"
                hints.append((result, re.sub(r"_([0-9]+)$", r"\1", hint)))
        taken = {hint for _, hint in hints}
        names: dict[SSAValue, str] = {}
        used: set[str] = set()
        for value, hint in hints:
            name, count = hint, 1
            while name in used or (name != hint and name in taken):
                count += 1
                name = f"{hint}_v{count}"
            used.add(name)
            names[value] = name
        return names

    def loss_problem(self) -> str | None:
        """Why the graph cannot be trained, or None. The loss is the first value the graph
        returns: a floating-point scalar that a layer computes (any layer:
        `softmax_cross_entropy`, `reduce mean`, an einsum `-> []`, ...). A tensor is not
        summed silently into a loss: PyTorch's `backward()` refuses a non-scalar output too.
        pase-autodiff and pase-run both ask this; the message belongs at the return."""
        ret = self.body.block.last_op
        assert isinstance(ret, ReturnOp)  # the graph verifier checks it
        loss = ret.values[0]
        name = f"%{loss.name_hint}" if loss.name_hint else "the first returned value"
        shape = loss.type.shape  # type: ignore[attr-defined]
        where = f"the loss {name} (the first value @{self.sym_name.data} returns)"
        if shape.dims:
            dims = ", ".join(shape.dims)
            return (f"{where} must be a scalar, but it is [{dims}]; reduce it in the model, "
                    f"e.g. `%loss = reduce mean {name} over [{dims}]`, and return that")
        if shape.element not in shapes.FLOAT_TYPES:
            return f"{where} must be f32 or f64, but it is {shape.element}"
        if isinstance(loss.owner, InputOp | ParamOp):
            kind = loss.owner.name.removeprefix("dnn.")
            return (f"{where} must be computed by a layer, but it is the {kind} itself; "
                    "nothing would be trained")
        return None

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        name = parser.parse_symbol_name().data

        def parse_dim() -> tuple[str, int]:
            dim = parser.parse_identifier(context_msg=" (a dimension name)")
            parser.parse_punctuation("=")
            return dim, parser.parse_integer(allow_boolean=False)

        dims = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_dim)
        seen: dict[str, int] = {}
        for dim, size in dims:
            if dim in seen:
                parser.raise_error(f"dimension '{dim}' is declared twice in @{name}")
            seen[dim] = size
        extra = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, seen)
        region = parser.parse_region()
        if region.blocks:  # `{}` keeps the empty block; the verifier asks for a dnn.return
            op.body.detach_block(0)
            region.move_blocks(op.body)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(" + ", ".join(f"{d} = {s}" for d, s in self.dims.items()) + ")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        strategy_of(self)  # a pase.strategy that is not a #pase.strategy is an error here
        pipeline_of(self)
        if len(self.dim_names.data) != len(self.dim_sizes.data):
            raise VerifyException(f"@{self.sym_name.data} needs one size per dimension, got "
                                  f"{len(self.dim_names.data)} names and "
                                  f"{len(self.dim_sizes.data)} sizes")
        dims = self.dims
        if len(dims) != len(self.dim_names.data):
            raise VerifyException(f"@{self.sym_name.data} declares a dimension twice")
        for dim, size in dims.items():
            if size < 1:
                raise VerifyException(f"dimension '{dim}' must have a positive size, got {size}")
            if size > shapes.MAX_ELEMENTS:
                raise VerifyException(f"dimension '{dim}' is {size:,}; pase handles at most "
                                      "2^53")
        self.verify_layer_references()
        self.verify_training()
        self.verify_placement()
        self.verify_unique_name()
        block = self.body.block
        if block.args:
            raise VerifyException("dnn.graph takes no block arguments; "
                                  "use dnn.input and dnn.param")
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException("dnn.graph must end with dnn.return")
        for op in block.ops:
            for value in op.results:
                if not isinstance(value.type, TensorType):
                    continue
                for dim, size in zip(value.type.shape.dims, value.type.shape.sizes, strict=True):
                    if dim not in dims:
                        raise VerifyException(
                            f"dimension '{dim}' of {_value_name(value)} is not declared "
                            f"in @{self.sym_name.data}")
                    if dims[dim] != size:
                        raise VerifyException(
                            f"dimension '{dim}' is {dims[dim]} in @{self.sym_name.data} "
                            f"but {size} in {_value_name(value)}")

    def verify_layer_references(self) -> None:
        """Each `pase.layer` and `pase.layout_of` in the body names a forward layer of this
        graph, and a layout's operand is one of that layer's operands; the error is at the
        op that names it."""
        layers = {name: op for op, name in self.layer_names().items()}
        for op in self.body.block.ops:
            try:
                layer, layout = forward_layer(op), layout_of(op)
            except VerifyException as error:  # a wrongly typed one: at its op, too
                raise VerifyExceptionAt(op, str(error)) from None
            if layer is not None and layer not in layers:
                raise VerifyExceptionAt(op, f"pase.layer names '{layer}', which is not a "
                                        f"forward layer of @{self.sym_name.data}")
            if layout is None:
                continue
            target = layers.get(layout.layer_name)
            if target is None:
                raise VerifyExceptionAt(op, f"pase.layout_of names '{layout.layer_name}', "
                                        f"which is not a forward layer of "
                                        f"@{self.sym_name.data}")
            count = len(target.inputs)
            if (index := layout.operand_index) is not None and index >= count:
                raise VerifyExceptionAt(op, f"pase.layout_of names operand {index} of layer "
                                        f"'{layout.layer_name}', which has {count} "
                                        f"operand{'s' if count != 1 else ''}")


    def verify_training(self) -> None:
        """`pase.training` names known options, and a layer's `pase.zero` is a ZeRO stage
        (0 to 3) and its `pase.recompute` a unit attribute: what pase-autodiff, pase-run
        and `-t jax` read (`pase.dialect.training_options`)."""
        try:
            training_of(self)
        except TrainingOptionError as error:
            message = str(error)
            raise VerifyException(message if message.startswith(TRAINING_ATTR_NAME)
                                  else f"{TRAINING_ATTR_NAME}: {message}") from None
        for op in self.body.block.ops:
            zero = op.attributes.get(ZERO_ATTR_NAME)
            if zero is not None and not (isinstance(zero, IntegerAttr)
                                         and 0 <= zero.value.data <= 3):
                raise VerifyExceptionAt(op, f"{ZERO_ATTR_NAME} must be a ZeRO stage 0 to 3 "
                                        f"(e.g. {ZERO_ATTR_NAME} = 1 : i64), got {zero}")
            recompute = op.attributes.get(RECOMPUTE_ATTR_NAME)
            if recompute is not None and not isinstance(recompute, UnitAttr):
                raise VerifyExceptionAt(op, f"{RECOMPUTE_ATTR_NAME} is a unit attribute "
                                        f"(present or absent), got {recompute}")

    def verify_placement(self) -> None:
        """Every layer's `#pase.config` fits the devices of the graph's `#pase.strategy`;
        under a `#pase.pipeline` of S stages on P devices every layer has its
        `#pase.stage`: s < S in the layers' order, on the P/S devices from s·P/S, with a
        configuration of at most P/S devices. The error is at the layer."""
        strategy, pipeline = self.strategy, pipeline_of(self)
        previous = 0
        for layer in self.layers:
            config = layer.config
            needed = config.num_devices if config is not None else 1
            if strategy is not None and needed > strategy.devices.data:
                raise VerifyExceptionAt(layer, f"#pase.config needs {needed} devices, but "
                                        f"the graph's #pase.strategy has "
                                        f"{strategy.devices.data}")
            if pipeline is None:
                continue
            try:
                stage, stages = stage_of(layer), pipeline.stages.data
            except VerifyException as error:  # a wrongly typed one: at its layer
                raise VerifyExceptionAt(layer, str(error)) from None
            group = pipeline.devices.data // stages
            if stage is None:
                raise VerifyExceptionAt(layer, "this layer has no pase.stage, but the graph "
                                        "has a #pase.pipeline (pase-partition-stages gives "
                                        "every layer its stage)")
            index = stage.index.data
            if index >= stages or index < previous:
                raise VerifyExceptionAt(layer, f"#pase.stage {index} must be one of the "
                                        f"pipeline's {stages} stages, at least the "
                                        f"previous layer's ({previous})")
            if (stage.offset.data, stage.devices.data) != (index * group, group):
                raise VerifyExceptionAt(layer, f"stage {index} of {stages} on "
                                        f"{pipeline.devices.data} devices runs on devices "
                                        f"{index * group}..{index * group + group - 1}: "
                                        f"#pase.stage<{index}, offset = {index * group}, "
                                        f"devices = {group}>")
            if needed > group:
                raise VerifyExceptionAt(layer, f"#pase.config needs {needed} devices, more "
                                        f"than the {group} of its stage")
            previous = index
        if pipeline is not None and self.layers and previous != pipeline.stages.data - 1:
            raise VerifyExceptionAt(self.layers[-1], f"the last layer is on stage {previous}, "
                                    f"but the #pase.pipeline has {pipeline.stages.data} "
                                    "stages: every stage holds a layer")


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """The graph's outputs, usually the loss: `dnn.return %l : !dnn.tensor<[], f32>`."""

    name = "dnn.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(GraphOp))
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not self.values:
            raise VerifyException("dnn.return needs at least one value")


class _ValueOp(IRDLOperation):
    """A value the graph starts from: one tensor result, no operands, no configuration of
    its own (it is laid out as its first reader's configuration needs)."""

    output = result_def(TensorType)

    traits = traits_def(HasParent(GraphOp))
    assembly_format = "attr-dict `:` type($output)"

    def __init__(self, result_type: TensorType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        if CONFIG_ATTR_NAME in self.attributes:
            raise VerifyException(f"{self.name} takes no pase.config: it is laid out as its "
                                  "first reader's configuration needs")


@irdl_op_definition
class InputOp(_ValueOp):
    """Training data: `%x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>`."""

    name = "dnn.input"


@irdl_op_definition
class ParamOp(_ValueOp):
    """A trainable parameter: `%w = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>`."""

    name = "dnn.param"

    def verify_(self) -> None:
        if self.output.type.shape.element not in shapes.FLOAT_TYPES:
            raise VerifyException("dnn.param must be floating-point")
        super().verify_()


def _reversed_children(op: Operation) -> list[Operation]:
    """The ops of every block of `op`'s regions, last first (a malformed module may have
    no block, or several: its own verifier says so)."""
    return [child for region in op.regions for block in region.blocks
            for child in block.ops][::-1]
