"""The stage walk's segment bounds never exceed the simulated step of a plan they cover,
and `Partitioner.search` finds the plan that trying every (S, M) in order finds."""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import pytest
from stage_plans import partitioner, random_source

from pase.core.schedule import in_flight
from pase.passes.strategy import Partitioner, TrainingOptions
from pase.passes.strategy.pipeline import search as search_module
from pase.passes.strategy.pipeline.bounds import SegmentBounds
from pase.passes.strategy.pipeline.bounds import possible as _possible
from pase.passes.strategy.pipeline.walk import EffortSpent
from pase.passes.strategy.progress import Progress

SLACK = 1e-12


def check_plan_bounds(plans: Partitioner, starts: list[int], micro: int, schedule: str
                      ) -> None:
    """Every bound the walk could apply on the way to the plan beginning at `starts`
    (before and after solving each stage) is at most the plan's simulated step, with
    the segments' bounds and with every range solved."""
    for ranges in (False, True):
        check_bounds(plans, starts, micro, schedule, ranges)


def check_bounds(plans: Partitioner, starts: list[int], micro: int, schedule: str,
                 ranges: bool, memory: float | None = None) -> None:
    stages = len(starts)
    tight = plans.range_bounds(stages, micro, schedule, memory) if ranges \
        else plans.segment_bounds(stages, micro)
    assert tight is not None
    plan = plans.plan_within(starts, micro, schedule, memory)
    if plan is None:  # a stage does not fit under the cap
        return
    step = plan.step
    limit = step * (1 + SLACK)
    assert tight.whole(stages) <= limit
    group = plans.devices // stages
    ends = [*starts[1:], len(plans.layers)]
    solved = []
    chained = forward = first = 0.0
    for index, (start, stop) in enumerate(zip(starts, ends, strict=True)):
        after = stages - index - 1
        assert tight.rest(after + 1, start, chained, first, forward) <= limit
        assert tight.next_stage(after, start, stop, chained, first, forward) <= limit
        stage = plans.stage(start, stop, group, micro,
                            in_flight(schedule, stages, micro, index), memory)
        assert stage is not None
        solved.append(stage)
        if index == 0:
            first = stage.cost.allreduce
        assert tight.solved_stage(after, start, stop, chained, first, forward, stage.work,
                                  stage.cost.forward, stage.cost.allreduce) <= limit
        if index == 0:
            first += tight.moved(start, stop, 0)
        ahead, back = tight.into(start, stop, index)
        chained += ahead + back + stage.work
        forward += ahead + stage.cost.forward
    # The least sends into each stage are at most what its boundary carries.
    send_forward, send_backward, once = plans.transfers.transfers(starts, solved,
                                                                  plans.micro(micro))
    for s, (start, stop) in enumerate(zip(starts[1:], ends[1:], strict=True)):
        ahead, back = tight.into(start, stop, s + 1)
        assert ahead <= send_forward[s] * (1 + SLACK)
        assert back <= send_backward[s] * (1 + SLACK)
    for s, (start, stop) in enumerate(zip(starts, ends, strict=True)):
        assert tight.moved(start, stop, s) <= once[s] * (1 + SLACK)


@pytest.mark.parametrize(("seed", "devices", "machine"),
                         [(seed, devices, machine) for seed in range(6)
                          for devices, machine in ((8, "v100-nvlink"), (16, "2080ti-pcie"))])
def test_segment_bounds_hold_for_every_plan(seed: int, devices: int, machine: str) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=devices, machine=machine)
    for stages in (2, 4):
        for micro in (1, 2, 4):
            for cuts in itertools.combinations(plans.cuts, stages - 1):
                check_plan_bounds(plans, [0, *cuts], micro, "1f1b" if seed % 3 else "gpipe")


def test_bounds_hold_under_a_training_step() -> None:
    # The segments' least costs are charged like the stages they bound (bf16 at its
    # peak, recomputation, Adam): priced with pase's fp32 formulas they exceeded the
    # stages' real costs, and the walk pruned the best cuts, keeping the plan with the
    # first layer alone in stage 0 (1.21 us here, against 1.03 us). Every cut checked,
    # and the walk finds what trying every cut finds.
    training = TrainingOptions(optimizer="adam", precision="bf16", recompute="full")
    source = (Path(__file__).resolve().parents[3] / "models" / "mlp.dnn").read_text()
    plans = partitioner(source, devices=8, machine="a100-80gb-dgx", every_cut=False,
                        training=training)
    for micro in (1, 4):
        for cuts in itertools.combinations(plans.cuts, 1):
            check_plan_bounds(plans, [0, *cuts], micro, "1f1b")
        found = plans.best(2, micro, "1f1b")
        expected = plans.best(2, micro, "1f1b", method="exhaustive")
        assert found is not None
        assert expected is not None
        assert (found.step, [s.start for s in found.stages]) == \
            (expected.step, [s.start for s in expected.stages])


