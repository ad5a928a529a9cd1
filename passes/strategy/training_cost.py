"""The training step people run, as a cost model: optimizer state, precision,
recomputation, ZeRO and a pinned data-parallel degree (`TrainingOptions`).

`TrainingCost` is `PaseCost` (docs/cost-model.md) with the terms of "The training step"
in docs/cost-model.md added, each a vector over the configurations like the others, so
the DP, the bounds, the capped search and the stage solver see them without change:

- compute at the machine's peak for the precision (`Machine.peak`), or, on a machine
  with an HBM bandwidth, the roofline: each of a layer's forward and backward the
  larger of its FLOPs over the peak and the bytes it reads and writes over the
  bandwidth (`layer_bytes.roofline`); f32 activations and their gradients, and the
  collectives and redistributions that move them, in 2 bytes under bf16/fp16
  (`at_precision`);
- the optimizer update, memory-bound: the bytes it reads and writes of each parameter
  element (`update_bytes`) over the device's HBM bandwidth, once per step;
- recomputation: the layer's forward (compute and collectives) again in its backward,
  and its kept activations its inputs instead of its result;
- ZeRO: optimizer state (stage 1), gradients (2) and parameters (3) of each parameter
  sharded over its replicas, the devices that differ only along split dims the parameter
  does not range over (its gradient's all-reduce group; the batch factor of a
  data-parallel configuration); stage 3 all-gathers the parameter before the forward
  and the backward instead of after the update.

`recompute=auto` and `zero=auto` are per-layer choices: `configs` lists each
configuration once per choice (`TrainingConfig`, a configuration carrying them), so the
exact search decides them with the configurations.

    >>> from pase.frontend import parse_file
    >>> from pase.passes.strategy.from_ir import read_graph
    >>> from pase.passes.strategy.options import TrainingOptions
    >>> mlp = read_graph(parse_file("models/mlp.dnn"))
    >>> model = TrainingCost(TrainingOptions(optimizer="adam", zero="1"))
    >>> parts = model.memory_breakdown(mlp.layers[0], {"b": 4})
    >>> parts["optimizer_state"] == 2 * 4 * 256 * 1024 / 4     # Adam, sharded 4 ways
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from pase.passes.strategy.configs import searched_configs
from pase.passes.strategy.cost import Config, EdgeEnd, edge_costs
from pase.passes.strategy.layer_bytes import roofline
from pase.passes.strategy.layer_costs import LayerCosts, Vectors, factor_matrix, layer_costs
from pase.passes.strategy.machines import Machine
from pase.passes.strategy.vertices import Edge, Layer, TensorUse

if TYPE_CHECKING:
    from pase.passes.strategy.options import TrainingOptions

MEMORY_PARTS = ("parameters", "gradients", "optimizer_state", "activations", "recomputed")
"""The memory breakdown's parts, bytes per device (`memory_breakdown`)."""


class TrainingConfig(dict[str, int]):
    """A configuration (split factors) with a layer's training choices: whether its
    forward is recomputed and its ZeRO stage. Its items are the split factors only, so
    everything that reads a configuration's dims reads it unchanged.

        >>> TrainingConfig({"b": 4}, recompute=True, zero=1)
        TrainingConfig({'b': 4}, recompute=True, zero=1)
        >>> TrainingConfig({"b": 4}, zero=1) == TrainingConfig({"b": 4}, zero=1)
        True
        >>> TrainingConfig({"b": 4}) == {"b": 4}    # a plain one has the model's defaults
        False
    """

    __slots__ = ("recompute", "zero")

    def __init__(self, dims: Config | None = None, recompute: bool = False, zero: int = 0):
        super().__init__(dims or {})
        self.recompute = recompute
        self.zero = zero

    def __eq__(self, other: object) -> bool:
        return dict.__eq__(self, other) is True and choices_key(self) == choices_key(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"TrainingConfig({dict(self)!r}, recompute={self.recompute}, "
                f"zero={self.zero})")

    def copy(self) -> TrainingConfig:
        return TrainingConfig(self, self.recompute, self.zero)

    def with_dims(self, dims: Config) -> TrainingConfig:
        """These choices on other split factors."""
        return TrainingConfig(dims, self.recompute, self.zero)


