"""The cost model against hand computations from docs/cost-model.md.

A machine of 1e12 FLOP/s and 1e9 bytes/s keeps the arithmetic readable: a FLOP costs
1e-12 s and an f32 word 4e-9 s. Each expected value below is worked out in its comment
from the formulas of the document, not from the code.
"""

from __future__ import annotations

import itertools
from math import prod
from pathlib import Path

import numpy as np
import pytest

from pase.frontend import parse_file, parse_text
from pase.passes.strategy import Machine, SearchOptions, build_problem
from pase.passes.strategy.configs import enumerate_configs
from pase.passes.strategy.cost import _blocks, blocks, group_spans_nodes, redistribution_words
from pase.passes.strategy.from_ir import read_graph

MODELS = Path(__file__).resolve().parents[3] / "models"
FLOPS = 1e12
BANDWIDTH = 1e9
FLAT = Machine("test", FLOPS, BANDWIDTH, BANDWIDTH, 1 << 30)
# Two devices per node, the network ten times slower than the links inside a node.
TWO_PER_NODE = Machine("two-per-node", FLOPS, BANDWIDTH, BANDWIDTH / 10, 2)


def compute_seconds(flops: float) -> float:
    return flops / FLOPS


def word_seconds(words: float, bandwidth: float = BANDWIDTH) -> float:
    return words * 4 / bandwidth


def ring(words: float, group: int) -> float:
    """AR(W, g) of the document: words one device moves in a ring all-reduce."""
    return 2 * (group - 1) / group * words


def check(problem, assignment, compute_flops, collective_words, redistribution_words=0.0):
    breakdown = problem.breakdown(assignment)
    assert breakdown.compute == pytest.approx(compute_seconds(compute_flops), rel=1e-12)
    assert breakdown.communication == pytest.approx(word_seconds(collective_words), rel=1e-12,
                                                    abs=1e-30)
    assert breakdown.redistribution == pytest.approx(word_seconds(redistribution_words),
                                                     rel=1e-12, abs=1e-30)
    assert breakdown.total == pytest.approx(
        breakdown.compute + breakdown.communication + breakdown.redistribution, rel=1e-12)
    assert sum(breakdown.per_layer.values()) == pytest.approx(breakdown.total, rel=1e-12)
    assert problem.cost(assignment) == breakdown.total


# --- einsum ------------------------------------------------------------------------

LINEAR = """
graph @linear(b = 8, d = 16, h = 32) {{
  %x = {x} [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  return %y
}}
"""
# Iteration space (b, h, d): 8·32·16 = 4096 points, 2 + 4 FLOPs each.
LINEAR_FLOPS = 6 * 8 * 32 * 16


@pytest.mark.parametrize(("x", "config", "devices", "words"), [
    # unsplit: nothing to communicate
    ("input", {}, 1, 0.0),
    # data parallel: the weight gradient (16·32 = 512 words) is a partial sum over b
    ("input", {"b": 4}, 4, ring(16 * 32, 4)),
    # a split reduction dim: the output block (8·32 = 256 words) is a partial sum over d
    ("input", {"d": 2}, 2, ring(8 * 32, 2)),
    # an output dim: x is input data, so no input gradient; w ranges over h: nothing
    ("input", {"h": 4}, 4, 0.0),
    # all three: output block 4·16 over d, weight block 8·16 over b
    ("input", {"b": 2, "h": 2, "d": 2}, 8, ring(4 * 16, 2) + ring(8 * 16, 2)),
    # a trained x needs a gradient; with b split it ranges over every split dim
    ("param", {"b": 4}, 4, ring(16 * 32, 4)),
    # a split output dim: the input gradient (8·16 = 128 words) is a partial sum over h
    ("param", {"h": 4}, 4, ring(8 * 16, 4)),
    # output over d, input gradient (4·8) over h, weight gradient (8·16) over b
    ("param", {"b": 2, "h": 2, "d": 2}, 8, ring(4 * 16, 2) + ring(4 * 8, 2) + ring(8 * 16, 2)),
])
def test_einsum(x: str, config: dict[str, int], devices: int, words: float) -> None:
    problem = build_problem(parse_text(LINEAR.format(x=x)), devices, machine=FLAT)
    check(problem, {"y": config}, LINEAR_FLOPS / prod(config.values()), words)


# --- conv2d ------------------------------------------------------------------------

