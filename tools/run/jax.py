"""`pase-run --engine jax`: the `-t jax` program on P XLA devices as a pase-run backend.

    report = train_jax(strategy_and_scale(load_model("models/mlp.dnn")[0], 8, 0.125), 8)
    print_collectives(report)   # pase.tools.run.report

The JAX program runs in a child process (`XLA_FLAGS=--xla_force_host_platform_device_count=P`
gives a CPU machine P devices) on pase's seeded data, passed to it as an `.npz` in a
temporary folder that is always removed; it returns its losses, last gradients, updated
parameters, the compiled HLO and the HLO XLA's SPMD partitioner leaves of the step (read
from XLA's dump in that folder: `dumped`). The reference is pase's runtime on one device
(`harness.check_training`), so JAX's autodiff checks pase's gradient rules.
`collectives(hlo)` reads XLA's collectives from an HLO text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from pase.dialect import dnn
from pase.dialect.dnn.seeding import LEARNING_RATE
from pase.dialect.training_options import recomputed, training_of, zero_stage
from pase.passes.strategy import (
    Layer,
    Machine,
    Problem,
    TrainingConfig,
    TrainingCost,
    TrainingOptions,
    build_problem,
    predicted_words,
)
from pase.targets.jax import jax_program
from pase.tools.errors import ToolError
from pase.tools.run.check import TrainingReport
from pase.tools.run.harness import Trained, check_training, element_of
from pase.tools.run.load import forward_graph, layer_configs, with_configs
from pase.tools.run.runtime import RuntimeBackend

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
"""XLA's collective instructions, as the HLO text names them."""

INSTALL = "pip install 'pase[jax]'"


@dataclass(frozen=True)
class Collective:
    """One collective of the step: its kind, group size, result elements and bytes."""

    kind: str
    group: int
    elements: int
    bytes: int
    groups: str

    def words(self) -> float:
        """The words one device receives, by the ring formulas of pase's cost model."""
        g, n = self.group, self.elements
        if g <= 1:
            return 0.0
        return {"all-reduce": 2 * (g - 1) / g * n, "all-gather": (g - 1) / g * n,
                "reduce-scatter": (g - 1) * n, "all-to-all": (g - 1) / g * n,
                "collective-permute": float(n)}[self.kind]


@dataclass(frozen=True)
class Compiled:
    """What XLA compiled of a step: its collectives, the words pase's cost model predicts
    per kind ("layer", "edge"), the compile and step times, the StableHLO text;
    `partitioned`: the collectives are read from the HLO XLA's SPMD partitioner leaves
    (the program's own types), not from the compiled HLO (where XLA's CPU backend has
    widened bf16 collectives to f32 and merged equal ones)."""

    collectives: list[Collective] = field(default_factory=list)
    predicted: dict[str, float] = field(default_factory=dict)
    compile_seconds: float = 0.0
    step_seconds: float = 0.0
    stablehlo: str = ""
    partitioned: bool = False


@dataclass
class JaxReport:
    """A `TrainingReport` of the JAX run, with what XLA compiled and pase predicted."""

    training: TrainingReport
    compiled: Compiled


HLO_LINE = re.compile(r"=\s*(?P<type>\(.*?\)|\S+)\s+(?P<kind>" + "|".join(KINDS)
                      + r")(?:-start)?\(")
SHAPE = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")


def collectives(hlo: str) -> list[Collective]:
    """The collectives of a compiled HLO module (async pairs counted once, at -start).

        >>> collectives("%a = f32[8,16]{1,0} all-reduce(%d), replica_groups={{0,4},{1,5}}")
        [Collective(kind='all-reduce', group=2, elements=128, bytes=512, groups='{{0,4},{1,5}}')]
    """
    found = []
    partitions = re.search(r"num_partitions=(\d+)", hlo)
    everyone = int(partitions.group(1)) if partitions else 1
    runs = _runs(hlo)
    computation = ""
    for line in hlo.splitlines():
        if start := COMPUTATION.match(line):
            computation = start["name"]
        match = HLO_LINE.search(line)
        if not match or "-done(" in line:
            continue
        shapes = SHAPE.findall(match["type"])
        elements = [int(np.prod([int(d) for d in dims.split(",") if d])) for _, dims in shapes]
        sizes = [_element_bytes(dtype) for dtype, _ in shapes]
        groups = _groups(line)
        found += [Collective(match["kind"], _group_size(groups, line, everyone), sum(elements),
                             sum(e * s for e, s in zip(elements, sizes, strict=True)),
                             groups)] * runs.get(computation, 1)
    return found


