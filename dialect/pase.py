"""The `pase` dialect: parallelization-strategy attributes.

Attributes only, in the spirit of MLIR's discardable attributes: passes attach them to
`dnn` layers and graphs under the names below, and read them back through the accessors
here (`strategy_of`, `forward_layer`, `grid_order`, `layout_of`, `segment_of`,
`stage_of`, `pipeline_of`), which also serve the
`dnn` verifiers, so a wrongly typed value is a located verifier error, not a pass crash.

- `pase.config = #pase.config<b = 4, h = 2>` on a layer: how many equal parts each
  iteration-space dimension is split into (PaSE's configuration). Factors of 1 are
  omitted, so `#pase.config<>` is the unsplit layer; the layer runs on the product of the
  factors devices.
- `pase.strategy = #pase.strategy<...>` on a graph: the result of a search on it
  (devices, machine, total cost and its parts, the data-parallel cost).
- `pase.layer = "h"` on a gradient op pase-autodiff writes: the forward layer it belongs
  to; `pase.grid_order = ["b", "h", "d"]` on an einsum gradient: its forward layer's
  device-grid order.
- `pase.layout_of = #pase.layout<"z", operand 1>` on a sum of gradients or an SGD step:
  it runs in the layout of operand 1 of layer z (`#pase.layout<"h">`: of h's result).
- `pase.segment = #pase.segment<3>` on a forward layer (pase-merge-layers): the index of
  its segment, a run of layers in program order that a pipeline-stage boundary never cuts.
- `pase.stage = #pase.stage<1, offset = 4, devices = 4>` on a forward layer
  (pase-partition-stages): its pipeline stage and that stage's device group, devices
  offset..offset+devices-1. The layer's `pase.config` is a configuration on that group,
  placed row-major onto its devices from `offset`.
- `pase.pipeline = #pase.pipeline<...>` on a graph: the pipeline plan (stages S,
  micro-batches M, schedule, modelled step time, bubble fraction, memory per device).
  Under it, every layer's `pase.config` is for one micro-batch: the graph's batch
  dimension is cut into M equal micro-batches first, and the config splits b/M.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import isfinite, prod
from typing import TypeVar

from xdsl.dialects.builtin import ArrayAttr, FloatData, IntAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from pase.core.placement import check_devices

CONFIG_ATTR_NAME = "pase.config"
NUM_CONFIGS_ATTR_NAME = "pase.num_configs"
STRATEGY_ATTR_NAME = "pase.strategy"
LAYER_ATTR_NAME = "pase.layer"
"""On a backward op: the forward layer it belongs to."""
SEGMENT_ATTR_NAME = "pase.segment"
STAGE_ATTR_NAME = "pase.stage"
PIPELINE_ATTR_NAME = "pase.pipeline"
SCHEDULES = ("1f1b", "gpipe")
"""The pipeline schedules, in the spelling of pass options and `#pase.pipeline`."""
GRID_ORDER_ATTR_NAME = "pase.grid_order"
"""On an einsum gradient: its forward layer's grid-axis order."""
LAYOUT_OF_ATTR_NAME = "pase.layout_of"
"""On a gradient sum or SGD step: the #pase.layout it runs in."""


