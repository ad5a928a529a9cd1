"""`layers` continued: the layer ops real PyTorch exports need (issue 31).

clip (ReLU6), the elementwise div, sqrt, pow and neg, slice (ONNX Slice, Split and
constant-index Gather), the causal mask (GPT-2's Where with a lower-triangular mask) and
rmsnorm (T5's norm). Like every layer op they answer `infer()` from `pase.core.shapes` and
`iteration_space()`; `layers.LAYER_OPS` lists them with the others.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr
from xdsl.irdl import irdl_op_definition, prop_def

from pase.core import shapes
from pase.core.shapes import NamedShape
from pase.dialect.dnn.layer_op import Clauses, Flops
from pase.dialect.dnn.layers import UnaryOp


@irdl_op_definition
class ClipOp(UnaryOp):
    """`%y = dnn.clip %x min 0.0 max 6.0 : (...) -> ...`: x clamped into [min, max]
    (ReLU6 is clip 0 6); the gradient passes where min < x < max."""

    name = "dnn.clip"

    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)

    CLAUSES: ClassVar[Clauses] = (("min", "min", "float"), ("max", "max", "float"))
    FLOPS: ClassVar[Flops] = (1.0, 1.0)

    def infer(self) -> NamedShape:
        (x,) = self.operand_shapes(1)
        return shapes.clip_shape(x, self.float_prop("min"), self.float_prop("max"))
