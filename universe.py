"""pase as an xDSL plugin: its dialects, passes, frontends (`.dnn`, `.onnx`) and targets
(`-t dnn`) in one `Universe`.

pyproject.toml names `PASE` under the `xdsl.universe` entry point, so once pase is
installed plain `xdsl-opt` finds it, as `pase-opt` does:

    xdsl-opt models/mlp.dnn -p 'pase-search{devices=8}'
"""

from __future__ import annotations

from xdsl.universe import Universe
from xdsl.utils.frontend import Frontend

from pase.dialect import get_all_dialects
from pase.passes import get_all_passes
from pase.targets import get_all_targets


def get_dnn_frontend() -> type[Frontend]:
    from pase.frontend.dnn import DnnFrontend

    return DnnFrontend


def get_located_mlir_frontend() -> type[Frontend]:
    from pase.frontend.mlir import LocatedMlirFrontend

    return LocatedMlirFrontend


def get_onnx_frontend() -> type[Frontend]:
    from pase.frontend.onnx import OnnxFrontend

    return OnnxFrontend


PASE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    # A frontend's name is also the file extension it reads (`xdsl-opt m.dnn`).
    all_frontends={"dnn": get_dnn_frontend, "onnx": get_onnx_frontend},
    all_targets=get_all_targets(),
)

FRONTENDS = {**PASE.all_frontends, "mlir": get_located_mlir_frontend}
"""The frontends pase's own tools read with, by name (the file extension): PASE's, and MLIR
text with every op located (`pase.frontend.mlir`). That one is not in PASE: the name `mlir`
is xDSL's own frontend's, and plain xdsl-opt merges PASE with xDSL's universe."""
