"""The layer-op interface: each layer's iteration space, built from `.dnn` source."""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context

from pase.core.space import Collective, IterationSpace, IterDim, Statistics
from pase.dialect import dnn
from pase.frontend import parse_text
from pase.passes.autodiff import AutodiffPass


def layer(header: str, body: str) -> dnn.LayerOp:
    """The last layer of a one-graph program (`return` of it is added)."""
    last = re.findall(r"%(\w+) =", body)[-1]
    module = parse_text(f"graph @g({header}) {{\n{body}\n  return %{last}\n}}", "space.dnn")
    graph = module.ops.first
    assert isinstance(graph, dnn.GraphOp)
    return graph.layers[-1]


def summary(space: IterationSpace) -> list[tuple[str, int, bool, bool]]:
    return [(d.name, d.size, d.splittable, d.reduction) for d in space.dims]


def test_einsum_sums_the_dims_absent_from_the_result():
    space = layer("b = 8, d = 16, h = 32", """
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]""").iteration_space()
    # Result dims first, in result order, then the summed ones.
    assert summary(space) == [("b", 8, True, False), ("h", 32, True, False),
                              ("d", 16, True, True)]
    assert space.operands == (("b", "d"), ("d", "h"))
    assert space.result == ("b", "h")
    assert (space.flops_forward, space.flops_backward) == (2.0, 4.0)
    assert space.points == 8 * 16 * 32


def test_einsum_of_three_operands_and_of_one():
    three = layer("b = 2, s = 3, d = 4, h = 5", """
  %x = input [b, s, d]
  %w = param [d, h]
  %g = param [h]
  %y = einsum %x, %w, %g -> [b, h]""").iteration_space()
    assert three.names == ("b", "h", "s", "d")
    assert [d.name for d in three.dims if d.reduction] == ["s", "d"]
    assert three.operands == (("b", "s", "d"), ("d", "h"), ("h",))
    # Contractions leave partial sums over their reduction dims.
    assert (three.partial, three.statistics, three.kernel_reduced_grads) == (("s", "d"), None, ())
    transpose = layer("b = 2, d = 4", """
  %x = input [b, d]
  %t = einsum %x -> [d, b]""").iteration_space()
    assert summary(transpose) == [("d", 4, True, False), ("b", 2, True, False)]
    assert transpose.operands == (("b", "d"),)


def test_conv2d_splits_batch_and_channels_only():
    space = layer("b = 8, ci = 3, co = 4, h = 10, w = 10, r = 3, s = 3, ho = 8, wo = 8", """
  %x = input [b, ci, h, w]
  %f = param [co, ci, r, s]
  %y = conv2d %x, %f -> [b, co, ho, wo]""").iteration_space()
    assert summary(space) == [
        ("b", 8, True, False), ("co", 4, True, False), ("ci", 3, True, True),
        ("ho", 8, False, False), ("wo", 8, False, False),
        ("r", 3, False, True), ("s", 3, False, True)]
    # The input's height and width follow output and filter positions together.
    assert space.operands == (("b", "ci", None, None), ("co", "ci", "r", "s"))
    assert space.result == ("b", "co", "ho", "wo")
    assert [d.name for d in space.splittable] == ["b", "co", "ci"]
    assert (space.partial, space.statistics, space.kernel_reduced_grads) == (
        ("ci", "r", "s"), None, ())


