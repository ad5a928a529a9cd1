"""A graph as one micro-batch sees it, and what one device keeps of it.

`microbatch_layers` and `edges_at` divide the batch dim by M in every iteration space
and tensor (one rule, `use_at`); `activation_bytes` and `parameter_bytes` are a device's
memory under given configurations (the memory cap's terms, `memory.memory_vectors`).

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> [dim.size for dim in microbatch_layers(mlp.layers, "b", 4)[0].space.dims]
    [16, 1024, 256]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pase.passes.strategy.cost import Config, local_elements
from pase.passes.strategy.vertices import Edge, Layer, TensorUse


@dataclass
class Micro:
    """A graph at one micro-batch size: layers, edges (the graph's numbering) and, where
    stages are solved, the shared tables' kinds of both (`StageSolver.kinds`)."""

    layers: list[Layer]
    edges: list[Edge]
    kinds: tuple[list[int], list[int]] | None = None


def use_at(use: TensorUse, batch: str, microbatches: int) -> TensorUse:
    """`use` (a tensor of the whole batch) at micro-batch size."""
    return replace(use, sizes=tuple(size // microbatches if d == batch else size
                                    for d, size in zip(use.dims, use.sizes, strict=True)))


def microbatch_layers(layers: Sequence[Layer], batch: str,
                      microbatches: int) -> list[Layer]:
    """`layers` with the size of dim `batch` divided by `microbatches` everywhere.

    Raises ValueError where a layer's batch size is not a multiple of it.
    """
    if microbatches < 1:
        raise ValueError(f"microbatches must be at least 1, got {microbatches}")
    result = []
    for layer in layers:
        dims = []
        for dim in layer.space.dims:
            if dim.name == batch:
                if dim.size % microbatches:
                    raise ValueError(f"layer '{layer.name}': batch {dim.name} = {dim.size} "
                                     f"does not split into {microbatches} micro-batches")
                dim = replace(dim, size=dim.size // microbatches)
            dims.append(dim)
        space = replace(layer.space, dims=tuple(dims))
        result.append(replace(layer, space=space,
                              operands=tuple(use_at(use, batch, microbatches)
                                             for use in layer.operands),
                              result=use_at(layer.result, batch, microbatches)))
    return result


def edges_at(edges: Sequence[Edge], layers: Sequence[Layer], batch: str,
             microbatches: int) -> list[Edge]:
    """`edges` with their tensors at micro-batch size. (`layers`, the micro-batch
    layers, are not needed: the argument stays for the callers that pass them.)"""
    del layers
    return [replace(edge, held=use_at(edge.held, batch, microbatches),
                    needed=use_at(edge.needed, batch, microbatches)) for edge in edges]


def activation_bytes(layers: Sequence[Layer], assignment: Mapping[str, Config]) -> float:
    """Bytes one device keeps per micro-batch in flight: the block of every layer's
    result under its configuration (what the backward pass reads again)."""
    return sum(local_elements(layer.result, assignment[layer.name])
               * layer.result.element_bytes for layer in layers)


def parameter_bytes(layers: Sequence[Layer], assignment: Mapping[str, Config]) -> float:
    """Bytes one device holds of parameters and their gradients (two copies of each
    parameter block its layers read)."""
    total = 0.0
    for layer in layers:
        config = assignment[layer.name]
        for use, param in zip(layer.operands, layer.params, strict=False):
            if param:
                total += 2 * local_elements(use, config) * use.element_bytes
    return total


def stage_bytes(layers: Sequence[Layer], assignment: Mapping[str, Config],
                model: object = None) -> tuple[float, float]:
    """(`parameter_bytes`, `activation_bytes`) of `layers`, or, where `model` is a
    `TrainingCost`, the bytes held once (parameters, gradients and optimizer state, a
    shared parameter once, and the largest segment's recomputed results) and the kept
    activations of one micro-batch (`training_cost.memory_breakdown`)."""
    from pase.passes.strategy.training_cost import TrainingCost, memory_breakdown

    if not isinstance(model, TrainingCost):
        return parameter_bytes(layers, assignment), activation_bytes(layers, assignment)
    parts = memory_breakdown(model, layers, assignment)
    return parts["total"] - parts["activations"], parts["activations"]


def layer_bytes(layer: Layer, config: Config, model: object = None) -> tuple[float, float]:
    """`layer`'s own terms of `stage_bytes` under `config` (fixed, kept): without a
    parameter an earlier layer reads too and without its recomputed results, so their
    sum over a stage's layers is at most the stage's (a lower bound's terms)."""
    from pase.passes.strategy.training_cost import TrainingCost

    if not isinstance(model, TrainingCost):
        return stage_bytes([layer], {layer.name: config})
    parts = model.memory_breakdown(layer, config)
    return (parts["parameters"] + parts["gradients"] + parts["optimizer_state"],
            parts["activations"])


def configuration_bytes(layer: Layer, configs: Sequence[Config], in_flight: int = 1
                        ) -> np.ndarray:
    """The bytes one device holds of `layer` under each of `configs`: its parameters and
    gradients, and its activations for `in_flight` micro-batches (`CostModel.memory`)."""
    return np.array([parameter_bytes([layer], {layer.name: config})
                     + in_flight * activation_bytes([layer], {layer.name: config})
                     for config in configs], dtype=np.float64)
