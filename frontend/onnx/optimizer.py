"""onnxscript's optimizer, bounded: the same rewrites and folded constants as
`onnxscript.optimizer.optimize` (onnxscript 0.7.2), in time linear in the graph where
upstream's took quadratic time, and without evaluating a node whose result it would throw
away, which could take all of the machine's memory first.

    optimized = optimize(model)                       # a new ModelProto
    fold_constants(model, should_fold=...)            # in place

Rewrite rules. The optimizer tries each of its ~50 rewrite rules at every node. One of
them, `SlicesSplit` (two Slices of one tensor into its halves become one Split), has two
output nodes; for each node it is tried at, its matcher first lists every node of the
graph by op type (the second Slice may be any of them), whatever the node is: O(N) per
node, O(N^2) a graph (benchmarks/RESULTS.md, "ONNX import of a long chain").
Here that rule is tried only at a node where it can match, and skipped, with the same
outcome as upstream's (no match), where it provably cannot: the node is not a Slice, or
it is the only Slice reading its first input `x` whose last axis has a known size L >= 1.
Its pattern is `Slice(x, ...), Slice(x, ...)`: the second Slice reads the same value `x`,
so without another Slice of `x` only the node itself can stand for both, and the rule's
check then needs begin 0 = begin of the second = end of the first = L // 2 and end = L,
so L = 0. Where a second Slice of `x` exists, upstream's matcher runs as before (it picks
the first such Slice in graph order).

Folding. Upstream evaluates a node whose inputs are small constants, then keeps the result
only if it has at most `output_size_limit` (512 x 512) elements or no more than the inputs
it replaces. A Tile of a 2 x 2 constant by [2^30, 2^30] passed the first test and filled
16 GiB before the kernel killed the process. Here a node whose output's inferred static
size is over both (the limit and all its constant inputs together) is not evaluated:
upstream would have thrown the result away (`too_large_to_keep`).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator
from typing import Any

ShouldFold = Callable[[Any], "bool | None"]
"""onnxscript's `should_fold`: given a node, fold it (True), not (False), or leave it to
the default rules (None)."""

OUTPUT_SIZE_LIMIT = 512 * 512
"""onnxscript's `DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT`, which `optimize` keeps."""

SLICES_SPLIT = "SlicesSplit"
"""The name of onnxscript's one rule with two output nodes (onnxscript 0.7.2)."""


def may_split_slices(node: Any) -> bool:
    """Whether `SlicesSplit` can match with `node` as its first Slice (False only where
    it provably cannot: module docstring)."""
    if node.op_type != "Slice" or node.domain not in ("", "ai.onnx"):
        return False
    if not node.inputs or node.inputs[0] is None:
        return True
    x = node.inputs[0]
    if any(user is not node and index == 0 and user.op_type == "Slice"
           for user, index in x.uses()):
        return True
    last = x.shape[-1] if x.shape is not None and len(x.shape) else None
    return not (isinstance(last, int) and last >= 1)


def _guarded(rule: Any) -> Any:
    """A copy of `rule` that is tried only at the nodes `may_split_slices` admits."""
    tried = rule.try_rewrite

    def try_rewrite(model: Any, graph: Any, node: Any, **options: Any) -> Any:
        return tried(model, graph, node, **options) if may_split_slices(node) else None

    guarded = copy.copy(rule)
    guarded.try_rewrite = try_rewrite
    return guarded


def too_large_to_keep(node: Any, limit: int = OUTPUT_SIZE_LIMIT) -> bool:
    """Whether an output of `node` has an inferred static size over `limit` elements and
    over all of its constant inputs together (upstream would evaluate, then discard it)."""
    inputs = sum(value.const_value.size for value in node.inputs
                 if value is not None and value.const_value is not None)
    for value in node.outputs:
        shape = value.shape
        if shape is None or not all(isinstance(dim, int) for dim in shape):
            continue
        if math.prod(shape) > max(limit, inputs):
            return True
    return False


def bounded(should_fold: ShouldFold) -> ShouldFold:
    """`should_fold` (upstream's callback: True, False or None for its default rules),
    refusing first the nodes `too_large_to_keep`."""
    return lambda node: False if too_large_to_keep(node) else should_fold(node)


def optimize(model: Any) -> Any:
    """`onnxscript.optimizer.optimize(model)` with its rules tried where they can match
    and its folding `bounded`: a new ModelProto."""
    import onnxscript.optimizer
    from onnxscript import ir

    model_ir = ir.serde.deserialize_model(model)
    with linear_rewrite_rules():
        onnxscript.optimizer.optimize_ir(model_ir, should_fold=bounded(lambda node: None))
    return ir.serde.serialize_model(model_ir)


def fold_constants(model: Any, should_fold: ShouldFold) -> None:
    """`onnxscript.optimizer.fold_constants(model, onnx_shape_inference=True,
    should_fold=should_fold)`, `bounded`, in place."""
    import onnxscript.optimizer

    onnxscript.optimizer.fold_constants(model, onnx_shape_inference=True,
                                        should_fold=bounded(should_fold))


@contextlib.contextmanager
def linear_rewrite_rules() -> Iterator[None]:
    """Within: onnxscript's optimizer uses its default rules with `SlicesSplit` guarded
    (`_guarded`); the rules are restored on leaving."""
    from onnxscript import rewriter

    rules = rewriter._DEFAULT_REWRITE_RULES
    rewriter._DEFAULT_REWRITE_RULES = tuple(
        _guarded(rule) if rule.name == SLICES_SPLIT else rule for rule in rules)
    try:
        yield
    finally:
        rewriter._DEFAULT_REWRITE_RULES = rules
