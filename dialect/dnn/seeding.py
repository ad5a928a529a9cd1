"""How to seed a graph's inputs and params so that a model trains from its first step.

One rule, read by `pase-run` (`pase.tools.run.check.make_data`) and by the `-t jax`
program's tables (`pase.targets.jax`), derived from the iteration space of the layer that
first reads the tensor, not from the layer's name:

- An integer tensor (ids, labels) indexes a dim of its reader that the reader sums over
  and the tensor does not range over (an embedding's vocabulary, a cross-entropy's
  classes): uniform ints below that dim's size.
- A float input is data: normal, std 1.
- A param the reader contracts over some of its dims is a weight: normal with std
  1/sqrt(fan-in), the fan-in being the product of those dims' sizes (a conv filter
  [co, ci, r, s]: ci*r*s; an einsum weight [h, k, d] into [b, s, d]: h*k), so that each
  layer keeps its activations of order one (LeCun's rule). A contracted dim an integer
  operand selects (an embedding table's rows) adds no fan-in: one row is read, not summed.
- A param the reader scales its result by (`LayerOp.SCALE_OPERANDS`: a norm's scale):
  1 + 0.1 normal. Any other param (a norm's bias, a bias added): 0.1 normal, small.

    >>> Seed("normal", 0.5).describe()
    ('normal', 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod, sqrt

from xdsl.ir import SSAValue

from pase.core.shapes import ELEMENTS
from pase.dialect.dnn.graph import GraphOp, InputOp, ParamOp
from pase.dialect.dnn.layer_op import LayerOp
from pase.dialect.dnn.types import shape_of

LEARNING_RATE = 0.03
"""The default SGD learning rate of `pase-run --lr` and of the `-t jax` program's `--lr`,
for params seeded by this rule. Measured on the fixed seeded batch (30 steps, losses from
the first step to the 30th, docs/jax.md): AlexNet scaled by 0.125 halves its loss at 0.02
to 0.04 (4.83 -> 2.18 at 0.03) and oscillates from 0.1 on; the Transformer scaled by
0.125 learns faster the larger the rate up to 1 but does not halve in 30 steps at any
(it stops near ln 256, the labels' marginal), so the rate is AlexNet's."""

LEARNING_RATES = {"sgd": LEARNING_RATE, "momentum": LEARNING_RATE / 10, "adam": 1e-3}
"""The default learning rate of each optimizer: SGD's above; momentum's a tenth of it (with
beta 0.9 its steady step is ten gradients long, so the same step size as SGD's); Adam's
its paper's 1e-3 (its steps are about lr long whatever the gradient's scale)."""

SMALL = 0.1
"""The std of a param no layer contracts (biases) and of a scale's spread around one."""


@dataclass(frozen=True)
class Seed:
    """`kind` "ints" (uniform in [0, `scale`)), "normal" (std `scale`) or "normal+1"
    (1 + `scale` · normal)."""

    kind: str
    scale: float

    def describe(self) -> tuple[str, float | int]:
        """As the `-t jax` program's tables write it: `(kind, scale)`, an int high for
        "ints"."""
        return (self.kind, int(self.scale) if self.kind == "ints" else self.scale)


def seeds(graph: GraphOp) -> dict[SSAValue, Seed]:
    """The seed of every input and param of `graph`, in graph order."""
    return {op.output: seed_of(op.output) for op in graph.body.block.ops
            if isinstance(op, InputOp | ParamOp)}


def seed_of(value: SSAValue) -> Seed:
    """The seed of one input or param (the module docstring gives the rule)."""
    readers = [(use.operation, use.index) for use in value.uses
               if isinstance(use.operation, LayerOp)]
    if not ELEMENTS[shape_of(value).element].floating:
        highs = [index_range(reader, index) for reader, index in readers]
        return Seed("ints", float(next((h for h in highs if h > 1), 2)))
    if not isinstance(value.owner, ParamOp):
        return Seed("normal", 1.0)
    if not readers:
        return Seed("normal", SMALL)
    reader, index = readers[0]
    if index in reader.SCALE_OPERANDS:
        return Seed("normal+1", SMALL)
    space = reader.iteration_space()
    summed = {d.name: d.size for d in space.dims if d.reduction or d.name in space.partial}
    contracted = [d for d in space.operands[index] if d is not None and d in summed]
    if not contracted:
        return Seed("normal", SMALL)
    selected = {d for other in range(len(reader.inputs)) if other != index
                and not ELEMENTS[shape_of(reader.inputs[other]).element].floating
                for d in selected_dims(reader, other)}
    return Seed("normal", 1.0 / sqrt(prod(summed[d] for d in contracted if d not in selected)))


def selected_dims(reader: LayerOp, index: int) -> list[str]:
    """The dims of `reader` that its integer operand `index` selects: summed over, and
    not among the operand's own dims (an embedding's vocabulary, a cross-entropy's
    classes)."""
    space = reader.iteration_space()
    own = set(space.operands[index])
    return [d.name for d in space.dims
            if (d.reduction or d.name in space.partial) and d.name not in own]


def index_range(reader: LayerOp, index: int) -> int:
    """How many values operand `index` of `reader` may take: the product of the sizes of
    the dims it selects (1: it selects none)."""
    space = reader.iteration_space()
    return prod(space.dim(d).size for d in selected_dims(reader, index))
