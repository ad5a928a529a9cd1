"""pase-run's harness: train a model sharded, check it against one device.

    module, initial = load.load_model("models/mlp.dnn")          # through its frontend
    module = load.strategy_and_scale(module, devices=4, factor=0.125)
    report, trained = harness.check_training(module, runtime.RuntimeBackend(4),
                                             runtime.RuntimeBackend(1, words=False))
    report.passed(), check.check_problems(report)

- `load.py`: the model through `pase.universe.FRONTENDS`, the pass specs (strategy,
  scale, autodiff, SPMD) and the run's memory estimate.
- `harness.py`: the one check procedure (reference run, divergence, f64 rerun, errors)
  over a `Backend`: `runtime.RuntimeBackend` (pase's runtime, which also measures the
  words against `pase.passes.strategy`'s prediction) or `jax.JaxBackend` (the `-t jax`
  program in a child process, with XLA's collectives).
- `check.py`: seeded data, errors and tolerances, the words rule.
- `report.py`, `timeline.py`: what pase-run prints and draws.

`pase.tools.pase_run` is the command line.
"""