COMPUTATION = re.compile(r"^(?P<entry>ENTRY )?%(?P<name>[\w.\-]+) \(")
CALLED = re.compile(r"\b(?P<key>body|condition|to_apply|calls|branch_computations|"
                    r"true_computation|false_computation)=\{?(?P<names>%[\w.\-]+"
                    r"(?:,\s*%[\w.\-]+)*)")


def _runs(hlo: str) -> dict[str, int]:
    r"""How often one run of the module's entry runs each computation it reaches: a while
    loop's body its trip count times (the condition's `compare(i, constant(N)),
    direction=LT`, JAX's scan and fori_loop counting from 0; once where no such bound is
    read), every other called computation as often as its caller. A scan's collectives
    run once per step: read once, they were counted once a step.

        >>> _runs("ENTRY %main () {\n  %w = while(%t), condition=%c, body=%b\n}\n"
        ...       "%c (p: s32[]) -> pred[] {\n  %k = s32[] constant(32)\n"
        ...       "  ROOT %lt = pred[] compare(%i, %k), direction=LT\n}\n")
        {'main': 1, 'c': 33, 'b': 32}
    """
    bodies: dict[str, list[str]] = {}
    entry, name = "", ""
    for line in hlo.splitlines():
        if start := COMPUTATION.match(line):
            name = start["name"]
            entry = name if start["entry"] else entry
            bodies[name] = []
        elif name:
            bodies[name].append(line)
    runs: dict[str, int] = {}

    def visit(computation: str, times: int) -> None:
        runs[computation] = runs.get(computation, 0) + times
        for line in bodies.get(computation, []):
            called = {m["key"]: [n.strip().lstrip("%") for n in m["names"].split(",")]
                      for m in CALLED.finditer(line)}
            trips = _trips(bodies.get(called["condition"][0], [])) if "body" in called else 1
            for key, names in called.items():
                for callee in names:
                    visit(callee, times * (trips + (key == "condition") if key in
                                           ("body", "condition") else 1))

    if entry:
        visit(entry, 1)
    return runs


def _trips(condition: list[str]) -> int:
    """The trip count of a while loop from its condition's lines: `i < N` of a constant N
    (1 where it is not that)."""
    constants = dict(re.findall(r"%([\w.\-]+) = s32\[\] constant\((\d+)\)", "\n".join(condition)))
    for line in condition:
        if "direction=LT" in line and (compared := re.search(r"compare\(%[\w.\-]+, "
                                                               r"%([\w.\-]+)\)", line)):
            return int(constants.get(compared.group(1), 1))
    return 1


def _element_bytes(dtype: str) -> int:
    bits = re.search(r"\d+", dtype)
    return int(bits.group()) // 8 if bits else 1


def _groups(line: str) -> str:
    match = re.search(r"replica_groups=(\{\{[^=]*?\}\}|\{\}"
                      r"|mesh\[[^\]]*\](?:,\s*device_ids=\([^)]*\)+)?\s*\{[^}]*\}"
                      r"|\[\d+,\d+\]<=\[[\d,]*\](?:T\([\d,]*\))?)", line)
    if match:
        return match.group(1)
    pairs = re.search(r"source_target_pairs=(\{[^=]*\}\})", line)
    return pairs.group(1) if pairs else ""