def test_grouped_conv2d_splits_output_channels_and_with_them_x_when_aligned():
    # Depthwise: one output channel per group, so x's channels split with the outputs.
    depthwise = layer("b = 8, c = 4, h = 6, w = 6, one = 1, r = 3, s = 3", """
  %x = input [b, c, h, w]
  %f = param [c, one, r, s]
  %y = conv2d %x, %f padding 1 groups 4 -> [b, c, h, w]""").iteration_space()
    assert summary(depthwise)[:3] == [("b", 8, True, False), ("c", 4, True, False),
                                      ("one", 1, False, True)]
    assert depthwise.operands == (("b", "c", None, None), ("c", "one", "r", "s"))
    assert [d.name for d in depthwise.splittable] == ["b", "c"]
    assert depthwise.points == 8 * 4 * 1 * 6 * 6 * 3 * 3
    # Two outputs per group: a block of co may start inside a group, so x stays whole.
    grouped = layer("b = 8, ci = 4, co = 8, c2 = 2, h = 6, w = 6, r = 1, s = 1", """
  %x = input [b, ci, h, w]
  %f = param [co, c2, r, s]
  %y = conv2d %x, %f groups 2 -> [b, co, h, w]""").iteration_space()
    assert grouped.operands == (("b", None, None, None), ("co", "c2", "r", "s"))
    assert [d.name for d in grouped.splittable] == ["b", "co"]
    assert grouped.partial == ("c2", "r", "s")


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_splits_batch_and_channels_only(kind: str):
    pool = layer("b = 8, c = 4, h = 8, w = 8, ho = 5, wo = 4", f"""
  %x = input [b, c, h, w]
  %y = pool2d {kind} %x window [2, 3] stride 2 padding 1 -> [b, c, ho, wo]""")
    space = pool.iteration_space()
    assert summary(space) == [("b", 8, True, False), ("c", 4, True, False),
                              ("ho", 5, False, False), ("wo", 4, False, False)]
    assert space.operands == (("b", "c", None, None),)
    assert space.result == ("b", "c", "ho", "wo")
    # One operation per window element, forward and backward.
    assert (space.flops_forward, space.flops_backward) == (6.0, 6.0)


def test_embedding_iterates_over_the_vocabulary():
    space = layer("b = 8, s = 6, v = 100, e = 16", """
  %ids = input [b, s] : i32
  %table = param [v, e]
  %y = embedding %ids, %table""").iteration_space()
    assert summary(space) == [("b", 8, True, False), ("s", 6, True, False),
                              ("v", 100, True, True), ("e", 16, True, False)]
    assert space.operands == (("b", "s"), ("v", "e"))
    assert space.result == ("b", "s", "e")
    # One copied row element per id: FLOPs per point are 1/vocabulary.
    assert space.flops_forward == pytest.approx(1 / 100)
    assert space.points * space.flops_forward == pytest.approx(8 * 6 * 16)
    assert (space.partial, space.statistics, space.kernel_reduced_grads) == (("v",), None, ())


@pytest.mark.parametrize(
    ("header", "source_dims", "result_dims", "splittable", "operand"),
    [
        # merge s and e into se: se cannot split; b passes through
        ("b = 2, s = 3, e = 4, se = 12", "b, s, e", "b, se", ["b"], ("b", None, None)),
        # split se into s and e
        ("b = 2, s = 3, e = 4, se = 12", "b, se", "b, s, e", ["b"], ("b", None)),
        # rename s to t: a one-to-one group splits like a pass-through dim
        ("b = 2, s = 3, t = 3, e = 4", "b, s, e", "b, t, e", ["b", "t", "e"], ("b", "t", "e")),
        # merge everything
        ("b = 2, s = 3, n = 6", "b, s", "n", [], (None, None)),
    ],
)
def test_reshape_splits_only_dims_it_keeps_whole(header: str, source_dims: str,
                                                   result_dims: str, splittable: list[str],
                                                   operand: tuple[str | None, ...]):
    space = layer(header, f"""
  %x = input [{source_dims}]
  %y = reshape %x -> [{result_dims}]""").iteration_space()
    assert space.names == tuple(d.strip() for d in result_dims.split(","))
    assert [d.name for d in space.splittable] == splittable
    assert not any(d.reduction for d in space.dims)
    assert space.operands == (operand,)
    assert space.result == space.names


def test_concat_does_not_split_its_axis():
    space = layer("b = 2, c1 = 3, c2 = 5, c3 = 1, c = 9, h = 4", """
  %x = input [b, c1, h]
  %y = input [b, c2, h]
  %z = input [b, c3, h]
  %cat = concat %x, %y, %z -> [b, c, h]""").iteration_space()
    assert summary(space) == [("b", 2, True, False), ("c", 9, False, False),
                              ("h", 4, True, False)]
    assert space.operands == (("b", None, "h"),) * 3
    assert (space.flops_forward, space.flops_backward) == (0.0, 0.0)


def test_elementwise_broadcast_operand_maps():
    space = layer("b = 4, s = 3, d = 8", """
  %x = input [b, s, d]
  %bias = param [d]
  %y = add %bias, %x""").iteration_space()
    assert space.names == ("b", "s", "d")
    assert space.operands == (("d",), ("b", "s", "d"))
    assert all(d.splittable and not d.reduction for d in space.dims)


