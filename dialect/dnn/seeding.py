"""How to seed a graph's inputs and params so that a model trains from its first step.

One rule, read by `pase-run` (`pase.tools.run.check.make_data`) and by the `-t jax`
program's tables (`pase.targets.jax`), derived from the iteration space of the layer that
first reads the tensor, not from the layer's name:

- An integer tensor (ids, labels) indexes a dim of its reader that the reader sums over
  and the tensor does not range over (an embedding's vocabulary, a cross-entropy's
  classes): uniform ints below that dim's size.
- A padding mask (the keep operand of a `mask padding`, Hugging Face's attention_mask
  [batch, keys]) is "lengths": along its last axis each row keeps 1s for a uniform random
  length from 1 to the axis's size, then 0s (padding at the end, as a tokenizer pads).
- Labels a cross-entropy reads with an `ignore_index` (directly, or through slices and
  reshapes: a causal LM's shifted labels) are "ignored": uniform classes, then each one,
  with probability `IGNORED_FRACTION`, the ignore_index instead (the positions a
  tokenizer pads or a masked LM leaves unmasked, marked -100 by Hugging Face).
- A float input is data: normal, std 1.
- A param the reader contracts over some of its dims is a weight: normal with std
  1/sqrt(fan-in), the fan-in being the product of those dims' sizes (a conv filter
  [co, ci, r, s]: ci*r*s; an einsum weight [h, k, d] into [b, s, d]: h*k), so that each
  layer keeps its activations of order one (LeCun's rule). A contracted dim an integer
  operand selects (an embedding table's rows) adds no fan-in: one row is read, not summed.
- A weight whose reader's result is a residual branch's output (it is added, by a
  `dnn.add`, to a value it was computed from: attention's output projection, a
  feed-forward's second matrix) is scaled down further by 1/sqrt(R), R the graph's
  residual adds (`residual_adds`), as GPT-2 and Fixup do: at init the branches then add
  little to the stream, which keeps each token's own signal. Without it the Transformer's
  30 branches bury it: after the decoder's last layer norm only 29% of the variance
  differs between tokens (97% after the first), so the logits hardly depend on the token
  and training stalls at the labels' batch marginal (ln 256 on the fixed batch at scale
  0.125, with SGD at any rate and with Adam at 0.01); with it, Adam at its default rate
  goes 9.18 -> 2.07 in 30 steps (docs/training.md, "Programs that learn").
- A param the reader scales its result by (`LayerOp.SCALE_OPERANDS`: a norm's scale):
  1 + 0.1 normal. Any other param (a norm's bias, a bias added): 0.1 normal, small.

    >>> Seed("normal", 0.5).describe()
    ('normal', 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod, sqrt

import numpy as np
from xdsl.dialects.builtin import IntAttr
from xdsl.ir import SSAValue

from pase.core.shapes import ELEMENTS
from pase.dialect.dnn.graph import GraphOp, InputOp, ParamOp
from pase.dialect.dnn.layer_op import LayerOp
from pase.dialect.dnn.types import shape_of

LEARNING_RATE = 0.03
"""The default SGD learning rate of `pase-run --lr` and of the `-t jax` program's `--lr`,
for params seeded by this rule. Measured on the fixed seeded batch (30 steps, losses from
the first step to the 30th, docs/training.md): AlexNet scaled by 0.125 halves its loss at
0.02 to 0.04 and oscillates from 0.1 on. A param with a dim an integer operand selects
(an embedding's rows, the output layer's classes) steps at this rate times
`rate_scales`'s factor: without it the Transformer scaled by 0.125 does not halve with
SGD at any one rate (9.18 -> 6.83 at 0.03, 5.27 at 1)."""

LEARNING_RATES = {"sgd": LEARNING_RATE, "momentum": LEARNING_RATE / 10, "adam": 1e-3}

SELECTED_RATE_OPTIMIZERS = ("sgd", "momentum")
"""The optimizers whose steps `rate_scales` scales (Adam's steps are about lr long
whatever the gradient's size, so it needs no scale)."""
"""The default learning rate of each optimizer: SGD's above; momentum's a tenth of it (with
beta 0.9 its steady step is ten gradients long, so the same step size as SGD's); Adam's
its paper's 1e-3 (its steps are about lr long whatever the gradient's scale)."""

IGNORED_FRACTION = 0.25
"""The share of an "ignored" seed's labels drawn as its ignore_index."""

SMALL = 0.1
"""The std of a param no layer contracts (biases) and of a scale's spread around one."""


@dataclass(frozen=True)
class Seed:
    """`kind` "ints" (uniform in [0, `scale`)), "normal" (std `scale`), "normal+1"
    (1 + `scale` · normal), "lengths" (a padding mask: each row along the last axis,
    of size `scale`, 1s for a uniform random length from 1 to `scale`, then 0s:
    `padding_mask`) or "ignored" (labels: "ints", then `ignored_labels`)."""

    kind: str
    scale: float
    ignore: int = 0
    """An "ignored" seed's ignore_index."""

    def describe(self) -> tuple[str, float | int | tuple[int, int]]:
        """As the `-t jax` program's tables write it: `(kind, scale)`, an int high for
        "ints", `(high, ignore_index)` for "ignored".

            >>> Seed("ignored", 10.0, -100).describe()
            ('ignored', (10, -100))
        """
        if self.kind == "ignored":
            return (self.kind, (int(self.scale), self.ignore))
        return (self.kind, int(self.scale) if self.kind in ("ints", "lengths")
                else self.scale)


def ignored_labels(rng: np.random.Generator, labels: np.ndarray, ignore: int) -> np.ndarray:
    """An "ignored" seed's values: `labels` with each entry, with probability
    `IGNORED_FRACTION`, replaced by `ignore`.

        >>> ignored_labels(np.random.default_rng(0), np.arange(6), -100).tolist()
        [0, 1, -100, -100, 4, 5]
    """
    return np.where(rng.random(labels.shape) < IGNORED_FRACTION, ignore, labels)


def padding_mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A "lengths" seed's values: per row (all axes but the last) a length drawn
    uniformly from 1 to the last axis's size, 1 before it and 0 after.

        >>> padding_mask(np.random.default_rng(0), (2, 4)).tolist()
        [[1, 1, 1, 1], [1, 1, 1, 0]]
    """
    lengths = rng.integers(1, shape[-1] + 1, size=shape[:-1])
    return (np.arange(shape[-1]) < lengths[..., None]).astype(np.int64)


def seeds(graph: GraphOp) -> dict[SSAValue, Seed]:
    """The seed of every input and param of `graph`, in graph order."""
    branches = residual_adds(graph)
    return {op.output: seed_of(op.output, branches) for op in graph.body.block.ops
            if isinstance(op, InputOp | ParamOp)}


def residual_adds(graph: GraphOp) -> dict[SSAValue, int]:
    """The residual branches of `graph`: each value that a `dnn.add` adds to one of its
    own ancestors (a skip connection: `%res = add %x, %out` with `%out` computed from
    `%x`), mapped to the number R of such adds in the graph."""
    ancestors: dict[SSAValue, frozenset[SSAValue]] = {}
    branches: list[SSAValue] = []
    for op in graph.body.block.ops:
        if not isinstance(op, LayerOp):
            continue
        inputs = list(op.inputs)
        ancestors[op.output] = frozenset(inputs).union(*(ancestors.get(v, frozenset())
                                                         for v in inputs))
        if op.name == "dnn.add" and len(inputs) == 2:
            for branch, skip in (inputs, inputs[::-1]):
                if skip in ancestors.get(branch, frozenset()):
                    branches.append(branch)
                    break
    return {branch: len(branches) for branch in branches}


def seed_of(value: SSAValue, branches: dict[SSAValue, int] | None = None) -> Seed:
    """The seed of one input or param (the module docstring gives the rule);
    `branches`: the graph's `residual_adds` (computed here if not given)."""
    readers = [(use.operation, use.index) for use in value.uses
               if isinstance(use.operation, LayerOp)]
    if any(reader.name == "dnn.mask" and index == 1 for reader, index in readers):
        return Seed("lengths", float(shape_of(value).sizes[-1]))
    if not ELEMENTS[shape_of(value).element].floating:
        highs = [index_range(reader, index) for reader, index in readers]
        high = float(next((h for h in highs if h > 1), 2))
        ignore = ignore_index_of(value)
        return Seed("ints", high) if ignore is None else Seed("ignored", high, ignore)
    if not isinstance(value.owner, ParamOp):
        return Seed("normal", 1.0)
    if not readers:
        return Seed("normal", SMALL)
    reader, index = readers[0]
    if index in reader.SCALE_OPERANDS:
        return Seed("normal+1", SMALL)
    space = reader.iteration_space()
    summed = {d.name: d.size for d in space.dims if d.reduction or d.name in space.partial}
    if not any(d is not None and d in summed for d in space.operands[index]):
        return Seed("normal", SMALL)
    std = 1.0 / sqrt(fan_in(value))
    if branches is None:
        graph = reader.parent_op()
        branches = residual_adds(graph) if isinstance(graph, GraphOp) else {}
    if reader.output in branches:
        std /= sqrt(branches[reader.output])
    return Seed("normal", std)


def ignore_index_of(value: SSAValue) -> int | None:
    """The `ignore_index` of the cross-entropy that reads `value` as its labels, directly
    or through slices and reshapes; None if there is none."""
    for use in value.uses:
        reader = use.operation
        if reader.name == "dnn.softmax_cross_entropy" and use.index == 1:
            ignore = reader.properties.get("ignore_index")
            return ignore.data if isinstance(ignore, IntAttr) else None
        if reader.name in ("dnn.slice", "dnn.reshape") and isinstance(reader, LayerOp):
            if (found := ignore_index_of(reader.output)) is not None:
                return found
    return None


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


def rate_scales(graph: GraphOp) -> dict[SSAValue, float]:
    """The factor by which SGD's learning rate is multiplied for each param of `graph`
    that has a dim an integer operand selects (an embedding table's vocabulary, the
    output layer's classes, which the labels select in the cross-entropy); params not in
    the map step at the rate itself.

    The loss is a mean over the N examples (tokens, images) of the selecting operand. A
    param every example reads gets a gradient summed over all N; a row or column that
    one example selects (its token's embedding row, its label's class column) gets only
    the 1/N terms of the max(1, N/V) examples that select it (V the dim's size). A step
    of rate r then moves the output of an example that selects it by r |x|^2 / min(N, V)
    times the output's gradient, |x|^2 = fan-in (`fan_in`; the seeding keeps
    activations of order one): the Transformer's output layer at scale 0.125 (N = 256
    tokens, V = 6250 classes, fan-in 64) moves a token's own logit by r / 4 of its
    gradient, and does not fit in 30 steps at a rate AlexNet's dense layers take.
    The factor is min(N, V) / (fan-in · LEARNING_RATE) (the largest N, V over the
    param's selected dims; the largest fan-in over its readers, for a table tied to an
    output layer): at the default rate, one step moves the selecting example's output
    by its own gradient, a unit step (docs/training.md, "Programs that learn").

        >>> round(0.03 * min(256, 6250) / (64 * 0.03), 6)  # the Transformer's output layer
        4.0
    """
    selections: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for op in graph.body.block.ops:
        if not isinstance(op, LayerOp):
            continue
        space = op.iteration_space()
        for index, operand in enumerate(op.inputs):
            shape = shape_of(operand)
            if ELEMENTS[shape.element].floating:
                continue
            for dim in selected_dims(op, index):
                selections[dim] = max(selections.get(dim, 0), prod(shape.sizes))
                sizes[dim] = space.dim(dim).size
    scales: dict[SSAValue, float] = {}
    for op in graph.body.block.ops:
        if isinstance(op, ParamOp):
            counts = [min(selections[d], sizes[d]) for d in shape_of(op.output).dims
                      if d in selections]
            if counts:
                widest = max((reader_fan_in(use.operation, use.index)
                              for use in op.output.uses
                              if isinstance(use.operation, LayerOp)), default=1)
                scales[op.output] = max(counts) / (widest * LEARNING_RATE)
    return scales


def fan_in(value: SSAValue) -> int:
    """How many terms of order one a param's first reader sums per element of its result
    through the param: the product of the sizes of the dims it contracts over, less those
    an integer operand selects (an embedding table's rows: one is read, not summed); 1
    for a param no layer contracts (a bias, a norm's scale, an embedding table).

        >>> from pase.frontend import parse_file
        >>> graph = parse_file("models/mlp.dnn").body.block.first_op
        >>> [fan_in(op.output) for op in graph.body.block.ops if isinstance(op, ParamOp)]
        [256, 1024]
    """
    readers = [(use.operation, use.index) for use in value.uses
               if isinstance(use.operation, LayerOp)]
    return reader_fan_in(*readers[0]) if readers else 1


def reader_fan_in(reader: LayerOp, index: int) -> int:
    """`fan_in` of operand `index` as `reader` reads it."""
    if index in reader.SCALE_OPERANDS:
        return 1
    space = reader.iteration_space()
    summed = {d.name: d.size for d in space.dims if d.reduction or d.name in space.partial}
    selected = {d for other in range(len(reader.inputs)) if other != index
                and not ELEMENTS[shape_of(reader.inputs[other]).element].floating
                for d in selected_dims(reader, other)}
    return prod(summed[d] for d in space.operands[index]
                if d is not None and d in summed and d not in selected)
