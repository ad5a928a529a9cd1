"""The one home of the inter-stage rule: what crosses a stage boundary, and its seconds.

The stage groups are disjoint, so each consumer device receives its whole block of a
tensor from the stage before (forward, per micro-batch), and each producer device its
whole gradient block back (`boundary_seconds`). A tensor that skips stages arrives with
the last boundary it crosses. An edge that carries a parameter shared by two layers
(`carries_param`) moves once per step, with its gradient, not per micro-batch.
`Transfers` sums them for a plan's stages (`transfers`); the search's lower bounds on the
same bytes are `least.LeastCosts`'.

    >>> from pase.passes.strategy.machines import preset
    >>> from pase.passes.strategy.vertices import Edge, TensorUse
    >>> use = TensorUse(("b", "n"), (64, 1024))
    >>> boundary_seconds(Edge(0, 1, use, use, True), {"b": 4}, {"b": 2}, 0, 4,
    ...                  preset("v100-nvlink"))[0] > 0
    True
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from pase.passes.strategy.cost import Config, local_elements
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.microbatch import Micro
from pase.passes.strategy.pipeline.plan import SolvedStage
from pase.passes.strategy.vertices import Edge


def carries_param(edge: Edge) -> bool:
    """Whether `edge` carries a parameter (shared by two layers) from its first reader:
    the parameter is the same for every micro-batch and its gradient is summed over them
    first, so a pipeline moves it, and its gradient, once per step."""
    return bool(edge.carried) and edge.backward


def boundary_seconds(edge: Edge, producer_config: Config, consumer_config: Config,
                     producer_offset: int, consumer_offset: int,
                     machine: Machine) -> tuple[float, float]:
    """(forward, backward) seconds per micro-batch of `edge` between two stages whose
    groups start at device `producer_offset` and `consumer_offset`: the consumer's
    devices hold nothing of the producer's, so the worst consumer device receives its
    whole block, and backward (if a gradient flows) the worst producer device its whole
    gradient block; over the inter-node link where the two groups are on other nodes."""
    per_node = machine.devices_per_node
    apart = producer_offset // per_node != consumer_offset // per_node
    bandwidth = machine.inter_node_bandwidth if apart else machine.intra_node_bandwidth
    ahead = local_elements(edge.needed, consumer_config) * edge.needed.element_bytes
    back = local_elements(edge.held, producer_config) * edge.held.element_bytes \
        if edge.backward else 0.0
    return ahead / bandwidth, back / bandwidth


def spanning(edges: Sequence[Edge], cuts: Sequence[int]) -> list[tuple[int, int, int]]:
    """(index, producer, consumer) of the `edges` whose layers are in different
    segments (between the `cuts`): the only ones a stage boundary can cut."""
    positions = [0, *cuts]
    return [(i, e.producer, e.consumer) for i, e in enumerate(edges)
            if bisect_right(positions, e.producer) != bisect_right(positions, e.consumer)]


class Transfers:
    """The transfers between the stages of plans of one graph on `devices` devices whose
    stages begin at 0 and among `cuts`; each edge's seconds between two solved stages
    found once."""

    def __init__(self, edges: Sequence[Edge], cuts: Sequence[int], devices: int,
                 machine: Machine):
        self.edges = list(edges)
        self.devices = devices
        self.machine = machine
        self.spans = spanning(self.edges, cuts)
        self.carried = [span for span in self.spans if carries_param(self.edges[span[0]])]
        self._producers = np.array([producer for _, producer, _ in self.spans], dtype=np.int64)
        self._consumers = np.array([consumer for _, _, consumer in self.spans], dtype=np.int64)
        self._carries = [carries_param(self.edges[index]) for index, _, _ in self.spans]
        # (Keyed by the id of a solved stage: the callers keep every one alive.)
        self._crossings: dict[tuple[int, int, int, bool], tuple[float, float]] = {}

    def crossing(self, index: int, u: int, v: int, solved: Sequence[SolvedStage],
                 micro: Micro) -> tuple[float, float]:
        """`boundary_seconds` of edge `index` from stage u to stage v of `solved`."""
        group = self.devices // len(solved)
        per_node = self.machine.devices_per_node
        # The seconds depend on the two stages' configurations and whether their
        # groups are on other nodes: the same for many candidate plans.
        key = (index, id(solved[u]), id(solved[v]),
               u * group // per_node != v * group // per_node)
        if key not in self._crossings:
            edge = micro.edges[index]
            self._crossings[key] = boundary_seconds(
                edge, solved[u].assignment[micro.layers[edge.producer].name],
                solved[v].assignment[micro.layers[edge.consumer].name], u * group,
                v * group, self.machine)
        return self._crossings[key]

    def moves(self, bounds: Sequence[int], solved: Sequence[SolvedStage], micro: Micro
              ) -> list[float]:
        """`transfers`' moves of shared parameters once per step, per stage, alone."""
        once = [0.0] * len(bounds)
        for index, producer, consumer in self.carried:
            u = bisect_right(bounds, producer) - 1
            v = bisect_right(bounds, consumer) - 1
            if u != v:
                ahead, back = self.crossing(index, u, v, solved, micro)
                once[v] += ahead
                once[u] += back
        return once

    def transfers(self, bounds: Sequence[int], solved: Sequence[SolvedStage], micro: Micro
                  ) -> tuple[list[float], list[float], list[float]]:
        """Per boundary the forward and backward seconds per micro-batch of the tensors
        crossing it, and per stage the moves of shared parameters once per step."""
        count = len(bounds)
        send_f = [0.0] * (count - 1)
        send_b = [0.0] * (count - 1)
        once = [0.0] * count
        # Each edge's stages (bisect_right's, for all at once); the edges that cross a
        # boundary summed in their order.
        begins = np.asarray(bounds, dtype=np.int64)
        producers = np.searchsorted(begins, self._producers, side="right") - 1
        consumers = np.searchsorted(begins, self._consumers, side="right") - 1
        spans = self.spans
        for k in np.flatnonzero(producers != consumers).tolist():
            index = spans[k][0]
            u, v = int(producers[k]), int(consumers[k])
            ahead, back = self.crossing(index, u, v, solved, micro)
            if self._carries[k]:  # once per step: into the consumer, back
                once[v] += ahead
                once[u] += back
                continue
            # A tensor skipping stages arrives with the last boundary it crosses.
            send_f[v - 1] += ahead
            send_b[v - 1] += back
        return send_f, send_b, once
