"""The `dnn` dialect: a deep-learning training graph with named dimensions.

One op per layer kind, in the spelling of the `.dnn` language. A graph declares every
dimension once, with its size; tensors are lists of dimension names, so the same
name means the same extent everywhere and transposes are free:

    dnn.graph @mlp(b = 64, d = 256, h = 1024) {
      %x = dnn.input : !dnn.tensor<[b = 64, d = 256], f32>
      %w1 = dnn.param : !dnn.tensor<[d = 256, h = 1024], f32>
      %h = dnn.einsum %x, %w1 : (!dnn.tensor<[b = 64, d = 256], f32>, ...) -> ...
      dnn.return %h : !dnn.tensor<[b = 64, h = 1024], f32>
    }

Every layer op takes its tensors as operands, keeps its parameters (dims to reduce
over, stride, ...) as properties, and implements the layer-op interface
(`iteration_space()`, see `pase.core.space`). Its verifier runs the same shape
rule as the frontend (`pase.core.shapes`), so hand-written IR is held to the same
invariants as `.dnn` source. A layer may carry a `pase.config` attribute; the verifier
checks it against the iteration space. The custom syntax of the layer ops follows
MLIR's shape: `%y = dnn.op <kind>? %operands <keyword value>* attr-dict : (types) -> type`.

The dialect is split by a rule: `types` (the tensor type), `graph` (graph, input,
param, return), `layer_op` (the base class and generic syntax of layers), `layers`
(one op per layer kind, continued in `more_layers`) and `training` (the ops
pase-autodiff writes). Everything is re-exported here, so `dnn.EinsumOp` and
`from pase.dialect.dnn import GraphOp` work.
"""

from xdsl.ir import Dialect

from pase.dialect.dnn.graph import GraphOp, InputOp, ParamOp, ReturnOp
from pase.dialect.dnn.layer_op import (
    NO_RESULT,
    Clauses,
    Flops,
    HoldsLayers,
    Kind,
    LayerOp,
    LayerSignature,
)
from pase.dialect.dnn.layers import (
    LAYER_OPS,
    AddOp,
    BatchNormOp,
    BinaryOp,
    ConcatOp,
    Conv2dOp,
    EinsumOp,
    EmbeddingOp,
    ExpOp,
    GeluOp,
    LayerNormOp,
    LstmOp,
    MulOp,
    NormOp,
    Pool2dOp,
    ReduceOp,
    ReluOp,
    ReshapeOp,
    SigmoidOp,
    SoftmaxCrossEntropyOp,
    SoftmaxOp,
    SubOp,
    TanhOp,
    UnaryOp,
)
from pase.dialect.dnn.more_layers import (
    BroadcastOp,
    ClipOp,
    DivOp,
    GruOp,
    MaskOp,
    NegOp,
    PadOp,
    PowOp,
    RmsNormOp,
    SliceOp,
    SqrtOp,
)
from pase.dialect.dnn.training import (
    OPTIMIZER_STATES,
    SgdOp,
    UpdateOp,
    VjpOp,
    is_gradient,
    layer_class,
)
from pase.dialect.dnn.types import ELEMENT_TYPES, TensorType, element_name, shape_of

Dnn = Dialect("dnn", [GraphOp, ReturnOp, InputOp, ParamOp, *LAYER_OPS, VjpOp, SgdOp,
                     UpdateOp],
              [TensorType])

__all__ = [
    "ELEMENT_TYPES", "LAYER_OPS", "NO_RESULT", "AddOp", "BatchNormOp", "BinaryOp", "BroadcastOp",
    "Clauses", "ClipOp", "ConcatOp",
    "Conv2dOp", "DivOp", "Dnn", "EinsumOp", "EmbeddingOp", "ExpOp", "Flops", "GeluOp", "GraphOp",
    "GruOp",
    "HoldsLayers", "InputOp", "Kind", "LayerNormOp", "LayerOp", "LayerSignature", "LstmOp",
    "MaskOp", "MulOp",
    "NegOp", "NormOp", "PadOp", "PowOp", "SqrtOp",
    "ParamOp", "Pool2dOp", "ReduceOp", "ReluOp", "ReshapeOp", "ReturnOp", "RmsNormOp",
    "SgdOp", "SigmoidOp",
    "SliceOp", "SoftmaxCrossEntropyOp", "SoftmaxOp", "SubOp", "TanhOp", "TensorType", "UnaryOp",
    "OPTIMIZER_STATES", "UpdateOp", "VjpOp", "element_name", "is_gradient", "layer_class",
    "shape_of",
]
