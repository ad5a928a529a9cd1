"""`pase-annotate-configs`: count each layer's valid PaSE configurations.

Attaches `pase.num_configs = N : i64` to every `dnn` layer: the size of its
configuration space for `devices` devices under PaSE's rule (see
`pase.passes.strategy.configs`). The configurations themselves are listed by the
Python API, `enumerate_configs(layer.iteration_space(), devices, min_shard)`.

    %h = dnn.einsum %x, %w1 {pase.num_configs = 16 : i64} : (...) -> ...
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from pase.core.diagnostics import Diagnostic
from pase.core.placement import MAX_DEVICES
from pase.dialect.dnn import LayerOp
from pase.dialect.pase import NUM_CONFIGS_ATTR_NAME
from pase.passes.options import PasePass
from pase.passes.strategy import enumerate_configs


@dataclass(frozen=True)
class AnnotateConfigsPass(PasePass):
    """Attach the number of valid configurations to every layer."""

    name = "pase-annotate-configs"

    devices: int = 1
    min_shard: int = 4

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 1 <= self.devices <= MAX_DEVICES:
            raise Diagnostic(f"pase-annotate-configs: devices must be between 1 and "
                             f"{MAX_DEVICES:,}, got {self.devices:,}")
        if self.min_shard < 1:
            raise Diagnostic(f"pase-annotate-configs: min-shard must be at least 1, "
                             f"got {self.min_shard}")
        for layer in op.walk():
            if isinstance(layer, LayerOp):
                count = len(enumerate_configs(layer.iteration_space(), self.devices,
                                              self.min_shard))
                layer.attributes[NUM_CONFIGS_ATTR_NAME] = IntegerAttr(count, 64)
