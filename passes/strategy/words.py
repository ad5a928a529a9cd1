"""The words a plan moves, as the cost model predicts them: what `pase-run --check` measures.

    words = predicted_words(problem, configs)
    words[("layer", "fc1")], words[("edge", "fc1->fc2")], words[("edge", "fc1<-fc2")]
    words = predicted_pipeline_words(data, configs, stages, microbatches=4, machine=machine)

Per device and step, the most words any device receives: per layer ("layer", name) its
collectives (all-reduce, all-gather of the cost model's `layer_cost`), per edge ("edge",
`edge_tag`: "u->v" forward, "u<-v" backward) its redistribution. The runtime counts the
words each device receives under the same tags, so the check joins the two on them.

The predictions are real numbers: the ring formulas average a chunk over the group
(an all-reduce of n words on g devices is 2 (g - 1) n / g), while the runtime moves whole
elements, its chunks of uneven size when g does not divide n. The measured count is an
integer; it differs from the prediction by less than one word per chunk of each ring
collective (`pase.tools.run.check.WORDS_SLACK`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from pase.core.placement import edge_tag
from pase.passes.strategy.cost import Config, blocks, local_elements, redistribution_words
from pase.passes.strategy.layer_costs import layer_cost
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.microbatch import edges_at, microbatch_layers
from pase.passes.strategy.pipeline.transfers import carries_param
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.vertices import Edge, Layer

Words = dict[tuple[str, str], float]
"""Predicted words per ("layer", name) and ("edge", tag)."""


def predicted_words(problem: Problem, configs: Mapping[str, Config]) -> Words:
    """The cost model's words per device of one step of `problem` with `configs` (a
    configuration per layer name): per layer ("layer", name) and per edge ("edge",
    "u->v" forward / "u<-v" backward)."""
    words: Words = {}
    for layer in problem.layer_data:
        words[("layer", layer.name)] = layer_cost(layer, configs[layer.name],
                                                  problem.machine).words
    for edge in problem.edges:
        producer, consumer = problem.layer_data[edge.producer], problem.layer_data[edge.consumer]
        held = blocks(producer, configs[producer.name], edge.held, problem.devices)[None]
        needed = blocks(consumer, configs[consumer.name], edge.needed, problem.devices)[None]
        forward, backward = redistribution_words(held, needed)
        tag = partial(edge_tag, producer.name, consumer.name, carried=edge.carried)
        words[("edge", tag(backward=False))] = float(forward[0, 0])
        if edge.backward:
            words[("edge", tag(backward=True))] = float(backward[0, 0])
    return words


def predicted_pipeline_words(layers: list[Layer], edges: list[Edge], batch: str,
                             configs: Mapping[str, Config],
                             stages: Mapping[str, tuple[int, int]], microbatches: int,
                             machine: Machine) -> Words:
    """`predicted_words` of a pipelined step: the graph's `layers` and `edges` (at full
    batch, as `read_graph` reads them, `batch` the batch dim), each layer's stage as
    (index, devices of the stage) in `stages`, `microbatches` per step. Per micro-batch
    each layer's collectives and each edge's redistribution, on micro-batch shapes; once
    per step a layer's parameter-gradient all-reduce and the moves of a shared parameter
    and its gradient. Between stages the groups are disjoint: each consumer device
    receives its whole block, and each producer device its whole gradient block."""
    micro = microbatches
    shrunk = microbatch_layers(layers, batch, micro)
    words: Words = {}
    for layer in shrunk:
        cost = layer_cost(layer, configs[layer.name], machine)
        words[("layer", layer.name)] = micro * (cost.words - cost.param_words) \
            + cost.param_words
    for edge in edges_at(edges, shrunk, batch, micro):
        producer, consumer = shrunk[edge.producer], shrunk[edge.consumer]
        (up, devices), (down, _) = stages[producer.name], stages[consumer.name]
        if up == down:
            held = blocks(producer, configs[producer.name], edge.held, devices)[None]
            needed = blocks(consumer, configs[consumer.name], edge.needed, devices)[None]
            forward, backward = (float(w[0, 0]) for w in redistribution_words(held, needed))
        else:
            forward = local_elements(edge.needed, configs[consumer.name])
            backward = local_elements(edge.held, configs[producer.name])
        times = 1 if carries_param(edge) else micro
        tag = partial(edge_tag, producer.name, consumer.name, carried=edge.carried)
        words[("edge", tag(backward=False))] = times * forward
        if edge.backward:
            words[("edge", tag(backward=True))] = times * backward
    return words
