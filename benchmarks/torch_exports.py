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
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
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


def main() -> int:
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="exported .onnx files")
    args = parser.parse_args()
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for path in args.files:
        cells = row(path)
        print("| " + " | ".join(cells + [""] * (len(COLUMNS) - len(cells))) + " |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
