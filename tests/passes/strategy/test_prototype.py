"""compat=pase against an independent reference of PaSE's prototype cost model.

The reference below restates PASE-PROTOTYPE.md §2-3 as plain scalar Python over each test
graph, written out by hand in the prototype's terms (its op kinds, GEMM dims, tensors and
edges); it shares no code with `pase.passes.strategy`. Its unit is the prototype's
FLOP-equivalent; pase's `pase-default` seconds × 1e13 must equal it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from math import prod

import pytest

from pase.dialect.dnn.layers import LAYER_OPS
from pase.frontend import parse_text
from pase.passes.strategy import SearchOptions, build_problem, solve
from pase.passes.strategy.prototype import FORMULAS

R = 5000.0
"""The prototype's default machine constant: FLOP-equivalents per communicated word."""
UNITS = 1e13
"""FLOP-equivalents per second of pase-default."""
Config = dict[str, int]


def all_reduce(words: float, group: int) -> float:
    return 0.0 if group == 1 else R * 2 * (group - 1) / group * words


@dataclass
class Op:
    """One prototype vertex: its dims (name, size, splittable) and its cost."""

    dims: list[tuple[str, int, bool]]
    cost: Callable[[Config], float]


def local(sizes: dict[str, int], config: Config, dims: list[str]) -> float:
    return prod(sizes[d] / config.get(d, 1) for d in dims)


def split(config: Config, dims: list[str]) -> int:
    return prod(config.get(d, 1) for d in dims)


def gemm(sizes: dict[str, int], batch: list[str], m: list[str], n: list[str],
         k: list[str]) -> Callable[[Config], float]:
    def cost(c: Config) -> float:
        bl, ml, nl, kl = (local(sizes, c, dims) for dims in (batch, m, n, k))
        return bl * (3 * ml * nl * kl + all_reduce(ml * nl, split(c, k))
                     + all_reduce(ml * kl, split(c, n)) + all_reduce(nl * kl, split(c, m)))
    return cost


def elementwise(sizes: dict[str, int], dims: list[str]) -> Callable[[Config], float]:
    return lambda c: local(sizes, c, dims)


def norm(sizes: dict[str, int], dims: list[str], axis: str) -> Callable[[Config], float]:
    def cost(c: Config) -> float:
        elements, axis_local = local(sizes, c, dims), sizes[axis] / c.get(axis, 1)
        others = split(c, [d for d in dims if d != axis])
        return (16 * elements + 4 * all_reduce(elements / axis_local, c.get(axis, 1))
                + 4 * all_reduce(axis_local, others))
    return cost


def softmax(sizes: dict[str, int], dims: list[str], axis: str) -> Callable[[Config], float]:
    def cost(c: Config) -> float:
        elements, rows = local(sizes, c, dims), local(sizes, c, [d for d in dims if d != axis])
        group = c.get(axis, 1)
        return ((4 + sizes[axis]) * elements + 2 * all_reduce(rows, group)
                + all_reduce(rows * sizes[axis], group))
    return cost


def cross_entropy(sizes: dict[str, int], dims: list[str],
                  classes: str) -> Callable[[Config], float]:
    def cost(c: Config) -> float:
        rows = local(sizes, c, [d for d in dims if d != classes])
        extra = R * 2 * rows if c.get(classes, 1) > 1 else 0.0
        return 4 * local(sizes, c, dims) + 2 * rows + extra
    return cost


def reduce_mean(sizes: dict[str, int], dims: list[str],
                axes: list[str]) -> Callable[[Config], float]:
    return lambda c: all_reduce(local(sizes, c, dims), split(c, axes))


def pooling(sizes: dict[str, int], dims: list[str]) -> Callable[[Config], float]:
    # No halo: pase never splits a pooling's height and width (docs/cost-model.md).
    return lambda c: local(sizes, c, dims)