def test_range_bounds_hold_under_a_memory_cap() -> None:
    # A cap between the least and the most memory of the plans: some stages are solved
    # under it (their times differ from the unconstrained ones), some cannot fit.
    source = random_source(3, chain=False)
    plans = partitioner(source, devices=16, machine="2080ti-pcie")
    for stages in (2, 4):
        for micro in (1, 2):
            memories = [plans.evaluate([0, *cuts], micro, "gpipe").memory
                        for cuts in itertools.combinations(plans.cuts, stages - 1)]
            cap = (min(memories) + max(memories)) / 2
            for cuts in itertools.combinations(plans.cuts, stages - 1):
                check_bounds(plans, [0, *cuts], micro, "gpipe", True, cap)


def test_possible_ranges_are_those_of_some_plan() -> None:
    for size in range(2, 8):
        for stages in range(1, size):
            used = set()
            for cuts in itertools.combinations(range(1, size - 1), stages - 1):
                starts = [0, *cuts, size - 1]
                used.update(zip(starts, starts[1:], strict=False))
            assert used == {(a, b) for a in range(size) for b in range(a + 1, size)
                            if _possible(a, b, size, stages)}


def ordered_search(plans: Partitioner, stage_counts: list[int], micro_counts: list[int],
                   schedule: str, memory: float | None = None):
    """pase-partition-stages' loop before `search`: every (S, M) in order, each keeping
    only plans strictly faster than the best so far, every cut tried."""
    best = None
    for stages in stage_counts:
        for micro in micro_counts:
            plan = plans.best(stages, micro, schedule, memory, "exhaustive",
                              best.step if best is not None else math.inf)
            if plan is not None and (best is None or plan.step < best.step):
                best = plan
    return best


@pytest.mark.parametrize("seed", range(8))
def test_search_finds_the_plan_of_the_ordered_loop(seed: int) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    reference = partitioner(source, devices=8)
    schedule = "gpipe" if seed % 4 == 3 else "1f1b"
    found, _ = plans.search([1, 2, 4, 8], [1, 2, 4], schedule)
    expected = ordered_search(reference, [1, 2, 4, 8], [1, 2, 4], schedule)
    assert found is not None
    assert expected is not None
    assert found.step == expected.step
    assert (len(found.stages), found.microbatches) == \
        (len(expected.stages), expected.microbatches)
    assert [s.start for s in found.stages] == [s.start for s in expected.stages]
    assert found.assignment == expected.assignment


def test_search_breaks_ties_by_the_order_given() -> None:
    # Two layers that cost nothing to split: many plans tie, the first (S, M) wins.
    source = ("graph @tie(b = 8, d = 8) {\n  %x = input [b, d]\n"
              "  %y = relu %x\n  %z = relu %y\n  return %z\n}\n")
    plans = partitioner(source, devices=4)
    found, _ = plans.search([1, 2, 4], [1, 2], "1f1b")
    expected = ordered_search(partitioner(source, devices=4), [1, 2, 4], [1, 2], "1f1b")
    assert found is not None
    assert expected is not None
    assert (len(found.stages), found.microbatches, found.step) == \
        (len(expected.stages), expected.microbatches, expected.step)


TIED = """graph @tied(b = 16, d = 32, h = 64) {
  %x = input [b, d]
  %t = input [b] : i32
  %w = param [d, h]
  %h1 = einsum %x, %w -> [b, h]
  %a1 = relu %h1
  %v = param [h, d]
  %h2 = einsum %a1, %v -> [b, d]
  %a2 = relu %h2
  %h3 = einsum %a2, %w -> [b, h]
  %a3 = relu %h3
  %z = einsum %a3, %v -> [b, d]
  %l = softmax_cross_entropy %z, %t over d
  return %l
}
"""


@pytest.mark.parametrize(("devices", "machine"), [(8, "v100-nvlink"), (16, "2080ti-pcie")])
def test_segment_bounds_hold_with_parameters_shared_across_stages(devices: int,
                                                                   machine: str) -> None:
    plans = partitioner(TIED, devices=devices, machine=machine)
    assert any(edge.carried and edge.backward for edge in plans.edges)
    for stages in (2, 4):
        for micro in (1, 4):
            for cuts in itertools.combinations(plans.cuts, stages - 1):
                check_plan_bounds(plans, [0, *cuts], micro, "1f1b")
    found, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    expected = ordered_search(partitioner(TIED, devices=devices, machine=machine),
                              [1, 2, 4], [1, 2, 4], "1f1b")
    assert found is not None
    assert expected is not None
    assert (found.step, [s.start for s in found.stages]) == \
        (expected.step, [s.start for s in expected.stages])


