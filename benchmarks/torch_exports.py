"""Full-size PyTorch exports through every tool a user runs, one markdown row per file.

    python models/export_torch.py --full ../full-exports gpt2 bert t5     # torch needed there
    .venv/bin/python benchmarks/torch_exports.py ../full-exports/*.onnx
    .venv/bin/python benchmarks/torch_exports.py --jax-loss ../full-exports/mlp.*.onnx

Per file, each step in a fresh process under `/usr/bin/time`, as a user types it (wall
seconds / CPU seconds, user and system / peak RSS of the process):

- search: `pase-opt FILE -p 'pase-search{devices=8 report=true}'` (the import, folding
  and search), and the report's predicted speedup (over data parallelism);
- check: `pase-run FILE --devices 4 --scale 0.125 --check`, and its result;
- jax weights: `pase-opt FILE -p 'pase-search{devices=8 one-mesh=true}' -t jax -o
  DIR/step.py`, then the program's own `model_weights` (imported, not run) loads
  `step.weights.npz` onto zero-filled params: "yes" when every param it has then equals
  the model's initializer (`load_model(FILE).initial_values`);
- with `--jax-loss`, the program is also run, one step on 8 CPU devices
  (`XLA_FLAGS=--xla_force_host_platform_device_count=8 python step.py --steps 1`), and
  its first loss is compared with softmax cross-entropy over `onnx.reference`'s
  evaluation of the file on the program's own batch (its seeded inputs; batch norm with
  the batch's statistics, no dropout, as pase trains): "equal" within 1e-4 relative
  (f32). Full-size programs take minutes and gigabytes each (bert-base: about 12 GB).

With `--layers`, the exports of `models/export_layers.py` (the layers a user hands over,
each alone; small files, run in this process): per file its exporter and opset, whether
it imports, the step of `pase-search{devices=8 report=true}`, `pase-run --devices 4
--check` (unscaled: the grouped convolutions' channels form no groups at 1/8), pase's
first loss against `onnx.reference`'s (the file as exported: each norm with its own
epsilon) and their relative difference, and the row's CPU seconds:

    python models/export_layers.py ../layers                              # torch needed
    .venv/bin/python benchmarks/torch_exports.py --layers ../layers/*

The files are not in the repository (hundreds of megabytes each); the first failing step
of a file is its row's last column, with the tool's first error line.

With `--matrix`, the variants of `models/export_variants.py` instead (small files, run in
this process): per file the search on 8 devices, the check, and pase's first loss on one
device against `onnx.reference`'s evaluation of the file; a variant whose export failed
(`NAME.export-failed`) is a row saying so. docs/pytorch.md's variant matrix is its output:

    python models/export_variants.py ../variants                         # torch needed
    .venv/bin/python benchmarks/torch_exports.py --matrix ../variants/*.onnx \
        ../variants/*.export-failed
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pase.core.usage import UsageParser

BIN = Path(sys.executable).parent
COLUMNS = ("file", "search: wall s / CPU s / peak RSS", "predicted speedup",
           "check: wall s / CPU s / peak RSS", "check", "jax weights", "jax first loss")


def run(arguments: list[str], env: dict[str, str] | None = None) -> tuple[str, int, str, str]:
    """`wall s / CPU s / peak RSS` of one tool run under `/usr/bin/time`, its exit status,
    stdout and stderr."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", times.name,
                               *arguments], capture_output=True, text=True, check=False,
                              env=env)
        wall, user, system, kilobytes = times.read().split()[-4:]
    measured = (f"{float(wall):.0f} / {float(user) + float(system):.0f} / "
                f"{int(kilobytes) / 2**20:.1f} GiB")
    return measured, done.returncode, done.stdout, done.stderr


def first_error(err: str) -> str:
    lines = [line for line in err.splitlines() if "error" in line] or err.splitlines()
    return (lines[0] if lines else "no output").replace("|", "/")[:160]


