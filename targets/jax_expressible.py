"""What `-t jax` can express of a plan, checked before any text is written.

The target translates a layer's `pase.config`, a layer's `pase.stage` and the graph's
`pase.strategy` and `pase.pipeline` (the plan), and ignores what only reports on a search
(`pase.num_configs`, `pase.segment`). Any other `pase.*` attribute is part of a plan the
program would silently not follow: one error naming it and where it is, so pase-opt writes
no file and exits 1. The training step (`pase.training`, a layer's `pase.recompute` and
`pase.zero`) is translated by `jax_training` for one-stage plans; a pipeline plan with a
training step other than fp32 SGD is refused in `jax_program`.

    check_expressible(graph)   # raises a Diagnostic at the first attribute it cannot express
"""

from __future__ import annotations

from xdsl.ir import Operation

from pase.core.diagnostics import at_op
from pase.dialect import dnn
from pase.dialect.pase import (
    CONFIG_ATTR_NAME,
    NUM_CONFIGS_ATTR_NAME,
    PIPELINE_ATTR_NAME,
    SEGMENT_ATTR_NAME,
    STAGE_ATTR_NAME,
    STRATEGY_ATTR_NAME,
)
from pase.dialect.training_options import (
    RECOMPUTE_ATTR_NAME,
    TRAINING_ATTR_NAME,
    ZERO_ATTR_NAME,
)

GRAPH_ATTRIBUTES = frozenset({STRATEGY_ATTR_NAME, PIPELINE_ATTR_NAME, TRAINING_ATTR_NAME})
"""The graph's plan attributes the jax target expresses."""

LAYER_ATTRIBUTES = frozenset({CONFIG_ATTR_NAME, STAGE_ATTR_NAME, NUM_CONFIGS_ATTR_NAME,
                              SEGMENT_ATTR_NAME, RECOMPUTE_ATTR_NAME, ZERO_ATTR_NAME})
"""A layer's plan attributes the jax target expresses (or that only report a search)."""


def check_expressible(graph: dnn.GraphOp) -> None:
    """Raise at the first `pase.*` attribute of `graph` or of one of its ops that the
    jax target does not translate."""
    _check(graph, GRAPH_ATTRIBUTES, f"the graph @{graph.sym_name.data}")
    names = graph.layer_names()
    for op in graph.body.block.ops:
        what = (f"layer '{names[op]}' ({op.name})" if isinstance(op, dnn.LayerOp)
                and op in names else op.name)
        _check(op, LAYER_ATTRIBUTES, what)


def _check(op: Operation, known: frozenset[str], what: str) -> None:
    for name in op.attributes:
        if name.startswith("pase.") and name not in known:
            raise at_op(op, f"the jax target cannot express {name} of {what}: its program "
                        "would silently not follow it")
