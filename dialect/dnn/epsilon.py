"""The epsilon of the norms (`dnn.layernorm`, `dnn.batchnorm`, `dnn.rmsnorm`): the
`epsilon` clause, printed only where it is not the default 1e-5, so that a norm written
without it (every `.dnn` norm) prints as before:

    %y = dnn.layernorm %x, %g, %b over [d] epsilon 1.0e-12 : (...) -> ...

An imported model keeps its own (DeiT's 1e-12, LLaMA's 1e-6); the verifier (through the
shape rule) wants a positive finite float. Parsing `epsilon 1.0e-05` leaves the clause
out, as printing does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from xdsl.dialects.builtin import FloatAttr, f64
from xdsl.ir import Attribute
from xdsl.irdl import opt_prop_def
from xdsl.parser import Parser

from pase.core.shapes import ShapeError
from pase.dialect.dnn.layer_op import LayerOp, LayerSignature, float_text

DEFAULT_EPSILON = 1e-5
"""PyTorch's default for nn.LayerNorm, nn.BatchNorm2d and ONNX's norms."""


def epsilon_of(properties: Mapping[str, Attribute]) -> float:
    """A norm's epsilon: its `epsilon` property, else the default."""
    attr = properties.get("epsilon")
    return float(attr.value.data) if isinstance(attr, FloatAttr) else DEFAULT_EPSILON


def epsilon_property(value: float) -> dict[str, Attribute]:
    """The properties a norm with epsilon `value` carries: none for the default."""
    return {} if value == DEFAULT_EPSILON else {"epsilon": FloatAttr(float(value), f64)}


def check_epsilon(layer: LayerSignature) -> None:
    """Raises ShapeError unless the layer's epsilon is a positive finite float."""
    value = epsilon_of(layer.properties)
    if not (math.isfinite(value) and value > 0):
        raise ShapeError(f"{layer.short_name} epsilon must be a positive finite float, "
                         f"got {value}")


class EpsilonLayer(LayerOp):
    """A norm: its clauses, then an optional `epsilon` (a float above 0)."""

    epsilon = opt_prop_def(FloatAttr)

    @classmethod
    def parse_clauses(cls, parser: Parser) -> dict[str, Attribute]:
        properties = super().parse_clauses(parser)
        if parser.parse_optional_keyword("epsilon") is not None:
            properties |= epsilon_property(parser.parse_float())
        return properties

    @classmethod
    def clause_text(cls, properties: dict[str, Attribute], bare_dim: bool = False) -> str:
        text = super().clause_text(properties, bare_dim)
        attr = properties.get("epsilon")
        if isinstance(attr, FloatAttr):
            text += f" epsilon {float_text(attr.value.data)}"
        return text