@irdl_attr_definition
class ConfigAttr(ParametrizedAttribute):
    """A layer's configuration: split factor per iteration-space dimension.

    Example: `#pase.config<b = 4, h = 2>` splits `b` four ways and `h` two ways, so
    the layer runs on 8 devices. `#pase.config<>` is unsplit.
    """

    name = "pase.config"

    dims: ArrayAttr[StringAttr]
    factors: ArrayAttr[IntAttr]

    def __init__(self, splits: Mapping[str, int] | Sequence[tuple[str, int]]):
        items = list(splits.items()) if isinstance(splits, Mapping) else list(splits)
        items = [(dim, factor) for dim, factor in items if factor != 1]
        super().__init__(ArrayAttr(StringAttr(d) for d, _ in items),
                         ArrayAttr(IntAttr(f) for _, f in items))

    @property
    def splits(self) -> dict[str, int]:
        """The split factors, `{dim: factor}`, factors of 1 omitted."""
        return {d.data: f.data for d, f in zip(self.dims.data, self.factors.data, strict=True)}

    @property
    def num_devices(self) -> int:
        return prod(f.data for f in self.factors.data)

    def factor(self, dim: str) -> int:
        return self.splits.get(dim, 1)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_split_after(dim: str) -> tuple[str, int]:
            parser.parse_punctuation("=")
            return dim, parser.parse_integer(allow_boolean=False, allow_negative=True)

        def parse_optional_split() -> tuple[str, int] | None:
            dim = parser.parse_optional_identifier()
            return None if dim is None else parse_split_after(dim)

        def parse_split() -> tuple[str, int]:
            return parse_split_after(parser.parse_identifier(context_msg=" (a dimension name)"))

        with parser.in_angle_brackets():
            splits = parser.parse_optional_undelimited_comma_separated_list(
                parse_optional_split, parse_split) or []
        names = [dim for dim, _ in splits]
        for i, name in enumerate(names):
            if name in names[:i]:
                parser.raise_error(f"dimension '{name}' is split twice in #pase.config")
        for dim, factor in splits:
            if factor < 1:
                parser.raise_error(f"split factor of '{dim}' must be at least 1, got {factor}")
        kept = [(d, f) for d, f in splits if f != 1]
        return (ArrayAttr(StringAttr(d) for d, _ in kept), ArrayAttr(IntAttr(f) for _, f in kept))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_list(self.splits.items(),
                               lambda item: printer.print_string(f"{item[0]} = {item[1]}"))

    def verify(self) -> None:
        if len(self.dims.data) != len(self.factors.data):
            raise VerifyException("#pase.config needs one factor per dimension")
        names = [d.data for d in self.dims.data]
        if len(set(names)) != len(names):
            raise VerifyException(f"#pase.config splits a dimension twice: {names}")
        for dim, factor in zip(names, self.factors.data, strict=True):
            if factor.data < 2:
                raise VerifyException(f"split factor of '{dim}' must be at least 2 "
                                      f"(factors of 1 are omitted), got {factor.data}")


def float_text(value: float) -> str:
    """The shortest text that reads back as exactly `value`, in MLIR float syntax."""
    text = repr(float(value))
    if "." in text or "n" in text:  # already has a point, or is inf / nan
        return text
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}.0e{exponent}" if exponent else f"{mantissa}.0"


_STRATEGY_FIELDS = ("devices", "machine", "total", "compute", "communication",
                    "redistribution", "data_parallel")


@irdl_attr_definition
class StrategyAttr(ParametrizedAttribute):
    """The outcome of `pase-search` on one graph; costs in seconds.

    Example:
        #pase.strategy<devices = 8, machine = "pase-default", total = 1.5e-02,
                       compute = 1.0e-02, communication = 3.0e-03,
                       redistribution = 2.0e-03, data_parallel = 2.1e-02,
                       speedup = 1.4000>

    The speedup is printed for readers; it is derived, and ignored when parsed.
    """

    name = "pase.strategy"

    devices: IntAttr
    machine: StringAttr
    total: FloatData
    compute: FloatData
    communication: FloatData
    redistribution: FloatData
    data_parallel: FloatData

    def __init__(self, devices: int, machine: str, total: float, compute: float,
                 communication: float, redistribution: float, data_parallel: float):
        super().__init__(IntAttr(devices), StringAttr(machine), FloatData(total),
                         FloatData(compute), FloatData(communication),
                         FloatData(redistribution), FloatData(data_parallel))

    @property
    def speedup(self) -> float:
        """Predicted speedup of this strategy over data parallelism."""
        return self.data_parallel.data / self.total.data if self.total.data > 0 else 1.0

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            for i, field in enumerate(_STRATEGY_FIELDS):
                if i:
                    parser.parse_punctuation(",")
                parser.parse_keyword(field)
                parser.parse_punctuation("=")
                start = parser.pos
                if field == "devices":
                    values[field] = IntAttr(parser.parse_integer(allow_boolean=False))
                elif field == "machine":
                    values[field] = StringAttr(parser.parse_str_literal())
                else:
                    values[field] = FloatData(float(parser.parse_number()))
                if (problem := _strategy_field_problem(field, values[field])) is not None:
                    parser.raise_error(problem, start, parser.pos)
            # The printed speedup is derived (data_parallel / total): read and dropped.
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("speedup")
                parser.parse_punctuation("=")
                parser.parse_number()
        return tuple(values[f] for f in _STRATEGY_FIELDS)

    def verify(self) -> None:
        for field in _STRATEGY_FIELDS:
            if (problem := _strategy_field_problem(field, getattr(self, field))) is not None:
                raise VerifyException(problem)

    def print_parameters(self, printer: Printer) -> None:
        parts = [f"devices = {self.devices.data}", f'machine = "{self.machine.data}"']
        for field in _STRATEGY_FIELDS[2:]:
            parts.append(f"{field} = {float_text(getattr(self, field).data)}")
        parts.append(f"speedup = {self.speedup:.4f}")
        printer.print_string("<" + ", ".join(parts) + ">")