def _group_size(groups: str, line: str, everyone: int) -> int:
    """The devices in one group: an explicit list, the named axes of a mesh (its devices
    in any order, `device_ids=`), XLA's iota list (`[G,S]<=[...]`: G groups of S
    devices), or (no groups, `{}`) all `everyone` devices of the program.

        >>> _group_size(_groups("replica_groups=mesh['axis_0'=2,'axis_1'=2], "
        ...                     "device_ids=([2,2]T(1,0)) {'axis_1'}, use"), "", 8)
        2
    """
    if iota := re.match(r"\[\d+,(\d+)\]<=", groups):
        return int(iota.group(1))
    if groups.startswith("{{"):
        return len(groups[2:].split("}")[0].split(","))
    if groups.startswith("mesh["):
        sizes = dict(re.findall(r"'([^']+)'=(\d+)", groups))
        chosen = groups[groups.index("]") + 1:]
        size = 1
        for name, sub in re.findall(r"'([^']+)'(:\(\d+\)\d+)?", chosen):
            size *= int(sub.rsplit(")", 1)[1]) if sub else int(sizes[name])
        return size
    if "source_target_pairs" in line:
        return 2 if re.search(r"\{(\d+),(?!\1\})\d+\}", groups) else 1
    return everyone


class JaxBackend:
    """The `-t jax` program of a model's strategy on `devices` XLA devices, in a child
    process (`run_program`) that may run `timeout` seconds; after `train`, `compiled`
    holds what XLA compiled and how long it took (for the first `train`)."""

    def __init__(self, devices: int, timeout: float = 600.0, log: str | None = None):
        self.devices = devices
        self.timeout = timeout
        self.log = log
        self.compiled: Compiled | None = None

    def train(self, module: ModuleOp, data: dict[str, np.ndarray], steps: int, lr: float,
              float_type: str | None) -> Trained:
        graph = forward_graph(module)
        configs = layer_configs(graph)
        source = jax_program(with_configs(module, configs), self.devices)
        saved = run_program(source, data, self.devices, steps, lr,
                            element_of(graph, float_type) == "f64", self.timeout, self.log)
        names = [op.output.name_hint or "v" for op in graph.body.block.ops
                 if isinstance(op, dnn.ParamOp)]
        problem = build_problem(graph, self.devices, pinned=configs)
        predicted: dict[str, float] = {}
        for (kind, _), words in predicted_words(problem, configs).items():
            predicted[kind] = predicted.get(kind, 0.0) + words
        predicted["gather"] = second_gathers(graph, problem, configs)
        if self.compiled is None and "hlo" not in saved:  # a pipeline's programs
            from pase.tools.run.jax_pipeline import pipeline_compiled

            self.compiled = pipeline_compiled(saved, graph, self.devices)
        if self.compiled is None:  # the first run's: an f64 rerun (`check_training`) keeps it
            hlo = saved.get("partitioned_hlo", saved["hlo"])  # (none on 1 device)
            self.compiled = Compiled(collectives(str(hlo)), predicted,
                                     float(saved["compile_seconds"]),
                                     float(saved["step_seconds"]), str(saved["stablehlo"]),
                                     "partitioned_hlo" in saved)
        return Trained([float(v) for v in saved["losses"]],
                       {n: saved[f"grad/{n}"] for n in names},
                       {key.removeprefix("param/"): value for key, value in saved.items()
                        if key.startswith("param/")})  # (with the optimizer's state)


def second_gathers(graph: dnn.GraphOp, problem: Problem,
                   configs: Mapping[str, Mapping[str, int]]) -> float:
    """The words of ZeRO 3's all-gathers before the backward, which `predicted_words` (the
    plain step's collectives) leaves out (docs/cost-model.md, "ZeRO's collectives written
    out"): `zero_gathers` of one micro-batch, summed. 0 without ZeRO 3 or a training step."""
    return sum(zero_gathers(graph, problem.layer_data, configs, problem.machine).values())


