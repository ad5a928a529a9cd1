"""The search's options as one value, handed down from the passes to the engine.

`SearchOptions` gathers what the user-facing pass options set (pase-search's method,
order, min-shard, compat, jit, bounding, memory-gib; pase-partition-stages' min-shard)
so the engine's entry points take one frozen value instead of a dozen loose
parameters (as Alpa's `AutoShardingOption`). The cost model is chosen from it once,
when the problem is built (`model`). `TrainingOptions` is the training step the cost
model charges (optimizer, precision, recomputation, ZeRO, a pinned data-parallel
degree: DESIGN.md's options of both search passes, docs/cost-model.md's terms).

    >>> options = SearchOptions(method="exhaustive", min_shard=1)
    >>> options.order, options.model.name
    ('genseq', '')
    >>> TrainingOptions(optimizer="adam", zero="1").json()["zero"]
    1
"""

from __future__ import annotations

from dataclasses import dataclass

from pase.passes.strategy.cost_models import CostModel, cost_model
from pase.passes.strategy.one_mesh import one_mesh_model

OPTIMIZER_STATE_WORDS = {"sgd": 0, "momentum": 1, "adam": 2}
"""fp32 words of optimizer state per parameter: momentum's velocity, Adam's two moments."""
PRECISIONS = ("fp32", "bf16", "fp16")
RECOMPUTE = ("none", "full", "auto")
ZERO_STAGES = ("0", "1", "2", "3", "auto")


@dataclass(frozen=True)
class TrainingOptions:
    """The training step a plan is for (DESIGN.md; docs/cost-model.md, "The training
    step"). The defaults are today's step: fp32 SGD, every activation kept, nothing
    sharded, no pinned data-parallel degree.

        >>> options = TrainingOptions(optimizer="adam", precision="bf16")
        >>> options.state_words, options.element_bytes, options.is_default
        (2, 2, False)
        >>> TrainingOptions(zero="4").check()
        Traceback (most recent call last):
        ...
        ValueError: unknown zero '4'; use 0, 1, 2, 3 or auto
    """

    optimizer: str = "sgd"
    """"sgd", "momentum" or "adam"."""
    precision: str = "fp32"
    """"fp32", or "bf16"/"fp16": low-precision compute, activations and gradients, fp32
    master weights and optimizer state."""
    recompute: str = "none"
    """"none", "full" (every layer's forward again in the backward) or "auto" (a
    searched choice per layer)."""
    zero: str = "0"
    """ZeRO stage "0" to "3" (or the integer), or "auto" (a searched choice per layer)."""
    data_parallel: int | None = None
    """Every layer's batch dim split exactly this many ways (None: searched)."""

    def __post_init__(self) -> None:
        # A stage given as the integer it is (zero=1, as the JSON writes it) is that
        # stage, not an unknown value (was: "unknown zero '1'; use 0, 1, 2, 3 or auto").
        if isinstance(self.zero, int) and not isinstance(self.zero, bool):
            object.__setattr__(self, "zero", str(self.zero))

    def check(self) -> None:
        """Raises ValueError, one message, for a value out of its set."""
        for name, value, allowed in (
                ("optimizer", self.optimizer, tuple(OPTIMIZER_STATE_WORDS)),
                ("precision", self.precision, PRECISIONS),
                ("recompute", self.recompute, RECOMPUTE),
                ("zero", self.zero, ZERO_STAGES)):
            if value not in allowed:
                raise ValueError(f"unknown {name} '{value}'; use "
                                 f"{', '.join(allowed[:-1])} or {allowed[-1]}")
        if self.data_parallel is not None and self.data_parallel < 1:
            raise ValueError(f"data-parallel must be at least 1, got {self.data_parallel}")

    @property
    def is_default(self) -> bool:
        """Whether this is today's step (the cost model is then exactly `PaseCost`)."""
        return self == DEFAULT_TRAINING

    @property
    def state_words(self) -> int:
        """fp32 words of optimizer state per parameter (`OPTIMIZER_STATE_WORDS`)."""
        return OPTIMIZER_STATE_WORDS[self.optimizer]

    @property
    def element_bytes(self) -> int:
        """Bytes of an f32 activation or gradient at this precision (4 or 2)."""
        return 4 if self.precision == "fp32" else 2

    @property
    def recompute_choices(self) -> tuple[bool, ...]:
        """Whether a layer's forward is recomputed: each choice the search has."""
        return {"none": (False,), "full": (True,), "auto": (False, True)}[self.recompute]

    @property
    def zero_choices(self) -> tuple[int, ...]:
        """The ZeRO stages the search may give a layer with parameters."""
        return (0, 1, 2, 3) if self.zero == "auto" else (int(self.zero),)

    def json(self) -> dict[str, object]:
        """The plan and strategy JSON's "training" object (COMMON.md's contract)."""
        return {"optimizer": self.optimizer, "precision": self.precision,
                "recompute": self.recompute,
                "zero": self.zero if self.zero == "auto" else int(self.zero),
                "data_parallel": self.data_parallel}

    def ir_entries(self) -> dict[str, str]:
        """The `pase.training` dictionary on a searched `dnn.graph`: all four options,
        as strings."""
        return {"optimizer": self.optimizer, "precision": self.precision,
                "recompute": self.recompute, "zero": self.zero}


DEFAULT_TRAINING = TrainingOptions()
"""Today's step: fp32 SGD, nothing recomputed or sharded."""


@dataclass(frozen=True)
class SearchOptions:
    """How to search: every field is the default of the pass option of the same name."""

    method: str = "dp"
    """"dp" (exact, PaSE's DP over an elimination order) or "exhaustive"."""
    order: str = "genseq"
    """The DP's elimination order: "genseq", "bfs" or "minfill"."""
    min_shard: int = 4
    """The least shard a split may leave (PaSE's configuration space)."""
    compat: str = ""
    """The cost model: "" pase's own, "pase" the PaSE prototype's (`cost_model`)."""
    pruning: bool = True
    """Drop dominated and duplicate configurations first (`prune.py`)."""
    bounding: bool = True
    """Run the DP on the configurations bounds cannot rule out (`bound.py`)."""
    jit: str = "auto"
    """The DP's kernel: "auto", "on" (llvmlite) or "off" (numpy); the same results."""
    memory_budget: int = 4 << 30
    """Bytes the search's own tables may take (pase-search's memory-gib)."""
    exhaustive_limit: int = 10**7
    """The most strategies `method="exhaustive"` tries."""
    training: TrainingOptions = DEFAULT_TRAINING
    """The training step charged: optimizer, precision, recomputation, ZeRO, a pinned
    data-parallel degree (defaults: today's fp32 SGD step)."""
    one_mesh: bool = False
    """Only the configurations one device mesh holds (`one_mesh.py`: the JAX target's)."""

    @property
    def model(self) -> CostModel:
        """The cost model `compat` names, charging the `training` step; raises
        ValueError for an unknown mode or a training step compat=pase cannot charge."""
        model = cost_model(self.compat, self.training)
        return one_mesh_model(model) if self.one_mesh else model


DEFAULT_OPTIONS = SearchOptions()
"""Every option at its default."""
