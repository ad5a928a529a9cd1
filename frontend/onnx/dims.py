"""Named dimensions for the ONNX frontend: which ONNX axes are the same dimension.

ONNX tensors index their axes by position; a `dnn` tensor names them. While the frontend
walks the graph, every axis gets a dimension id, and the rules of each operator say which
ids are one dimension (the contracted axes of a MatMul, the broadcast axes of an Add):
`DimTable.unify` merges them, union-find style. Two dims that one tensor holds side by
side are never merged (a tensor cannot hold one dim twice); the frontend renames one of
them instead (self-attention's keys: sequence `s` becomes `t`).

When the graph is built, `DimTable.names()` gives every class a readable name from the
role of its first axis (batch `b`, channels `c`, height `h`, width `w`, sequence `s`,
features `d`, ...), unique per graph: `d`, `d1`, `d2`.

    >>> table = DimTable()
    >>> x, w = table.new(64, "b"), table.new(256, "d")
    >>> k = table.new(256, "d")
    >>> table.unify(w, k)
    True
    >>> table.names()[table.find(k)]
    'd'
"""

from __future__ import annotations

from collections.abc import Iterable


class DimTable:
    """Dimension ids with sizes and role hints, merged by `unify`."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.hints: list[str] = []
        self.parent: list[int] = []
        self.tensors: list[tuple[int, ...]] = []
        """The dims of every dnn tensor built so far, to keep two dims of one tensor apart."""

    def new(self, size: int, hint: str) -> int:
        self.sizes.append(size)
        self.hints.append(hint)
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, dim: int) -> int:
        while self.parent[dim] != dim:
            self.parent[dim] = self.parent[self.parent[dim]]
            dim = self.parent[dim]
        return dim

    def size(self, dim: int) -> int:
        return self.sizes[self.find(dim)]

    def record(self, dims: Iterable[int]) -> None:
        self.tensors.append(tuple(dims))

    def together(self, first: int, second: int) -> bool:
        """Whether some tensor holds both dims."""
        a, b = self.find(first), self.find(second)
        return any(a in roots and b in roots
                   for roots in ({self.find(d) for d in dims} for dims in self.tensors))

    def unify(self, first: int, second: int) -> bool:
        """Make the two dims one (the earlier one names it); False if a tensor holds both.
        Sizes must agree: the caller checks, as it knows where to report it."""
        a, b = self.find(first), self.find(second)
        if a == b:
            return True
        if self.together(a, b):
            return False
        assert self.sizes[a] == self.sizes[b], (self.sizes[a], self.sizes[b])
        a, b = min(a, b), max(a, b)
        self.parent[b] = a
        return True

    def names(self, dims: Iterable[int] | None = None) -> dict[int, str]:
        """A unique readable name for the class of each of `dims` (default: all), by its
        root id: the hint for the first class of each role, then the hint with 1, 2, ...
        appended."""
        every = range(len(self.parent)) if dims is None else dims
        roots = sorted({self.find(d) for d in every})
        used: set[str] = set()
        names: dict[int, str] = {}
        counters: dict[str, int] = {}
        for root in roots:
            hint = self.hints[root]
            name = hint
            while name in used:
                counters[hint] = counters.get(hint, 0) + 1
                name = f"{hint}{counters[hint]}"
            used.add(name)
            names[root] = name
        return names

    def placeholder(self, dim: int) -> str:
        """The dim's name while the graph is being built (renamed by `names()` at the end)."""
        return f"_{self.find(dim)}"