def zero_gathers(graph: dnn.GraphOp, layers: Sequence[Layer],
                 configs: Mapping[str, Mapping[str, int]], machine: Machine,
                 microbatches: int = 1) -> dict[str, float]:
    """Per ZeRO 3 layer of `layers` (at micro-batch shapes), the words of its gathers
    that the plain step's words leave out, in a step of `microbatches`: its
    `TrainingCost.layer_costs` words at its ZeRO stage less those at ZeRO 0, in the same
    recomputation, each part at its own rate (`param_words` once a step, the rest once a
    micro-batch, as `predicted_pipeline_words`): M x the second gather where the backward
    reads the param, (M - 1) x the first gather of every param (the program holds only
    the shard between micro-batches; the plain step's all-gather once a step)."""
    options = training_of(graph)
    if options.is_default():
        return {}
    model = TrainingCost(TrainingOptions(zero="auto"))  # (words are elements at any precision)
    by_name = {layer.name: layer for layer in layers}
    result: dict[str, float] = {}
    for op, name in graph.layer_names().items():
        if (stage := zero_stage(op, options)) < 3 or name not in by_name:
            continue
        again = recomputed(op, options)
        costs = [model.layer_costs(by_name[name],
                                   [TrainingConfig(dict(configs[name]), again, zero)],
                                   machine) for zero in (stage, 0)]
        words = [microbatches * float(c.words[0] - c.param_words[0]) + float(c.param_words[0])
                 for c in costs]
        result[name] = words[0] - words[1]
    return result


def train_jax(module: ModuleOp, devices: int, steps: int = 1, seed: int = 0,
              lr: float = LEARNING_RATE, float_type: str | None = None,
              initial: dict[str, np.ndarray] | None = None, timeout: float = 600.0,
              backend: str = "threads") -> JaxReport:
    """The JAX program of `module`'s strategy on `devices` XLA devices against pase's
    1-device run (on `backend`), on the same data (`check_training`)."""
    jax = JaxBackend(devices, timeout)
    reference = RuntimeBackend(1, backend, timeout, words=False)
    training, _ = check_training(module, jax, reference, steps, seed, lr, float_type,
                                 initial)
    assert jax.compiled is not None
    return JaxReport(training, jax.compiled)


def run_program(source: str, data: dict[str, np.ndarray], devices: int, steps: int,
                lr: float, f64: bool, timeout: float,
                log: str | None = None) -> dict[str, np.ndarray]:
    """Run the JAX program `source` on `devices` CPU devices (or the machine's
    accelerators) in a child process; its saved results by name. If it fails, its
    command, output and source go to the file `log` when one is given (`pase-run
    --jax-log`); nothing outlives the run otherwise."""
    with tempfile.TemporaryDirectory(prefix="pase-jax-") as folder:
        program, inputs, outputs = (Path(folder) / n for n in ("step.py", "data.npz",
                                                                "result.npz"))
        program.write_text(source, encoding="utf-8")
        np.savez(inputs, **data)  # type: ignore[arg-type]
        command = [sys.executable, str(program), "--steps", str(steps), "--lr", repr(lr),
                   "--data", str(inputs), "--save", str(outputs), *(["--f64"] * f64)]
        environment = child_environment(devices)
        environment["XLA_FLAGS"] += partition_dump(Path(folder))
        try:
            finished = subprocess.run(command, env=environment,
                                      capture_output=True, text=True, timeout=timeout,
                                      check=False)
        except subprocess.TimeoutExpired:
            raise ToolError(f"the JAX program did not finish within {timeout:g} s "
                            "(--timeout)") from None
        if finished.returncode != 0:
            if log is None:
                raise ToolError(child_error(finished.stderr, finished.returncode)
                                + " (--jax-log FILE keeps its whole output and the program)")
            try:
                keep_output(log, command, finished, source)
            except OSError as error:  # the failure itself still comes first
                raise ToolError(child_error(finished.stderr, finished.returncode)
                                + f" (--jax-log {log} could not be written: "
                                f"{error.strerror})") from None
            raise ToolError(child_error(finished.stderr, finished.returncode, log))
        with np.load(outputs) as saved:
            results = dict(saved)
        if step := dumped(Path(folder)).get("jit_step"):  # (a pipeline's has other names)
            results["partitioned_hlo"] = np.array(step)
        return results