def _strategy_field_problem(field: str, value: Attribute) -> str | None:
    """What is wrong with one field of a #pase.strategy, or None: `devices` is a device
    count pase takes, each cost a finite number of seconds, at least 0."""
    if field == "devices" and isinstance(value, IntAttr):
        try:
            check_devices(value.data)
        except ValueError as error:
            return f"#pase.strategy {error}"
    if isinstance(value, FloatData) and not (isfinite(value.data) and value.data >= 0):
        return (f"#pase.strategy {field} is a cost in seconds, finite and at least 0, "
                f"got {value.data}")
    return None


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """Where a gradient op runs: in the layout of operand `operand` of layer `layer`, or,
    without an operand, of that layer's result.

    Example: `#pase.layout<"z", operand 1>` (the layout layer z reads its operand 1 in,
    for a parameter's SGD step) and `#pase.layout<"h">` (the layout of h's result, for a
    sum of gradient contributions to h).
    """

    name = "pase.layout"

    layer: StringAttr
    operand: IntAttr | NoneAttr

    def __init__(self, layer: str, operand: int | None = None):
        super().__init__(StringAttr(layer), NoneAttr() if operand is None else IntAttr(operand))

    @property
    def layer_name(self) -> str:
        return self.layer.data

    @property
    def operand_index(self) -> int | None:
        """The operand whose layout this is, or None for the layer's result."""
        return self.operand.data if isinstance(self.operand, IntAttr) else None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            layer = parser.parse_str_literal(" (a layer name)")
            operand: IntAttr | NoneAttr = NoneAttr()
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("operand")
                start = parser.pos
                index = parser.parse_integer(allow_boolean=False)
                if index < 0:  # said here too, where the parser knows the location
                    parser.raise_error(_negative_operand(layer, index), start, parser.pos)
                operand = IntAttr(index)
        return (StringAttr(layer), operand)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.layer.data)
            if (index := self.operand_index) is not None:
                printer.print_string(f", operand {index}")

    def verify(self) -> None:
        if (index := self.operand_index) is not None and index < 0:
            raise VerifyException(_negative_operand(self.layer.data, index))


def _parse_fields(parser: AttrParser, fields: Sequence[tuple[str, str]],
                  what: str) -> dict[str, Attribute]:
    """`key = value, ...` in this order; kinds: "int" (at least 0), "str", "float"."""
    values: dict[str, Attribute] = {}
    for i, (field, kind) in enumerate(fields):
        if i:
            parser.parse_punctuation(",")
        parser.parse_keyword(field)
        parser.parse_punctuation("=")
        start = parser.pos
        if kind == "int":
            number = parser.parse_integer(allow_boolean=False, allow_negative=True)
            if number < 0:
                parser.raise_error(f"{what} {field} must be at least 0, got {number}",
                                   start, parser.pos)
            values[field] = IntAttr(number)
        elif kind == "str":
            values[field] = StringAttr(parser.parse_str_literal())
        else:
            real = float(parser.parse_number())
            if not (isfinite(real) and real >= 0):
                parser.raise_error(f"{what} {field} must be finite and at least 0, "
                                   f"got {real}", start, parser.pos)
            values[field] = FloatData(real)
    return values


@irdl_attr_definition
class SegmentAttr(ParametrizedAttribute):
    """The segment a forward layer belongs to (pase-merge-layers): `#pase.segment<3>`.

    Segments are numbered 0, 1, ... in program order; a pipeline-stage boundary falls
    only between two segments.
    """

    name = "pase.segment"

    index: IntAttr

    def __init__(self, index: int):
        super().__init__(IntAttr(index))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            index = parser.parse_integer(allow_boolean=False, allow_negative=True)
            if index < 0:
                parser.raise_error(f"#pase.segment index must be at least 0, got {index}",
                                   start, parser.pos)
        return (IntAttr(index),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.index.data}>")

    def verify(self) -> None:
        if self.index.data < 0:
            raise VerifyException(f"#pase.segment index must be at least 0, "
                                  f"got {self.index.data}")


