"""pase's predicted step of Megatron-LM's own layouts against the step Megatron-LM
measured: the GPT family of Narayanan et al. 2021, Table 1 (1.7B to 1T parameters on 32
to 3,072 A100s), each row's layout (t x p x d) evaluated by `pase-partition-stages
{strategy=...}` as `benchmarks/gpt.py` evaluates it (its `megatron_plan`, the same
training step: Adam, bf16, full recomputation, ZeRO 0, on `a100-80gb-dgx`), no search;
then the same layout with sequence parallelism (SP, gpt.py's `--sequence-parallel`:
the norms and residual adds split t ways along the sequence instead of left whole on
P / t devices, docs/cost-model.md "Placement").

    .venv/bin/python benchmarks/megatron_steps.py                  # all ten rows
    .venv/bin/python benchmarks/megatron_steps.py --rows megatron-1.7b megatron-3.6b

The published step is the one the paper's TFLOP/s per GPU implies, by the paper's own
count of a step's FLOPs (its equation 3, which counts the recomputed forward):
F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)), step = F / (TFLOP/s per GPU x GPUs).
The ratio is pase's predicted step over that step: pase's datasheet peaks make its
prediction a lower bound, so a ratio below 1 is expected; nothing here is fitted to it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from common import machine, markdown_table, positive_int, run_main
from gpt import ROWS, Row, generate, layer_names, megatron_plan, run

from pase.core.usage import UsageParser

PUBLISHED_TFLOPS = {
    "megatron-1.7b": 137, "megatron-3.6b": 138, "megatron-7.5b": 142, "megatron-18b": 135,
    "megatron-39b": 138, "megatron-76b": 140, "megatron-146b": 148, "megatron-310b": 155,
    "megatron-530b": 163, "megatron-1t": 163,
}
"""Narayanan et al. 2021, Table 1: achieved teraFLOP/s per GPU."""

TRAINING = "optimizer=adam precision=bf16 recompute=full zero=0"
"""benchmarks/gpt.py's default training step (the paper's)."""


def paper_flops(layers: int, hidden: int, sequence: int, vocabulary: int,
                batch: int) -> float:
    """The FLOPs of one step by the paper's equation 3 (with the recomputed forward).

        >>> round(paper_flops(24, 2304, 2048, 51200, 512) / (137e12 * 32), 3)
        3.528
    """
    return 96 * batch * sequence * layers * hidden**2 * (
        1 + sequence / (6 * hidden) + vocabulary / (16 * layers * hidden))


def measure(row: Row, folder: Path, preset: str, timeout: float) -> list[str]:
    """One row's cells: the published step, pase's prediction of the layout and their
    ratio, then the same with Megatron-LM's sequence parallelism (`megatron_plan`'s)."""
    shape = generate().LANGUAGE_MODELS[row.preset]
    model = folder / f"{row.preset}.dnn"
    graph = generate().graph_name(row.preset)
    model.write_text(generate().language_model(shape, graph).render())
    microbatches = shape.batch // row.data
    print(f"{row.preset} on {row.devices} devices ...", file=sys.stderr, flush=True)
    tflops = PUBLISHED_TFLOPS[row.preset]
    published = paper_flops(shape.layers, shape.hidden, shape.sequence, shape.vocabulary,
                            shape.batch) / (tflops * 1e12 * row.devices)
    cells = [row.preset.removeprefix("megatron-"), str(row.devices),
             f"{row.tensor} x {row.pipeline} x {row.data}", str(tflops), f"{published:.3f}"]
    for sequence_parallel in (False, True):
        plan = folder / "megatron.json"
        plan.write_text(json.dumps(megatron_plan(graph, layer_names(model), row,
                                                 shape.layers, microbatches,
                                                 sequence_parallel)))
        result = run(model, f'devices={row.devices} machine={preset} {TRAINING} '
                            f'strategy="{plan}"', folder / "m.json", timeout)
        if result.pipeline is None:
            cells += [f"({result.error[:40]})", "-"]
        else:
            step = result.pipeline["step"]
            cells += [f"{step:.3f}", f"{step / published:.2f}"]
    return cells


def arguments() -> argparse.Namespace:
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", choices=[row.preset for row in ROWS],
                        metavar="PRESET", help="the rows to run (default: all)")
    parser.add_argument("--machine", type=machine, default="a100-80gb-dgx",
                        help="the machine preset (default a100-80gb-dgx)")
    parser.add_argument("--timeout", type=positive_int, default=1800,
                        help="seconds an evaluation may take (default 1800)")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    chosen = args.rows or [row.preset for row in ROWS]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for row in (row for row in ROWS if row.preset in chosen):
            rows.append(measure(row, Path(folder), args.machine, args.timeout))
            print("| " + " | ".join(rows[-1]) + " |", file=sys.stderr, flush=True)
    print(f"machine {args.machine}; {TRAINING}; Megatron-LM's layouts, evaluated")
    print("\n".join(markdown_table((
        ("model", "<"), ("P", ">"), ("t x p x d", "<"), ("published TFLOP/s/GPU", ">"),
        ("published step (s)", ">"), ("pase step (s)", ">"), ("pase / published", ">"),
        ("pase step, SP (s)", ">"), ("SP / published", ">")), rows)))
    return 0


if __name__ == "__main__":
    run_main(main)
