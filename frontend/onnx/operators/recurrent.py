"""ONNX's LSTM as `dnn.lstm` and GRU as `dnn.gru`: one ONNX LSTM node (one layer, as
PyTorch exports each layer of an `nn.LSTM`) is one `dnn.lstm` of one layer; one GRU node
one `dnn.gru` of one layer (below).

ONNX keeps the input weights W `[1, 4h, e]`, the recurrent weights R `[1, 4h, h]` and the
biases B `[1, 8h]` (input and recurrent) apart, gate-major in the order i, o, f, c. pase's
`dnn.lstm` stacks them: one weight `[l, 2e, 4e]` (rows: input then recurrent; columns
unit-major, `4·u + gate`, gates i, f, g, o) and one bias `[l, 4e]`, the sum of ONNX's two
(they only ever appear summed). For unit u and pase gate k, the column is ONNX's row
`ONNX_GATE[k]·h + u`:

    >>> ONNX_GATE   # pase's i, f, g, o in ONNX's i, o, f, c
    (0, 2, 3, 1)

The layers of a multi-layer LSTM stay separate `dnn.lstm` ops, one per ONNX node: each is
searched on its own, and the graph reads as PyTorch's module does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pase.dialect import dnn
from pase.frontend.onnx.operators.conv import pad_axis
from pase.frontend.onnx.operators.more import slice_axis
from pase.frontend.onnx.operators.shape import join, reshape_to
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value

ONNX_GATE = (0, 2, 3, 1)
"""For pase's gates i, f, g, o: the block of ONNX's gate order i, o, f, c."""

DEFAULT_ACTIVATIONS = [b"Sigmoid", b"Tanh", b"Tanh"]

DIRECTIONS = {b"forward": 1, "forward": 1, b"bidirectional": 2, "bidirectional": 2}
"""The directions pase reads, and how many layers each is."""


def unit_major(gate_major: np.ndarray, hidden: int) -> np.ndarray:
    """ONNX's gate-major last axis (`gate·h + u`, gates i, o, f, c) as pase's unit-major
    one (`4·u + gate`, gates i, f, g, o).

    >>> unit_major(np.arange(8), 2).tolist()   # i: 0 1, o: 2 3, f: 4 5, c: 6 7
    [0, 4, 6, 2, 1, 5, 7, 3]
    """
    blocks = gate_major.reshape(*gate_major.shape[:-1], 4, hidden)[..., ONNX_GATE, :]
    return np.swapaxes(blocks, -1, -2).reshape(gate_major.shape)


def check_options(graph: GraphState, node: Any,
                  defaults: list[bytes] = DEFAULT_ACTIVATIONS) -> int:
    """The attributes pase's LSTM (and GRU) has: forward or bidirectional (its number of
    directions, returned), the default activations, no clip, no coupled input and forget
    gates."""
    direction = graph.attribute(node, "direction", b"forward")
    kind = node.op_type.lower()
    if direction not in DIRECTIONS:
        raise graph.error(f"direction={direction!r} is not supported (only forward and "
                          f"bidirectional; pase's {kind} runs forward)")
    activations = graph.attribute(node, "activations")
    if activations is not None and list(activations) != defaults * DIRECTIONS[direction]:
        raise graph.error(f"activations={list(activations)} are not supported (only "
                          f"{', '.join(a.decode() for a in defaults)})")
    for name in ("clip", "activation_alpha", "activation_beta"):
        if graph.attribute(node, name) is not None:
            raise graph.error(f"attribute '{name}' is not supported")
    if graph.attribute(node, "input_forget", 0):
        raise graph.error("input_forget=1 is not supported (pase's lstm has a forget gate "
                          "of its own)")
    return DIRECTIONS[direction]


def check_state(graph: GraphState, node: Any, steps: int) -> None:
    """No peepholes; full-length sequences; zero initial states (or none)."""
    inputs = list(node.input) + [""] * (8 - len(node.input))
    if inputs[7]:
        raise graph.error("peephole weights (P) are not supported")
    if inputs[4]:
        lengths = graph.constant(inputs[4], "the sequence lengths")
        if np.any(lengths != steps):
            raise graph.error("sequences shorter than the input's length are not supported")
    for name, what in ((inputs[5], "initial_h"), (inputs[6], "initial_c")):
        if name and np.any(graph.constant(name, f"the {what}") != 0):
            raise graph.error(f"a nonzero {what} is not supported (pase's "
                              f"{node.op_type.lower()} starts from zero states)")


def read_layer(graph: GraphState, node: Any, gates: int, directions: int
               ) -> tuple[Value, tuple[int, int, int], tuple[int, int], list[np.ndarray],
                          np.ndarray | None]:
    """An ONNX LSTM's (`gates` 4) or GRU's (3) input X, its (sequence, batch, features)
    axes, its (input, hidden) sizes, and per direction its W and R stacked as pase's
    [2 width, gates · width] (gate-major) and its B [2 · gates · width], all at the width
    `max(input, hidden)` (`padded_weights`), after `check_state`."""
    x = graph.tensor(node.input[0])
    if len(x.axes) != 3:
        raise graph.error("the input X must be [sequence, batch, features]")
    batch_first = bool(graph.attribute(node, "layout", 0))
    seq_axis, batch_axis = (graph.real_axis(x, p) for p in ((1, 0) if batch_first else (0, 1)))
    features = graph.real_axis(x, 2)
    size = graph.dims.size(features)
    w_onnx = graph.constant(node.input[1], "the input weights W")
    r_onnx = graph.constant(node.input[2], "the recurrent weights R")
    hidden = int(graph.attribute(node, "hidden_size", r_onnx.shape[-1]))
    if w_onnx.shape != (directions, gates * hidden, size) or \
            r_onnx.shape != (directions, gates * hidden, hidden):
        raise graph.error(f"W {list(w_onnx.shape)} and R {list(r_onnx.shape)} must be "
                          f"{[directions, gates * hidden, size]} and "
                          f"{[directions, gates * hidden, hidden]}")
    b_onnx = None
    if len(node.input) > 3 and node.input[3]:
        b_onnx = graph.constant(node.input[3], "the biases B")
        if b_onnx.shape != (directions, 2 * gates * hidden):
            raise graph.error(f"B {list(b_onnx.shape)} must be [{directions}, "
                              f"{2 * gates * hidden}]")
    check_state(graph, node, graph.dims.size(seq_axis))
    w, r, b = padded_weights(w_onnx, r_onnx, b_onnx, gates)
    return x, (seq_axis, batch_axis, features), (size, hidden), [
        np.concatenate([w[d].T, r[d].T], axis=0) for d in range(directions)], b


def padded_weights(w: np.ndarray, r: np.ndarray, b: np.ndarray | None, gates: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ONNX's W [dirs, gates·h, e], R [dirs, gates·h, h] and B [dirs, 2·gates·h] of a
    layer whose input size e and hidden size h differ, at pase's one width n = max(e, h)
    (`dnn.lstm` and `dnn.gru` have as many hidden units as input features): zeros for the
    inputs past e (the input is padded with zeros to n) and for the units past h, whose
    gates then read nothing (`nn.LSTM(num_layers=2, bidirectional=True)`: the second layer
    reads 2h features).

    Such a unit starts at the zero state and stays there: its gates see zero pre-
    activations, so its candidate (tanh) is 0 and its cell and output stay 0, for the
    LSTM as the GRU (whose new state is then half the old, 0). Its output is sliced away
    and its row of the recurrent weights is 0, so nothing reads it and every gradient of
    its weights, biases and recurrent row is exactly 0, as is that of the weights of the
    zero inputs: training keeps them at 0 (SGD, momentum, Adam) and the layer computes
    the ONNX node's every step. The search prices the n units.

    >>> w, r, b = padded_weights(np.ones((1, 4, 2)), np.ones((1, 4, 1)), None, 4)
    >>> w.shape, r.shape, r[0, :, 1].tolist(), w[0, 2:4].tolist()
    ((1, 8, 2), (1, 8, 2), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [[1.0, 1.0], [0.0, 0.0]])
    """
    directions, rows, size = w.shape
    hidden = rows // gates
    width = max(size, hidden)
    if width == size == hidden:
        return w, r, b
    padded_w = np.zeros((directions, gates, width, width), w.dtype)
    padded_w[:, :, :hidden, :size] = w.reshape(directions, gates, hidden, size)
    padded_r = np.zeros((directions, gates, width, width), r.dtype)
    padded_r[:, :, :hidden, :hidden] = r.reshape(directions, gates, hidden, hidden)
    padded_b = None
    if b is not None:
        padded_b = np.zeros((directions, 2, gates, width), b.dtype)
        padded_b[..., :hidden] = b.reshape(directions, 2, gates, hidden)
        padded_b = padded_b.reshape(directions, 2 * gates * width)
    return (padded_w.reshape(directions, gates * width, width),
            padded_r.reshape(directions, gates * width, width), padded_b)