CONV = """
graph @conv(b = 8, ci = 4, co = 8, hi = 6, wi = 6, ho = 6, wo = 6, r = 3, s = 3) {{
  %x = {x} [b, ci, hi, wi]
  %w = param [co, ci, r, s]
  %y = conv2d %x, %w padding 1 -> [b, co, ho, wo]
  return %y
}}
"""
# Iteration space (b, co, ci, ho, wo, r, s): 8·8·4·6·6·3·3 points, 6 FLOPs each.
CONV_FLOPS = 6 * 8 * 8 * 4 * 6 * 6 * 3 * 3


@pytest.mark.parametrize(("x", "config", "devices", "words"), [
    ("input", {}, 1, 0.0),
    # weight gradient (8·4·3·3 = 288 words) over the batch split
    ("input", {"b": 4}, 4, ring(8 * 4 * 9, 4)),
    # input channels are the conv's reduction: output block 8·8·6·6 over ci
    ("input", {"ci": 2}, 2, ring(8 * 8 * 36, 2)),
    # output channels: no input gradient for data
    ("input", {"co": 2}, 2, 0.0),
    # ... but a trained input's gradient (8·4·6·6 words) is a partial sum over co
    ("param", {"co": 2}, 2, ring(8 * 4 * 36, 2)),
    # output block 4·4·6·6 over ci, weight block 4·2·3·3 over b
    ("input", {"b": 2, "co": 2, "ci": 2}, 8, ring(4 * 4 * 36, 2) + ring(4 * 2 * 9, 2)),
])
def test_conv2d(x: str, config: dict[str, int], devices: int, words: float) -> None:
    problem = build_problem(parse_text(CONV.format(x=x)), devices, machine=FLAT)
    check(problem, {"y": config}, CONV_FLOPS / prod(config.values()), words)


# --- softmax, cross-entropy, layernorm, embedding -------------------------------------

SOFTMAX = """
graph @softmax(b = 8, t = 16) {
  %x = param [b, t]
  %y = softmax %x over t
  return %y
}
"""
CROSS_ENTROPY = """
graph @loss(b = 8, c = 16) {
  %z = param [b, c]
  %t = input [b] : i32
  %y = softmax_cross_entropy %z, %t over c
  return %y
}
"""
LAYERNORM = """
graph @norm(b = 8, d = 16) {
  %x = param [b, d]
  %g = param [d]
  %beta = param [d]
  %y = layernorm %x, %g, %beta over d
  return %y
}
"""
EMBEDDING = """
graph @embed(b = 8, v = 16, e = 4) {
  %ids = input [b] : i32
  %table = param [v, e]
  %y = embedding %ids, %table
  return %y
}
"""
# FLOPs of the unsplit layer: 9, 7 and 16 per entry; an embedding copies one entry per id
# and feature, forward and backward.
SOFTMAX_FLOPS, CROSS_ENTROPY_FLOPS, LAYERNORM_FLOPS = 9 * 8 * 16, 7 * 8 * 16, 16 * 8 * 16
EMBEDDING_FLOPS = 2 * 8 * 4


@pytest.mark.parametrize(("source", "flops", "config", "devices", "words"), [
    (SOFTMAX, SOFTMAX_FLOPS, {}, 1, 0.0),
    (SOFTMAX, SOFTMAX_FLOPS, {"b": 8}, 8, 0.0),
    # 8 rows of statistics: max and sum forward, one sum backward, each over t
    (SOFTMAX, SOFTMAX_FLOPS, {"t": 4}, 4, 3 * ring(8, 4)),
    # 4 rows per device, groups of 2 over t
    (SOFTMAX, SOFTMAX_FLOPS, {"b": 2, "t": 2}, 4, 3 * ring(4, 2)),
    (CROSS_ENTROPY, CROSS_ENTROPY_FLOPS, {}, 1, 0.0),
    # only the mean loss: AR(1, 8)
    (CROSS_ENTROPY, CROSS_ENTROPY_FLOPS, {"b": 8}, 8, ring(1, 8)),
    # row maximum (8 words), sum of exponentials and target logit (16 words), over c
    (CROSS_ENTROPY, CROSS_ENTROPY_FLOPS, {"c": 4}, 4, ring(8, 4) + ring(16, 4)),
    (CROSS_ENTROPY, CROSS_ENTROPY_FLOPS, {"b": 2, "c": 2}, 4,
     ring(4, 2) + ring(8, 2) + ring(1, 2)),
    # mean and mean of squares forward, two sums backward: AR(2·8, 4) twice
    (LAYERNORM, LAYERNORM_FLOPS, {"d": 4}, 4, 2 * ring(2 * 8, 4)),
    # no statistics; scale and bias gradients (16 words each) over the batch split
    (LAYERNORM, LAYERNORM_FLOPS, {"b": 4}, 4, 2 * ring(16, 4)),
    (LAYERNORM, LAYERNORM_FLOPS, {"b": 2, "d": 2}, 4, 2 * ring(2 * 4, 2) + 2 * ring(8, 2)),
    # the vocabulary is a reduction: the output block (8·4) is a partial sum over v
    (EMBEDDING, EMBEDDING_FLOPS, {"v": 4}, 4, ring(8 * 4, 4)),
    # the table gradient (16·4) over the batch split
    (EMBEDDING, EMBEDDING_FLOPS, {"b": 2}, 2, ring(16 * 4, 2)),
])
def test_statistics_and_gradients(source: str, flops: int, config: dict[str, int],
                                  devices: int, words: float) -> None:
    problem = build_problem(parse_text(source), devices, machine=FLAT)
    check(problem, {"y": config}, flops / prod(config.values()), words)