def child_environment(devices: int) -> dict[str, str]:
    """The environment with `devices` host devices for XLA (other XLA flags kept)."""
    env = dict(os.environ)
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", ""))
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def partitioned(source: str, devices: int, folder: Path) -> dict[str, str]:
    """The HLO XLA's SPMD partitioner leaves of each program the JAX program `source` jits
    in one step on `devices` CPU devices (`dumped`), from XLA's dump into `folder`."""
    program = folder / "step.py"
    program.write_text(source)
    environment = child_environment(devices)
    environment["XLA_FLAGS"] += partition_dump(folder)
    finished = subprocess.run([sys.executable, str(program), "--steps", "1"],
                              env=environment, capture_output=True, text=True, check=False)
    if finished.returncode:
        raise ToolError(child_error(finished.stderr, finished.returncode))
    return dumped(folder)


def partition_dump(folder: Path) -> str:
    """The XLA flags that dump, into `folder`/dump, the HLO each program has after XLA's
    SPMD partitioner (`dumped` reads it)."""
    return f" --xla_dump_to={folder / 'dump'} --xla_dump_hlo_pass_re=spmd-partitioning"


def dumped(folder: Path) -> dict[str, str]:
    """The HLO XLA's SPMD partitioner left of each program in `folder`/dump, by its jitted
    function's name (`jit_step`, `jit_update`, ...; those of one name joined): what the
    program asks for, its collectives in the types it gives them, before the CPU
    backend's own passes, which widen bf16 collectives to f32 and merge equal ones."""
    modules: dict[str, str] = {}
    for dump in sorted((folder / "dump").glob("*after_spmd-partitioning*.txt")):
        name = dump.name.split(".")[1]
        modules[name] = modules.get(name, "") + dump.read_text()
    return modules


FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\n'
                   r'(?:[ \t]+(?P<code>\S[^\n]*))?')


def child_error(stderr: str, returncode: int = 1, log: str = "") -> str:
    """What failed in the JAX program: its own `error:` line (it words its own errors),
    else the exception its traceback ends with, where it was raised (the program's last
    frame, else the last one) and the line that raised it, else its exit status; then
    where its whole output is (`log`, the user's `--jax-log`).

        >>> child_error('Traceback (most recent call last):\\n  File "/t/step.py", line 9, '
        ...             'in f\\n    assert x\\nAssertionError\\n')
        'the JAX program failed at step.py line 9 (in f): AssertionError, raised by `assert x`'
    """
    where = f"; its whole output, and the program, are in {log}" if log else ""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error: "):
            return "the JAX program failed: " + line[len("error: "):] + where
    if not lines:
        status = (f"was killed by signal {-returncode}" if returncode < 0
                  else f"exited with status {returncode}")
        return f"the JAX program {status} and printed nothing{where}"
    frames = list(FRAME.finditer(stderr))
    own = [frame for frame in frames if os.path.basename(frame["file"]) == "step.py"]
    place = raised = ""
    if frames:
        frame = (own or frames)[-1]
        place = (f" at {os.path.basename(frame['file'])} line {frame['line']} "
                 f"(in {frame['function']})")
        if frame["code"] and frame is frames[-1]:
            raised = f", raised by `{frame['code'].strip()}`"
    return f"the JAX program failed{place}: {lines[-1].strip()}{raised}{where}"


def keep_output(path: str, command: list[str], finished: subprocess.CompletedProcess[str],
                source: str) -> None:
    """Write a failed JAX program's command, exit status, output and source to `path`
    (the user's `--jax-log`; the program's temporary folder goes with the run)."""
    with open(path, "w", encoding="utf-8") as log:
        log.write(f"command: {' '.join(command)}\nexit status: {finished.returncode}\n"
                  f"--- stdout\n{finished.stdout}--- stderr\n{finished.stderr}"
                  f"--- step.py\n{source}")
