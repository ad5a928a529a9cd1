"""The exact search: PaSE's DP written as min-sum variable elimination.

A factor is a cost table over the configurations of a few vertices: each vertex cost vector and
each edge cost matrix starts as one. Eliminating vertex v adds every factor that mentions v over
v and its current neighbours (PaSE's dependent set D(i)), takes the minimum over v into a new
factor over the neighbours, and keeps the argmin. When every vertex is gone only scalars remain;
their sum is the optimum, and walking the order backwards through the argmin tables recovers the
strategy. The table for v has prod(K) entries over v and D(i), so the order matters; the size is
checked against a memory budget before anything is allocated.

>>> graph = CostGraph(["a", "b"], [np.array([1.0, 2.0]), np.array([0.0, 5.0])])
>>> graph.add_edge(0, 1, np.array([[9.0, 0.0], [0.0, 9.0]]))
>>> result = solve_dp(graph)
>>> result.choice, result.cost
((1, 0), 2.0)
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pase.passes.strategy.budget import (
    MemoryBudget,
    SearchError,
    SearchMemoryError,  # noqa: F401 (re-exported: the DP's refusals are these)
    as_budget,
    format_bytes,
)
from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.factors import Axes, Eliminate, Factor, argmin_dtype, axis_sizes
from pase.passes.strategy.orders import elimination_order

ChunkIndex = tuple[int | slice, ...]

CHUNK_ENTRIES = 1 << 17
JIT_MODES = ("auto", "on", "off")
# With jit="auto", smaller tables stay with numpy: compiling a kernel (~50 ms) costs more.
JIT_MIN_ENTRIES = 1 << 20
# The most bytes the reuse cache may keep alive (earlier steps' inputs and results).
REUSE_CACHE_BYTES = 1 << 30
DIGEST_SAMPLE = 512
RAW_DIGEST_ENTRIES = 512
"""A table of at most this many entries is keyed by its bytes themselves (`_digest`):
cheaper than hashing a sample of them, and exact, so its steps need no comparison."""


@dataclass(frozen=True)
class DPResult:
    """An optimal strategy and what it took to find it.

    `choice[v]` indexes `vertex_costs[v]`; `max_dependent_set` is the largest |D(i)| (not
    counting the vertex itself); `table_entries` sums prod(K) over each vertex and its dependent
    set; `peak_table_bytes` is the most memory held by cost and argmin tables at once (a table
    that several steps share counted once);
    `reused_steps` counts eliminations that took an earlier step's result instead of
    recomputing it (identical inputs in the same roles, as in repeated blocks);
    `dense_blocks` the layers of each dense block solved by counting before the DP
    (`dense_blocks.py`; the other numbers are then the reduced graph's).

    >>> DPResult(choice=(0,), cost=1.0, order=(0,), max_dependent_set=0,
    ...          table_entries=2, peak_table_bytes=24).cost
    1.0
    """

    choice: tuple[int, ...]
    cost: float
    order: tuple[int, ...]
    max_dependent_set: int
    table_entries: int
    peak_table_bytes: int
    reused_steps: int = 0
    dense_blocks: tuple[int, ...] = ()


def eliminate(factors: Sequence[Factor], vertex: int, chunk_entries: int = CHUNK_ENTRIES
              ) -> tuple[Axes, np.ndarray, np.ndarray]:
    """Sum `factors` (all mentioning `vertex`) and minimize over `vertex`.

    Each factor's axes are sorted vertex ids. Returns the sorted axes of the result (the
    dependent set), the minimum table over them, and the argmin table (lowest index on ties).
    The sum is formed `chunk_entries` at a time, so the full table never exists at once.

    >>> vertex_cost = ((0,), np.array([1.0, 0.0]))
    >>> edge_cost = ((0, 1), np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 5.0]]))
    >>> axes, minimum, argmin = eliminate([vertex_cost, edge_cost], 0)
    >>> axes, minimum.tolist(), argmin.tolist()
    ((1,), [1.0, 0.0, 1.0], [0, 1, 0])
    """
    sizes, dependent_set = axis_sizes(factors, vertex)
    # v's axis goes last so that the min and argmin run over contiguous memory.
    layout = (*dependent_set, vertex)
    shape = tuple(sizes[axis] for axis in layout)
    aligned = [_align(axes, table, layout) for axes, table in factors]
    if math.prod(shape) <= chunk_entries:
        return (dependent_set, *_eliminate_whole(aligned, shape))
    minimum = np.empty(shape[:-1], dtype=np.float64)
    argmin = np.empty(shape[:-1], dtype=argmin_dtype(sizes[vertex]))
    buffer = np.empty(_buffer_entries(shape, chunk_entries), dtype=np.float64)
    for index in _chunk_indices(shape, chunk_entries):
        chunk_shape = (*minimum[index].shape, sizes[vertex])
        combined = buffer[: math.prod(chunk_shape)].reshape(chunk_shape)
        for position, view in enumerate(aligned):
            part = view[_broadcast_index(view, index)]
            if position == 0:
                np.copyto(combined, part)
            else:
                np.add(combined, part, out=combined)
        best = np.argmin(combined, axis=-1)
        argmin[index] = best
        minimum[index] = np.take_along_axis(combined, best[..., np.newaxis], axis=-1)[..., 0]
    return dependent_set, minimum, argmin


def _eliminate_whole(aligned: Sequence[np.ndarray], shape: tuple[int, ...]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """`eliminate`'s minimum and argmin where the whole sum is one chunk: the same sums
    in the same order and the same argmin, in fewer numpy calls (small graphs make
    thousands of such steps)."""
    combined = np.empty(shape, dtype=np.float64)
    np.copyto(combined, aligned[0])
    for view in aligned[1:]:
        np.add(combined, view, out=combined)
    best = combined.argmin(axis=-1)
    rows = combined.reshape(-1, shape[-1])
    minimum = rows[np.arange(rows.shape[0]), best.ravel()].reshape(shape[:-1])
    return minimum, np.asarray(best).astype(argmin_dtype(shape[-1]))


def _align(axes: Axes, table: np.ndarray, layout: Axes) -> np.ndarray:
    """A view of `table` whose axes follow `layout`, with length-1 axes for missing vertices."""
    permutation = [axes.index(axis) for axis in layout if axis in axes]
    index = tuple(slice(None) if axis in axes else np.newaxis for axis in layout)
    return table.transpose(permutation)[index]


def _chunk_indices(shape: tuple[int, ...], chunk_entries: int) -> Iterator[ChunkIndex]:
    """Indices into the leading axes of a table of `shape` that cover it in small chunks.

    A chunk never splits the last axis; otherwise it holds at most `chunk_entries` entries.

    >>> list(_chunk_indices((2, 3, 4), 8))
    [(0, slice(0, 2, None)), (0, slice(2, 3, None)), (1, slice(0, 2, None)), (1, slice(2, 3, None))]
    """
    leading, trailing_entries = 0, math.prod(shape)
    while leading < len(shape) - 1 and trailing_entries > chunk_entries:
        trailing_entries //= shape[leading]
        leading += 1
    if leading == 0:
        yield ()
        return
    axis = leading - 1
    block = max(1, chunk_entries // trailing_entries)
    for outer in itertools.product(*(range(size) for size in shape[:axis])):
        for start in range(0, shape[axis], block):
            yield (*outer, slice(start, min(start + block, shape[axis])))


def _buffer_entries(shape: tuple[int, ...], chunk_entries: int) -> int:
    """The size of the largest chunk `_chunk_indices` makes of a table of `shape`."""
    return min(math.prod(shape), max(chunk_entries, shape[-1]))


def _broadcast_index(view: np.ndarray, index: ChunkIndex) -> ChunkIndex:
    """`index` adapted to a view whose length-1 axes broadcast."""
    return tuple(position if view.shape[axis] > 1
                 else (0 if isinstance(position, int) else slice(None))
                 for axis, position in enumerate(index))


def solve_dp(graph: CostGraph, order: str | Sequence[int] = "genseq",
             memory_budget: int | MemoryBudget = 4 << 30, jit: str = "auto",
             progress: Callable[[int, int, int], None] | None = None,
             resident_bytes: int = 0, reuse: bool = True,
             order_name: str | None = None) -> DPResult:
    """An optimal strategy by variable elimination in `order` (a method name or a permutation).

    Raises `SearchMemoryError` before the tables would take more than `memory_budget`:
    with a number of bytes, the graph's own tables (alive for the whole run, since the
    graph holds them) and `resident_bytes` that other tables already hold (the unpruned
    cost graph) are charged first; a `MemoryBudget` (`strategy/budget.py`) has them
    charged already by whoever built them. Each elimination then charges its minimum,
    argmin and chunk tables before it allocates them, and releases what it frees. `jit`
    picks who eliminates each vertex: "on" the llvmlite kernel of `strategy/jit.py`
    (raising `SearchError` if llvmlite cannot compile here), "off" numpy,
    "auto" the kernel when llvmlite works and the table has at least `JIT_MIN_ENTRIES`
    entries; the results are bit-identical either way. `progress(i, n, entries)`, if
    given, hears of vertex i of n (and its table size) before it is eliminated.
    With `reuse`, a step whose factors are bitwise identical to an earlier step's, in the
    same roles (see `_ReuseCache`), takes that step's minimum and argmin tables instead of
    recomputing them; the result is bit-identical. Shared tables are charged once, and a
    reused step allocates nothing, so it is never refused (the cache itself keeps at most
    `REUSE_CACHE_BYTES` alive besides). `order_name` is the method a permutation
    `order` came from (what a refusal's remedy names; by default `order` itself).

    >>> costs = [np.array([0.0, 1.0]), np.array([3.0, 0.0]), np.array([0.0, 1.0])]
    >>> graph = CostGraph(["a", "b", "c"], costs)
    >>> graph.add_edge(0, 1, np.array([[0.0, 4.0], [4.0, 0.0]]))
    >>> result = solve_dp(graph, order="bfs")
    >>> result.choice, result.cost
    ((1, 1, 0), 1.0)
    """
    sizes = graph.sizes
    sequence = _resolve_order(graph, order)
    if jit not in JIT_MODES:
        raise ValueError(f"jit must be one of {', '.join(JIT_MODES)}, got '{jit}'")
    if jit == "on":
        compiled_eliminate(required=True)
    factors = _Factors(graph)
    inputs = factors.inputs  # factors with smaller keys are the graph's own tables
    scalars: list[float] = []
    budget = as_budget(memory_budget)
    if not isinstance(memory_budget, MemoryBudget):
        budget.count(resident_bytes + sum(graph.buffers().values()))
    argmin_tables: list[tuple[Axes, np.ndarray]] = []
    max_dependent_set = 0
    table_entries = 0
    cache = _ReuseCache(inputs) if reuse else None
    live = _LiveTables(budget)
    reused_steps = 0
    for step, vertex in enumerate(sequence):
        consumed_keys, consumed, dependent_set = factors.take(vertex)
        entries = sizes[vertex] * math.prod(sizes[axis] for axis in dependent_set)
        if progress is not None:
            progress(step, len(sequence), entries)
        found = None
        if cache is not None:
            step_key = cache.key(consumed_keys, consumed, (*dependent_set, vertex))
            found = cache.find(step_key, consumed, dependent_set)
        if found is not None:
            # An earlier step's tables, shared: nothing new is allocated.
            axes, minimum, argmin = found
            reused_steps += 1
            for table in (minimum, argmin):
                live.hold(table, charged=False)
        else:
            axes, minimum, argmin = _eliminate_charged(graph, consumed, vertex, dependent_set,
                                                       entries, budget, jit,
                                                       order_name or order)
            for table in (minimum, argmin):
                live.hold(table, charged=True)
            if cache is not None:
                cache.store(step_key, consumed_keys, consumed, minimum, argmin)
        for key, (_, table) in zip(consumed_keys, consumed, strict=True):
            if key >= inputs:
                live.drop(table)
        del consumed
        argmin_tables.append((axes, argmin))
        if axes:
            factors.add(axes, minimum)
        else:
            scalars.append(float(minimum))
            live.drop(minimum)
        max_dependent_set = max(max_dependent_set, len(dependent_set))
        table_entries += entries

    return DPResult(choice=_backtrack(len(sizes), sequence, argmin_tables),
                    cost=math.fsum(scalars), order=tuple(sequence),
                    max_dependent_set=max_dependent_set, table_entries=table_entries,
                    peak_table_bytes=budget.peak, reused_steps=reused_steps)


class _Factors:
    """The DP's factors by key (the graph's own tables first: keys below `inputs`), and
    per vertex the keys of those that touch it."""

    def __init__(self, graph: CostGraph):
        self.tables: dict[int, Factor] = {}
        self.of: list[set[int]] = [set() for _ in graph.sizes]
        self._keys = itertools.count()
        for vertex, vertex_cost in enumerate(graph.vertex_costs):
            self.add((vertex,), vertex_cost)
        for (u, v), edge_cost in graph.edge_costs.items():
            self.add((u, v), edge_cost)
        self.inputs = len(self.tables)

    def add(self, axes: Axes, table: np.ndarray) -> None:
        key = next(self._keys)
        self.tables[key] = (axes, table)
        for axis in axes:
            self.of[axis].add(key)

    def take(self, vertex: int) -> tuple[list[int], list[Factor], list[int]]:
        """The factors that touch `vertex`, taken out (their keys, the factors), and the
        other vertices they touch (its dependent set)."""
        consumed_keys = sorted(self.of[vertex])
        consumed = [self.tables.pop(key) for key in consumed_keys]
        dependent_set = sorted({axis for axes, _ in consumed for axis in axes} - {vertex})
        for key, (axes, _) in zip(consumed_keys, consumed, strict=True):
            for axis in axes:
                self.of[axis].discard(key)
        return consumed_keys, consumed, dependent_set


def _eliminate_charged(graph: CostGraph, consumed: list[Factor], vertex: int,
                       dependent_set: list[int], entries: int, budget: MemoryBudget,
                       jit: str, order: str | Sequence[int]
                       ) -> tuple[Axes, np.ndarray, np.ndarray]:
    """`vertex` eliminated from `consumed` (by the kernel `jit` picks), its minimum and
    argmin tables charged to `budget` (what would be live once they exist: the factors
    not yet consumed, these two tables and one chunk of sums, never the full table)."""
    working = _working_bytes(entries, graph.sizes[vertex])
    if budget.used + working > budget.limit:  # (the message made only where it is said)
        budget.check(working, _memory_message(graph, vertex, dependent_set, entries,
                                              budget.used + working),
                     _remedy(order))
    budget.charge(working, f"the DP table of layer '{graph.names[vertex]}'")
    use_kernel = jit == "on" or (jit == "auto" and entries >= JIT_MIN_ENTRIES)
    eliminate_vertex = compiled_eliminate(jit == "on") if use_kernel else eliminate
    axes, minimum, argmin = eliminate_vertex(consumed, vertex)
    budget.release(working - minimum.nbytes - argmin.nbytes)
    return axes, minimum, argmin


def _backtrack(count: int, sequence: Sequence[int],
               argmin_tables: list[tuple[Axes, np.ndarray]]) -> tuple[int, ...]:
    """Each vertex's choice, from the last eliminated back to the first."""
    choice = [0] * count
    for vertex, (axes, argmin) in zip(reversed(sequence), reversed(argmin_tables), strict=True):
        choice[vertex] = int(argmin[tuple(choice[axis] for axis in axes)])
    return tuple(choice)