@irdl_attr_definition
class StageAttr(ParametrizedAttribute):
    """A forward layer's pipeline stage and its device group (pase-partition-stages).

    Example: `#pase.stage<1, offset = 4, devices = 4>`: stage 1 runs on devices 4..7.
    """

    name = "pase.stage"

    index: IntAttr
    offset: IntAttr
    devices: IntAttr

    def __init__(self, index: int, offset: int, devices: int):
        super().__init__(IntAttr(index), IntAttr(offset), IntAttr(devices))

    @property
    def device_ids(self) -> range:
        return range(self.offset.data, self.offset.data + self.devices.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            index = parser.parse_integer(allow_boolean=False, allow_negative=True)
            if index < 0:
                parser.raise_error(f"#pase.stage index must be at least 0, got {index}",
                                   start, parser.pos)
            parser.parse_punctuation(",")
            values = _parse_fields(parser, (("offset", "int"), ("devices", "int")),
                                   "#pase.stage")
            if (problem := _stage_problem(index, values["offset"], values["devices"])):
                parser.raise_error(problem, start, parser.pos)
        return (IntAttr(index), values["offset"], values["devices"])

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.index.data}, offset = {self.offset.data}, "
                             f"devices = {self.devices.data}>")

    def verify(self) -> None:
        if (problem := _stage_problem(self.index.data, self.offset, self.devices)):
            raise VerifyException(problem)


def _stage_problem(index: int, offset: Attribute, devices: Attribute) -> str | None:
    assert isinstance(offset, IntAttr)
    assert isinstance(devices, IntAttr)
    if index < 0 or offset.data < 0:
        return "#pase.stage index and offset must be at least 0"
    try:
        check_devices(devices.data)
        check_devices(offset.data + devices.data)
    except ValueError as error:
        return f"#pase.stage {error}"
    return None


_PIPELINE_FIELDS = (("devices", "int"), ("machine", "str"), ("stages", "int"),
                    ("microbatches", "int"), ("schedule", "str"), ("step", "float"),
                    ("bubble", "float"), ("memory", "float"))


@irdl_attr_definition
class PipelineAttr(ParametrizedAttribute):
    """A graph's pipeline plan (pase-partition-stages): S stages on disjoint groups of
    devices/S devices, M micro-batches per step under `schedule` ("1f1b" or "gpipe"),
    the modelled step time in seconds, the bubble fraction of that schedule, and the
    largest memory any device needs, in bytes.

    Example:
        #pase.pipeline<devices = 8, machine = "v100-nvlink", stages = 2,
                       microbatches = 4, schedule = "1f1b", step = 1.2e-02,
                       bubble = 0.2, memory = 1.5e+09>
    """

    name = "pase.pipeline"

    devices: IntAttr
    machine: StringAttr
    stages: IntAttr
    microbatches: IntAttr
    schedule: StringAttr
    step: FloatData
    bubble: FloatData
    memory: FloatData

    def __init__(self, devices: int, machine: str, stages: int, microbatches: int,
                 schedule: str, step: float, bubble: float, memory: float):
        super().__init__(IntAttr(devices), StringAttr(machine), IntAttr(stages),
                         IntAttr(microbatches), StringAttr(schedule), FloatData(step),
                         FloatData(bubble), FloatData(memory))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            values = _parse_fields(parser, _PIPELINE_FIELDS, "#pase.pipeline")
            if (problem := _pipeline_problem(values)) is not None:
                parser.raise_error(problem, start, parser.pos)
        return tuple(values[f] for f, _ in _PIPELINE_FIELDS)

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        for field, kind in _PIPELINE_FIELDS:
            value = getattr(self, field).data
            parts.append(f"{field} = " + (f'"{value}"' if kind == "str" else
                                          float_text(value) if kind == "float" else
                                          str(value)))
        printer.print_string("<" + ", ".join(parts) + ">")

    def verify(self) -> None:
        values = {f: getattr(self, f) for f, _ in _PIPELINE_FIELDS}
        for field, kind in _PIPELINE_FIELDS:
            value = values[field].data
            if kind == "float" and not (isfinite(value) and value >= 0):
                raise VerifyException(f"#pase.pipeline {field} must be finite and at "
                                      f"least 0, got {value}")
        if (problem := _pipeline_problem(values)) is not None:
            raise VerifyException(problem)