def test_reduce_and_loss_mark_reductions():
    reduce = layer("b = 4, s = 3, d = 8", """
  %x = input [b, s, d]
  %y = reduce mean %x over [d, s]""").iteration_space()
    assert summary(reduce) == [("b", 4, True, False), ("s", 3, True, True),
                               ("d", 8, True, True)]
    assert reduce.result == ("b",)
    assert (reduce.partial, reduce.statistics) == (("s", "d"), None)  # in the operand's order
    loss = layer("b = 4, c = 10", """
  %z = input [b, c]
  %t = input [b] : i32
  %l = softmax_cross_entropy %z, %t over c""").iteration_space()
    assert summary(loss) == [("b", 4, True, True), ("c", 10, True, True)]
    assert loss.operands == (("b", "c"), ("b",))
    assert loss.result == ()


def test_iteration_space_helpers():
    space = IterationSpace((IterDim("b", 8), IterDim("h", 4, splittable=False),
                            IterDim("d", 2, reduction=True)),
                           (("b", "d"),), ("b", "h"), 2.0, 4.0)
    assert space.names == ("b", "h", "d")
    assert space.dim("h") == IterDim("h", 4, splittable=False)
    assert [d.name for d in space.splittable] == ["b", "d"]
    assert space.points == 64
    assert (space.partial, space.statistics, space.kernel_reduced_grads) == ((), None, ())
    assert space.stats_dims == ()
    with pytest.raises(KeyError):
        space.dim("q")


# -- distribution facts: each op's record -------------------------------------------


def test_elementwise_and_shape_ops_have_no_distribution_facts():
    for body in ("relu %x", "add %x, %x", "reshape %x -> [b, e]", "concat %x, %x -> [m, d]"):
        space = layer("b = 2, d = 4, e = 4, m = 4", f"""
  %x = input [b, d]
  %y = {body}""").iteration_space()
        assert (space.partial, space.statistics, space.kernel_reduced_grads) == ((), None, ())


def test_softmax_exchanges_two_statistics_forward_and_one_backward():
    space = layer("b = 4, s = 3, t = 8", """
  %x = input [b, s, t]
  %y = softmax %x over [t]""").iteration_space()
    assert space.partial == ()
    assert space.statistics == Statistics(("t",), ("b", "s"), (
        Collective("all_reduce", 1, count=2), Collective("all_reduce", 1, backward=True)))
    assert space.stats_dims == ("t",)


@pytest.mark.parametrize(("op", "over", "rows"), [
    ("layernorm", "[h, w]", ("b",)), ("batchnorm", "[b]", ("h", "w"))])
def test_norms_exchange_two_sums_each_way(op: str, over: str, rows: tuple[str, ...]):
    space = layer("b = 4, h = 3, w = 5", f"""
  %x = input [b, h, w]
  %y = {op} %x over {over}""").iteration_space()
    assert space.statistics == Statistics(
        tuple(over.strip("[]").split(", ")), rows,
        (Collective("all_reduce", 2), Collective("all_reduce", 2, backward=True)))
    assert space.partial == ()


def test_norm_operands_keep_their_own_dim_order():
    space = layer("b = 4, h = 3, w = 5", """
  %x = input [b, h, w]
  %g = param [h, w]
  %beta = param [w, h]
  %y = layernorm %x, %g, %beta over [h, w]""").iteration_space()
    assert space.operands == (("b", "h", "w"), ("h", "w"), ("w", "h"))


def test_cross_entropy_row_dims_are_partial_and_three_sums_are_exchanged():
    space = layer("b = 4, s = 2, c = 10", """
  %z = input [b, s, c]
  %t = input [b, s] : i32
  %l = softmax_cross_entropy %z, %t over c""").iteration_space()
    assert space.partial == ("b", "s")
    # The row maximum, then [sum of exp, target logit]; nothing backward.
    assert space.statistics == Statistics(("c",), ("b", "s"), (
        Collective("all_reduce", 1), Collective("all_reduce", 2)))


def test_lstm_splits_batch_and_hidden_units_and_gathers_every_step():
    space = layer("b = 8, s = 6, e = 16, l = 2, k = 32, n = 64", """
  %x = input [b, s, e]
  %w = param [l, k, n]
  %y = lstm %x, %w""").iteration_space()
    # (l, s, b, n, k) as in PaSE; n counts the e hidden units (four gates each).
    assert summary(space) == [("l", 2, False, False), ("s", 6, False, False),
                              ("b", 8, True, False), ("n", 16, True, False),
                              ("k", 32, False, True)]
    assert space.operands == (("b", "s", None), ("l", "k", "n"))
    assert space.result == ("b", "s", None)
    assert space.partial == ()
    # The hidden state (e words per batch row) once per layer and step, and the
    # gradient of [input, hidden] (2e words) once per layer and step backward.
    assert space.statistics == Statistics(("n",), ("b",), (
        Collective("all_gather", 16, count=12),
        Collective("all_reduce", 32, count=12, backward=True)))
    assert space.kernel_reduced_grads == (0,)


