"""`pase-lower-spmd` in-process: its devices option, and the programs it writes for every model
verify (every value's local shape is its global shape over its grid's split factors)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import shard
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from pase.dialect import dist
from pase.frontend import parse_file, parse_text
from pase.passes.autodiff import AutodiffPass
from pase.passes.lower_spmd import LowerSpmdPass
from pase.passes.search import PaseSearchPass

MODELS = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.dnn"))

MLP = """\
graph @mlp(b = 16, d = 16, h = 32) {
  %x = input [b, d]
  %w = param [d, h]
  %h = einsum %x, %w -> [b, h] config {b = 4}
  %l = reduce sum %h over [b, h] config {b = 2}
  return %l
}
"""


def lowered(module: ModuleOp, devices: int | None = None) -> dist.ProgramOp:
    AutodiffPass().apply(Context(), module)
    LowerSpmdPass(devices=devices).apply(Context(), module)
    module.verify()
    (program,) = [op for op in module.walk() if isinstance(op, dist.ProgramOp)]
    return program


def test_devices_default_to_the_strategys():
    assert str(LowerSpmdPass()) == "pase-lower-spmd"
    assert str(LowerSpmdPass(devices=8)) == "pase-lower-spmd{devices=8}"
    module = parse_text(MLP)
    PaseSearchPass(devices=8).apply(Context(), module)
    assert lowered(module).devices.data == 8
    assert lowered(parse_text(MLP), devices=4).devices.data == 4


def test_a_wrong_local_shape_is_rejected():
    program = lowered(parse_text(MLP), devices=4)
    source = next(op for op in program.walk() if isinstance(op, dist.InputOp))
    tensor = source.output.type
    assert isinstance(tensor, dist.TensorType)
    assert tensor.local_shape == (4, 16)
    wrong = dist.InputOp.create(properties=dict(source.properties), result_types=[
        dist.TensorType(tensor.dim_names, tensor.global_shape, (3, 16), tensor.element,
                        tensor.grid_name, tensor.axes)])
    program.body.block.insert_op_before(wrong, source)
    with pytest.raises(VerifyException, match="so its local size is 4, not 3"):
        wrong.verify()


@pytest.mark.parametrize("path", MODELS, ids=lambda path: path.name)
def test_models_lower_to_programs_that_verify(path: Path):
    module = parse_file(str(path))
    PaseSearchPass(devices=8).apply(Context(), module)
    program = lowered(module)
    grids = {op.sym_name.data: tuple(op.shape.get_values())
             for op in program.body.block.ops if isinstance(op, shard.GridOp)}
    for op in program.walk():
        for value in op.results:
            if isinstance(value.type, dist.TensorType):
                grid = grids[value.type.grid_name]
                assert value.type.local_shape == dist.local_shape(
                    value.type.global_shape, value.type.axes, grid)
