"""Every stage range of one graph solved for the stage search, once: `StageTable`.

The search (`search.Partitioner`), its walk, its bounds and the plans it evaluates ask
for the same stage ranges many times; `StageTable` solves each (`stages.StageSolver`)
once per range, device count, micro-batch count, cap and micro-batches held, and a
structurally equal range (`stages.Subgraph.signature`: the blocks of a transformer)
once for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from pase.passes.strategy.machines import Machine
from pase.passes.strategy.pipeline.microbatch import Micro, edges_at, microbatch_layers
from pase.passes.strategy.pipeline.plan import SolvedStage
from pase.passes.strategy.pipeline.stages import StageSolver, Subgraph, cut, solved_stage
from pase.passes.strategy.pipeline.transfers import carries_param
from pase.passes.strategy.training_cost import copy_config
from pase.passes.strategy.vertices import Edge, Layer


class StageTable:
    """Every stage range of one graph on `devices` devices solved by `solver`, once per
    range, device count, micro-batch count and cap: what the search's walk, its bounds
    and the plans it evaluates share."""

    def __init__(self, layers: Sequence[Layer], edges: Sequence[Edge], batch: str,
                 devices: int, machine: Machine, solver: StageSolver):
        self.layers = list(layers)
        self.edges = list(edges)
        self.batch = batch
        self.devices = devices
        self.machine = machine
        self.solver = solver
        self.free_only = False
        """Whether a stage that does not fit unconstrained is infeasible (instead of
        solved under the cap): `Partitioner.search`'s first pass under a cap."""
        self._micro: dict[int, Micro] = {}
        self._stages: dict[tuple, SolvedStage | None] = {}
        self._shapes: dict[tuple, SolvedStage | None] = {}
        self._shape_of: dict[tuple[int, int, int], tuple[tuple, tuple]] = {}
        self._ends: dict[int, tuple[np.ndarray, ...]] = {}
        """Per M, each edge's producer, consumer, kind and `carries_param` (`shape`)."""
        """The stages solved by `shape` (and devices, M, cap, micro-batches held)."""
        self._memo: dict = {}
        self.notify: Callable[[str], None] | None = None
        """Hears of each stage about to be solved (a progress line: `search.Partitioner`)."""

    def micro(self, microbatches: int) -> Micro:
        """The graph's layers and edges at micro-batch shapes (made once per M)."""
        if microbatches not in self._micro:
            layers = microbatch_layers(self.layers, self.batch, microbatches)
            edges = edges_at(self.edges, layers, self.batch, microbatches)
            self._micro[microbatches] = Micro(layers, edges,
                                              self.solver.kinds(layers, edges))
        return self._micro[microbatches]

    def cut(self, start: int, stop: int, microbatches: int) -> Subgraph:
        """Layers [start, stop) at micro-batch shapes."""
        micro = self.micro(microbatches)
        assert micro.kinds is not None
        return cut(micro.layers, micro.edges, micro.kinds, start, stop)

    def shape(self, start: int, stop: int, microbatches: int) -> tuple[tuple, tuple]:
        """The `Subgraph.signature` of layers [start, stop) at micro-batch shapes (as
        `cut` would make it, without cutting), and which of its edges carry a
        parameter (`carries_param`): equal for ranges solved alike."""
        found = self._shape_of.get((start, stop, microbatches))
        if found is not None:
            return found
        if microbatches not in self._ends:
            micro = self.micro(microbatches)
            assert micro.kinds is not None
            self._ends[microbatches] = (
                np.array([edge.producer for edge in micro.edges], dtype=np.int64),
                np.array([edge.consumer for edge in micro.edges], dtype=np.int64),
                np.array(micro.kinds[1], dtype=np.int64),
                np.array([carries_param(edge) for edge in micro.edges], dtype=bool))
        producers, consumers, kinds, carried = self._ends[microbatches]
        inside = np.flatnonzero((producers >= start) & (producers < stop)
                                & (consumers >= start) & (consumers < stop))
        layer_kinds = self._micro[microbatches].kinds or ([], [])
        edges = zip(kinds[inside].tolist(), (producers[inside] - start).tolist(),
                    (consumers[inside] - start).tolist(), strict=True)
        found = self._shape_of[(start, stop, microbatches)] = (
            (tuple(layer_kinds[0][start:stop]), tuple(edges)), tuple(carried[inside].tolist()))
        return found

    def stage(self, start: int, stop: int, devices: int, microbatches: int,
              in_flight: int = 1, memory: float | None = None,
              enough: Callable[[float], bool] | None = None) -> SolvedStage | None:
        """Layers [start, stop) solved on `devices` devices for a micro-batch of batch / M;
        with `memory`, the stage must fit in it holding `in_flight` micro-batches (solved
        under the cap where its unconstrained configurations do not): None if it cannot.
        Solved under the cap, `enough` may end that search first (`StageSolver.solve`:
        `BoundReached`)."""
        free = self.free(start, stop, devices, microbatches)
        if memory is None or \
                free.parameter_bytes + in_flight * free.activation_bytes <= memory:
            return free
        if self.free_only:
            return None
        return self._solved(start, stop, devices, microbatches, memory, in_flight, enough)

    def free(self, start: int, stop: int, devices: int, microbatches: int) -> SolvedStage:
        """Layers [start, stop) solved without a cap."""
        free = self._solved(start, stop, devices, microbatches, None, 1)
        assert free is not None  # without a cap every sub-problem has a solution
        return free

    def fits(self, start: int, stop: int, devices: int, microbatches: int, in_flight: int,
             memory: float) -> bool:
        """Whether the stage's unconstrained configurations fit in `memory` holding
        `in_flight` micro-batches."""
        free = self.free(start, stop, devices, microbatches)
        return free.parameter_bytes + in_flight * free.activation_bytes <= memory

    def solved(self, start: int, stop: int, devices: int, microbatches: int,
               in_flight: int, memory: float) -> tuple[bool, SolvedStage | None]:
        """Whether `stage(start, stop, devices, microbatches, in_flight, memory)` has
        been solved (it, or a structurally equal range), with no solve made here, and
        if so the stage it gives (None where it cannot fit): the stage every plan
        holding that range as a stage holding `in_flight` micro-batches gets."""
        free = self.free(start, stop, devices, microbatches)
        if free.parameter_bytes + in_flight * free.activation_bytes <= memory:
            return True, free
        if self.free_only:
            return True, None
        key = (start, stop, devices, microbatches, memory, in_flight)
        if key in self._stages:
            return True, self._stages[key]
        same = (*self.shape(start, stop, microbatches), devices, microbatches, memory,
                in_flight)
        if same in self._shapes:
            return True, self._solved(start, stop, devices, microbatches, memory, in_flight)
        return False, None

    def known(self, start: int, stop: int, devices: int, microbatches: int,
              in_flight: int, memory: float | None) -> tuple[bool, SolvedStage | None]:
        """`solved` with no solve at all, not even the unconstrained one (False where
        that is not known yet), and without a cap (`memory` None) the unconstrained
        stage: whether `stage(start, stop, devices, microbatches, in_flight, memory)`
        is known, and the stage it gives (None where it cannot fit)."""
        key = (start, stop, devices, microbatches, None, 1)
        if key not in self._stages and (*self.shape(start, stop, microbatches), devices,
                                        microbatches, None, 1) not in self._shapes:
            return False, None
        if memory is None:
            return True, self.free(start, stop, devices, microbatches)
        return self.solved(start, stop, devices, microbatches, in_flight, memory)

    def _solved(self, start: int, stop: int, devices: int, microbatches: int,
                memory: float | None, in_flight: int,
                enough: Callable[[float], bool] | None = None) -> SolvedStage | None:
        key = (start, stop, devices, microbatches, memory, in_flight)
        if key in self._stages:
            return self._stages[key]
        same = (*self.shape(start, stop, microbatches), devices, microbatches, memory,
                in_flight)
        if same in self._shapes:
            # A structurally equal range (the same blocks elsewhere): the same solve,
            # so the same times and bytes, summed in the same order; its names renamed.
            other = self._shapes[same]
            names = [layer.name for layer in self.micro(microbatches).layers[start:stop]]
            result = None if other is None else replace(other, assignment={
                name: copy_config(config)
                for name, config in zip(names, other.assignment.values(), strict=True)})
            self._stages[key] = result
            return result
        part = self.cut(start, stop, microbatches)
        if self.notify is not None:
            self.notify(f"{self.solver.solves} stage solves, now layers [{start}, {stop}) "
                        f"on {devices} devices, M={microbatches}"
                        + (" under the cap" if memory is not None else ""))
        solution = self.solver.solve(part, devices, memory, in_flight, enough, microbatches)
        result = None if solution is None else solved_stage(
            part.layers, part.edges, solution.assignment, devices, self.machine,
            self._memo, part.kinds, solution.gap, self.solver.model)
        self._stages[key] = self._shapes[same] = result
        return result
