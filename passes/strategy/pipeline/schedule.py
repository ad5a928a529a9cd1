"""GPipe and 1F1B simulated as plain data: `pase.core.schedule`, re-exported here for the
engine. It lives in `pase.core` because the JAX target, which imports no pass, orders a
pipeline plan's work by the same simulation (`pase.targets.jax_pipeline`)."""

from pase.core.schedule import (
    SCHEDULES,
    Event,
    Kind,
    Simulation,
    ideal_bubble,
    in_flight,
    simulate,
    stage_order,
    step_time,
)

__all__ = ["SCHEDULES", "Event", "Kind", "Simulation", "ideal_bubble", "in_flight",
           "simulate", "stage_order", "step_time"]
