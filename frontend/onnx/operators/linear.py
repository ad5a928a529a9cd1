"""MatMul, Gemm and Einsum: einsums (and a bias add)."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from pase.dialect import dnn
from pase.frontend.onnx.registry import importer
from pase.frontend.onnx.values import GraphState, Value


def contract(graph: GraphState, a: Value, b: Value, name: str) -> Value:
    """ONNX MatMul semantics over axis views `a` and `b` (ranks 1 and up)."""
    if len(a.axes) < 1 or len(b.axes) < 1:
        raise graph.error("MatMul of a scalar is not supported")
    k_a = graph.real_axis(a, len(a.axes) - 1)
    k_position = len(b.axes) - 2 if len(b.axes) >= 2 else 0
    k_b = graph.real_axis(b, k_position)
    if not graph.same(k_a, k_b):
        b = graph.rename(b, k_position, graph.dims.find(k_a), f"{name}_rhs")
    m = a.axes[-2] if len(a.axes) >= 2 else None
    n = b.axes[-1] if len(b.axes) >= 2 else None
    if m is not None and n is not None and graph.dims.find(m) == graph.dims.find(n):
        # Q·Kᵀ: both sides range over the sequence; the keys' becomes its own dim.
        b = graph.rename(b, len(b.axes) - 1, graph.fresh_like(n), f"{name}_keys")
        n = b.axes[-1]
    batch = graph.broadcast(a.axes[:-2], b.axes[:-2])
    axes = (*batch, *([m] if len(a.axes) >= 2 else []), *([n] if len(b.axes) >= 2 else []))
    result = [a for a in axes if a is not None]
    return Value(axes, graph.build(dnn.EinsumOp, [a.value, b.value], name,
                                   [graph.dims.find(d) for d in result]))


@importer("MatMul")
def matmul(graph: GraphState, node: Any) -> list[Value]:
    a = graph.tensor(node.input[0])
    b = graph.tensor(node.input[1], hints=("d",) * 8)
    return [contract(graph, a, b, node.output[0])]


@importer("Gemm", attributes=("alpha", "beta", "transA", "transB"))
def gemm(graph: GraphState, node: Any) -> list[Value]:
    alpha, beta = graph.attribute(node, "alpha", 1.0), graph.attribute(node, "beta", 1.0)
    if alpha != 1.0:
        raise graph.error(f"alpha={alpha:g} is not supported (only 1)")
    has_bias = len(node.input) > 2 and node.input[2]
    if has_bias and beta != 1.0:
        raise graph.error(f"beta={beta:g} is not supported (only 1)")
    a, b = graph.tensor(node.input[0]), graph.tensor(node.input[1], hints=("d", "d"))
    if len(a.axes) != 2 or len(b.axes) != 2:
        raise graph.error("Gemm takes matrices")
    if graph.attribute(node, "transA", 0):
        a = Value(a.axes[::-1], a.ssa)
    if graph.attribute(node, "transB", 0):
        b = Value(b.axes[::-1], b.ssa)
    name = node.output[0]
    if not has_bias:
        return [contract(graph, a, b, name)]
    product = contract(graph, a, b, f"{name}_matmul")
    bias = graph.tensor(node.input[2])
    return [graph.elementwise(dnn.AddOp, product, bias, name)]


def einsum_terms(graph: GraphState, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The equation's operand terms and result, each a string of one letter per axis:
    `...` spelled out in letters of its own (right-aligned, as numpy broadcasts it), an
    implicit result (no `->`) as numpy gives it (the letters used once, in order)."""
    equation = equation.replace(" ", "")
    given, arrow, result = equation.partition("->")
    terms = given.split(",")
    if len(terms) != len(ranks) or not all(re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", t)
                                           for t in [*terms, result]):
        raise graph.error(f"equation '{equation}' is not an einsum of {len(ranks)} operands")
    spare = [c for c in string.ascii_letters if c not in equation]
    widest = max((rank - len(term) + 3 for term, rank in zip(terms, ranks, strict=True)
                  if "..." in term), default=0)
    ellipsis = "".join(spare[:widest])
    spelled = [term.replace("...", ellipsis[widest - (rank - len(term) + 3):])
               for term, rank in zip(terms, ranks, strict=True)]
    for term, rank in zip(spelled, ranks, strict=True):
        if len(term) != rank:
            raise graph.error(f"equation '{equation}': term '{term}' does not name the "
                              f"{rank} axes of its operand")
        if len(set(term)) != len(term):
            raise graph.error(f"equation '{equation}': a letter repeated in one operand (a "
                              "diagonal) is not supported")
    if not arrow:
        counts = Counter("".join(spelled))
        result = "..." * bool(ellipsis) + "".join(
            sorted(c for c in counts if counts[c] == 1 and c not in ellipsis))
    return spelled, result.replace("...", ellipsis)


@importer("Einsum", attributes=("equation",))
def einsum(graph: GraphState, node: Any) -> list[Value]:
    """One `dnn.einsum`: each letter one dim (an operand's axis that another letter
    already holds is renamed, as MatMul renames the keys); a letter that only axes of
    size 1 have is no dim."""
    if not 1 <= len(node.input) <= 3:
        raise graph.error(f"an einsum of {len(node.input)} operands is not supported "
                          "(pase's einsum takes 1 to 3)")
    operands = [graph.tensor(name, hints=("d",) * 8) for name in node.input]
    equation = graph.attribute(node, "equation", b"").decode()
    terms, result = einsum_terms(graph, equation, [len(x.axes) for x in operands])
    letters: dict[str, int] = {}
    for index, (term, x) in enumerate(zip(terms, operands, strict=True)):
        for position, letter in enumerate(term):
            operands[index] = x = letter_axis(graph, x, position, letter, letters,
                                              f"{node.output[0]}_{letter}")
    if not any(letter in letters for letter in result):
        raise graph.error(f"equation '{equation}': its result is a scalar")
    axes = tuple(letters.get(letter) for letter in result)
    return [Value(axes, graph.build(dnn.EinsumOp, [x.value for x in operands],
                                    node.output[0], [d for d in axes if d is not None]))]


def letter_axis(graph: GraphState, x: Value, position: int, letter: str,
                letters: dict[str, int], name: str) -> Value:
    """`x` with its axis at `position` the dim of `letter` (recorded in `letters` on its
    first axis of size above 1): unified with it, or renamed to it (a dnn.reshape) when
    the axis is another letter's dim or a tensor holds both."""
    axis = x.axes[position]
    if axis is None:
        return x
    taken = {graph.dims.find(d): other for other, d in letters.items()}
    own = taken.get(graph.dims.find(axis))
    if letter not in letters:
        if own is None:
            letters[letter] = graph.dims.find(axis)
            return x
        letters[letter] = graph.fresh_like(axis)
        return graph.rename(x, position, letters[letter], name)
    target = letters[letter]
    if own == letter:
        return x
    if own is None and graph.same(axis, target):
        return x
    if graph.dims.size(axis) != graph.dims.size(target):
        raise graph.error(f"the axes of letter '{letter}' have sizes "
                          f"{graph.dims.size(axis)} and {graph.dims.size(target)}")
    return graph.rename(x, position, graph.dims.find(target), name)