def choices_key(config: object) -> tuple[object, ...]:
    """A configuration's training choices as a key: () for a plain configuration."""
    if isinstance(config, TrainingConfig):
        return (config.recompute, config.zero)
    return ()


def copy_config(config: Config) -> Config:
    """A copy of `config` that keeps its training choices."""
    return config.copy() if isinstance(config, TrainingConfig) else dict(config)


def with_dims(config: Mapping[str, int], dims: Config) -> Config:
    """`dims` with `config`'s training choices (if any)."""
    return config.with_dims(dims) if isinstance(config, TrainingConfig) else dict(dims)


def update_bytes(training: TrainingOptions) -> int:
    """Bytes the optimizer update reads and writes per parameter element: the fp32
    weight (read, write), the gradient (read), each fp32 state word (read, write), and
    under bf16/fp16 the low-precision copy of the weight (write).

        >>> from pase.passes.strategy.options import TrainingOptions
        >>> update_bytes(TrainingOptions()), update_bytes(TrainingOptions(optimizer="adam"))
        (12, 28)
        >>> update_bytes(TrainingOptions(optimizer="adam", precision="bf16"))
        28
    """
    low = training.precision != "fp32"
    gradient = training.element_bytes
    return 8 + gradient + 8 * training.state_words + (2 if low else 0)


@lru_cache(maxsize=4096)
def _lowered(use: TensorUse, element_bytes: int) -> TensorUse:
    return replace(use, element_bytes=element_bytes) if use.element_bytes == 4 else use


def at_precision(layer: Layer, element_bytes: int) -> Layer:
    """`layer` with its f32 tensors `element_bytes` wide (2 under bf16/fp16)."""
    if element_bytes == 4:
        return layer
    return replace(layer, operands=tuple(_lowered(use, element_bytes)
                                         for use in layer.operands),
                   result=_lowered(layer.result, element_bytes))