def recurrent_layers(graph: GraphState, node: Any, gates: int, op: type[dnn.LayerOp],
                     regroup: Callable[[np.ndarray, int], np.ndarray],
                     biases: Callable[[np.ndarray, int], list[tuple[str, np.ndarray]]]
                     ) -> list[Value]:
    """One recurrent layer `op` per direction of an LSTM or GRU node: its weight the
    direction's W and R `regroup`ed (gate-major to unit-major), its biases (`biases` of
    the direction's row of B, each named by a suffix). A bidirectional node's backward
    layer reads the sequence reversed and its output is reversed back (`reverse_axis`);
    the directions are joined along the features, then split into Y's [2, hidden]. Where
    the input and hidden sizes differ, the layer is `padded_weights`' width: its input
    padded with zeros (`dnn.pad`), its output sliced to the hidden units (`dnn.slice`)."""
    directions = check_options(graph, node, GATE_ACTIVATIONS[gates])
    x, (seq_axis, batch_axis, features), (size, hidden), stacked, b_onnx = read_layer(
        graph, node, gates, directions)
    width = max(size, hidden)
    ordered = pad_axis(graph, Value((batch_axis, seq_axis, features), x.ssa), 2, 0,
                       width - size, "zeros", f"{node.output[0]}_padded")
    outputs = []
    for d in range(directions):
        name = node.output[0] if directions == 1 else f"{node.output[0]}_{DIRECTION[d]}"
        source = reverse_axis(graph, ordered, 1, f"{name}_reversed") if d else ordered
        graph.values[f"{name}_weight"] = Value((), constant=regroup(stacked[d], width)[None])
        weight = graph.tensor(f"{name}_weight", hints=("l", "k", "n"), keep=(0,))
        operands = [graph.ordered(source, name), weight.value]
        for suffix, bias in biases(b_onnx[d], width) if b_onnx is not None else []:
            operands.append(bias_operand(graph, weight, f"{name}_{suffix}",
                                         regroup(bias, width)))
        y = Value(source.axes, graph.build(op, operands, f"{name}_units" if hidden < width
                                           else name))
        y = slice_axis(graph, y, 2, 0, hidden, name)
        if d:
            y = reverse_axis(graph, y, 1, f"{name}_output")
            graph.same(seq_axis, graph.real_axis(y, 1))
        outputs.append(y)
    y = outputs[0]
    y_axes: tuple[int | None, ...] = (seq_axis, None, batch_axis, y.axes[2])
    if directions == 2:
        both = join(graph, outputs, 2, f"{node.output[0]}_joined")
        y = reshape_to(graph, both, [graph.dims.size(batch_axis), graph.dims.size(
            seq_axis), 2, hidden], f"{node.output[0]}_directions")
        y_axes = (seq_axis, y.axes[2], batch_axis, y.axes[3])
    if graph.attribute(node, "layout", 0):
        y_axes = (y_axes[2], y_axes[0], y_axes[1], y_axes[3])
    return [Value(y_axes, y.ssa)]


