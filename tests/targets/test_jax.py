"""The JAX target's placement arithmetic: one mesh for every layer's grid, and the mesh
axes each split dim covers (`pase.targets.jax`)."""

from __future__ import annotations

import pytest

from pase.core.diagnostics import Diagnostic
from pase.core.placement import Placement
from pase.frontend import parse_text
from pase.targets.jax import grid_axes, jax_program, mesh_shape, spec

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
