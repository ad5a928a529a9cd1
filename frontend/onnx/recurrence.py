"""A recurrent layer unrolled over its time steps, named when its import fails.

The dynamo exporter writes `nn.RNN` (tanh or relu) as torch's decomposition of it: the
sequence's input projection split into its steps (`unbind`: a Split, a Squeeze per step),
then per step `h = tanh(h W + b + x_t)`, each step reading the one before. Its first
Squeeze is where the import stops (a step's axis of size 1 is a dim of its own in pase),
and an error there says nothing of the RNN. `unrolled_recurrence` finds that shape: one
Split of n >= 2 outputs, each reaching an activation through a few layout and linear
nodes, each activation reaching the next step's the same way.

    construct = unrolled_recurrence(nodes)  # None, or what to say instead
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pase.frontend.onnx.values import node_label

ACTIVATIONS = ("Tanh", "Relu")
"""The nonlinearities of nn.RNN."""

THROUGH = frozenset({"Squeeze", "Unsqueeze", "Reshape", "Transpose", "Add", "MatMul", "Gemm",
                     "Identity", "Cast"})
"""The nodes between a step's input and its activation, and between two steps."""

REACH = 4
"""How many such nodes a path may cross (a step is Squeeze, MatMul, Add, Add at most)."""


def unrolled_recurrence(nodes: list[Any]) -> str | None:
    """What the graph's unrolled recurrent layer is, for a diagnostic; None if it has
    none."""
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(node)
    for split in nodes:
        outputs = [name for name in split.output if name]
        if split.op_type != "Split" or len(outputs) < 2:
            continue
        steps = [_reached(consumers, [name], None) for name in outputs]
        if any(step is None for step in steps) or len({id(s) for s in steps}) < len(steps):
            continue
        if all(_reached(consumers, list(before.output), after) is after
               for before, after in zip(steps, steps[1:], strict=False)):
            return (f"node '{node_label(split)}' (Split) and what follows it are a "
                    f"recurrent layer unrolled over {len(steps)} time steps, a "
                    f"{steps[0].op_type} per step reading the step before (nn.RNN as "
                    "torch.onnx.export(dynamo=True) writes it); pase has no plain RNN "
                    "layer: its recurrent layers are ONNX LSTM and GRU nodes (nn.LSTM, "
                    "nn.GRU)")
    return None


def _reached(consumers: dict[str, list[Any]], start: list[str], target: Any) -> Any:
    """The first activation (or `target`, when given: it, if reached) that the values
    `start` reach through at most `REACH` nodes of `THROUGH`, breadth first."""
    queue = deque((name, 0) for name in start)
    seen: set[int] = set()
    while queue:
        name, depth = queue.popleft()
        for node in consumers.get(name, []):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type in ACTIVATIONS and (target is None or node is target):
                return node
            if node.op_type in THROUGH and depth < REACH:
                queue.extend((output, depth + 1) for output in node.output if output)
    return None