def test_softmax_statistics_group_only_over_normalized_dims() -> None:
    source = """
    graph @softmax3(b = 8, s = 4, t = 16) {
      %x = param [b, s, t]
      %y = softmax %x over t
      return %y
    }
    """
    problem = build_problem(parse_text(source), 4, machine=FLAT)
    # 8·4 rows, s split in 2: 16 rows per device, all-reduced over the t split only
    check(problem, {"y": {"s": 2, "t": 2}}, 9 * 8 * 4 * 16 / 4, 3 * ring(16, 2))


# --- redistribution ------------------------------------------------------------------

CHAIN = """
graph @chain(b = 8, h = 16) {{
  %x = {x} [b, h]
  %y = relu %x
  %z = relu %y
  return %z
}}
"""
RELU_FLOPS = 2 * 8 * 16


@pytest.mark.parametrize(("x", "devices", "held", "needed", "words"), [
    # producer rows 0-4 | 4-8, consumer columns 0-8 | 8-16: each device needs 8·8 and
    # holds a quarter (4·8) of it: 32 words forward, and 32 back for the gradient
    ("param", 2, {"b": 2}, {"h": 2}, 32 + 32),
    # without a parameter upstream no gradient flows back
    ("input", 2, {"b": 2}, {"h": 2}, 32),
    # on 4 devices: devices 2, 3 hold nothing and need 32 (forward 32); device 1 holds
    # rows 4-8 (64) and needs none of them back (backward 64)
    ("param", 4, {"b": 2}, {"b": 2, "h": 2}, 32 + 64),
    ("input", 4, {"b": 2}, {"b": 2, "h": 2}, 32),
    # the other way round: device 1 needs rows 4-8 (64) and holds none (forward 64);
    # devices 2, 3 hold 32 each that nobody on them needs (backward 32)
    ("param", 4, {"b": 2, "h": 2}, {"b": 2}, 64 + 32),
    # the same layout: nothing moves
    ("param", 4, {"b": 2, "h": 2}, {"b": 2, "h": 2}, 0),
    # an unsplit producer lives on device 0 alone: device 1 needs rows 4-8 (64) and
    # holds nothing; device 0 gets back the gradient of the rows it gave away (64)
    ("param", 2, {}, {"b": 2}, 64 + 64),
])
def test_redistribution_between_two_layers(x: str, devices: int, held: dict[str, int],
                                           needed: dict[str, int], words: float) -> None:
    problem = build_problem(parse_text(CHAIN.format(x=x)), devices, machine=FLAT)
    check(problem, {"y": held, "z": needed},
          RELU_FLOPS / prod(held.values()) + RELU_FLOPS / prod(needed.values()), 0.0, words)
    assert problem.breakdown({"y": held, "z": needed}).per_layer["z"] == pytest.approx(
        compute_seconds(RELU_FLOPS / prod(needed.values())) + word_seconds(words), rel=1e-12)


TRANSPOSE = """
graph @transpose(b = 8, h = 16) {
  %x = param [b, h]
  %y = relu %x
  %z = einsum %y -> [h, b]
  return %z
}
"""