StepKey = tuple[tuple[tuple[int, ...], tuple[int, ...], str, bytes], ...]
CacheEntry = tuple[list[np.ndarray], np.ndarray, np.ndarray]


class _ReuseCache:
    """Earlier eliminations, found again by what they consumed.

    A step is keyed by its factors in the order they are summed: per factor, the positions of
    its axes in the step's layout (the sorted dependent set, then the vertex), its shape, dtype
    and a digest of (a sample of) its bytes, or its bytes themselves for a small table
    (`RAW_DIGEST_ENTRIES`).
    A hit is confirmed by comparing every table bit for bit (a key of bytes alone is
    that comparison already), so a digest collision cannot change a result; a confirmed
    hit sums the same numbers in the same order over the same layout, so its minimum and
    argmin tables are the ones eliminate would return, with the axes now naming this
    step's dependent set. Results are shared, not copied: they are made read-only. The
    cache keeps at most `REUSE_CACHE_BYTES` alive: a new entry evicts the least recently
    used ones (a stack's early blocks, whose steps the later blocks no longer meet), and
    one larger than that is not kept.
    """

    def __init__(self, inputs: int) -> None:
        self.inputs = inputs  # factor keys below this are the graph's own, alive throughout
        self.digests: dict[int, bytes] = {}  # by id(table), of tables kept alive throughout
        self.kept_minima: set[int] = set()
        # Least recently used first; several entries may share a key (digest collisions).
        self.entries: OrderedDict[int, tuple[StepKey, CacheEntry, list[np.ndarray]]] = (
            OrderedDict())
        self.held: dict[int, int] = {}  # entries keeping each array alive, by id
        self.steps: dict[StepKey, dict[int, CacheEntry]] = {}
        self.numbers = itertools.count()
        self.kept_bytes = 0

    def _digest(self, key: int, table: np.ndarray) -> bytes:
        digest = self.digests.get(id(table))
        if digest is None:
            digest = (table.tobytes() if table.size <= RAW_DIGEST_ENTRIES
                      else hashlib.blake2b(_sample(table).data, digest_size=16).digest())
            # The graph keeps its tables alive and the cache its minima, so their ids stay.
            if key < self.inputs or id(table) in self.kept_minima:
                self.digests[id(table)] = digest
        return digest

    def key(self, keys: Sequence[int], factors: Sequence[Factor], layout: Axes) -> StepKey:
        return tuple((tuple(layout.index(axis) for axis in axes), table.shape, table.dtype.str,
                      self._digest(key, table))
                     for key, (axes, table) in zip(keys, factors, strict=True))

    def find(self, step_key: StepKey, factors: Sequence[Factor],
             dependent_set: Sequence[int]) -> tuple[Axes, np.ndarray, np.ndarray] | None:
        """An earlier step's result for the step of `step_key` (`key`, over the layout of
        the dependent set, then the vertex) on `factors`, or None."""
        # (Tables keyed by their bytes, of the key's shapes and dtypes, are those bits.)
        exact = all(table.size <= RAW_DIGEST_ENTRIES for _, table in factors)
        for number, (tables, minimum, argmin) in self.steps.get(step_key, {}).items():
            if exact or all(_same_bits(table, earlier)
                            for (_, table), earlier in zip(factors, tables, strict=True)):
                self.entries.move_to_end(number)
                return tuple(dependent_set), minimum, argmin
        return None

    def store(self, step_key: StepKey, keys: Sequence[int], factors: Sequence[Factor],
              minimum: np.ndarray, argmin: np.ndarray) -> None:
        """Remember that the step of `step_key` on `factors` gave `minimum` and `argmin`."""
        arrays = [minimum, argmin, *(table for key, (_, table) in zip(keys, factors, strict=True)
                                     if key >= self.inputs)]
        kept = sum(array.nbytes for array in {id(array): array for array in arrays}.values()
                   if id(array) not in self.held)
        if kept > REUSE_CACHE_BYTES:
            return
        while self.kept_bytes + kept > REUSE_CACHE_BYTES:
            self._evict()
        minimum.flags.writeable = False
        argmin.flags.writeable = False
        self.kept_minima.add(id(minimum))
        number = next(self.numbers)
        entry = ([table for _, table in factors], minimum, argmin)
        self.steps.setdefault(step_key, {})[number] = entry
        self.entries[number] = (step_key, entry, arrays)
        for array in arrays:
            self._hold(array)

    def _hold(self, array: np.ndarray) -> None:
        """Count one more entry keeping `array` alive; its bytes count once."""
        count = self.held.get(id(array), 0)
        if not count:
            self.kept_bytes += array.nbytes
        self.held[id(array)] = count + 1

    def _evict(self) -> None:
        """Forget the least recently used entry."""
        number, (step_key, (_, minimum, _), arrays) = self.entries.popitem(last=False)
        del self.steps[step_key][number]
        if not self.steps[step_key]:
            del self.steps[step_key]
        for array in arrays:
            self.held[id(array)] -= 1
            if not self.held[id(array)]:
                del self.held[id(array)]
                self.kept_bytes -= array.nbytes
        if id(minimum) not in self.held:
            # Once the cache lets go of the minimum its id may name another table.
            self.kept_minima.discard(id(minimum))
            self.digests.pop(id(minimum), None)


