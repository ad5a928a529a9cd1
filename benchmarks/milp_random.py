"""`milp_sweep.py`'s check on groups drawn at random from the whole option space (issue 33).

    .venv/bin/python benchmarks/milp_random.py --seed 1 --groups 40
    .venv/bin/python benchmarks/milp_random.py --seed 2 --groups 20 --models mlp rnnlm \\
        --devices 2 4 64 --efforts 1 3 --points-per-effort 1 --passes

Each group is drawn (`random.Random(--seed)`, so a seed names the same groups on every
run) from every model given (default: every models/*.dnn, gpt-small and every
models/onnx fixture) x `--devices` x `--machines` x the training options: optimizer
sgd/momentum/adam, precision fp32/bf16 (bf16 only on a machine with a bf16 peak, else
fp32), recompute none/full/auto, zero 0/1/2/3/auto, data-parallel none or a divisor d
of P (1 < d <= P). A group the pass refuses (d not dividing the batch, a layer that
cannot split its batch d ways) or with more than `--max-entries` table entries is
skipped and says so. Each group then runs as `milp_sweep.py`'s (its caps from the
least memory L - 1 byte to the unconstrained optimum's F - 1 byte, `solve_capped` with
and without effort bounds, the MILP on the same tables, `--passes` through
`pase-search` and `pase-partition-stages{stages=1 microbatches=1}`), and the MILP's own
plan is recounted by pase (`memory_parts`, `Problem.cost`): the tables and the
recount must agree.
"""

from __future__ import annotations

import random
from pathlib import Path

import milp_sweep
from common import machine, run_main

from pase.core.usage import UsageParser

MODELS = Path(__file__).resolve().parents[1] / "models"
DEVICES = (2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)
MACHINES = ("pase-default", "v100-nvlink", "a100-80gb-dgx")
BF16 = ("a100-nvlink", "h100-nvlink", "a100-80gb-dgx", "h100-80gb-dgx")
"""The presets with a bf16 peak."""


def every_model() -> list[str]:
    """Every bundled model `milp_sweep.load` reads, by name."""
    return sorted(path.stem for path in MODELS.glob("*.dnn")) + ["gpt-small"] + \
        sorted(path.name for path in (MODELS / "onnx").glob("*.onnx"))


def draw(rng: random.Random, models: list[str], devices: list[int],
         machines: list[str]) -> tuple[str, int, str, str]:
    """One group: model, devices, machine and the options' text."""
    model, count, where = rng.choice(models), rng.choice(devices), rng.choice(machines)
    precision = rng.choice(("fp32", "bf16"))
    options = [f"optimizer={rng.choice(('sgd', 'momentum', 'adam'))}",
               f"precision={precision if where in BF16 else 'fp32'}",
               f"recompute={rng.choice(('none', 'full', 'auto'))}",
               f"zero={rng.choice(('0', '1', '2', '3', 'auto'))}"]
    divisors = [d for d in range(2, count + 1) if count % d == 0]
    if rng.random() < 0.4:
        options.append(f"data-parallel={rng.choice(divisors)}")
    return model, count, where, " ".join(options)


def specs(arguments) -> list[dict]:  # noqa: ANN001 (an argparse.Namespace)
    """`--groups` distinct groups drawn from `--seed`, as `milp_sweep.groups` makes them."""
    rng = random.Random(arguments.seed)
    seen: set[tuple] = set()
    made = []
    for _ in range(100 * arguments.groups):
        if len(made) == arguments.groups:
            break
        group = draw(rng, arguments.models, arguments.devices, arguments.machines)
        if group in seen:
            continue
        seen.add(group)
        model, count, where, options = group
        made.append({"model": model, "devices": count, "machine": where,
                     "options": options, "key": options.replace(" ", ","),
                     "fractions": arguments.fractions, "efforts": arguments.efforts,
                     "seconds": arguments.milp_seconds,
                     "prune_above": arguments.prune_above,
                     "max_entries": arguments.max_entries, "passes": arguments.passes,
                     "points": arguments.points_per_effort, "nodes": arguments.max_nodes})
    return made


def main() -> int:
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--groups", type=milp_sweep.positive_int, default=20)
    parser.add_argument("--models", nargs="+", type=milp_sweep.model_name,
                        default=every_model())
    parser.add_argument("--devices", nargs="+", type=milp_sweep.positive_int,
                        default=list(DEVICES))
    parser.add_argument("--machines", nargs="+", type=machine, default=list(MACHINES))
    parser.add_argument("--fractions", nargs="+", type=milp_sweep.fraction,
                        default=[0.01, 0.3, 0.9])
    parser.add_argument("--efforts", nargs="*", type=milp_sweep.non_negative_int,
                        default=[1, 4])
    parser.add_argument("--milp-seconds", type=milp_sweep.positive_float, default=30.0)
    parser.add_argument("--prune-above", type=milp_sweep.positive_int, default=200_000)
    parser.add_argument("--max-entries", type=milp_sweep.positive_int, default=60_000)
    parser.add_argument("--child-gib", type=milp_sweep.positive_float, default=3.0)
    parser.add_argument("--child-cpu", type=milp_sweep.positive_float, default=120.0)
    parser.add_argument("--cpu-budget", type=milp_sweep.positive_float, default=900.0)
    parser.add_argument("--points-per-effort", type=milp_sweep.non_negative_int, default=0)
    parser.add_argument("--max-nodes", type=milp_sweep.non_negative_int, default=3)
    parser.add_argument("--passes", action="store_true")
    parser.add_argument("--all-rows", action="store_true")
    arguments = parser.parse_args()
    return milp_sweep.sweep(arguments, specs(arguments))


if __name__ == "__main__":
    run_main(main)