def test_redistribution_follows_the_row_major_grid() -> None:
    # relu's grid is (b, h), the einsum's (h, b): device 1 is (b 0, h 1) for the first
    # and (h 0, b 1) for the second, so devices 1 and 2 swap 4·8 blocks both ways.
    problem = build_problem(parse_text(TRANSPOSE), 4, machine=FLAT)
    check(problem, {"y": {"b": 2, "h": 2}, "z": {"h": 2, "b": 2}},
          RELU_FLOPS / 4 + 6 * 8 * 16 / 4, 0.0, 32 + 32)
    # The prototype's estimate aligns the blocks: nothing to move.
    pase = build_problem(parse_text(TRANSPOSE), 4, machine=FLAT,
                         options=SearchOptions(compat="pase"))
    assert pase.breakdown({"y": {"b": 2, "h": 2}, "z": {"h": 2, "b": 2}}).redistribution == 0


@pytest.mark.parametrize(("x", "devices", "held", "needed", "words"), [
    # 2·(|N| − Π min(extents)): N = 8·8, H = 4·16, the best overlap 4·8
    ("param", 2, {"b": 2}, {"h": 2}, 2 * (64 - 32)),
    # the estimate counts backward even without a gradient
    ("input", 2, {"b": 2}, {"h": 2}, 2 * (64 - 32)),
    # the consumer uses more devices than the producer: 2·|N|
    ("param", 4, {"b": 2}, {"b": 2, "h": 2}, 2 * 32),
    # fewer devices: N = 4·16, H = 4·8
    ("param", 4, {"b": 2, "h": 2}, {"b": 2}, 2 * (64 - 32)),
    ("param", 2, {"b": 2}, {"b": 2}, 0),
])
def test_compat_pase_redistribution(x: str, devices: int, held: dict[str, int],
                                    needed: dict[str, int], words: float) -> None:
    problem = build_problem(parse_text(CHAIN.format(x=x)), devices, machine=FLAT,
                            options=SearchOptions(compat="pase"))
    assert problem.breakdown({"y": held, "z": needed}).redistribution == pytest.approx(
        word_seconds(words), rel=1e-12, abs=1e-30)


def test_a_shared_tensor_is_held_by_its_first_reader() -> None:
    source = """
    graph @shared(b = 8, h = 16) {
      %x = param [b, h]
      %y = relu %x
      %z = tanh %x
      return %y, %z
    }
    """
    problem = build_problem(parse_text(source), 2, machine=FLAT)
    # x lives in y's layout (rows), z needs columns: 32 forward; z does not reach the loss
    # (y, the first returned value), so no gradient comes back
    breakdown = problem.breakdown({"y": {"b": 2}, "z": {"h": 2}})
    assert breakdown.redistribution == pytest.approx(word_seconds(32), rel=1e-12)
    assert problem.breakdown({"y": {"b": 2}, "z": {"b": 2}}).redistribution == 0
    # with z as the loss, its gradient of x goes back into y's layout: 32 more
    loss_z = build_problem(parse_text(source.replace("return %y, %z", "return %z, %y")), 2,
                           machine=FLAT)
    breakdown = loss_z.breakdown({"y": {"b": 2}, "z": {"h": 2}})
    assert breakdown.redistribution == pytest.approx(word_seconds(64), rel=1e-12)


# --- nodes ---------------------------------------------------------------------------


@pytest.mark.parametrize(("factors", "grouped", "spans"), [
    ((2, 2), (False, True), False),   # groups {0, 1}, {2, 3}: one node each
    ((2, 2), (True, False), True),    # groups {0, 2}, {1, 3}: across nodes
    ((2, 2), (True, True), True),
    ((2, 2), (False, False), False),  # every group is one device
    ((4,), (True,), True),
    ((2,), (True,), False),           # two devices fit on a node
    ((2, 4), (False, True), True),    # groups of 4 consecutive devices
    ((4, 2), (False, True), False),   # groups of 2 consecutive devices
])
def test_group_spans_nodes(factors: tuple[int, ...], grouped: tuple[bool, ...],
                           spans: bool) -> None:
    assert group_spans_nodes(factors, grouped, 2) is spans


def test_collectives_pick_the_bandwidth_of_their_groups() -> None:
    problem = build_problem(parse_text(LINEAR.format(x="input")), 4, machine=TWO_PER_NODE)
    # grid (b, d): the output all-reduce over d stays in a node (devices 0-1, 2-3),
    # the weight-gradient all-reduce over b pairs devices 0-2 and 1-3 across nodes.
    breakdown = problem.breakdown({"y": {"b": 2, "d": 2}})
    assert breakdown.communication == pytest.approx(
        word_seconds(ring(4 * 32, 2)) + word_seconds(ring(8 * 32, 2), BANDWIDTH / 10),
        rel=1e-12)