class TrainingCost:
    """pase's analytical model of a training step with `TrainingOptions` (module
    docstring); `cost_models.cost_model` chooses it when an option is not the default."""

    name = ""
    shares_ends = True

    def __init__(self, training: TrainingOptions):
        self.training = training

    # -- the configuration space -------------------------------------------------------

    def _defaults(self) -> tuple[bool, int]:
        """The choices of a configuration that carries none (a pinned one)."""
        return (self.training.recompute == "full",
                0 if self.training.zero == "auto" else int(self.training.zero))

    def choices(self, config: Config, layer: Layer | None = None) -> tuple[bool, int]:
        """(recomputed, ZeRO stage) of a configuration (of `layer`: a layer without a
        backward, or a checkpoint, is never recomputed)."""
        recompute, zero = ((config.recompute, config.zero)
                           if isinstance(config, TrainingConfig) else self._defaults())
        if layer is not None and (layer.checkpoint or not layer.backward):
            recompute = False
        return recompute, zero

    def variants(self, layer: Layer, config: Config) -> list[Config]:
        """`config` under each training choice the search has for `layer`."""
        recompute = (self.training.recompute_choices
                     if layer.backward and not layer.checkpoint else (False,))
        zero = self.training.zero_choices if any(layer.params) else (0,)
        return [TrainingConfig(config, r, z) for r in recompute for z in zero]

    def configs(self, layer: Layer, devices: int, min_shard: int,
                batch: str | None) -> list[Config]:
        configs = searched_configs(layer, devices, min_shard, batch)
        pinned = self.training.data_parallel
        if pinned is not None and batch is not None and batch in layer.space.names:
            if devices % pinned:
                raise ValueError(f"data-parallel={pinned} does not divide the {devices} "
                                 "devices")
            configs = [c for c in configs if c.get(batch, 1) == pinned]
            exact = {batch: pinned} if pinned > 1 else {}
            if not configs and layer.space.dim(batch).size % pinned == 0:
                configs = [exact]
            if not configs:
                raise ValueError(f"layer '{layer.name}': data-parallel={pinned} does not "
                                 f"divide its batch {batch} = {layer.space.dim(batch).size}")
        return [variant for config in configs for variant in self.variants(layer, config)]

    def pinned(self, layer: Layer, config: Config) -> list[Config]:
        """A pinned layer's configurations: its pin under each training choice, or the
        pin alone when it states its choices (a `TrainingConfig`: a strategy file's)."""
        if isinstance(config, TrainingConfig):
            return [config]
        return self.variants(layer, config)

    def graph_edges(self, edges: Sequence[Edge]) -> list[Edge]:
        return list(edges)

    # -- time --------------------------------------------------------------------------

    def machine_at_precision(self, machine: Machine) -> Machine:
        """`machine` computing at the precision's peak (ValueError if it has none)."""
        rate = machine.peak(self.training.precision)
        return machine if rate == machine.flops else replace(machine, flops=rate)

    def layer_costs(self, layer: Layer, configs: Sequence[Config],
                    machine: Machine) -> LayerCosts:
        low = at_precision(layer, self.training.element_bytes)
        machine = self.machine_at_precision(machine)
        plain = [dict(config) for config in configs]
        base = layer_costs(low, plain, machine)
        chosen = [self.choices(config, layer) for config in configs]
        recompute = np.array([r for r, _ in chosen], dtype=bool)
        zero = np.array([z for _, z in chosen], dtype=np.int64)
        factors = factor_matrix(low.space.names, plain)
        if machine.hbm_bandwidth:
            forward, backward = roofline(low, factors, base.forward_compute,
                                         machine.hbm_bandwidth, machine.flops)
            base = replace(base, compute=forward + backward, forward_compute=forward)
        vectors = Vectors(low, factors, machine)
        gathers = first = np.zeros(len(configs))
        gather_words = first_words = np.zeros(len(configs))
        elements = np.zeros(len(configs))
        for _, (use, group) in self._parameters(low, vectors):
            block = use.elements / vectors.factor([d for d in use.dims if d is not None])
            shard = np.where(zero >= 1, group, 1)
            elements += block / shard
        if (zero == 3).any():
            gathers, gather_words, first, first_words = self._backward_gathers(
                low, factors, machine, zero == 3, recompute)
        update = np.zeros(len(configs))
        if machine.hbm_bandwidth and layer.backward:
            update = elements * update_bytes(self.training) / machine.hbm_bandwidth
        # ZeRO-3: the parameter's all-gather before the forward and before the backward
        # replaces the one after the update that the ring all-reduce (reduce-scatter +
        # all-gather) stands for: one all-gather more in all, where the backward reads it.
        # The forward's gather (`first`, of every param) is per micro-batch, not per step.
        return LayerCosts(
            base.compute + np.where(recompute, base.forward_compute, 0.0) + update,
            base.communication + np.where(recompute, base.forward_communication, 0.0)
            + gathers,
            base.words + gather_words,
            base.forward_compute,
            base.forward_communication + first,
            base.param_communication - first + update,
            base.param_words - first_words)

    @staticmethod
    def _parameters(layer: Layer, vectors: Vectors
                    ) -> list[tuple[int, tuple[TensorUse, np.ndarray]]]:
        """Each parameter operand (its index, its use) and the size of its replica group
        under each configuration (the devices that differ only along split dims it
        lacks)."""
        params = layer.params or (False,) * len(layer.operands)
        result = []
        for index, (use, param) in enumerate(zip(layer.operands, params, strict=True)):
            if param:
                missing = [d.name for d in layer.space.dims if d.name not in use.dims]
                result.append((index, (use, vectors.group(missing))))
        return result

    def _backward_gathers(self, layer: Layer, factors: np.ndarray, machine: Machine,
                          sharded: np.ndarray, recompute: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """ZeRO 3's second all-gather of the layer's params (seconds, words per config
        where `sharded`): of each param the backward reads, that is, one whose layer
        passes a gradient to another operand (x's of x·w needs w; the first layer's w,
        whose input takes no gradient, is not gathered again, as the `-t jax` program
        does not), and of every param where the layer is recomputed (its forward runs
        again in the backward). Then the first (the forward's) gather of every param,
        seconds and words: a pipeline runs it in each micro-batch."""
        needed, every = Vectors(layer, factors, machine), Vectors(layer, factors, machine)
        for index, use in self._reduced_parameters(layer):
            missing = [d.name for d in layer.space.dims if d.name not in use.dims]
            block = use.elements / every.factor([d for d in use.dims if d is not None])
            read = any(grad for k, grad in enumerate(layer.grads) if k != index)
            for vectors in (needed, every) if read else (every,):
                vectors.phase = "param"
                vectors.all_gather(block, missing, use.element_bytes)
        seconds = np.where(recompute, every.seconds, needed.seconds)
        words = np.where(recompute, every.words, needed.words)
        return (np.where(sharded, seconds, 0.0), np.where(sharded, words, 0.0),
                np.where(sharded, every.seconds, 0.0), np.where(sharded, every.words, 0.0))

    @staticmethod
    def _reduced_parameters(layer: Layer) -> list[tuple[int, TensorUse]]:
        """The parameter operands whose gradient the layer all-reduces once per step."""
        params = layer.params or (False,) * len(layer.operands)
        return [(index, use) for index, (use, grad, param)
                in enumerate(zip(layer.operands, layer.grads, params, strict=True))
                if param and grad and index not in layer.space.kernel_reduced_grads]

    def edge_costs(self, edge: Edge, producer: Layer, producer_configs: Sequence[Config],
                   consumer: Layer, consumer_configs: Sequence[Config], devices: int,
                   machine: Machine, compiled: bool = False,
                   ends: tuple[EdgeEnd, EdgeEnd] | None = None) -> np.ndarray:
        bytes_ = self.training.element_bytes
        if bytes_ != 4:
            edge = replace(edge, held=_lowered(edge.held, bytes_),
                           needed=_lowered(edge.needed, bytes_))
        return edge_costs(edge, producer, producer_configs, consumer, consumer_configs,
                          devices, machine, compiled, ends)

    # -- memory ------------------------------------------------------------------------

    def memory_breakdown(self, layer: Layer, config: Config, own: tuple[int, ...] = ()
                         ) -> dict[str, float]:
        """Bytes one device holds of `layer` under `config`, by part (`MEMORY_PARTS`):
        parameters (fp32, or the bf16/fp16 copy), gradients, optimizer state (with the
        fp32 master weights under bf16/fp16), the activations kept for one micro-batch
        (its result, unless it is recomputed), and the result a recomputed layer holds
        again during the backward of its segment. A parameter an earlier layer reads too
        (`Layer.shared`) is that layer's to hold, unless its operand index is in `own`
        (that layer is not on this device: `unheld`)."""
        recompute, zero = self.choices(config, layer)
        return self._parts(self._held(layer, config, own), recompute, zero)

    def _held(self, layer: Layer, config: Config, own: tuple[int, ...]
              ) -> tuple[list[tuple[float, int, float]], float]:
        """What `memory_breakdown` takes from `config`'s dims alone: each parameter held
        (its block's elements, its element bytes, its replica group's size), and the
        bytes of the result's block."""
        low = at_precision(layer, self.training.element_bytes)
        vectors = Vectors(low, factor_matrix(low.space.names, [dict(config)]),
                          Machine("", 1.0, 1.0, 1.0, 1))
        elsewhere = {index for index, back in enumerate(layer.shared)
                     if back and index not in own}
        held = [(use.elements / float(vectors.factor([d for d in use.dims if d is not None])[0]),
                 use.element_bytes, float(group[0]))
                for index, (use, group) in self._parameters(low, vectors)
                if index not in elsewhere]
        return held, _result_bytes(low, vectors)

    def _parts(self, held: tuple[list[tuple[float, int, float]], float], recompute: bool,
               zero: int) -> dict[str, float]:
        """`memory_breakdown` from `_held`'s and the configuration's choices."""
        state_bytes = 4 * self.training.state_words + \
            (4 if self.training.precision != "fp32" else 0)
        parts = dict.fromkeys(MEMORY_PARTS, 0.0)
        params, result = held
        for block, element_bytes, replicas in params:
            parts["parameters"] += block * element_bytes / (replicas if zero >= 3 else 1)
            parts["gradients"] += block * element_bytes / (replicas if zero >= 2 else 1)
            parts["optimizer_state"] += block * state_bytes / (replicas if zero >= 1 else 1)
        parts["recomputed" if recompute else "activations"] = result
        return parts

    def recomputed(self, layer: Layer, configs: Sequence[Config]) -> np.ndarray:
        """Each configuration's "recomputed" part (`memory_breakdown`'s: its result where
        recomputed, else 0), the result priced once per distinct dims
        (`recomputed.Transient`'s vectors)."""
        low = at_precision(layer, self.training.element_bytes)
        made: dict[tuple[tuple[str, int], ...], float] = {}
        values = []
        for config in configs:
            if not self.choices(config, layer)[0]:
                values.append(0.0)
                continue
            dims = dict(config)
            key = tuple(sorted(dims.items()))
            if key not in made:
                made[key] = _result_bytes(low, Vectors(low, factor_matrix(
                    low.space.names, [dims]), Machine("", 1.0, 1.0, 1.0, 1)))
            values.append(made[key])
        return np.array(values, dtype=np.float64)

    def memory(self, layer: Layer, configs: Sequence[Config], in_flight: int = 1,
               own: tuple[int, ...] = ()) -> np.ndarray:
        """Parameters, gradients and optimizer state (`memory_breakdown`'s, with `own`),
        plus `in_flight` times the kept activations: the layer's additive share of the
        total. The recomputed results, held again while the backward goes through their
        segment, one segment at a time, count once for the largest segment
        (`memory_breakdown`'s "recomputed", `Transient`), not per layer."""
        made: dict[tuple[tuple[str, int], ...], tuple[list[tuple[float, int, float]], float]] = {}
        values = []
        for config in configs:
            key = tuple(sorted(dict(config).items()))
            if key not in made:  # (the dims' share priced once, `_held`)
                made[key] = self._held(layer, config, own)
            parts = self._parts(made[key], *self.choices(config, layer))
            values.append(parts["parameters"] + parts["gradients"]
                          + parts["optimizer_state"] + in_flight * parts["activations"])
        return np.array(values, dtype=np.float64)


def _result_bytes(low: Layer, vectors: Vectors) -> float:
    """The bytes of one device's block of `low`'s result (the layer at its precision),
    its configuration's factors in `vectors`."""
    return low.result.elements / float(vectors.factor(
        [d for d in low.result.dims if d is not None])[0]) * low.result.element_bytes


def unheld(layers: Sequence[Layer]) -> list[tuple[int, ...]]:
    """For each of `layers` (a contiguous run of a graph's: a stage, or all of them), the
    operands it reads of a parameter shared with an earlier layer (`Layer.shared`)
    whose last earlier reader is not in the run: the first reader in the run holds the
    parameter, its gradient and optimizer state (Megatron-LM's rule for a tied
    embedding: each stage holding a use keeps a copy, and their gradients are
    all-reduced), the later ones in the run count it no more.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> gpt = read_graph(parse_file("models/gpt2_small.dnn")).layers
        >>> [layer.shared for layer in gpt if layer.shared]    # logits reads wte again
        [(0, 184)]
        >>> unheld(gpt)[-3:], unheld(gpt[100:])[-3:]
        ([(), (), ()], [(), (1,), ()])
    """
    return [tuple(index for index, back in enumerate(layer.shared) if back > position)
            for position, layer in enumerate(layers)]


def combine(parts: Sequence[Mapping[str, float]], checkpoints: Sequence[bool],
            in_flight: int = 1) -> dict[str, float]:
    """The breakdown of a run of layers from each one's (`TrainingCost.memory_breakdown`)
    and whether it ends a segment (`Layer.checkpoint`), with the kept activations of
    `in_flight` micro-batches: the sums, but for "recomputed", the most any run of
    recomputed layers between two checkpoints holds (the backward recomputes one segment
    at a time and frees it before the next); "total" is the sum of the parts, the
    recomputed included: the peak, when the backward of the largest segment runs."""
    combined = dict.fromkeys(MEMORY_PARTS, 0.0)
    run = 0.0  # the recomputed results since the last checkpoint
    for layer_parts, checkpoint in zip(parts, checkpoints, strict=True):
        for part in MEMORY_PARTS:
            value = layer_parts[part]
            if part == "recomputed":
                run += value
                combined[part] = max(combined[part], run)
            else:
                combined[part] += value
        if checkpoint:
            run = 0.0
    combined["activations"] *= in_flight
    combined["total"] = sum(combined[part] for part in MEMORY_PARTS)
    return combined


def memory_breakdown(model: TrainingCost, layers: Sequence[Layer],
                     assignment: Mapping[str, Config], in_flight: int = 1
                     ) -> dict[str, float]:
    """Bytes one device holds of `layers` (a contiguous run: a stage, or the graph) under
    `assignment`, by part (`MEMORY_PARTS`, `combine`): a shared parameter once per run
    (`unheld`), the kept activations of `in_flight` micro-batches, the largest segment's
    recomputed results; "total" their sum, what a memory cap compares.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> from pase.passes.strategy.options import TrainingOptions
        >>> mlp = read_graph(parse_file("models/mlp.dnn"))
        >>> parts = memory_breakdown(TrainingCost(TrainingOptions(optimizer="momentum")),
        ...                          mlp.layers, {layer.name: {} for layer in mlp.layers})
        >>> parts["optimizer_state"] == parts["parameters"] == parts["gradients"]
        True
    """
    return combine([model.memory_breakdown(layer, assignment[layer.name], own)
                    for layer, own in zip(layers, unheld(layers), strict=True)],
                   [layer.checkpoint for layer in layers], in_flight)


def step_flops(layers: Sequence[Layer]) -> float:
    """The FLOPs of one training step of `layers` (forward, and backward where a layer
    has one): the model's work, which a recomputed forward does not add to. Divided
    by the step and the devices, the achieved FLOP/s per device."""
    return sum((layer.space.flops_forward
                + (layer.space.flops_backward if layer.backward else 0.0))
               * layer.space.points for layer in layers)


def graph_at_precision(layers: Sequence[Layer], edges: Sequence[Edge],
                       training: TrainingOptions) -> tuple[list[Layer], list[Edge]]:
    """`layers` and `edges` with their f32 tensors at the precision's width, for the
    parts of the pipeline model that read tensor widths directly (the transfers between
    stages)."""
    width = training.element_bytes
    if width == 4:
        return list(layers), list(edges)
    return ([at_precision(layer, width) for layer in layers],
            [replace(edge, held=_lowered(edge.held, width),
                     needed=_lowered(edge.needed, width)) for edge in edges])


def mark_checkpoints(layers: Sequence[Layer], segment_index: Sequence[int]) -> list[Layer]:
    """`layers` with the last layer of each segment (`segment_index`, as
    `pipeline.segments` or `#pase.segment` give it) marked `checkpoint`: under
    recomputation their results are kept and the rest of each segment is recomputed
    from its input, as activation checkpointing does per transformer block.

        >>> from pase.frontend import parse_file
        >>> from pase.passes.strategy.from_ir import read_graph
        >>> from pase.passes.strategy.pipeline.segments import segments
        >>> mlp = read_graph(parse_file("models/mlp.dnn"))
        >>> [layer.checkpoint for layer in mark_checkpoints(mlp.layers,
        ...                                                  segments(mlp.layers, mlp.edges))]
        [True, True, True, True]
    """
    last = len(layers) - 1
    return [replace(layer, checkpoint=i == last or segment_index[i] != segment_index[i + 1])
            for i, layer in enumerate(layers)]
