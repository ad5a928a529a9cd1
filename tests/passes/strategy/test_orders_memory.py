"""GENERATESEQ's memory on a long chain: linear in its length, not quadratic.

Each eliminated vertex kept the set of vertices it had absorbed, so a chain of n layers
held n^2/2 ids at the end of the order: `pase-opt` on a chain of 20,000 relus peaked at
4.8 GB under `pase-search{devices=4 memory-gib=0.5}` (a budget the DP's tables keep to,
but the order is computed before them).
"""

from __future__ import annotations

import tracemalloc

from pase.passes.strategy.orders import elimination_order


def test_minimum_degree_order_of_a_chain_keeps_linear_memory() -> None:
    length = 4000
    chain = [{vertex - 1, vertex + 1} & set(range(length)) for vertex in range(length)]
    tracemalloc.start()
    try:
        order = elimination_order(chain, "genseq")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert order[:4] == [0, length - 1, 1, length - 2]
    assert sorted(order) == list(range(length))
    # The sets of the two ends' absorbed vertices (2,000 ids each) and the heap: ~3 MB.
    # Keeping every eliminated vertex's set took 175 MB.
    assert peak < 20 << 20, f"{peak:,} bytes"
