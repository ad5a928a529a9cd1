"""The `dist` dialect: one SPMD program over p devices, with explicit communication.

Follows MLIR's `shard` dialect where the concepts match: device grids are `shard.grid`
symbols (xDSL's op), a tensor dim is split along a grid axis (`split_axes`, as in
`shard.sharding`), and collectives are spelled `dist.all_reduce %x on @grid grid_axes =
[1]` like `shard.all_reduce`. What `shard` lacks and pase needs: a value type that
carries its global named shape, its local (per-device) shape and its sharding, partial
sums, and `dist.redistribute` between layouts on different grids.

A grid's devices are ids 0..q-1 in row-major order; devices q..p-1 hold nothing of the
values on that grid and skip its ops.

    dist.program @mlp(devices = 4) {
      shard.grid @grid4(shape = 4)
      %x = dist.input "x" : !dist.tensor<[b = 64, d = 256] local [64, 256], f32
                                         on @grid4 split [[], []]>
      %h = dist.layer "dnn.einsum"(%x, %w1) stats [] props {} tag "h"
          : (...) -> !dist.tensor<... partial [0]>
      %h_sum = dist.all_reduce %h on @grid4 grid_axes = [0] tag "h" : ... -> ...
      %h_a = dist.redistribute %h_sum tag "h->a" : !dist.tensor<...> -> !dist.tensor<...>
      dist.return %l : ...
    }

`dist.all_gather`, `dist.reduce_scatter`, `dist.all_to_all`, `dist.send` and `dist.recv`
(`collectives`) complete `shard`'s set of collectives on `!dist.tensor`s.

The dialect is split by a rule: `types` (the tensor type), `ops` and `collectives`;
everything is re-exported here.
"""

from xdsl.ir import Dialect

from pase.dialect.dist.collectives import (
    AllGatherOp,
    AllToAllOp,
    RecvOp,
    ReduceScatterOp,
    SendOp,
)
from pase.dialect.dist.ops import (
    FIRST_DEVICE,
    MICROBATCH,
    PHASE,
    PHASES,
    AccumulateOp,
    AllReduceOp,
    InputOp,
    LayerOp,
    ParamOp,
    ProgramOp,
    RedistributeOp,
    ReturnOp,
    ScaleOp,
    first_device,
    grid_shape,
    verify_values,
)
from pase.dialect.dist.types import KERNELS, TensorType, axes_attr, local_shape

Dist = Dialect("dist", [ProgramOp, InputOp, ParamOp, LayerOp, AllReduceOp, AllGatherOp,
                        ReduceScatterOp, AllToAllOp, SendOp, RecvOp, RedistributeOp,
                        AccumulateOp, ScaleOp, ReturnOp], [TensorType])

__all__ = [
    "FIRST_DEVICE", "KERNELS", "MICROBATCH", "PHASE", "PHASES", "AccumulateOp", "AllGatherOp",
    "AllReduceOp", "AllToAllOp", "Dist", "InputOp", "LayerOp", "ParamOp", "ProgramOp", "RecvOp",
    "RedistributeOp", "ReduceScatterOp", "ReturnOp", "ScaleOp", "SendOp", "TensorType",
    "axes_attr", "first_device", "grid_shape", "local_shape", "verify_values",
]
