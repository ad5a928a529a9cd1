"""The pipeline search of pase-partition-stages: S contiguous stages, M micro-batches.

One role per file:

    plan.py        PlanSpec (a plan as given), StageCost, SolvedStage, StagePlan, PipelinePlan
    microbatch.py  the graph at micro-batch shapes; a device's parameter and activation bytes
    schedule.py    GPipe and 1F1B simulated as plain data (the step, the bubble, in flight),
                   re-exported from pase.core.schedule (the JAX target orders plans by it)
    segments.py    where a stage may begin (the clean cuts of pase-merge-layers)
    transfers.py   the inter-stage rule: what crosses a boundary, and its seconds
    stages.py      a layer range cut out (`cut`, one signature), its cost, `StageSolver`
    evaluate.py    `evaluate_plan`: a given plan simulated; `assemble`, shared with the search
    bounds.py      lower bounds on the step (`SegmentBounds`, `spread`, the critical path)
    hull.py        Lagrangian bounds on a range under a memory cap
    least.py       `LeastCosts`: the least costs the bounds are made of, found once
    capped_whole.py  a bound on a whole (S, M) that sees a memory cap (`CappedWhole`)
    layerwise.py   a cheaper one from each layer alone, no DP solve (`layerwise_bounds`)
    walk.py        `Walk`: the branch-and-bound over the cuts for one (S, M)
    choices.py     the walk's tests before a solve, asked of every next cut at once
    roundtrip.py   a bound that sees the stages after a stage (micro-batch 0's round trip)
    capped_work.py every range's least F + B under a cap as each stage index, for those bounds
    search.py      `Partitioner`: the search over (S, M) with effort rounds; least memory

Import them through `pase.passes.strategy` from outside the engine. This file imports
nothing, so that the single-graph engine (`memory.py`) can use `microbatch.py` without
a cycle.
"""
