"""The JAX target's placement arithmetic: one mesh for every layer's grid, and the mesh
axes each split dim covers (`pase.targets.jax`); the mesh holds only the devices the plan
uses, and the step keeps one copy of the params on each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pase.core.diagnostics import Diagnostic
from pase.core.placement import Placement
from pase.frontend import parse_text
from pase.targets.jax import jax_program
from pase.targets.jax_mesh import grid_axes, mesh_shape, spec

TWO_LAYERS = """graph @g(b = 4, d = 6, h = 12) {{
  %x = input [b, d]
  %w = param [d, h]
  %h = einsum %x, %w -> [b, h] config {{{first}}}
  %a = tanh %h config {{{second}}}
  %l = reduce mean %a over [b, h]
  return %l
}}
"""


def program(first: str, second: str, devices: int) -> str:
    return jax_program(parse_text(TWO_LAYERS.format(first=first, second=second), "g.dnn"),
                       devices)


@pytest.mark.parametrize(("grids", "devices", "shape"), [
    ([], 8, (8,)), ([(2, 4)], 8, (2, 4)), ([(2,), (4,)], 8, (2, 2, 2)),
    ([(4,), (2, 2)], 8, (2, 2, 2)), ([(3,)], 6, (2, 3)), ([(2, 3)], 6, (2, 3))])
def test_the_mesh_cuts_the_devices_at_every_grid_axis(
        grids: list[tuple[int, ...]], devices: int, shape: tuple[int, ...]) -> None:
    layers = [(None, grid) for grid in grids]
    assert mesh_shape(devices, layers) == shape  # type: ignore[arg-type]


def test_grid_axes_are_consecutive_mesh_axes_with_idle_devices_outermost() -> None:
    assert grid_axes(Placement((("b", 2), ("h", 4))), (2, 2, 2)) == {
        "b": ("m0",), "h": ("m1", "m2")}
    assert grid_axes(Placement((("h", 2),)), (2, 2, 2)) == {"h": ("m2",)}
    assert spec(("b", None, "h"), {"b": ("m0",), "h": ("m1", "m2")}) == (
        "P('m0', None, ('m1', 'm2'))")
    assert spec(("b", None), {}, call="") == "()"


def test_a_strategy_one_mesh_cannot_hold_is_an_error_at_its_layer() -> None:
    with pytest.raises(Diagnostic) as error:
        program("b = 2", "h = 3", 6)
    assert str(error.value).startswith("g.dnn:4:8: error: the jax target cannot express "
                                       "this strategy on one mesh: grids of 2 and 3 devices "
                                       "do not nest")


def test_the_program_imports_only_jax_numpy_and_the_standard_library() -> None:
    source = program("b = 2", "h = 4", 4)
    imports = sorted({line.split()[1].split(".")[0] for line in source.splitlines()
                      if line.lstrip().startswith(("import ", "from "))})
    assert imports == ["argparse", "jax", "numpy", "os", "sys", "tempfile", "time"]
    compile(source, "step.py", "exec")


STEP_MEMORY = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("step", sys.argv[1])
step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step)
jitted, held, fed = step.make_step(step.make_mesh(), 0.1)
rng = step.np.random.default_rng(0)
params = step.place(step.seeded(step.PARAMS, rng, None), step.PARAMS, held, None)
batch = step.place(step.seeded(step.INPUTS, rng, None), step.INPUTS, fed, None)
memory = jitted.lower(params, batch).compile().memory_analysis()
print(memory.output_size_in_bytes, memory.alias_size_in_bytes)
step.main(["--steps", "2", "--save", sys.argv[2]])
"""


def test_an_unsplit_plan_of_8_devices_runs_on_one_holding_one_copy_of_the_params(
        tmp_path: Path) -> None:
    """On JAX's one CPU device. The step donates the params (the updated ones take their
    buffers) and returns the gradients only for --save: of its outputs, all but the loss
    (and XLA's table of them) are the params' buffers (w: 6 x 12 floats, 288 bytes), none
    a second copy of them."""
    pytest.importorskip("jax")
    step, saved = tmp_path / "step.py", tmp_path / "saved.npz"
    step.write_text(program("", "", 8))
    run = subprocess.run([sys.executable, "-c", STEP_MEMORY, str(step), str(saved)],
                         capture_output=True, text=True, check=True)
    sizes, *losses = run.stdout.splitlines()
    outputs, aliased = map(int, sizes.split())
    assert aliased == 288
    assert outputs < 2 * 288
    assert [line.split()[:3] for line in losses] == [["step", "1", "loss"],
                                                      ["step", "2", "loss"]]
    with np.load(saved) as data:
        assert data["grad/w"].shape == data["param/w"].shape == (6, 12)