def jax_weights(path: Path, folder: Path, jax_loss: bool) -> list[str]:
    """Whether the `-t jax` program of `path` on 8 devices starts from the model's
    weights; searched with `one-mesh=true`, the plans the jax target runs (docs/jax.md: a
    30,522-word vocabulary is split 2 ways, not 6). With `jax_loss`, also its first loss
    on 8 CPU devices against `onnx.reference`'s on the same batch."""
    program = folder / "step.py"
    _, status, _, err = run([str(BIN / "pase-opt"), str(path), "-p",
                             "pase-search{devices=8 one-mesh=true}", "-t", "jax", "-o",
                             str(program)])
    if status:
        return [f"pase-opt -t jax failed: {first_error(err)}"]
    _, status, out, err = run([sys.executable, "-c", WEIGHTS_CHECK, str(program), str(path)])
    weights = out.strip() if status == 0 else f"fails: {first_error(err)}"
    if not jax_loss:
        return [weights, ""]
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    measured, status, out, err = run([sys.executable, str(program), "--steps", "1"], env)
    first = re.search(r"step 1 loss (\S+)", out)
    if status or not first:
        return [weights, f"program fails: {first_error(err or out)}"]
    _, status, out, err = run([sys.executable, "-c", JAX_LOSS_CHECK, str(program), str(path),
                               first.group(1), str(Path(__file__).parent)])
    verdict = out.strip() if status == 0 else f"not compared: {first_error(err)}"
    return [weights, f"{verdict}; run {measured}"]


WEIGHTS_CHECK = """
import importlib.util, sys
import numpy as np
from pase.frontend.onnx import load_model
sys.path.remove(sys.path[0])  # run in a fresh process: not benchmarks/ (its jax.py)
spec = importlib.util.spec_from_file_location("step", sys.argv[1])
step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step)
zeros = {n: np.zeros(shape, dtype) for n, (shape, dtype, *_) in step.PARAMS.items()}
inputs = {n: np.zeros(shape, dtype) for n, (shape, dtype, *_) in step.INPUTS.items()}
loaded, _ = step.model_weights(zeros, inputs)
expected = load_model(sys.argv[2]).initial_values
same = set(loaded) <= set(expected) and all(
    np.array_equal(loaded[n], expected[n].reshape(loaded[n].shape)) for n in loaded)
print(f"yes ({len(loaded)} params)" if same else "no: other values than the model's")
"""

JAX_LOSS_CHECK = """
import importlib.util, sys
import numpy as np
sys.path.remove(sys.path[0])  # run in a fresh process: not benchmarks/ (its jax.py)
sys.path.append(sys.argv[4])  # after jax's own folder: benchmarks/ has a jax.py
from torch_exports import onnx_reference_loss
spec = importlib.util.spec_from_file_location("step", sys.argv[1])
step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step)
rng = np.random.default_rng(0)  # as the program's main at its default --seed 0
initial, inputs = step.seeded(step.PARAMS, rng, None), step.seeded(step.INPUTS, rng, None)
_, inputs = step.model_weights(initial, inputs)
expected, loss = onnx_reference_loss(sys.argv[2], inputs), float(sys.argv[3])
same = abs(loss - expected) <= 1e-4 * max(1.0, abs(expected))
print(f"{'equal' if same else 'DIFFERS'} ({loss:.6f}, onnx.reference {expected:.6f})")
"""


def row(path: Path, jax_loss: bool = False) -> list[str]:
    cells = [path.name]
    measured, status, _, err = run([str(BIN / "pase-opt"), str(path), "-p",
                                    "pase-search{devices=8 report=true}", "-o", os.devnull])
    if status:
        return cells + [f"search fails: {first_error(err)}"]
    speedup = re.search(r"predicted speedup ([0-9.]+x)", err)
    cells += [measured, speedup.group(1) if speedup else "?"]
    measured, status, out, err = run([str(BIN / "pase-run"), str(path), "--devices", "4",
                                      "--scale", "0.125", "--check"])
    errors = re.search(r"max rel\. error: (.*)", out)
    verdict = "passed" if status == 0 and "check passed" in out else \
        f"fails: {first_error(err or out)}"
    cells += [measured, f"{verdict} ({errors.group(1)})" if errors else verdict]
    with tempfile.TemporaryDirectory() as folder:
        cells += jax_weights(path, Path(folder), jax_loss)
    return cells