@pytest.mark.parametrize(("seed", "schedule"), [(1, "1f1b"), (2, "gpipe"), (5, "1f1b")])
def test_least_memory_is_the_least_cap_with_a_plan(seed: int, schedule: str) -> None:
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    for stages in (1, 2, 4):
        for micro in (1, 2):
            least = plans.least_memory(stages, micro, schedule)
            for cuts in itertools.combinations(plans.cuts, stages - 1):
                assert least <= plans.evaluate([0, *cuts], micro, schedule).memory
            fits = plans.best(stages, micro, schedule, least, "exhaustive")
            assert fits is not None
            assert fits.memory <= least
            assert plans.best(stages, micro, schedule, least * (1 - 1e-9),
                              "exhaustive") is None


def test_search_reports_the_least_memory_when_nothing_fits() -> None:
    plans = partitioner(TIED, devices=8)
    least = min(plans.least_memory(stages, micro, "1f1b")
                for stages in (1, 2, 4) for micro in (1, 2, 4))
    found, needs = plans.search([1, 2, 4], [1, 2, 4], "1f1b", least * 0.99)
    assert found is None
    assert needs == least
    found, needs = plans.search([1, 2, 4], [1, 2, 4], "1f1b", least)
    assert found is not None
    assert found.memory <= least
    assert needs == math.inf


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_search_reports_progress_on_a_terminal() -> None:
    plans = partitioner(TIED, devices=8)
    screen = Terminal()
    plans.progress = Progress("pase-partition-stages", screen, delay=0.0, interval=0.0)
    found, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    assert found is not None
    shown = screen.getvalue()
    assert "pase-partition-stages: S=1 M=1, 1 of 9 (S, M) in round 1" in shown
    assert "best step" in shown


@pytest.mark.parametrize("seed", range(4))
def test_search_under_a_cap_finds_the_plan_of_the_ordered_loop(seed: int) -> None:
    # A cap that some unconstrained stages do not meet: the search first finds the best
    # plan whose stages all fit unconstrained, then the others solved under the cap.
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    assert free is not None
    cap = free.memory * 0.8
    found, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b", cap)
    expected = ordered_search(partitioner(source, devices=8), [1, 2, 4], [1, 2, 4], "1f1b",
                              cap)
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:
        assert found.memory <= cap
        assert (found.step, len(found.stages), found.microbatches) == \
            (expected.step, len(expected.stages), expected.microbatches)
        assert found.assignment == expected.assignment


