"""Edge entries priced once across the rounds of a narrowed search (`narrow.py`).

Each narrowing round builds the cost tables of a problem whose configuration lists are
parts of the whole problem's lists, taken in their order; a round that widens its gap
keeps every configuration the last round kept, and the whole graph's round, narrowed by
the blocks' bounds (`narrow_blocks.py`), keeps every configuration of the block's last
round. The tables of those rounds overlap: on GPT-3 175B at 1,024 devices the block's
last round priced 4,733 configurations' tables, all again in the whole round's. An entry
of an edge table is the price of one pair of configurations, whatever else its table
holds (`cost.edge_costs` prices each pair of layouts alone: the same float whether it is
priced in a table of one entry or of millions), so a round's table is the last round's
entries where both configurations were kept, and new prices for the rest: the rows of
new producer configurations against every column, then the kept rows against the new
columns. The tables are the same, bit for bit; only fewer entries are priced.

`PricedTables` keeps, per edge kind and pair of whole lists, the last table built with
the whole lists' positions of its rows and columns. It counts what it keeps on the
search's memory budget (the round's problem counts its tables too: an overcount while
both hold one) and gives it back in `close`.

    >>> import numpy as np
    >>> calls = []
    >>> def price(rows, columns):
    ...     calls.append((len(rows), len(columns)))
    ...     return np.add.outer([float(c["a"]) for c in rows], [10.0 * c["a"] for c in columns])
    >>> whole = [{"a": 1}, {"a": 2}, {"a": 4}]
    >>> priced = PricedTables([whole])
    >>> first = priced.table(0, whole[:2], whole[1:], price)
    >>> second = priced.table(0, whole, whole, price)
    >>> calls                     # 2 x 2, then the new row against all, the new column
    [(2, 2), (1, 3), (2, 1)]
    >>> priced.table(0, whole, whole, price) is second, len(calls)   # the same: no pricing
    (True, 3)
    >>> bool((second == price(whole, whole)).all())
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pase.passes.strategy.budget import MemoryBudget
from pase.passes.strategy.cost import Config

Price = Callable[[Sequence[Config], Sequence[Config]], np.ndarray]


class PricedTables:
    """The last table of each edge kind built in a search's rounds (module docstring),
    over configurations of the whole problem's `config_lists`."""

    def __init__(self, config_lists: Sequence[list[Config]],
                 budget: MemoryBudget | None = None):
        self._lists = list(config_lists)  # (kept alive: positions are keyed by id)
        self._where: dict[int, tuple[int, int]] = {}
        # (A list that recurs, as the repeated blocks' layers share theirs, adds nothing:
        # its configurations are already placed. GPT-3 175B at 3,072 devices: 1,446
        # lists, 18 distinct, 9,792,065 configurations of which 90,151 distinct lists'.)
        for configs in {id(configs): configs for configs in self._lists}.values():
            for position, config in enumerate(configs):
                self._where.setdefault(id(config), (id(configs), position))
        self._tables: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._budget = budget
        self.priced = 0
        """Entries priced through this cache (the rest were the last rounds')."""

    def _positions(self, configs: Sequence[Config]) -> tuple[int, np.ndarray] | None:
        """The whole list the configurations come from and their positions in it
        (increasing), or None where they are not all of one whole list, in its order."""
        found = [self._where.get(id(config)) for config in configs]
        if not found or any(place is None for place in found):
            return None
        lists = {place[0] for place in found if place is not None}
        positions = np.array([place[1] for place in found if place is not None])
        if len(lists) != 1 or np.any(np.diff(positions) <= 0):
            return None
        return lists.pop(), positions

    def table(self, kind: object, rows: Sequence[Config], columns: Sequence[Config],
              price: Price) -> np.ndarray:
        """The table of edge kind `kind` over `rows` x `columns`, `price(rows, columns)`
        where no earlier table of the kind holds an entry."""
        row_place, column_place = self._positions(rows), self._positions(columns)
        if row_place is None or column_place is None:
            self.priced += len(rows) * len(columns)
            return price(rows, columns)
        key = (kind, row_place[0], column_place[0])
        row_at, column_at = row_place[1], column_place[1]
        last = self._tables.get(key)
        if last is None:
            table = price(rows, columns)
            self.priced += table.size
        elif np.array_equal(last[0], row_at) and np.array_equal(last[1], column_at):
            # The very table again (the chain's parts share their blocks' lists): the
            # tables are read, never written, so it is given as it is.
            return last[2]
        else:
            table = self._extend(last, row_at, column_at, rows, columns, price)
        self._keep(key, (row_at, column_at, table))
        return table

    def _extend(self, last: tuple[np.ndarray, np.ndarray, np.ndarray], row_at: np.ndarray,
                column_at: np.ndarray, rows: Sequence[Config], columns: Sequence[Config],
                price: Price) -> np.ndarray:
        """The table over `rows` x `columns` from `last` (its positions and entries) and
        the prices of the pairs it lacks."""
        old_rows, old_columns = _within(last[0], row_at), _within(last[1], column_at)
        table = np.empty((len(rows), len(columns)))
        kept_rows, kept_columns = np.flatnonzero(old_rows >= 0), np.flatnonzero(old_columns >= 0)
        table[np.ix_(kept_rows, kept_columns)] = last[2][np.ix_(old_rows[kept_rows],
                                                                old_columns[kept_columns])]
        new_rows, new_columns = np.flatnonzero(old_rows < 0), np.flatnonzero(old_columns < 0)
        if len(new_rows):
            table[new_rows, :] = price([rows[i] for i in new_rows.tolist()], columns)
        if len(new_columns) and len(kept_rows):
            table[np.ix_(kept_rows, new_columns)] = price(
                [rows[i] for i in kept_rows.tolist()], [columns[i] for i in new_columns.tolist()])
        self.priced += len(new_rows) * len(columns) + len(kept_rows) * len(new_columns)
        return table

    def _keep(self, key: tuple[object, ...],
              entry: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        old = self._tables.get(key)
        if self._budget is not None:
            if old is not None:
                self._budget.release(old[2].nbytes)
            self._budget.count(entry[2].nbytes)
        self._tables[key] = entry

    def close(self) -> None:
        """Drop the tables kept, and give their bytes back to the budget."""
        if self._budget is not None:
            self._budget.release(sum(entry[2].nbytes for entry in self._tables.values()))
        self._tables.clear()


def _within(positions: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each of `wanted` (positions, increasing), its index in `positions`
    (increasing), or -1 where it is not there.

        >>> _within(np.array([1, 4, 6]), np.array([0, 4, 6, 7])).tolist()
        [-1, 1, 2, -1]
    """
    if not len(positions):
        return np.full(len(wanted), -1)
    at = np.searchsorted(positions, wanted)
    found = (at < len(positions)) & (positions[np.minimum(at, len(positions) - 1)] == wanted)
    return np.where(found, at, -1)