def _pipeline_problem(values: Mapping[str, Attribute]) -> str | None:
    """What is wrong with a #pase.pipeline's fields together, or None."""
    devices, stages, micro = (values[f] for f in ("devices", "stages", "microbatches"))
    schedule = values["schedule"]
    assert isinstance(devices, IntAttr)
    assert isinstance(stages, IntAttr)
    assert isinstance(micro, IntAttr)
    assert isinstance(schedule, StringAttr)
    try:
        check_devices(devices.data)
    except ValueError as error:
        return f"#pase.pipeline {error}"
    if stages.data < 1 or devices.data % stages.data:
        return (f"#pase.pipeline stages must divide its {devices.data} devices, "
                f"got {stages.data}")
    if micro.data < 1:
        return f"#pase.pipeline microbatches must be at least 1, got {micro.data}"
    if schedule.data not in SCHEDULES:
        return (f"#pase.pipeline schedule must be one of {', '.join(SCHEDULES)}, "
                f"got '{schedule.data}'")
    return None


def _negative_operand(layer: str, index: int) -> str:
    return f"#pase.layout names operand {index} of layer '{layer}'; operands count from 0"


AttributeT = TypeVar("AttributeT", bound=Attribute)


def _typed(op: Operation, name: str, kind: type[AttributeT], what: str) -> AttributeT | None:
    """`op`'s attribute `name`, None if absent; a VerifyException if it is not a `kind`."""
    attr = op.attributes.get(name)
    if attr is not None and not isinstance(attr, kind):
        raise VerifyException(f"{name} must be {what}, got {attr}")
    return attr


def strategy_of(op: Operation) -> StrategyAttr | None:
    """The `pase.strategy` pase-search left on a graph, or None before the search."""
    return _typed(op, STRATEGY_ATTR_NAME, StrategyAttr, "a #pase.strategy")


def forward_layer(op: Operation) -> str | None:
    """The forward layer a gradient op belongs to (`pase.layer = "h"` -> "h"), or None."""
    attr = _typed(op, LAYER_ATTR_NAME, StringAttr, "the name of a forward layer (a string)")
    return attr.data if attr is not None else None


def grid_order(op: Operation) -> tuple[str, ...] | None:
    """An einsum gradient's device-grid order (`pase.grid_order = ["b", "h"]`), or None."""
    attr = _typed(op, GRID_ORDER_ATTR_NAME, ArrayAttr,
                  'an array of dimension names (e.g. ["b", "h"])')
    if attr is None:
        return None
    if not all(isinstance(name, StringAttr) for name in attr.data):
        raise VerifyException(f'{GRID_ORDER_ATTR_NAME} must be an array of dimension names '
                              f'(e.g. ["b", "h"]), got {attr}')
    return tuple(name.data for name in attr.data)


def layout_of(op: Operation) -> LayoutAttr | None:
    """The layout a gradient sum or SGD step runs in (`pase.layout_of`), or None."""
    return _typed(op, LAYOUT_OF_ATTR_NAME, LayoutAttr,
                  'a #pase.layout (e.g. #pase.layout<"z", operand 1>)')


def segment_of(op: Operation) -> SegmentAttr | None:
    """The `pase.segment` pase-merge-layers left on a layer, or None."""
    return _typed(op, SEGMENT_ATTR_NAME, SegmentAttr, "a #pase.segment (e.g. #pase.segment<0>)")


def stage_of(op: Operation) -> StageAttr | None:
    """The `pase.stage` pase-partition-stages left on a layer, or None."""
    return _typed(op, STAGE_ATTR_NAME, StageAttr,
                  "a #pase.stage (e.g. #pase.stage<0, offset = 0, devices = 4>)")


def pipeline_of(op: Operation) -> PipelineAttr | None:
    """The `pase.pipeline` pase-partition-stages left on a graph, or None."""
    return _typed(op, PIPELINE_ATTR_NAME, PipelineAttr, "a #pase.pipeline")


def verify_gradient_attributes(op: Operation) -> None:
    """Check the types of the attributes pase-autodiff writes on `op` (the dnn verifiers
    call this)."""
    forward_layer(op)
    grid_order(op)
    layout_of(op)
    segment_of(op)
    stage_of(op)


Pase = Dialect("pase", [], [ConfigAttr, StrategyAttr, LayoutAttr, SegmentAttr, StageAttr,
                            PipelineAttr])
