"""The search's options as one value, handed down from the passes to the engine.

`SearchOptions` gathers what the user-facing pass options set (pase-search's method,
order, min-shard, compat, jit, bounding, memory-gib; pase-partition-stages' min-shard)
so the engine's entry points take one frozen value instead of a dozen loose
parameters (as Alpa's `AutoShardingOption`). The cost model is chosen from it once,
when the problem is built (`model`).

    >>> options = SearchOptions(method="exhaustive", min_shard=1)
    >>> options.order, options.model.name
    ('genseq', '')
"""

from __future__ import annotations

from dataclasses import dataclass

from pase.passes.strategy.cost_models import CostModel, cost_model


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

    @property
    def model(self) -> CostModel:
        """The cost model `compat` names; raises ValueError for an unknown one."""
        return cost_model(self.compat)


DEFAULT_OPTIONS = SearchOptions()
"""Every option at its default."""
