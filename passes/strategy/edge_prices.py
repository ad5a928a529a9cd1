"""Edge tables priced once across the narrowing's rounds: each entry of an edge kind's table
is priced at most once, and a round whose configurations were priced before takes its
table as a slice.

The narrowed search (`narrow.py`, `narrow_blocks.py`) solves a run of problems on growing
subsets of the same configuration lists: a block's rounds, then the whole graph's, whose
block layers keep configurations the block's rounds kept already. Each round used to
price its edge tables afresh, and pricing is nearly all of the time at thousands of
devices (GPT-3 175B at 3,072: 95 % of the block's solve, `benchmarks/RESULTS.md`). An
entry's price depends only on the edge and its two configurations (`cost.edge_costs`
prices each pair of layouts alone), so `EdgePrices` keeps, per edge kind and pair of
full configuration lists, the table on the union of the rows and columns asked for so
far; a request prices only the entries it has not seen (new rows against every column,
old rows against new columns) and gets its own rows and columns out of the union: the
same floats a fresh pricing gives (`tests/passes/strategy/test_narrow.py` compares them).

    >>> import numpy as np
    >>> calls = []
    >>> def price(rows, columns):
    ...     calls.append((rows.tolist(), columns.tolist()))
    ...     return np.add.outer(10.0 * rows, columns)
    >>> prices = EdgePrices()
    >>> prices.table("edge", np.array([0, 2]), np.array([1]), price).tolist()
    [[1.0], [21.0]]
    >>> prices.table("edge", np.array([2, 3]), np.array([0, 1]), price).tolist()
    [[20.0, 21.0], [30.0, 31.0]]
    >>> calls    # the second request priced row 3 everywhere, and column 0 for rows 0, 2
    [([0, 2], [1]), ([3], [0, 1]), ([0, 2], [0])]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from pase.passes.strategy.budget import MemoryBudget

Price = Callable[[np.ndarray, np.ndarray], np.ndarray]


class EdgePrices:
    """The priced part of each edge table: sorted row and column indices (into the ends'
    full configuration lists) and the table on them. With a `budget`, the tables held are
    charged to it (`release` gives them back)."""

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self.budget = budget
        self.held: dict[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.charged = 0

    def table(self, key: Hashable, rows: np.ndarray, columns: np.ndarray,
              price: Price) -> np.ndarray:
        """The table on `rows` x `columns` (increasing indices) of the edge `key`;
        `price(rows, columns)` prices a block of it."""
        if key not in self.held:
            table = price(rows, columns)
            self._store(key, rows, columns, table)
            return table
        old_rows, old_columns, old = self.held[key]
        new_rows = np.setdiff1d(rows, old_rows)
        new_columns = np.setdiff1d(columns, old_columns)
        if new_rows.size or new_columns.size:
            all_rows = np.union1d(old_rows, new_rows)
            all_columns = np.union1d(old_columns, new_columns)
            grown = np.empty((all_rows.size, all_columns.size))
            at_old_rows = np.searchsorted(all_rows, old_rows)
            at_old_columns = np.searchsorted(all_columns, old_columns)
            grown[np.ix_(at_old_rows, at_old_columns)] = old
            if new_rows.size:
                grown[np.searchsorted(all_rows, new_rows)] = price(new_rows, all_columns)
            if new_columns.size:
                grown[np.ix_(at_old_rows, np.searchsorted(all_columns, new_columns))] = \
                    price(old_rows, new_columns)
            self._release(old)
            self._store(key, all_rows, all_columns, grown)
            old_rows, old_columns, old = all_rows, all_columns, grown
        if np.array_equal(rows, old_rows) and np.array_equal(columns, old_columns):
            return old
        return old[np.ix_(np.searchsorted(old_rows, rows), np.searchsorted(old_columns, columns))]

    def _store(self, key: Hashable, rows: np.ndarray, columns: np.ndarray,
               table: np.ndarray) -> None:
        self.held[key] = (rows, columns, table)
        if self.budget is not None:
            self.budget.charge(table.nbytes, "the edge prices kept across rounds")
            self.charged += table.nbytes

    def _release(self, table: np.ndarray) -> None:
        if self.budget is not None:
            self.budget.release(table.nbytes)
            self.charged -= table.nbytes

    def release(self) -> None:
        """Drop every table held (and give its bytes back to the budget)."""
        if self.budget is not None:
            self.budget.release(self.charged)
        self.held.clear()
        self.charged = 0
