"""The per-op importers, one module per family; importing this package registers them
all in `pase.frontend.onnx.registry.OPERATORS`.

Each importer is `function(graph, node) -> list[Value]`: it reads the node's inputs from
`graph` (a `GraphState`), builds its `dnn` ops, and returns the values of its outputs.
"""

from pase.frontend.onnx.operators import (  # noqa: F401  (registration)
    activations,
    basic,
    conv,
    linear,
    loss,
    more,
    norm,
    recurrent,
    shape,
    upsample,
)
