"""The stage search of pase-partition-stages: S contiguous stages, M micro-batches.

`Partitioner` holds one graph on P devices and finds, for given S, M and schedule, the
choice of stage beginnings (among the segment cuts) with the least simulated step
(`stages.py` has the stages' costs, `transfers.py` what crosses between them,
`schedule.py` the simulation). Each stage's layers
get the configurations of pase's search on the stage's sub-problem at micro-batch
shapes (`StageSolver`); under a device-memory cap, a stage whose configurations need
more than the cap with the micro-batches its position holds at once is solved under
that cap instead (`memory.solve_capped`), so every plan's stages fit by construction.

The walk over cuts is exact: it prunes only with lower bounds on the simulated step
(docs/cost-model.md, "Pipelines"). Stage s cannot start before micro-batch 0 has gone
through stages 0..s-1, does M(F_s + B_s) of work, and its last backward's gradient then
goes back through them, so with w_t = F_t + B_t

    step >= w_0 + ... + w_{s-1} + M w_s + AR_0          for every stage s,

and over any split of work W into r stages, max_s (w_0 + ... + w_{s-1} + M w_s) is at
least W / (1 - (1 - 1/M)^r) (`spread`). Before a stage is solved, w is bounded below by
its layers' least compute (`least_compute`: FLOPs over the most devices any of its
configurations uses), and tighter by the segments' least costs and the least transfers
(`bounds.SegmentBounds`, from `least.LeastCosts`). Sub-problems that are structurally
the same (layers equal but for their names, the same edges between them: the blocks of
a transformer) are solved once. The walk is `walk.Walk`; `search` tries every (S, M), the most
promising first. A plan given rather than searched is `evaluate.evaluate_plan`'s.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy import preset, read_graph, stage_solver
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> machine = preset("v100-nvlink")
    >>> search = Partitioner(mlp.layers, mlp.edges, mlp.batch, 8, machine, [1, 2, 3],
    ...                      stage_solver(machine, mlp.batch))
    >>> plan = search.best(2, 4, "1f1b")
    >>> [(stage.start, stage.stop, stage.devices) for stage in plan.stages]
    [(0, 3, 4), (3, 4, 4)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pase.core.schedule import in_flight
from pase.passes.strategy.cost import Config
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.memory import BoundReached
from pase.passes.strategy.pipeline.bounds import SLACK, SegmentBounds
from pase.passes.strategy.pipeline.capped_whole import CappedWhole, at_least
from pase.passes.strategy.pipeline.capped_work import CappedWorks
from pase.passes.strategy.pipeline.evaluate import assemble
from pase.passes.strategy.pipeline.layerwise import layerwise_bounds, one_segment_capped
from pase.passes.strategy.pipeline.least import LeastCosts
from pase.passes.strategy.pipeline.microbatch import Micro, layer_bytes
from pase.passes.strategy.pipeline.plan import PipelinePlan, SolvedStage
from pase.passes.strategy.pipeline.seed import seed, seeded_bound
from pase.passes.strategy.pipeline.stages import StageSolver
from pase.passes.strategy.pipeline.table import StageTable
from pase.passes.strategy.pipeline.transfers import Transfers
from pase.passes.strategy.pipeline.trips import round_trips
from pase.passes.strategy.pipeline.walk import EffortSpent, Walk, over
from pase.passes.strategy.problem import Problem
from pase.passes.strategy.progress import Progress
from pase.passes.strategy.vertices import Edge, Layer

FIRST_EFFORT = 20_000
"""`Partitioner.search` first gives each (S, M) this much effort (`best`'s `effort`), and
four times more in each later round to those that used it up."""


class Partitioner:
    """Plans for one graph on `devices` devices: stage ranges solved once each.

    `cuts` are the positions (0 < i < len(layers)) where a stage may begin: the first
    layer of each segment but the first. `solver` solves a stage's sub-problem (pase's
    search, under a memory cap where the stage must fit in one) and shares its tables.
    Its parts: the stages solved (`table`), the transfers between them (`transfers`),
    the bounds (`least`), the walk (`walk.Walk`).
    """

    def __init__(self, layers: Sequence[Layer], edges: Sequence[Edge], batch: str,
                 devices: int, machine: Machine, cuts: Sequence[int], solver: StageSolver):
        self.layers = list(layers)
        self.edges = list(edges)
        self.batch = batch
        self.devices = devices
        self.machine = machine
        self.cuts = sorted(set(cuts))
        self.solver = solver
        self.table = StageTable(layers, edges, batch, devices, machine, solver)
        self.transfers = Transfers(self.edges, self.cuts, devices, machine)
        self.least = LeastCosts(self.table, self.cuts, self.transfers.spans)
        self.capped = CappedWhole(self.least)
        self._layer_memory: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._least_bytes: dict[tuple[int, int, str], dict[int, list[float]]] = {}
        self._config_lists: dict[tuple[int, int], list[list[Config]]] = {}
        self._layerwise: dict[tuple, SegmentBounds] = {}
        self._rest_fits: dict[tuple, list[dict[int, bool]]] = {}
        self.capped_works: dict[tuple, CappedWorks] = {}
        self._floors: dict[tuple, float] = {}
        """Per (S, M, schedule, cap): the largest lower bound on the step of its plans
        `best` made that no stage solve's result enters (`floored`)."""
        self.floor = 0.0
        """After `search`: a lower bound on the step of every plan of its (S, M) that
        fits, whatever the capped stage solves found (`step_floor`)."""
        """`capped_work.capped_works`' per (S, M, schedule, cap)."""
        self.progress: Progress | None = None
        """Where `search` reports what it is doing (a line on a terminal), if set."""
        self.status = ""
        self.table.notify = self.note

    def note(self, text: str) -> None:
        """Report `text` after `status` on the progress line, if there is one."""
        if self.progress is not None:
            self.progress.message(f"{self.status}: {text}" if self.status else text)

    def micro(self, microbatches: int) -> Micro:
        """The graph's layers and edges at micro-batch shapes (made once per M)."""
        return self.table.micro(microbatches)

    def stage(self, start: int, stop: int, devices: int, microbatches: int,
              in_flight: int = 1, memory: float | None = None) -> SolvedStage | None:
        """`StageTable.stage`: layers [start, stop) solved (None if they cannot fit)."""
        return self.table.stage(start, stop, devices, microbatches, in_flight, memory)

    def segment_bounds(self, stages: int, microbatches: int) -> SegmentBounds:
        """`LeastCosts.segment_bounds`."""
        return self.least.segment_bounds(stages, microbatches)

    def range_bounds(self, stages: int, microbatches: int, schedule: str,
                     memory: float | None = None, beat: float = math.inf
                     ) -> SegmentBounds:
        """`LeastCosts.range_bounds`."""
        return self.least.range_bounds(stages, microbatches, schedule, memory, beat)

    def capped_whole(self, stages: int, microbatches: int, schedule: str,
                     memory: float, beat: float = math.inf, chain: bool = False
                     ) -> SegmentBounds:
        """`CappedWhole.bounds`: `segment_bounds` that see the cap `memory` (and the
        round trips, `round_trips`)."""
        return self.capped.bounds(stages, microbatches, schedule, memory, beat, chain,
                                  round_trips(self, stages, microbatches, schedule))

    def objective_own(self, start: int, stop: int, devices: int, microbatches: int,
                      work: float) -> float:
        """`LeastCosts.objective_own`."""
        return self.least.objective_own(start, stop, devices, microbatches, work)

    def capped_least(self, start: int, stop: int, devices: int, microbatches: int,
                     in_flight: int, memory: float) -> tuple[float, float]:
        """`LeastCosts.capped_least`."""
        return self.least.capped_least(start, stop, devices, microbatches, in_flight, memory)

    def evaluate(self, bounds: Sequence[int], microbatches: int,
                 schedule: str) -> PipelinePlan:
        """The plan whose stages begin at `bounds` (0 first, the others among the
        cuts), each stage solved, simulated."""
        if not bounds or bounds[0] != 0 or not set(bounds[1:]) <= set(self.cuts):
            raise ValueError(f"stages must begin at 0 and at cuts, not at {list(bounds)}")
        plan = self.plan_within(bounds, microbatches, schedule, None)
        assert plan is not None
        return plan

    def plan_within(self, bounds: Sequence[int], microbatches: int, schedule: str,
                    memory: float | None, beat: float = math.inf,
                    prefix: Sequence[SolvedStage] = (), stop_at: float = math.inf
                    ) -> PipelinePlan | None:
        """`evaluate`, each stage fitting in `memory`; None if one cannot, or if the
        step is not less than `beat`. `prefix` holds the first stages, solved already.
        A stage solved under the cap stops (then None) once M times its proven lower
        bound on F + B + AR / M reaches `stop_at`: the step is at least any stage's
        M (F + B) + AR, so no such plan steps under `stop_at`."""
        count = len(bounds)
        group = self.devices // count
        ends = [*bounds[1:], len(self.layers)]
        solved = list(prefix)

        def enough(cost: float) -> bool:
            return microbatches * cost * (1 - SLACK) >= stop_at

        for s, (start, stop) in enumerate(zip(bounds, ends, strict=True)):
            if s < len(prefix):
                continue
            try:
                stage = self.table.stage(start, stop, group, microbatches,
                                         in_flight(schedule, count, microbatches, s), memory,
                                         enough if stop_at < math.inf else None)
            except BoundReached:
                return None
            if stage is None:
                return None
            solved.append(stage)
        sends = self.transfers.transfers(bounds, solved, self.micro(microbatches))
        return assemble(bounds, len(self.layers), solved, microbatches, schedule,
                        self.devices, sends, beat)

    def moves(self, bounds: Sequence[int], solved: Sequence[SolvedStage],
              microbatches: int) -> list[float]:
        """`Transfers.moves` at `microbatches`."""
        return self.transfers.moves(bounds, solved, self.micro(microbatches))

    def lower_bound(self, stages: int, microbatches: int) -> float:
        """`LeastCosts.lower_bound`."""
        return self.least.lower_bound(stages, microbatches)

    def search(self, stage_counts: Sequence[int], micro_counts: Sequence[int],
               schedule: str, memory: float | None = None, method: str = "dp"
               ) -> tuple[PipelinePlan | None, float]:
        """The plan with the least step over every S in `stage_counts` and M in
        `micro_counts` that fits in `memory`, ties going to the first S, then the first
        M, in the order given (and within one (S, M) as `best` breaks them); with the
        least memory per device any plan needs when none fits (`least_memory`; inf if
        one does, or if there is no plan at all). Under `memory`, an (S, M) whose plans
        all need more is skipped, and the plans whose stages all fit with their
        unconstrained configurations are searched first: the best of them is a bound
        that prunes the others before their stages are solved under the cap.

        The (S, M) are searched in the order of their lower bounds (S = 1, M = 1 first:
        pase-search's strategy), so that a good plan is found early and prunes the
        others; each (S, M) keeps its plans whose step is at most the least found so far,
        so the result is the one the order given would find. A low bound can belong to a
        costly walk (many stages, many cuts), which a plan found elsewhere would prune:
        each (S, M) first gets `FIRST_EFFORT` steps of the walk (`best`'s `effort`), and
        those that use them up are searched again afterwards, in rounds of four times
        more (the stages solved meanwhile are kept), until every one has finished; the
        best plan a walk met before its effort ran out (`EffortSpent.plan`: its seed's,
        say) is kept meanwhile, its step the bound for the others at once. (The
        first pass under a cap, whose best plan is only a bound, has one round, and
        it ends at the first (S, M) that has a plan: an (S, M) that uses up its effort
        is left to the second, and so are the (S, M) after that plan, which the second
        pass's bounds that see the cap (`capped_whole`) prune at less cost than their
        walks with unconstrained stages take; a stage range whose layers, or the
        layers after it, cannot fit in any configurations is never solved,
        `rest_fits`.) Under a cap, both passes take the (S, M) most micro-batches
        first (`_capped_order`).
        """
        pairs = [(stages, micro) for stages in stage_counts for micro in micro_counts]
        if memory is not None:
            fitting = [pair for pair in pairs if self.least_memory(*pair, schedule) <= memory]
            if not fitting:
                return None, min(self.least_memory(*pair, schedule) for pair in pairs)
            pairs = fitting

        phase = "first pass, stages unconstrained: " if self.table.free_only else ""
        ranks = []
        for i, pair in enumerate(pairs):
            self.status = f"{phase}bounds of S={pair[0]} M={pair[1]}, {i + 1} of {len(pairs)}"
            self.note("segments solved")
            ranks.append(self._rank(*pair, method))
        waiting = sorted(range(len(pairs)), key=lambda i: (*ranks[i], i)) \
            if memory is None else self._capped_order(pairs, ranks)
        found: dict[int, PipelinePlan] = {}
        least = math.inf
        if memory is not None and not self.table.free_only:
            # First the plans whose stages all fit unconstrained (no stage solved under
            # the cap, each of which takes many solves): the best of them prunes the rest.
            self.table.free_only = True
            try:
                free, _ = self.search(stage_counts, micro_counts, schedule, memory, method)
            finally:
                self.table.free_only = False
            if free is not None:
                least = free.step
        effort: int | None = FIRST_EFFORT
        rounds = 1
        while waiting:
            again = []
            for done, i in enumerate(waiting):
                if self.table.free_only and least < math.inf:
                    break  # (the first pass under a cap: it has its bound, docstring)
                stages, micro = pairs[i]
                best_yet = f", best step {least:.4g} s" if least < math.inf else ""
                self.status = (f"{phase}S={stages} M={micro}, {done + 1} of {len(waiting)} "
                               f"(S, M) in round {rounds}{best_yet}")
                self.note(f"{self.solver.solves} stage solves")
                try:
                    plan = self.best(stages, micro, schedule, memory, method,
                                     math.nextafter(least, math.inf), effort,
                                     ranges=effort != FIRST_EFFORT)
                except EffortSpent as spent:
                    again.append(i)
                    if spent.plan is not None and spent.plan.step <= least:
                        # A plan met before the effort ran out (the seed's, say): a
                        # bound for the others now; its walk, searched again, finds
                        # it or a faster one, which takes its place.
                        found[i] = spent.plan
                        least = spent.plan.step
                    continue
                if plan is not None:
                    found[i] = plan
                    least = min(least, plan.step)
                else:
                    found.pop(i, None)  # its plans are slower than one found since
            # The first pass under a cap only seeks a bound for the second, which
            # searches every (S, M) again: one round of effort is enough for it.
            waiting = again if not self.table.free_only else []
            rounds += 1
            effort = effort * 4 if effort is not None and len(again) > 1 else None
        self.floor = self.step_floor(pairs, schedule, memory)
        if found:
            return min(found.items(), key=lambda item: (item[1].step, item[0]))[1], math.inf
        if memory is None:
            return None, math.inf
        return None, min(self.least_memory(stages, micro, schedule)
                         for stages, micro in pairs)

    def step_floor(self, pairs: Sequence[tuple[int, int]], schedule: str,
                   memory: float | None) -> float:
        """A lower bound on the step of every plan of `pairs` that fits in `memory`
        after `best` has taken each (`search`): the least of their floors (`floored`).
        Every plan of a pair steps at least its floor, which no stage solve stopped by
        the effort enters (the Lagrangian and segment bounds, never a stage's cost), so
        it stays true where the walks compared stages at the costs found: the plan's
        step over it is the pipeline's true gap (`PipelinePlan.step_gap`)."""
        return min((self._floors.get((*pair, schedule, memory), 0.0) for pair in pairs),
                   default=math.inf)

    def floored(self, key: tuple, value: float, bound: float) -> bool:
        """Whether the lower bound `value` on the step of every plan of the (S, M, schedule,
        cap) `key` reaches `bound` (`best`'s pruning: beyond `SLACK`), keeping it as the
        pair's floor where it is the largest yet (`step_floor`)."""
        floor = value * (1 - SLACK) if math.isfinite(value) else value
        self._floors[key] = max(self._floors.get(key, -math.inf), floor)
        return floor >= bound

    @staticmethod
    def _capped_order(pairs: Sequence[tuple[int, int]],
                      ranks: Sequence[tuple[int, float]]) -> list[int]:
        """The order in which `search` takes `pairs` under a cap: most micro-batches
        first, then by their ranks (`_rank`). The smaller each micro-batch, the less a
        stage holds and the less the cap slows it (its solves under the cap, its
        seed's among them, are the cheapest): those (S, M) hold the plans that prune
        the others soonest. Only the order: the plan found is the same.

            >>> Partitioner._capped_order([(1, 1), (2, 1), (2, 4), (4, 4)],
            ...                           [(0, 0.0), (1, 2.0), (1, 3.0), (1, 1.0)])
            [0, 3, 2, 1]
        """
        return sorted(range(len(pairs)), key=lambda i: (ranks[i][0], -pairs[i][1],
                                                         ranks[i][1], i))

    def _rank(self, stages: int, micro: int, method: str) -> tuple[int, float]:
        """Where `search` takes (S, M) = (`stages`, `micro`) in its order: (1, 1) first,
        then by its lower bound (the segments' bound where the DP gives one)."""
        if (stages, micro) == (1, 1):
            return (0, 0.0)
        cheap = self.lower_bound(stages, micro)
        tight = self.segment_bounds(stages, micro) if method == "dp" and stages > 1 else None
        return (1, max(cheap, tight.whole(stages)) if tight is not None else cheap)

    def least_memory(self, stages: int, microbatches: int, schedule: str) -> float:
        """The least memory per device any plan with `stages` stages of `microbatches`
        needs (bytes): a device's memory is a sum of per-layer terms, each fixed by the
        layer's configuration and the micro-batches its stage holds (`in_flight`), so
        each layer's least is taken alone, and a DP over the cut positions finds the
        cuts with the least largest stage. Every cap at least this has a plan (the
        layers in those configurations); none below it does. Needs a `StageSolver`
        (inf if there is no such plan)."""
        if stages > len(self.cuts) + 1:
            return math.inf
        holds = [in_flight(schedule, stages, microbatches, s) for s in range(stages)]
        sums = self.least_bytes(stages, microbatches, schedule)
        positions = [0, *self.cuts, len(self.layers)]
        last = len(positions) - 1
        # rest[i]: the least largest stage of stages s.. covering [positions[i], end).
        prefix = sums[holds[-1]]
        rest = [prefix[-1] - prefix[positions[i]] for i in range(last)] + [math.inf]
        for s in reversed(range(stages - 1)):
            prefix = sums[holds[s]]
            rest = [min((max(prefix[positions[j]] - prefix[positions[i]], rest[j])
                         for j in range(i + 1, last)), default=math.inf)
                    for i in range(last)] + [math.inf]
        return rest[0]

    def least_bytes(self, stages: int, microbatches: int, schedule: str
                    ) -> dict[int, list[float]]:
        """For each number of micro-batches a stage of a plan with `stages` stages
        holds (`in_flight`), the prefix sums over the layers of each one's least bytes
        per device in any configuration on P / `stages` devices holding that many:
        entry i - entry j bounds from below the memory of a stage of layers [j, i)
        (`least_memory`)."""
        key = (stages, microbatches, schedule)
        if key in self._least_bytes:
            return self._least_bytes[key]
        holds = [in_flight(schedule, stages, microbatches, s) for s in range(stages)]
        sums = {held: [0.0] for held in set(holds)}
        for params, acts in self.layer_bytes(stages, microbatches):
            for held, prefix in sums.items():
                prefix.append(prefix[-1] + float((params + held * acts).min()))
        self._least_bytes[key] = sums
        return sums

    def layer_bytes(self, stages: int, microbatches: int
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each layer's parameter and activation bytes per device (`layer_bytes`: a
        lower bound's terms) under each of its configurations on P / `stages` devices
        at micro-batch shapes (kept per layer kind)."""
        group = self.devices // stages
        micro = self.micro(microbatches)
        assert micro.kinds is not None
        parts = []
        for layer, kind, configs in zip(micro.layers, micro.kinds[0],
                                        self.config_lists(stages, microbatches), strict=True):
            memory_key = (kind, group)
            if memory_key not in self._layer_memory:
                both = [layer_bytes(layer, c, self.solver.model) for c in configs]
                self._layer_memory[memory_key] = (np.array([fixed for fixed, _ in both]),
                                                  np.array([kept for _, kept in both]))
            parts.append(self._layer_memory[memory_key])
        return parts

    def config_lists(self, stages: int, microbatches: int) -> list[list[Config]]:
        """Each layer's configurations on P / `stages` devices at micro-batch shapes (the
        shared tables', as every stage problem has them)."""
        key = (self.devices // stages, microbatches)
        if key not in self._config_lists:
            solver = self.solver
            micro = self.micro(microbatches)
            self._config_lists[key] = Problem.from_layers(
                micro.layers, micro.edges, key[0], self.machine, batch=self.batch,
                min_shard=solver.min_shard, tables=solver.tables, kinds=micro.kinds,
                model=solver.options.model).config_lists
        return self._config_lists[key]

    def layerwise(self, stages: int, microbatches: int, schedule: str, memory: float
                  ) -> SegmentBounds:
        """`segment_bounds` raised by each layer's least cost + λ memory under the cap
        `memory` (`layerwise.layerwise_bounds`: no DP solve; kept per S, M, cap)."""
        key = (stages, microbatches, schedule, memory)
        if key not in self._layerwise:
            group = self.devices // stages
            micro = self.micro(microbatches)
            assert micro.kinds is not None
            cache = self.solver.cache
            work, objective = [], []
            shrink = 1.0 - 1.0 / microbatches  # (as `StageProblem`'s objective)
            for layer, kind, configs in zip(micro.layers, micro.kinds[0],
                                            self.config_lists(stages, microbatches),
                                            strict=True):
                costs = self.solver.options.model.layer_costs(layer, configs, self.machine) \
                    if cache is None else cache.costs(layer, kind, group, configs, self.machine)
                work.append(costs.forward + costs.backward)
                objective.append(costs.total - shrink * costs.param_communication)
            parts = self.layer_bytes(stages, microbatches)
            self._layerwise[key] = layerwise_bounds(
                self.segment_bounds(stages, microbatches), work, objective,
                [params for params, _ in parts], [acts for _, acts in parts],
                [in_flight(schedule, stages, microbatches, s) for s in range(stages)],
                memory)
        return self._layerwise[key]

    def segments_alone(self, stages: int, microbatches: int, schedule: str, memory: float,
                       beat: float, base: SegmentBounds) -> SegmentBounds:
        """`base` raised where one segment alone under the cap `memory` bounds the ranges
        that hold it (`layerwise.one_segment_capped`: each segment's `CappedWhole.objective`
        at each in-flight count of the S, M, kept there by structure: the blocks of a
        transformer share theirs). LARAC stops once M times a segment's bound reaches
        `beat`, the step to beat: every range holding it reaches it then."""
        positions = base.positions
        group = self.devices // stages
        holds = [in_flight(schedule, stages, microbatches, s) for s in range(stages)]
        capped = {held: np.array([microbatches * self.capped.objective(
                      start, stop, group, microbatches, held, memory, beat / microbatches)
                      for start, stop in zip(positions, positions[1:], strict=False)])
                  for held in sorted(set(holds))}
        return one_segment_capped(base, self.segment_bounds(stages, microbatches), capped,
                                  holds)

    def rest_fits(self, stages: int, microbatches: int, schedule: str,
                  memory: float) -> list[dict[int, bool]]:
        """Entry s maps each stage beginning b (0 and the cuts) to whether layers [b, end)
        can be split into stages s.. of a plan of `stages` stages each of which could
        fit in `memory` (`least_bytes`): where not, no configurations of those stages
        fit, and a walk prunes every prefix ending at b (`walk.Walk.extend`). Entry
        `stages` maps only the end to True."""
        key = (stages, microbatches, schedule, memory)
        if key not in self._rest_fits:
            sums = self.least_bytes(stages, microbatches, schedule)
            end = len(self.layers)
            starts = [0, *self.cuts]
            fits: list[dict[int, bool]] = [{} for _ in range(stages)] + [{end: True}]
            for s in reversed(range(stages)):
                prefix = sums[in_flight(schedule, stages, microbatches, s)]
                after = fits[s + 1]
                for b in starts:
                    fits[s][b] = any(ok and not over(prefix[stop] - prefix[b], memory)
                                     for stop, ok in after.items() if stop > b)
            self._rest_fits[key] = fits
        return self._rest_fits[key]

    def best(self, stages: int, microbatches: int, schedule: str,
             memory: float | None = None, method: str = "dp",
             bound: float = math.inf, effort: int | None = None,
             ranges: bool = False) -> PipelinePlan | None:
        """The plan with the least step among those with `stages` contiguous stages
        that fit in `memory` bytes per device, or None if none fits.

        `method="exhaustive"` simulates every choice of stage beginnings among the cuts;
        `method="dp"` walks the same choices depth-first, stage by stage, and skips a
        prefix once a lower bound on the step of all its plans (module docstring: the
        stages so far, the next one alone, the rest spread) reaches the best step found,
        trying its least-compute bound before solving the next stage: the same optimum,
        with ties broken alike (the first in the order). A stage that cannot fit in
        `memory` with the micro-batches its position holds ends the prefix too. With
        `bound` (a step already reached elsewhere, for example with another S or M),
        only plans strictly faster than it are returned. With `effort`, raises
        `EffortSpent` once the walk has visited that many prefixes, a plan evaluated
        counting as `LEAF_EFFORT` and S M / 4 more (roughly its cost in time). With
        `ranges`, every stage range is solved first and prunes with `range_bounds`.
        With S > 1 (method dp) the walk starts from a bound a shade above the step of
        stages of about equal least compute (`seed.seed`), which finds the same plan
        with far fewer stage ranges solved.
        """
        key = (stages, microbatches, schedule, memory)
        if stages > len(self.cuts) + 1:
            self.floored(key, math.inf, bound)
            return None
        if self.floored(key, self.lower_bound(stages, microbatches), bound) \
                and method == "dp":
            return None
        if memory is not None and not self.rest_fits(stages, microbatches, schedule,
                                                     memory)[0][0]:
            self.floored(key, math.inf, bound)
            return None  # (no configurations of its stages fit: no plan at all)
        if stages == 1 and method == "dp" and memory is not None and bound < math.inf \
                and self.floored(key, self.segment_bounds(1, microbatches).whole(1), bound):
            return None  # (before the whole graph is solved to see whether it fits)
        # (One stage is solved at once: its bounds would cost more than they save, but
        # where it is solved under the cap, which takes many solves.)
        capped_alone = stages == 1 and memory is not None and not self.table.fits(
            0, len(self.layers), self.devices, microbatches,
            in_flight(schedule, 1, microbatches, 0), memory)
        tight = self.segment_bounds(stages, microbatches) \
            if method == "dp" and (stages > 1 or capped_alone) else None
        if tight is not None and self.floored(key, tight.whole(stages), bound):
            return None
        capped = None
        if tight is not None and memory is not None and stages > 1 and bound < math.inf:
            # Each layer's least cost under the cap, alone (`layerwise`: no DP solve).
            layered = tight = self.layerwise(stages, microbatches, schedule, memory)
            if self.floored(key, tight.whole(stages), bound):
                return None
            if not self.table.free_only:
                # Each segment alone under the cap (a LARAC per segment structure and
                # in-flight count: far fewer than the ranges'), then the ranges' bounds
                # under the cap (`capped_whole`), before any is solved under it. (One
                # stage is the whole graph, whose capped solve proves the same bound,
                # heard by `enough`. The first pass, whose stages fit unconstrained,
                # walks at less cost than these bounds take.)
                layered = tight = self.segments_alone(stages, microbatches, schedule,
                                                      memory, bound, layered)
                if self.floored(key, tight.whole(stages), bound):
                    return None
                capped = tight = at_least(self.capped_whole(stages, microbatches, schedule,
                                                            memory, bound), layered)
                if self.floored(key, tight.whole(stages), bound):
                    return None
        if tight is not None and ranges:
            tight = self.range_bounds(stages, microbatches, schedule, memory, bound)
            if capped is not None:
                tight = at_least(tight, capped)
            if tight.whole(stages) * (1 - SLACK) >= bound:
                return None
        first = seed(self, stages, microbatches, schedule, memory, bound) \
            if tight is not None and stages > 1 else None
        try:
            found = Walk(self, stages, microbatches, schedule, memory, method,
                         seeded_bound(first, bound), effort, tight).run()
        except EffortSpent as spent:
            if spent.plan is None:
                spent.plan = first
            raise
        # (The walk finds a plan at least as fast as the seed; the seed stands in only
        # should a rounding of the bounds have pruned it.)
        return found if found is not None else first
