"""When a step may run as M micro-batches with exactly the math of one batch:
`pase.dialect.dnn.microbatch`, re-exported here for the passes. It lives with the dialect
because the JAX target, which imports no pass, checks a pipeline plan by the same rule."""

from pase.dialect.dnn.microbatch import batch_dim, loss_weight, microbatch_problem

__all__ = ["batch_dim", "loss_weight", "microbatch_problem"]
