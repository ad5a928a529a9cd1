"""The pure search engine behind `pase-search`: plain data in, plain data out.

No IR inside: iteration spaces, configurations, the cost model, machines, elimination
orders, the exact DP and its JIT kernel.
"""

from pase.passes.strategy.configs import enumerate_configs, split_factors

__all__ = ["enumerate_configs", "split_factors"]