def in_process(main: Callable[[list[str]], None], arguments: list[str],
               passed: str = "", streams: list[str] | None = None) -> str:
    """`ok` when the tool's `main(arguments)` exits 0 (printing `passed`), else the exit
    status and its first error line; `TRACEBACK` and the exception where one escaped it
    (a user would see Python's traceback). In this process: the matrix's many small
    files would spend most of their time starting Python."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(arguments)
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # what the user would see as a traceback
        return f"TRACEBACK {type(error).__name__}: {str(error)[:120]}"
    if streams is not None:
        streams += [out.getvalue(), err.getvalue()]
    if status == 0 and passed in out.getvalue():
        return "ok"
    return f"exit {status}: {first_error(err.getvalue() or out.getvalue())}"


def reference_loss(path: Path, batch: int = 0) -> str:
    """pase's first loss on one device against softmax cross-entropy over
    `onnx.reference`'s evaluation of the file (or the file's own loss), on the same seeded
    data; batch norm with the batch's statistics and no dropout, as pase trains (an
    eval-mode export has the running statistics; a training-mode one, dropout)."""
    from pase.frontend.onnx import load_model
    from pase.tools.run.check import make_data
    from pase.tools.run.load import strategy_and_scale, with_initial
    from pase.tools.run.runtime import train

    imported = load_model(str(path), batch)
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
    expected = onnx_reference_loss(path, data)
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    loss = float(report.reference_losses[0])
    same = abs(loss - expected) <= 1e-4 * max(1.0, abs(expected))
    relative = abs(loss - expected) / max(abs(expected), 1e-30)
    return (f"{'equal' if same else 'DIFFERS'} ({loss:.6f}, onnx.reference {expected:.6f}, "
            f"{relative:.1e} relative)")


def onnx_reference_loss(path: Path | str, data: dict) -> float:
    """Softmax cross-entropy over `onnx.reference`'s evaluation of the file on `data`
    (its inputs by pase's names, and `labels`), or the file's own loss; batch norm with
    the batch's statistics and no dropout, as pase trains."""
    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator

    from pase.frontend.onnx.values import identifier

    model = onnx.load(str(path))
    for node in model.graph.node:
        if node.op_type == "Dropout":  # pase trains dropout-free
            node.op_type = "Identity"
            del node.input[1:], node.output[1:], node.attribute[:]
        if node.op_type == "BatchNormalization":
            kept = [a for a in node.attribute if a.name != "training_mode"]
            del node.attribute[:]
            node.attribute.extend([*kept, onnx.helper.make_attribute("training_mode", 1)])
    weights = {init.name for init in model.graph.initializer}
    feeds = {value.name: data[identifier(value.name)] for value in model.graph.input
             if value.name not in weights}
    (result,) = ReferenceEvaluator(model).run([model.graph.output[0].name], feeds)
    output = np.asarray(result)
    if output.size == 1:
        return float(output)
    z = output.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    labels = np.asarray(data["labels"]).astype(np.int64)
    return float(-np.take_along_axis(log_p, labels[..., None], -1).mean())


def matrix_row(path: Path) -> list[str]:
    """One variant of `models/export_variants.py`: search on 8 devices, the check, and
    pase's first loss on one device against `onnx.reference`'s evaluation of the file
    (softmax cross-entropy over its output's last axis, or its own loss; batch norm with
    the batch's statistics, as pase trains it, though the file was exported in eval
    mode)."""
    from pase.tools.pase_opt import main as pase_opt
    from pase.tools.pase_run import main as pase_run

    search = in_process(pase_opt, [str(path), "-p", "pase-search{devices=8}", "-o",
                                   os.devnull])
    if search != "ok":
        return [path.stem, search, "", ""]
    check = in_process(pase_run, [str(path), "--devices", "4", "--scale", "0.125",
                                  "--check"], passed="check passed")
    try:
        loss = reference_loss(path)
    except Exception as error:  # the reference evaluator's own failure
        loss = f"not compared ({type(error).__name__}: {str(error)[:80]})"
    return [path.stem, search, check, loss]


LAYER_COLUMNS = ("model", "exporter", "opset", "imports", "search step (8 devices)",
                 "pase-run --devices 4 --check", "first loss", "CPU s")


def layers_row(path: Path) -> list[str]:
    """One export of `models/export_layers.py`: its exporter (by name: `_ts` is the
    TorchScript one) and opset, whether it imports (`pase-opt FILE`), the search's step
    and predicted speedup (`pase-search{devices=8 report=true}`), `pase-run --devices 4
    --check`, and pase's first loss against onnx.reference's; a symbolic batch (`dynamic`
    in the name) read at 8. CPU seconds of the whole row, in this process."""
    import onnx

    from pase.tools.pase_opt import main as pase_opt
    from pase.tools.pase_run import main as pase_run

    started = time.process_time()
    exporter = "TorchScript" if "_ts" in path.stem or ".torchscript" in path.name \
        else "dynamo"
    if path.suffix == ".export-failed":
        cells = [path.stem, exporter, "", "export failed: " + path.read_text().strip()[:100]]
        return cells + [""] * 4
    model = onnx.load(str(path), load_external_data=False)
    opset = next((str(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")),
                 "?")
    batch = ["-f", "onnx{batch=8}"] if "dynamic" in path.stem else []
    cells = [path.stem, exporter, opset]
    imported = in_process(pase_opt, [str(path), *batch, "-o", os.devnull])
    if imported != "ok":
        return cells + [imported.removeprefix("exit 1: ").replace(str(path.parent) + "/", ""),
                        "", "", "", f"{time.process_time() - started:.1f}"]
    streams: list[str] = []
    search = in_process(pase_opt, [str(path), *batch, "-p",
                                   "pase-search{devices=8 report=true}", "-o", os.devnull],
                        streams=streams)
    total = re.search(r"^total (\S+) s", streams[1] if streams else "", re.M)
    speedup = re.search(r"predicted speedup ([0-9.]+x)", streams[1] if streams else "")
    step = f"{total.group(1)} s ({speedup.group(1)} over DP)" if search == "ok" and total \
        and speedup else search
    check = in_process(pase_run, [str(path), "--devices", "4", "--check",
                                  *(["--batch", "8"] if batch else [])], passed="check passed")
    try:
        loss = reference_loss(path, 8 if batch else 0)
    except Exception as error:  # the reference evaluator's own failure
        loss = f"not compared ({type(error).__name__}: {str(error)[:80]})"
    return cells + ["yes", step, "passed" if check == "ok" else check, loss,
                    f"{time.process_time() - started:.1f}"]


def main() -> int:
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="exported .onnx files")
    parser.add_argument("--matrix", action="store_true",
                        help="the variant matrix: search and check only, and the "
                             "variants whose export failed (FILE.export-failed)")
    parser.add_argument("--jax-loss", action="store_true",
                        help="also run each -t jax program one step on 8 CPU devices and "
                             "compare its first loss with onnx.reference's")
    parser.add_argument("--layers", action="store_true",
                        help="the exports of models/export_layers.py: exporter, opset, "
                             "import, search step, check and first loss per file")
    args = parser.parse_args()
    if args.layers:
        print("| " + " | ".join(LAYER_COLUMNS) + " |")
        print("|" + "---|" * len(LAYER_COLUMNS))
        for path in args.files:
            print("| " + " | ".join(layers_row(path)) + " |", flush=True)
        return 0
    if args.matrix:
        print("| variant | pase-search{devices=8} | pase-run --check | first loss |")
        print("|---|---|---|---|")
        for path in args.files:
            if path.suffix == ".export-failed":
                cells = [path.stem, "export failed: " + path.read_text().strip()[:120], "",
                         ""]
            else:
                cells = matrix_row(path)
            print("| " + " | ".join(cells) + " |", flush=True)
        return 0
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for path in args.files:
        cells = row(path, args.jax_loss)
        print("| " + " | ".join(cells + [""] * (len(COLUMNS) - len(cells))) + " |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
