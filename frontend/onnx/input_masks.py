"""Masks computed from a model input (an `attention_mask`): one error naming the node.

pase's attention masks are constant: causal (`dnn.mask causal`) or none. A Hugging Face
model given an `attention_mask` computes its padding mask from that input (Cast, Gather
or GatherND, And with the causal mask, Where), which no folding makes constant; rather
than listing those ops as unsupported, the import stops at the first mask that uses it:

    check_input_masks(nodes, inputs, constant_of, "gpt2.onnx")
    # gpt2.onnx: error: node 'node_Where_95' (Where): its condition is computed from
    # the model's input 'ids_1' (as a padding mask is from an attention_mask) ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from pase.core.diagnostics import Diagnostic
from pase.frontend.onnx.values import node_label


def check_input_masks(nodes: list[Any], inputs: Iterable[str],
                      constant_of: Callable[[str], np.ndarray | None], filename: str) -> None:
    """Raise at the first Where whose condition is computed from a graph input."""
    sources: dict[str, set[str]] = {name: {name} for name in inputs}
    for node in nodes:
        used = set().union(*(sources.get(name, set()) for name in node.input))
        if node.op_type == "Where" and node.input and constant_of(node.input[0]) is None \
                and sources.get(node.input[0]):
            names = ", ".join(f"'{name}'" for name in sorted(sources[node.input[0]]))
            raise Diagnostic(
                f"node '{node_label(node)}' (Where): its condition is computed from the "
                f"model's input {names} (as a padding mask is from an attention_mask); pase "
                "reads masks that are constant (causal, or none): export the model without "
                "attention_mask, for batches of sequences of one length", filename)
        for name in node.output:
            if used:
                sources[name] = used