class _LiveTables:
    """The DP's minimum and argmin tables, each charged to the budget once however many
    steps share it (reused steps return an earlier step's arrays), and released when the
    last of those lets it go."""

    def __init__(self, budget: MemoryBudget) -> None:
        self.budget = budget
        self.holders: dict[int, int] = {}  # by id(table); the holders keep the ids valid

    def hold(self, table: np.ndarray, charged: bool) -> None:
        """One more holder of `table`; `charged` says the budget counts it already."""
        count = self.holders.get(id(table), 0)
        if count and charged:
            self.budget.release(table.nbytes)
        elif not count and not charged:
            self.budget.count(table.nbytes)
        self.holders[id(table)] = count + 1

    def drop(self, table: np.ndarray) -> None:
        """One holder fewer; the last one gives the bytes back."""
        count = self.holders.pop(id(table)) - 1
        if count:
            self.holders[id(table)] = count
        else:
            self.budget.release(table.nbytes)


def _sample(table: np.ndarray) -> np.ndarray:
    """At most `DIGEST_SAMPLE` entries of `table`, evenly spaced, contiguous: what is hashed.

    Hashing a sample keeps the key cheap for big tables met once; equal keys are confirmed
    bit for bit, so tables that differ only between the samples cost a comparison, not a
    wrong result.
    """
    flat = table.reshape(-1)
    step = max(1, flat.size // DIGEST_SAMPLE)
    return np.ascontiguousarray(flat[::step])


def _same_bits(table: np.ndarray, other: np.ndarray) -> bool:
    """Whether two tables hold the same bits (unlike ==, -0.0 differs from 0.0, NaN equals NaN)."""
    if table is other:
        return True
    if table.shape != other.shape or table.dtype != other.dtype:
        return False
    as_bits = np.dtype(f"u{table.dtype.itemsize}")
    return bool(np.array_equal(np.ascontiguousarray(table).view(as_bits),
                               np.ascontiguousarray(other).view(as_bits)))


def compiled_eliminate(required: bool) -> Eliminate:
    """The llvmlite kernel's `eliminate`, or numpy's when llvmlite cannot compile here.

    Raises `SearchError` instead of falling back when the kernel is `required`.
    """
    # Imported here so that llvmlite loads only when a search asks for the kernel.
    from pase.passes.strategy.jit import compiler
    from pase.passes.strategy.jit.eliminate import eliminate as compiled

    if compiler.jit_available():
        return compiled
    if required:
        raise SearchError("jit='on' needs llvmlite, which cannot compile here "
                          f"({compiler.unavailable_reason()}); use jit='auto' or jit='off' "
                          "for the numpy DP")
    return eliminate


def _resolve_order(graph: CostGraph, order: str | Sequence[int]) -> list[int]:
    if isinstance(order, str):
        return elimination_order(graph.neighbours(), order)
    sequence = [int(vertex) for vertex in order]
    if sorted(sequence) != list(range(len(graph.names))):
        raise ValueError(f"an explicit elimination order must list each of the "
                         f"{len(graph.names)} vertices exactly once, got {sequence}")
    return sequence


def _working_bytes(entries: int, vertex_size: int) -> int:
    """Bytes `eliminate` allocates: its minimum and argmin tables and one chunk of sums."""
    remaining = entries // vertex_size
    chunk = _buffer_entries((remaining, vertex_size), CHUNK_ENTRIES)
    return remaining * (8 + argmin_dtype(vertex_size).itemsize) + chunk * 8


def _memory_message(graph: CostGraph, vertex: int, dependent_set: Sequence[int], entries: int,
                    table_bytes: int) -> str:
    dependent_names = ", ".join(f"'{graph.names[axis]}'" for axis in dependent_set)
    return (f"the DP table of layer '{graph.names[vertex]}' with dependent set "
            f"{{{dependent_names}}} spans {entries:,} entries and would bring the live tables "
            f"to {format_bytes(table_bytes)}")


def _remedy(order: str | Sequence[int]) -> str:
    space = ("a smaller configuration space" if isinstance(order, str) and order == "genseq"
             else "order=genseq or a smaller configuration space")
    return f"use {space} (for example a larger min-shard)"
