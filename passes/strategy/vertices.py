"""The plain data the cost model reads: layers (the vertices), the tensors they touch,
and the edges between them.

`from_ir.read_graph` builds them from a `dnn.graph`; nothing after it touches IR, and a
problem can as well be built from these by hand (`Problem.from_layers`). Vertices are the
layers; `input` and `param` are not vertices (PaSE): a parameter lives in the layout its
consumer gives it, and input data arrives laid out as its first consumer needs. A tensor
read by several layers without being produced by one (tied parameters, shared inputs) is
held in its first reader's layout and every other reader pays the redistribution from there.

    >>> weight = TensorUse(("k", "n"), (512, 256))
    >>> weight.elements, weight.element_bytes
    (131072, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from pase.core.space import IterationSpace


@dataclass(frozen=True)
class TensorUse:
    """How a layer indexes one tensor: the iteration dim of each tensor dim (or None)."""

    dims: tuple[str | None, ...]
    sizes: tuple[int, ...]
    element_bytes: int = 4

    @property
    def elements(self) -> int:
        return prod(self.sizes)


@dataclass(frozen=True)
class Layer:
    """One vertex: a layer's iteration space and the tensors it reads and writes."""

    name: str
    kind: str
    """The op name without `dnn.`: "einsum", "softmax", ..."""
    space: IterationSpace
    operands: tuple[TensorUse, ...]
    result: TensorUse
    grads: tuple[bool, ...]
    """Whether each operand needs a gradient: it depends on a parameter, and the layer's
    output reaches the loss."""
    over: tuple[str, ...] = ()
    """The dims a softmax, norm or cross-entropy normalizes over."""
    backward: bool = True
    """Whether the layer has a backward pass: its output reaches the loss (the first value
    the graph returns). pase-autodiff differentiates only such layers."""
    params: tuple[bool, ...] = ()
    """Whether each operand is a parameter (a `dnn.param` value), whose gradient a
    pipeline accumulates over micro-batches and all-reduces once per step; () for none."""
    checkpoint: bool = False
    """Whether recomputation keeps this layer's result (the end of a segment, where
    the fewest tensors cross: `training_cost.mark_checkpoints`); the layers between two
    checkpoints are recomputed from the first."""
    shared: tuple[int, ...] = ()
    """For each operand that is a parameter an earlier layer reads too (a tied embedding
    table), how many layers back the last such reader is; 0 for the other operands, ()
    where there is none. Where that reader is in the same stage (or graph), the device
    holds the parameter, its gradient and its optimizer state once, with it
    (`training_cost.unheld`)."""


@dataclass(frozen=True)
class Edge:
    """A tensor moving from `producer`'s layout to what `consumer` needs.

    For a tensor no layer produces (a shared parameter or input), `producer` is its
    first reader and `held` is that reader's use of it.
    """

    producer: int
    consumer: int
    held: TensorUse
    needed: TensorUse
    backward: bool
    """A gradient flows back along the edge (the tensor depends on a parameter)."""
    carried: str = ""
    """The input or param the edge carries from its first reader (its name), or "" for a
    layer's result."""


def edges_among(edges: Sequence[Edge], kept: Sequence[int]) -> list[tuple[int, Edge]]:
    """The edges between two of the layers `kept` (indices, ascending), each with its
    index in `edges` and renumbered to index `kept`: the one way a part of a graph is
    cut out (`Problem.subproblem` by names, a pipeline stage by a range).

        >>> use = TensorUse(("b",), (8,))
        >>> cut = edges_among([Edge(0, 1, use, use, False), Edge(1, 2, use, use, False)], [1, 2])
        >>> [(index, edge.producer, edge.consumer) for index, edge in cut]
        [(1, 0, 1)]
    """
    position = {old: new for new, old in enumerate(kept)}
    return [(index, replace(edge, producer=position[edge.producer],
                            consumer=position[edge.consumer]))
            for index, edge in enumerate(edges)
            if edge.producer in position and edge.consumer in position]


def config_grids(names: Sequence[str], configs: Sequence[dict[str, int]]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each config's factor and device stride per iteration dim `names`, (C, dims) each:
    row-major over the dims, so an unsplit dim (factor 1) leaves the device numbering as
    if it were not there.

        >>> factors, strides = config_grids(("b", "s", "h"), [{"b": 2, "h": 4}])
        >>> factors.tolist(), strides.tolist()
        ([[2, 1, 4]], [[4, 4, 1]])
    """
    factors = np.array([[config.get(name, 1) for name in names] for config in configs],
                       dtype=np.int64).reshape(len(configs), len(names))
    strides = np.ones_like(factors)
    for j in range(len(names) - 2, -1, -1):
        strides[:, j] = strides[:, j + 1] * factors[:, j + 1]
    return factors, strides