@dataclass
class Tensor:
    """An edge: the tensor's shape and, per tensor dim, the producer's and the consumer's
    iteration dim that splits it (None: never split)."""

    producer: str
    consumer: str
    shape: list[int]
    held: list[str | None]
    needed: list[str | None]

    def cost(self, held: Config, needed: Config) -> float:
        s = [held.get(d, 1) if d else 1 for d in self.held]
        q = [needed.get(d, 1) if d else 1 for d in self.needed]
        block = prod(t / qi for t, qi in zip(self.shape, q, strict=True))
        overlap = 0.0 if prod(q) > prod(s) else prod(
            min(t / si, t / qi) for t, si, qi in zip(self.shape, s, q, strict=True))
        return 2 * R * max(0.0, block - overlap)


def reference_configs(op: Op, devices: int, cutoff: int = 4) -> list[Config]:
    """Every divisor e of each dim with d/e >= cutoff ({1} if none), product <= p."""
    choices = []
    for _, size, splittable in op.dims:
        factors = [e for e in range(1, size + 1) if size % e == 0 and size // e >= cutoff]
        choices.append(factors if splittable and factors else [1])
    return [{name: e for (name, _, _), e in zip(op.dims, factors, strict=True) if e > 1}
            for factors in product(*choices) if prod(factors) <= devices]


def reference_cost(ops: dict[str, Op], tensors: list[Tensor], strategy: dict[str, Config]
                   ) -> float:
    return (sum(op.cost(strategy[name]) for name, op in ops.items())
            + sum(t.cost(strategy[t.producer], strategy[t.consumer]) for t in tensors))


def dims_of(sizes: dict[str, int], names: str, fixed: str = "") -> list[tuple[str, int, bool]]:
    return [(d, sizes[d], d not in fixed.split()) for d in names.split()]


FC3 = """
graph @fc3(b = 128, d = 4096, h1 = 4096, h2 = 4096, c = 1024) {
  %x  = input [b, d]
  %t  = input [b] : i32
  %w1 = param [d, h1]
  %y1 = einsum %x, %w1 -> [b, h1]
  %w2 = param [h1, h2]
  %y2 = einsum %y1, %w2 -> [b, h2]
  %w3 = param [h2, c]
  %y3 = einsum %y2, %w3 -> [b, c]
  %l  = softmax_cross_entropy %y3, %t over c
  return %l
}
"""


def fc3() -> tuple[dict[str, Op], list[Tensor]]:
    s = {"b": 128, "d": 4096, "h1": 4096, "h2": 4096, "c": 1024}
    ops = {
        "y1": Op(dims_of(s, "b h1 d"), gemm(s, [], ["b"], ["h1"], ["d"])),
        "y2": Op(dims_of(s, "b h2 h1"), gemm(s, [], ["b"], ["h2"], ["h1"])),
        "y3": Op(dims_of(s, "b c h2"), gemm(s, [], ["b"], ["c"], ["h2"])),
        "l": Op(dims_of(s, "b c"), cross_entropy(s, ["b", "c"], "c")),
    }
    tensors = [Tensor("y1", "y2", [128, 4096], ["b", "h1"], ["b", "h1"]),
               Tensor("y2", "y3", [128, 4096], ["b", "h2"], ["b", "h2"]),
               Tensor("y3", "l", [128, 1024], ["b", "c"], ["b", "c"])]
    return ops, tensors


CNN = """
graph @cnn(b = 16, c = 3, h = 16, w = 16, k = 8, kh = 3, kw = 3, ho = 16, wo = 16,
           po = 8, qo = 8, n = 12) {
  %x = input [b, c, h, w]
  %t = input [b] : i32
  %f = param [k, c, kh, kw]
  %y = conv2d %x, %f padding 1 -> [b, k, ho, wo]
  %g = param [k]
  %beta = param [k]
  %bn = batchnorm %y, %g, %beta over [b, ho, wo]
  %r = relu %bn
  %p = pool2d max %r window [2, 1] stride 2 -> [b, k, po, qo]
  %m = reduce mean %p over [po, qo]
  %v = param [k, n]
  %z = einsum %m, %v -> [b, n]
  %l = softmax_cross_entropy %z, %t over n
  return %l
}
"""


def cnn() -> tuple[dict[str, Op], list[Tensor]]:
    s = {"b": 16, "c": 3, "k": 8, "kh": 3, "kw": 3, "ho": 16, "wo": 16, "po": 8, "qo": 8,
         "n": 12}
    act = ["b", "k", "ho", "wo"]
    ops = {
        # the prototype's Conv: h_out, w_out forced unsplit; r, s = 3 < cutoff 4
        "y": Op(dims_of(s, "b c ho wo kh kw k", fixed="ho wo"),
                gemm(s, [], ["b", "ho", "wo"], ["k"], ["c", "kh", "kw"])),
        # BatchNorm is Norm on axis 0
        "bn": Op(dims_of(s, "b k ho wo"), norm(s, act, "b")),
        "r": Op(dims_of(s, "b k ho wo"), elementwise(s, act)),
        "p": Op(dims_of(s, "b k po qo", fixed="po qo"), pooling(s, ["b", "k", "po", "qo"])),
        "m": Op(dims_of(s, "b k po qo"), reduce_mean(s, ["b", "k", "po", "qo"], ["po", "qo"])),
        "z": Op(dims_of(s, "b n k"), gemm(s, [], ["b"], ["n"], ["k"])),
        "l": Op(dims_of(s, "b n"), cross_entropy(s, ["b", "n"], "n")),
    }
    tensors = [Tensor("y", "bn", [16, 8, 16, 16], act, act),
               Tensor("bn", "r", [16, 8, 16, 16], act, act),
               Tensor("r", "p", [16, 8, 16, 16], act, ["b", "k", None, None]),
               Tensor("p", "m", [16, 8, 8, 8], ["b", "k", "po", "qo"], ["b", "k", "po", "qo"]),
               Tensor("m", "z", [16, 8], ["b", "k"], ["b", "k"]),
               Tensor("z", "l", [16, 12], ["b", "n"], ["b", "n"])]
    return ops, tensors


ATTENTION = """
graph @attention(b = 4, s = 16, t = 16, d = 32, e = 32, c = 8) {
  %x = input [b, s, d]
  %mem = input [b, t, d]
  %lab = input [b, s] : i32
  %wq = param [d, e]
  %q = einsum %x, %wq -> [b, s, e]
  %wk = param [d, e]
  %k = einsum %mem, %wk -> [b, t, e]
  %wv = param [d, e]
  %v = einsum %mem, %wv -> [b, t, e]
  %sc = einsum %q, %k -> [b, s, t]
  %a = softmax %sc over t
  %o = einsum %a, %v -> [b, s, e]
  %n = layernorm %o over e
  %wo = param [e, c]
  %z = einsum %n, %wo -> [b, s, c]
  %l = softmax_cross_entropy %z, %lab over c
  return %l
}
"""


def attention() -> tuple[dict[str, Op], list[Tensor]]:
    s = {"b": 4, "s": 16, "t": 16, "d": 32, "e": 32, "c": 8}
    ops = {
        "q": Op(dims_of(s, "b s e d"), gemm(s, [], ["b", "s"], ["e"], ["d"])),
        "k": Op(dims_of(s, "b t e d"), gemm(s, [], ["b", "t"], ["e"], ["d"])),
        "v": Op(dims_of(s, "b t e d"), gemm(s, [], ["b", "t"], ["e"], ["d"])),
        "sc": Op(dims_of(s, "b s t e"), gemm(s, ["b"], ["s"], ["t"], ["e"])),
        "a": Op(dims_of(s, "b s t"), softmax(s, ["b", "s", "t"], "t")),
        "o": Op(dims_of(s, "b s e t"), gemm(s, ["b"], ["s"], ["e"], ["t"])),
        "n": Op(dims_of(s, "b s e"), norm(s, ["b", "s", "e"], "e")),
        "z": Op(dims_of(s, "b s c e"), gemm(s, [], ["b", "s"], ["c"], ["e"])),
        "l": Op(dims_of(s, "b s c"), cross_entropy(s, ["b", "s", "c"], "c")),
    }
    bse, bte, bst = ["b", "s", "e"], ["b", "t", "e"], ["b", "s", "t"]
    # The memory read by k and v is an input: no edge between them.
    tensors = [Tensor("q", "sc", [4, 16, 32], bse, bse), Tensor("k", "sc", [4, 16, 32], bte, bte),
               Tensor("sc", "a", [4, 16, 16], bst, bst), Tensor("a", "o", [4, 16, 16], bst, bst),
               Tensor("v", "o", [4, 16, 32], bte, bte), Tensor("o", "n", [4, 16, 32], bse, bse),
               Tensor("n", "z", [4, 16, 32], bse, bse),
               Tensor("z", "l", [4, 16, 8], ["b", "s", "c"], ["b", "s", "c"])]
    return ops, tensors


GRAPHS = [(FC3, fc3, 8), (CNN, cnn, 8), (ATTENTION, attention, 4)]


@pytest.mark.parametrize(("source", "reference", "devices"), GRAPHS)
def test_the_configuration_space_is_the_prototypes(
        source: str, reference: Callable[[], tuple[dict[str, Op], list[Tensor]]],
        devices: int) -> None:
    problem = build_problem(parse_text(source), devices, options=SearchOptions(compat="pase"))
    ops, _ = reference()
    assert problem.layers == list(ops)
    for name, op in ops.items():
        expected = sorted(sorted(c.items()) for c in reference_configs(op, devices))
        assert sorted(sorted(c.items()) for c in problem.configs(name)) == expected, name


@pytest.mark.parametrize(("source", "reference", "devices"), GRAPHS)
def test_random_strategies_cost_what_the_prototype_charges(
        source: str, reference: Callable[[], tuple[dict[str, Op], list[Tensor]]],
        devices: int) -> None:
    problem = build_problem(parse_text(source), devices, options=SearchOptions(compat="pase"))
    ops, tensors = reference()
    pick = random.Random(13)
    for _ in range(200):
        strategy = {name: pick.choice(problem.configs(name)) for name in problem.layers}
        assert problem.cost(strategy) * UNITS == pytest.approx(
            reference_cost(ops, tensors, strategy), rel=1e-9)


@pytest.mark.parametrize(("source", "reference", "devices"),
                         [(FC3, fc3, 8), (CNN, cnn, 2), (ATTENTION, attention, 2)])
def test_the_optimum_is_the_exhaustive_one(
        source: str, reference: Callable[[], tuple[dict[str, Op], list[Tensor]]],
        devices: int) -> None:
    problem = build_problem(parse_text(source), devices, options=SearchOptions(compat="pase"))
    dp, exhaustive = solve(problem), solve(problem, SearchOptions(method="exhaustive"))
    assert dp.cost == pytest.approx(exhaustive.cost, rel=1e-12)
    ops, tensors = reference()
    assert reference_cost(ops, tensors, dp.assignment) == pytest.approx(dp.cost * UNITS,
                                                                        rel=1e-9)


def test_the_fc_chain_optimum_is_the_references() -> None:
    # The reference's own exhaustive minimum over its own configurations.
    ops, tensors = fc3()
    spaces = [reference_configs(op, 4) for op in ops.values()]
    best = min(reference_cost(ops, tensors, dict(zip(ops, choice, strict=True)))
               for choice in product(*spaces))
    problem = build_problem(parse_text(FC3), 4, options=SearchOptions(compat="pase"))
    assert solve(problem).cost * UNITS == pytest.approx(best, rel=1e-9)


def test_the_first_layer_pays_its_input_gradient_all_reduce() -> None:
    # y1's input is data, yet splitting h1 charges AR(m'k', p_n): 2·(1/2)·128·4096 words.
    problem = build_problem(parse_text(FC3), 8, options=SearchOptions(compat="pase"))
    unsplit = {name: {} for name in problem.layers}
    split_h1 = {**unsplit, "y1": {"h1": 2}}
    extra = problem.cost(split_h1) - problem.cost(unsplit)
    compute_saved = 3 * 128 * 4096 * 4096 / 2
    # y1 -> y2 now moves 2·(128·4096 − 128·2048) words.
    expected = R * (128 * 4096) + 2 * R * 128 * 2048 - compute_saved
    assert extra * UNITS == pytest.approx(expected, rel=1e-9)


def test_every_layer_kind_has_a_prototype_formula() -> None:
    assert {op.name.removeprefix("dnn.") for op in LAYER_OPS} == set(FORMULAS)
