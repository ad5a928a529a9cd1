"""The recomputed activations under a memory cap (`memory.solve_capped`).

Under recomputation a device's peak is its parameters, gradients, optimizer state and
kept activations (a sum over its layers, each fixed by that layer's configuration) plus
the results one segment recomputes during its backward, the largest segment's: the
backward recomputes one segment at a time and frees it before the next
(docs/cost-model.md, "Recomputation"). That last term is a maximum over segments, not a
sum, so the search's one additive constraint cannot carry it. `solve_recomputed` bounds
it between two numbers the layers' configurations fix: at least R = the largest sum over
a segment of its layers' least recomputed results (every strategy holds that much again,
`Transient.least`). So every strategy that fits also fits the additive cap `cap - R`, and
the proven optimum under that cap is a proven lower bound on the cost of every strategy
that fits. If its strategy fits with its own recomputed results, it is the optimum;
otherwise the cap is lowered by what that strategy recomputes (more than R) and solved
again, until a strategy fits: it fits, and is proven optimal when its cost equals the
first bound (else `CappedSolution.gap` says how far it may be above it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from pase.passes.strategy.cost import Config
from pase.passes.strategy.memory import GIB, CappedSolution, MemoryCapError, gib_up
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.tables import layer_kind_key
from pase.passes.strategy.training_cost import TrainingCost
from pase.passes.strategy.vertices import Layer

MAX_ROUNDS = 8
"""The most solves under a cap lowered by what the last strategy recomputes."""


class Transient:
    """Each layer's recomputed results under each of its configurations, and the runs
    of layers between two checkpoints (the segments recomputed one at a time)."""

    def __init__(self, model: TrainingCost, problem: Problem):
        self.model = model
        self.layers = problem.layer_data
        made: dict[tuple[int, Layer], np.ndarray] = {}
        self.vectors = []
        for layer, configs in zip(self.layers, problem.config_lists, strict=True):
            key = (id(configs), layer_kind_key(layer))
            if key not in made:
                made[key] = np.array([model.memory_breakdown(layer, config)["recomputed"]
                                      for config in configs], dtype=np.float64)
            self.vectors.append(made[key])
        self.runs: list[list[int]] = [[]]
        for index, layer in enumerate(self.layers):
            self.runs[-1].append(index)
            if layer.checkpoint:
                self.runs.append([])

    @classmethod
    def of(cls, problem: Problem) -> Transient | None:
        """The problem's, or None where nothing is recomputed."""
        model = problem.model
        if not isinstance(model, TrainingCost) or model.training.recompute == "none":
            return None
        transient = cls(model, problem)
        return transient if transient.most > 0 else None

    @property
    def least(self) -> float:
        """At least what any strategy holds again (R in the module docstring)."""
        return max(sum(float(self.vectors[i].min()) for i in run) for run in self.runs)

    @property
    def most(self) -> float:
        """At most what any strategy holds again."""
        return max(sum(float(self.vectors[i].max()) for i in run) for run in self.runs)

    def least_choice(self, memory: Sequence[np.ndarray]) -> tuple[int, ...]:
        """Each layer's configuration of least additive memory (`memory`, its vector),
        and of those the one that recomputes least."""
        return tuple(int(np.lexsort((again, weights))[0])
                     for again, weights in zip(self.vectors, memory, strict=True))

    def held(self, assignment: Mapping[str, Config]) -> float:
        """What `assignment` holds again: its largest segment's recomputed results."""
        return max(sum(self.model.memory_breakdown(self.layers[i], assignment[
            self.layers[i].name])["recomputed"] for i in run) for run in self.runs)


def solve_recomputed(transient: Transient, least: float, cap: float,
                     solve_under: Callable[[float, bool], CappedSolution],
                     least_plan: Callable[[], CappedSolution]) -> CappedSolution:
    """The strategy of least cost found whose memory with its recomputed results is at
    most `cap` (module docstring), and the proven lower bound. `least` is the least
    additive memory any strategy needs; `solve_under(room, first)` is the additive
    search under `room` (`first`: the one whose bound is every fitting strategy's, which
    may end it early); `least_plan()` the strategy of least additive memory, and of
    those the least recomputed (`Transient.least_choice`), tried where no solve fits."""
    lowest = transient.least
    if least + lowest > cap:
        raise MemoryCapError(f"no strategy fits in {cap / GIB:.4g} GiB per device; every "
                             f"strategy needs at least {gib_up(least + lowest)} GiB per "
                             "device", least + lowest)
    first = current = solve_under(cap - lowest, True)
    solves, nodes, stopped = first.solves, first.nodes, first.stopped
    found: CappedSolution | None = None
    for _ in range(MAX_ROUNDS):
        held = transient.held(current.assignment)
        if current.memory + held <= cap:
            found = current  # (the later solves, under lower caps, cost no less)
            break
        if least + held > cap:
            break
        try:
            current = solve_under(cap - held, False)
        except MemoryCapError:
            break
        solves, nodes = solves + current.solves, nodes + current.nodes
        stopped = stopped or current.stopped
    if found is None:
        found = least_plan()
        if found.memory + transient.held(found.assignment) > cap:
            raise MemoryCapError(f"no strategy found that fits in {cap / GIB:.4g} GiB per "
                                 "device with the results it recomputes; the least "
                                 "memory of one that fits is "
                                 f"{gib_up(found.memory + transient.held(found.assignment))} "
                                 "GiB per device",
                                 found.memory + transient.held(found.assignment))
    return replace(found, memory=found.memory + transient.held(found.assignment), cap=cap,
                   lower_bound=min(first.lower_bound, found.cost),
                   unconstrained_fits=found is first and first.unconstrained_fits,
                   solves=solves, nodes=nodes, stopped=stopped)