@pytest.mark.parametrize("seed", range(4))
def test_the_first_pass_under_a_cap_ends_at_its_first_plan(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first pass (stages that fit unconstrained) only finds the bound the second
    # starts from, and the second searches every (S, M) again: the first pass walks the
    # (S, M) in order only until one has a plan. The plan found is the ordered loop's.
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    assert free is not None
    cap = free.memory * 0.8
    first: list[bool] = []  # per walk of the first pass: whether it had a plan
    walk_best = Partitioner.best

    def best(self: Partitioner, *args, **kwargs):
        free_only = self.table.free_only
        try:
            plan = walk_best(self, *args, **kwargs)
        except EffortSpent as spent:
            if free_only:
                first.append(spent.plan is not None)
            raise
        if free_only:
            first.append(plan is not None)
        return plan

    monkeypatch.setattr(Partitioner, "best", best)
    found, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b", cap)
    monkeypatch.undo()
    assert first[-1]
    assert not any(first[:-1])
    expected = ordered_search(partitioner(source, devices=8), [1, 2, 4], [1, 2, 4], "1f1b",
                              cap)
    assert found is not None
    assert expected is not None
    assert found.memory <= cap
    assert (found.step, len(found.stages), found.microbatches) == \
        (expected.step, len(expected.stages), expected.microbatches)
    assert found.assignment == expected.assignment


@pytest.mark.parametrize(("seed", "capped"), [(0, False), (1, True)])
def test_a_plan_met_before_the_effort_ran_out_bounds_the_search(
        seed: int, capped: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Walks given almost no effort stop at once, each with its seed's plan or none (no
    # S = 1, which has no walk): the plans they met bound the other (S, M) at once, and
    # the search, every walk finished in later rounds, returns the ordered loop's plan.
    source = random_source(seed, chain=seed % 2 == 0)
    plans = partitioner(source, devices=8)
    cap = None
    if capped:
        free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
        assert free is not None
        cap = free.memory * 0.8
    met = []
    walk_best = Partitioner.best

    def best(*args, **kwargs):
        try:
            return walk_best(*args, **kwargs)
        except EffortSpent as spent:
            met.append(spent.plan)
            raise

    monkeypatch.setattr(search_module, "FIRST_EFFORT", 1)
    monkeypatch.setattr(Partitioner, "best", best)
    found, _ = plans.search([2, 4], [1, 2, 4], "1f1b", cap)
    monkeypatch.undo()
    expected = ordered_search(partitioner(source, devices=8), [2, 4], [1, 2, 4], "1f1b", cap)
    assert any(plan is not None for plan in met)
    assert found is not None
    assert expected is not None
    assert (found.step, len(found.stages), found.microbatches) == \
        (expected.step, len(expected.stages), expected.microbatches)
    assert found.assignment == expected.assignment


def test_capped_whole_bounds_hold_for_every_plan_under_a_cap() -> None:
    # `Partitioner.capped_whole` (each range's Lagrangian bound under the cap, as stage
    # s) never exceeds the best plan of its (S, M) found by trying every cut (each stage
    # solved under the cap), nor any plan's bounds along its walk (`check_capped`); and
    # it sees the cap: somewhere above the unconstrained segments' bound.
    raised = False
    for seed in (0, 1):
        source = random_source(seed, chain=seed % 2 == 0)
        plans = partitioner(source, devices=8)
        free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
        assert free is not None
        cap = free.memory * 0.7
        for stages, micro in itertools.product((2, 4), (1, 2, 4)):
            if stages > len(plans.cuts) + 1:
                continue
            capped = plans.capped_whole(stages, micro, "1f1b", cap)
            best = plans.best(stages, micro, "1f1b", cap, "exhaustive")
            if best is not None:
                assert capped.whole(stages) <= best.step * (1 + SLACK)
            raised |= capped.whole(stages) > plans.segment_bounds(stages,
                                                                  micro).whole(stages)
            for cuts in itertools.combinations(plans.cuts, stages - 1):
                check_capped(plans, capped, [0, *cuts], micro, cap)
    assert raised


def check_capped(plans: Partitioner, capped: SegmentBounds, starts: list[int], micro: int,
                 cap: float) -> None:
    """`capped`'s bounds on the way to the plan beginning at `starts` hold."""
    plan = plans.plan_within(starts, micro, "1f1b", cap)
    if plan is None:
        return
    limit = plan.step * (1 + SLACK)
    assert capped.whole(len(starts)) <= limit
    ends = [*starts[1:], len(plans.layers)]
    chained = forward = first = 0.0
    for index, (start, stop) in enumerate(zip(starts, ends, strict=True)):
        after = len(starts) - index - 1
        assert capped.rest(after + 1, start, chained, first, forward) <= limit
        assert capped.next_stage(after, start, stop, chained, first, forward) <= limit
        stage = plan.stages[index]
        if index == 0:
            first = stage.cost.allreduce + capped.moved(start, stop, 0)
        ahead, back = capped.into(start, stop, index)
        chained += ahead + back + stage.cost.forward + stage.cost.backward
        forward += ahead + stage.cost.forward


def test_capped_work_bounds_every_stage_under_a_cap() -> None:
    # `CappedWhole.work` (LARAC's bound on a range's F + B over the configurations that
    # fit holding some micro-batches) never exceeds the F + B of the stage the solver
    # gives that range under the cap, for every range and in-flight count; it sees the
    # cap (somewhere above the segments' F + B); and the chain bounds it raises hold
    # along every plan's walk (`check_capped`, `rest`).
    raised = False
    source = random_source(0, chain=True)
    plans = partitioner(source, devices=8)
    free, _ = plans.search([1, 2, 4], [1, 2, 4], "1f1b")
    assert free is not None
    cap = free.memory * 0.7
    for stages, micro in ((2, 2), (4, 4)):
        group = plans.devices // stages
        tight = plans.segment_bounds(stages, micro)
        starts = [0, *plans.cuts]
        for start, stop in itertools.combinations([*starts, len(plans.layers)], 2):
            for held in range(1, min(stages, micro) + 1):
                bound = plans.capped.work(start, stop, group, micro, held, cap)
                stage = plans.stage(start, stop, group, micro, held, cap)
                if stage is None:
                    continue
                assert bound <= stage.work * (1 + SLACK)
                raised |= bound > tight.least_work(start, stop) * (1 + 1e-6)
        capped = plans.capped_whole(stages, micro, "1f1b", cap, chain=True)
        assert (capped.work_at >= tight.work[None] - 1e-6 * abs(tight.work[None])).all()
        for cuts in itertools.combinations(plans.cuts, stages - 1):
            check_capped(plans, capped, [0, *cuts], micro, cap)
    assert raised