def test_vjp_carries_its_forward_record():
    module = parse_text("""graph @g(b = 4, t = 8) {
  %x = input [b, t]
  %w = param [b, t]
  %y = mul %x, %w
  %p = softmax %y over [t]
  %l = reduce sum %p over [b, t]
  return %l
}""", "vjp.dnn")
    AutodiffPass().apply(Context(), module)
    vjps = [op for op in module.walk() if isinstance(op, dnn.VjpOp)]
    softmax = next(op for op in vjps if op.forward.data == "dnn.softmax")
    assert softmax.iteration_space().stats_dims == ("t",)
    reduce = next(op for op in vjps if op.forward.data == "dnn.reduce")
    assert reduce.iteration_space().partial == ("b", "t")


def test_clip_iterates_over_its_input_and_splits_every_dim():
    space = layer("b = 8, h = 16", """
  %x = input [b, h]
  %y = clip %x min 0.0 max 6.0""").iteration_space()
    assert summary(space) == [("b", 8, True, False), ("h", 16, True, False)]
    assert space.operands == (("b", "h"),)
    assert (space.partial, space.statistics) == ((), None)


def test_slice_splits_every_dim_but_its_new_one():
    space = layer("b = 8, e3 = 24, e = 8", """
  %x = input [b, e3]
  %k = slice %x along e3 from 8 -> [b, e]""").iteration_space()
    assert summary(space) == [("b", 8, True, False), ("e", 8, False, False)]
    # x stays whole along the sliced dim: it follows no iteration dim.
    assert space.operands == (("b", None),)
    assert space.result == ("b", "e")
    assert (space.flops_forward, space.flops_backward, space.partial) == (0.0, 0.0, ())


def test_mask_splits_every_dim_even_its_query_and_key():
    space = layer("b = 2, s = 4, t = 4", """
  %x = input [b, s, t]
  %m = mask causal %x over [s, t] fill -1.0e9""").iteration_space()
    assert [d.name for d in space.splittable] == ["b", "s", "t"]
    assert space.operands == (("b", "s", "t"),)
    assert (space.partial, space.statistics) == ((), None)


@pytest.mark.parametrize(("statement", "flops"), [
    ("%y = div %x, %v", (1.0, 4.0)), ("%y = sqrt %x", (1.0, 2.0)),
    ("%y = neg %x", (1.0, 1.0)), ("%y = pow %x exponent 2.0", (2.0, 3.0))])
def test_elementwise_arithmetic_iterates_over_its_result(statement: str,
                                                         flops: tuple[float, float]):
    space = layer("b = 8, h = 16", f"""
  %x = input [b, h]
  %v = param [h]
  {statement}""").iteration_space()
    assert summary(space) == [("b", 8, True, False), ("h", 16, True, False)]
    assert space.operands[0] == ("b", "h")
    assert (space.flops_forward, space.flops_backward) == flops


def test_rmsnorm_all_reduces_one_word_per_row_each_way():
    space = layer("b = 4, s = 2, d = 8", """
  %x = input [b, s, d]
  %g = param [d]
  %y = rmsnorm %x, %g over d""").iteration_space()
    assert [d.name for d in space.splittable] == ["b", "s", "d"]
    assert space.statistics == Statistics(("d",), ("b", "s"), (
        Collective("all_reduce", 1), Collective("all_reduce", 1, backward=True)))
    assert space.partial == ()


def test_concat_of_a_size_one_class_token_keeps_its_joined_dim_whole():
    space = layer("b = 4, one = 1, p = 16, s = 17, e = 8", """
  %cls = input [b, one, e]
  %x = input [b, p, e]
  %y = concat %cls, %x -> [b, s, e]""").iteration_space()
    assert summary(space) == [("b", 4, True, False), ("s", 17, False, False),
                              ("e", 8, True, False)]
    assert space.operands == (("b", None, "e"), ("b", None, "e"))