DIRECTION = ("forward", "backward")


def reverse_axis(graph: GraphState, x: Value, position: int, name: str) -> Value:
    """`x` with its entries along the axis at `position` in reverse order: one `dnn.slice`
    of each entry, joined last first (a `dnn.concat`)."""
    n = graph.dims.size(graph.real_axis(x, position))
    if n == 1:
        return x
    steps = [slice_axis(graph, x, position, i, 1, f"{name}_step{i}") for i in range(n)]
    return join(graph, steps[::-1], position, name)


def bias_operand(graph: GraphState, weight: Any, name: str, bias: np.ndarray) -> Any:
    """The parameter `name` (`l, n`) holding `bias`, its axes those of `weight`'s layers
    and units."""
    graph.values[name] = Value((), constant=bias[None])
    tensor = graph.tensor(name, hints=("l", "n"), keep=(0,))
    for bias_axis, weight_axis in ((0, 0), (1, 2)):
        graph.same(graph.real_axis(tensor, bias_axis), graph.real_axis(weight, weight_axis))
    return tensor.value


@importer("LSTM", attributes=("hidden_size", "direction", "layout", "input_forget",
                              "activations", "clip", "activation_alpha", "activation_beta"))
def lstm(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.lstm` of one layer per direction, its weight and bias the node's regrouped (the
    bias the sum of ONNX's two); Y only (a use of Y_h or Y_c is an error naming it)."""
    return recurrent_layers(graph, node, 4, dnn.LstmOp, unit_major, lambda b, size: [
        ("bias", b[:4 * size] + b[4 * size:])])


# --- GRU ---------------------------------------------------------------------------------
#
# ONNX's GRU keeps W `[1, 3h, e]`, R `[1, 3h, h]` and B `[1, 6h]` (input then recurrent
# biases) gate-major in the order z, r, h; pase's `dnn.gru` stacks W and R into one weight
# `[l, 2e, 3e]` (columns unit-major, `3·u + gate`, gates r, z, n) and keeps the two biases
# apart (the recurrent bias of n is inside the reset gate's product, so they do not sum).
# PyTorch's nn.GRU applies the reset gate after the recurrent product and its bias, which
# ONNX spells `linear_before_reset=1`; the default 0 (reset before the product) is another
# layer, and one error.

GRU_GATE = (1, 0, 2)
"""For pase's gates r, z, n: the block of ONNX's gate order z, r, h."""

GRU_ACTIVATIONS = [b"Sigmoid", b"Tanh"]


def gru_unit_major(gate_major: np.ndarray, hidden: int) -> np.ndarray:
    """ONNX's gate-major last axis (`gate·h + u`, gates z, r, h) as pase's unit-major one
    (`3·u + gate`, gates r, z, n).

    >>> gru_unit_major(np.arange(6), 2).tolist()   # z: 0 1, r: 2 3, h: 4 5
    [2, 0, 4, 3, 1, 5]
    """
    blocks = gate_major.reshape(*gate_major.shape[:-1], 3, hidden)[..., GRU_GATE, :]
    return np.swapaxes(blocks, -1, -2).reshape(gate_major.shape)


@importer("GRU", attributes=("hidden_size", "direction", "layout", "linear_before_reset",
                             "activations", "clip", "activation_alpha", "activation_beta"))
def gru(graph: GraphState, node: Any) -> list[Value]:
    """`dnn.gru` of one layer per direction, its weight the node's W and R regrouped, its
    two biases B's halves; Y only (a use of Y_h is an error naming it)."""
    if not graph.attribute(node, "linear_before_reset", 0):
        raise graph.error("linear_before_reset=0 is not supported: pase's gru applies the "
                          "reset gate after the recurrent product, as PyTorch's nn.GRU "
                          "(linear_before_reset=1)")
    return recurrent_layers(graph, node, 3, dnn.GruOp, gru_unit_major, lambda b, size: [
        ("bias_input", b[:3 * size]), ("bias_hidden", b[3 * size:])])


GATE_ACTIVATIONS = {4: DEFAULT_ACTIVATIONS, 3: GRU_ACTIVATIONS}