def test_redistribution_across_nodes() -> None:
    problem = build_problem(parse_text(CHAIN.format(x="param")), 4, machine=TWO_PER_NODE)
    within = problem.breakdown({"y": {"b": 2}, "z": {"h": 2}})
    assert within.redistribution == pytest.approx(word_seconds(64), rel=1e-12)
    across = problem.breakdown({"y": {"b": 2}, "z": {"b": 2, "h": 2}})
    assert across.redistribution == pytest.approx(word_seconds(96, BANDWIDTH / 10),
                                                   rel=1e-12)


# --- redistribution_words against a naive loop -----------------------------------------

LAYOUTS = """
graph @layouts(a = 8, b = 4, c = 6) {
  %x = param [a, b, c]
  %y = relu %x
  %z = einsum %y -> [c, a, b]
  return %z
}
"""


def naive_redistribution(held: np.ndarray, needed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    forward = np.zeros((held.shape[0], needed.shape[0]))
    backward = np.zeros_like(forward)
    for i, j, device in itertools.product(range(held.shape[0]), range(needed.shape[0]),
                                          range(held.shape[1])):
        have, need = held[i, device], needed[j, device]
        have_volume = prod(int(hi - lo) for lo, hi in have)
        need_volume = prod(int(hi - lo) for lo, hi in need)
        overlap = prod(max(0, int(min(h[1], n[1]) - max(h[0], n[0])))
                       for h, n in zip(have, need, strict=True))
        forward[i, j] = max(forward[i, j], need_volume - overlap)
        backward[i, j] = max(backward[i, j], have_volume - overlap)
    return forward, backward


@pytest.mark.parametrize("seed", range(8))
def test_redistribution_words_matches_naive_overlaps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices = (4, 6, 8, 12)[seed % 4]
    producer, consumer = read_graph(parse_text(LAYOUTS)).layers
    producer_configs = enumerate_configs(producer.space, devices, min_shard=1)
    consumer_configs = enumerate_configs(consumer.space, devices, min_shard=1)
    chosen_held = rng.choice(len(producer_configs), size=min(12, len(producer_configs)),
                             replace=False)
    chosen_needed = rng.choice(len(consumer_configs), size=min(12, len(consumer_configs)),
                               replace=False)
    held = np.stack([blocks(producer, producer_configs[i], producer.result, devices)
                     for i in chosen_held])
    needed = np.stack([blocks(consumer, consumer_configs[i], consumer.operands[0], devices)
                       for i in chosen_needed])
    forward, backward = redistribution_words(held, needed)
    expected_forward, expected_backward = naive_redistribution(held, needed)
    np.testing.assert_array_equal(forward, expected_forward)
    np.testing.assert_array_equal(backward, expected_backward)


def canonical_layouts(rng: np.random.Generator, count: int, sizes: tuple[int, ...],
                      devices: int) -> np.ndarray:
    """`count` random layouts from `blocks`' canonical placement: a random grid of at
    most `devices` devices, each tensor dim on its own grid axis or whole."""
    layouts = []
    for _ in range(count):
        factors: list[int] = []
        dim_axes = []
        for size in sizes:
            room = devices // prod(factors)
            choices = [f for f in range(2, room + 1) if size % f == 0]
            if choices and rng.random() < 0.6:
                dim_axes.append(len(factors))
                factors.append(int(rng.choice(choices)))
            else:
                dim_axes.append(-1)
        if prod(factors) * 2 <= devices and rng.random() < 0.5:
            factors.append(2)                       # an axis the tensor is replicated on
        order = rng.permutation(len(factors))       # grid axes in any order
        position = {int(old): new for new, old in enumerate(order)}
        layouts.append(_blocks(tuple(factors[int(i)] for i in order),
                               tuple(position[a] if a >= 0 else -1 for a in dim_axes),
                               sizes, devices))
    return np.stack(layouts)


@pytest.mark.parametrize("seed", range(20))
def test_canonical_layouts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices, rank = int(rng.integers(1, 17)), int(rng.integers(0, 4))
    sizes = tuple(int(rng.choice([1, 2, 3, 4, 6, 8, 12])) for _ in range(rank))
    held = canonical_layouts(rng, int(rng.integers(1, 10)), sizes, devices)
    needed = canonical_layouts(rng, int(rng.integers(1, 10)), sizes, devices)
    expected = naive_redistribution(held, needed)
    for method in (redistribution_words(held, needed),
                   redistribution_words(held, needed, compiled=True)):
        for ours, theirs in zip(method, expected, strict=True):
            assert np.array_equal(ours, theirs)


def test_blocks_are_row_major_slices() -> None:
    # The document's example: #pase.config<b = 2, h = 4> on [b, d] x [d, h] puts device 5
    # at (b = 1, h = 1): rows 32..63 of x, all of d, and columns 256..511 of w.
    layer = read_graph(parse_file(str(MODELS / "mlp.dnn"))).layers[0]   # [b, d] x [d, h]
    config = {"b": 2, "h": 4}
    x_blocks = blocks(layer, config, layer.operands[0], 10)
    w_blocks = blocks(layer, config, layer.operands[1], 10)
    assert x_blocks[5].tolist() == [[32, 64], [0, 256], [0, 1]]
    assert w_blocks[5].tolist() == [[0, 256], [256, 512], [0, 1]]
    assert x_blocks[8:].tolist() == [[[0, 0], [0, 0], [0, 0]]] * 2  # idle devices hold nothing


def test_words_of_f64_tensors_cost_eight_bytes() -> None:
    problem = build_problem(parse_text(CHAIN.format(x="param").replace("[b, h]", "[b, h] : f64")),
                            2, machine=FLAT)
    breakdown = problem.breakdown({"y": {"b": 2}, "z": {"h": 2}})
    assert breakdown.redistribution == pytest.approx(64 * 8 / BANDWIDTH, rel=1e-12)


BROADCAST = """
graph @broadcast(b = 8, d = 4) {{
  %x = input [b, d]
  %s = param [{dims}]
  %e = exp %s
  %y = mul %x, %e
  return %y
}}
"""


@pytest.mark.parametrize(("dims", "words"), [("d", 4), ("", 1)])
def test_a_broadcast_operand_reaches_the_devices_idle_for_its_producer(dims: str,
                                                                       words: int) -> None:
    # %e runs on device 0 alone; devices 1-3 of the batch-split mul need all of it
    problem = build_problem(parse_text(BROADCAST.format(dims=dims)), 4, machine=FLAT)
    breakdown = problem.breakdown({"e": {}, "y": {"b": 4}})
    assert breakdown.redistribution == pytest.approx(word_seconds(words), rel=1e-12)


@pytest.mark.parametrize("model", ["alexnet", "inception_v3", "rnnlm", "transformer"])
def test_unique_blocks_are_blocks_of_every_config(model: str) -> None:
    # Every edge's layouts, built for all configs at once and deduplicated, are exactly
    # `blocks` of each config.
    from pase.passes.strategy.cost import _unique_blocks

    problem = build_problem(parse_file(str(MODELS / f"{model}.dnn")), 12,
                            options=SearchOptions(min_shard=1))
    for edge in problem.edges[:30]:
        for index, use in ((edge.producer, edge.held), (edge.consumer, edge.needed)):
            layer, configs = problem.layer_data[index], problem.config_lists[index]
            layouts, inverse = _unique_blocks(layer, configs, use, problem.devices)
            assert len({layout.tobytes() for layout in layouts}) == len(layouts)
            for config, which in zip(configs, inverse, strict=True):
                np.testing.assert_array_equal(layouts[which],
                                              blocks(layer, config, use, problem.devices))


def test_layer_cost_splits_forward_backward_and_parameter_all_reduces() -> None:
    from pase.passes.strategy import layer_cost
    from pase.passes.strategy.from_ir import read_graph
    from pase.passes.strategy.machines import preset

    graph = read_graph(parse_file("models/mlp.dnn"))
    machine = preset("pase-default")
    h = graph.layers[0]
    assert h.params == (False, True)          # x is data, w a dnn.param
    cost = layer_cost(h, {"b": 2, "h": 2}, machine)
    # x·w over b, d, h with b split 2 ways: w's gradient (d × h / 2 per device) is a
    # partial sum over the two batch halves, all-reduced once: 2(2-1)/2 of its words.
    d, hidden = (dim.size for dim in h.space.dims if dim.name in ("d", "h"))
    assert cost.param_words == d * hidden / 2
    assert cost.words == cost.param_words       # nothing else moves
    assert cost.forward_compute == pytest.approx(cost.compute / 3)   # 2 of 6 flops/point
    assert cost.forward + cost.backward + cost.param_communication == \
        pytest.approx(cost.compute + cost.communication)
