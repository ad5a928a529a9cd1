"""Full-size PyTorch exports through every tool a user runs, one markdown row per file.

    python models/export_torch.py --full ../full-exports gpt2 bert t5     # torch needed there
    .venv/bin/python benchmarks/torch_exports.py ../full-exports/*.onnx

Per file, each step in a fresh process, as a user types it:

- import: `pase-opt FILE` (the verified dnn IR), its wall time;
- search: `pase-opt FILE -p 'pase-search{devices=8 report=true}'`, its wall time and the
  report's predicted speedup (over data parallelism);
- check: `pase-run FILE --devices 4 --scale 0.125 --check`, its wall time and result;
- jax weights: `pase-opt FILE -p 'pase-search{devices=8 one-mesh=true}' -t jax -o
  DIR/step.py`, then the program's own `model_weights` (imported, not run) loads
  `step.weights.npz` onto zero-filled params: "yes" when every param it has then equals
  the model's initializer (`load_model(FILE).initial_values`).

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
COLUMNS = ("file", "import (s)", "search (s)", "predicted speedup", "check (s)", "check",
           "jax weights")


def run(arguments: list[str]) -> tuple[float, int, str, str]:
    """Wall time, exit status, stdout and stderr of one tool run."""
    start = time.perf_counter()
    done = subprocess.run(arguments, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.returncode, done.stdout, done.stderr


def first_error(err: str) -> str:
    lines = [line for line in err.splitlines() if "error" in line] or err.splitlines()
    return (lines[0] if lines else "no output").replace("|", "/")[:160]


def jax_weights(path: Path, folder: Path) -> str:
    """Whether the `-t jax` program of `path` on 8 devices starts from the model's
    weights; searched with `one-mesh=true`, the plans the jax target runs (docs/jax.md: a
    30,522-word vocabulary is split 2 ways, not 6)."""
    program = folder / "step.py"
    _, status, _, err = run([str(BIN / "pase-opt"), str(path), "-p",
                             "pase-search{devices=8 one-mesh=true}", "-t", "jax", "-o",
                             str(program)])
    if status:
        return f"pase-opt -t jax failed: {first_error(err)}"
    _, status, out, err = run([sys.executable, "-c", WEIGHTS_CHECK, str(program), str(path)])
    return out.strip() if status == 0 else f"fails: {first_error(err)}"


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


def row(path: Path) -> list[str]:
    cells = [path.name]
    seconds, status, _, err = run([str(BIN / "pase-opt"), str(path)])
    if status:
        return cells + [f"fails: {first_error(err)}"]
    cells.append(f"{seconds:.0f}")
    seconds, status, _, err = run([str(BIN / "pase-opt"), str(path), "-p",
                                   "pase-search{devices=8 report=true}"])
    if status:
        return cells + [f"search fails: {first_error(err)}"]
    speedup = re.search(r"predicted speedup ([0-9.]+x)", err)
    cells += [f"{seconds:.0f}", speedup.group(1) if speedup else "?"]
    seconds, status, out, err = run([str(BIN / "pase-run"), str(path), "--devices", "4",
                                     "--scale", "0.125", "--check"])
    errors = re.search(r"max rel\. error: (.*)", out)
    verdict = "passed" if status == 0 and "check passed" in out else \
        f"fails: {first_error(err or out)}"
    cells += [f"{seconds:.0f}", f"{verdict} ({errors.group(1)})" if errors else verdict]
    with tempfile.TemporaryDirectory() as folder:
        cells.append(jax_weights(path, Path(folder)))
    return cells


def in_process(main: Callable[[list[str]], None], arguments: list[str],
               passed: str = "") -> str:
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
    if status == 0 and passed in out.getvalue():
        return "ok"
    return f"exit {status}: {first_error(err.getvalue() or out.getvalue())}"


def reference_loss(path: Path) -> str:
    """pase's first loss on one device against softmax cross-entropy over
    `onnx.reference`'s evaluation of the file (or the file's own loss), on the same seeded
    data; batch norm with the batch's statistics and no dropout, as pase trains (an
    eval-mode export has the running statistics; a training-mode one, dropout)."""
    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator

    from pase.frontend.onnx import load_model
    from pase.frontend.onnx.values import identifier
    from pase.tools.run.check import make_data
    from pase.tools.run.load import strategy_and_scale, with_initial
    from pase.tools.run.runtime import train

    imported = load_model(str(path))
    data = with_initial(make_data(imported.module.ops.first, seed=3),
                        imported.initial_values)
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
    (output,) = ReferenceEvaluator(model).run([model.graph.output[0].name], feeds)
    if output.size == 1:
        expected = float(output)
    else:
        z = output.astype(np.float64)
        z = z - z.max(axis=-1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
        expected = float(-np.take_along_axis(log_p, data["labels"][..., None], -1).mean())
    report = train(strategy_and_scale(imported.module, 1), 1, seed=3,
                   initial=imported.initial_values)
    loss = float(report.reference_losses[0])
    same = abs(loss - expected) <= 1e-4 * max(1.0, abs(expected))
    return f"{'equal' if same else 'DIFFERS'} ({loss:.6f}, onnx.reference {expected:.6f})"


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


def main() -> int:
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="exported .onnx files")
    parser.add_argument("--matrix", action="store_true",
                        help="the variant matrix: search and check only, and the "
                             "variants whose export failed (FILE.export-failed)")
    args = parser.parse_args()
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
        cells = row(path)
        print("| " + " | ".join(cells + [""] * (len(COLUMNS) - len(cells))) + " |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
