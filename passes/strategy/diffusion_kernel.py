"""A whole sweep of min-sum diffusion (`bound._Diffusion.sweep`), compiled: one call where
numpy makes some ten small-array calls per edge end, which on small graphs (a few hundred
configurations, the nodes of a capped search) cost far more than the arithmetic. The same
additions, subtractions, minima and divisions in the same order (no fast-math, so no
fused or reassociated operation), hence the same floats.

    sweep = SweepKernel(graph, moves, unary)   # None where llvmlite cannot compile here
    sweep.run()                                 # one forward and one backward pass

The kernel reads the edge tables where they are (their addresses and strides); the moves
and moved vertex costs live in two flat buffers whose per-edge and per-vertex views are
`moves` and `unary`. `run` writes new buffers each time, so views taken before a sweep
keep their values, as numpy's sweep leaves them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from pase.passes.strategy.costgraph import CostGraph
from pase.passes.strategy.jit.compiler import compiled_once, jit_available

I64 = ir.IntType(64)
F64 = ir.DoubleType()
NAME = "pase_diffusion_sweep"
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_int64, *(ctypes.c_void_p,) * 12)


def build_sweep() -> ir.Module:
    """`sweep(n, sizes, voff, unary, start, incident, ends, tables, strides, offsets,
    moves, scratch, pool)`: over the vertices 0..n-1 then n-1..0, each vertex v with
    incident edges incident[start[v]:start[v+1]] (edge e joins ends[2e] and ends[2e+1], its
    table at address tables[e] with element strides strides[2e], strides[2e+1], its moves at
    moves[offsets[2e]...] for its first end and moves[offsets[2e+1]...] for its second):
    minima_j(a) = min_b (table(a, b) + (-their(b))) - mine(a) for each incident edge j,
    share(a) = (unary(a) + (0 + minima_1(a) + ...)) / (k + 1), each move
    mine(a) = (mine(a) + minima_j(a)) - share(a), and unary(a) = share(a). `scratch`
    holds max_v k·sizes[v] floats; `pool` is unused room for the share (one per vertex
    configuration, voff-indexed)."""
    module = ir.Module(name=NAME)
    ints, floats = I64.as_pointer(), F64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        I64, ints, ints, floats, ints, ints, ints, ints, ints, ints, floats, floats, floats]),
        NAME)
    # Compiled for size: some 0.02 s less to compile than at full speed, and these loops
    # (a select chain per minimum) gain nothing from unrolling or vectorizing.
    function.attributes.add("optsize")
    (count, sizes, voff, unary, start, incident, ends, tables, strides, offsets, moves,
     scratch, pool) = function.args
    code = _Code(function)
    builder, variable, loop, load, store = (code.builder, code.variable, code.loop,
                                            code.load, code.store)
    zero, one, two = ir.Constant(I64, 0), ir.Constant(I64, 1), ir.Constant(I64, 2)

    def edge_of(v: ir.Value, j: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(edge e, v is its first end, 2e + (v's end) and 2e + (the other end))."""
        e = load(incident, builder.add(load(start, v), j))
        first = builder.icmp_signed("==", load(ends, builder.mul(e, two)), v)
        mine = builder.add(builder.mul(e, two), builder.select(first, zero, one))
        theirs = builder.add(builder.mul(e, two), builder.select(first, one, zero))
        return e, mine, theirs

    def over_step(step: ir.Value) -> None:
        last = builder.sub(builder.mul(count, two), one)
        v = builder.select(builder.icmp_signed("<", step, count), step, builder.sub(last, step))
        k = builder.sub(load(start, builder.add(v, one)), load(start, v))
        size, base = load(sizes, v), load(voff, v)

        def over_edge(j: ir.Value) -> None:
            e, mine, theirs = edge_of(v, j)
            other = load(ends, theirs)
            table = builder.inttoptr(load(tables, e), floats)
            stride_a, stride_b = load(strides, mine), load(strides, theirs)
            mine_at, their_at = load(offsets, mine), load(offsets, theirs)

            def over_a(a: ir.Value) -> None:
                best = variable(F64, ir.Constant(F64, float("inf")))
                row = builder.mul(a, stride_a)

                def over_b(b: ir.Value) -> None:
                    entry = load(table, builder.add(row, builder.mul(b, stride_b)))
                    value = builder.fadd(entry, builder.fneg(
                        load(moves, builder.add(their_at, b))))
                    current = builder.load(best)
                    builder.store(builder.select(builder.fcmp_ordered("<", value, current),
                                                 value, current), best)

                loop(zero, load(sizes, other), over_b)
                store(builder.fsub(builder.load(best), load(moves, builder.add(mine_at, a))),
                      scratch, builder.add(builder.mul(j, size), a))

            loop(zero, size, over_a)

        loop(zero, k, over_edge)
        pools = builder.sitofp(builder.add(k, one), F64)

        def share_a(a: ir.Value) -> None:
            total = variable(F64, ir.Constant(F64, 0.0))
            loop(zero, k, lambda j: builder.store(builder.fadd(
                builder.load(total), load(scratch, builder.add(builder.mul(j, size), a))),
                total))
            share = builder.fdiv(builder.fadd(load(unary, builder.add(base, a)),
                                              builder.load(total)), pools)
            store(share, pool, builder.add(base, a))

            def move(j: ir.Value) -> None:
                at = builder.add(load(offsets, edge_of(v, j)[1]), a)
                moved = builder.fadd(load(moves, at),
                                     load(scratch, builder.add(builder.mul(j, size), a)))
                store(builder.fsub(moved, share), moves, at)

            loop(zero, k, move)
            store(share, unary, builder.add(base, a))

        # A vertex without edges is left as it is (numpy's sweep skips it).
        loop(zero, builder.select(builder.icmp_signed(">", k, zero), size, zero),
                   share_a)

    loop(zero, builder.mul(count, two), over_step)
    builder.ret_void()
    code.slots.branch(code.start)
    return module


class _Code:
    """A function's code being written: every stack slot in the entry block (so that
    none grows the stack in a loop), which then branches to `start`, where `builder`
    writes the code."""

    def __init__(self, function: ir.Function) -> None:
        self.function = function
        entry, self.start = function.append_basic_block("entry"), \
            function.append_basic_block("code")
        self.slots, self.builder = ir.IRBuilder(entry), ir.IRBuilder(self.start)

    def variable(self, kind: ir.Type, initial: ir.Value) -> ir.Value:
        slot = self.slots.alloca(kind)
        self.builder.store(initial, slot)
        return slot

    def loop(self, begin: ir.Value, stop: ir.Value,
             body: Callable[[ir.Value], None]) -> None:
        """`body(i)` for i in begin..stop-1."""
        builder = self.builder
        index = self.variable(I64, begin)
        check, inside, after = (self.function.append_basic_block() for _ in range(3))
        builder.branch(check)
        builder.position_at_end(check)
        current = builder.load(index)
        builder.cbranch(builder.icmp_signed("<", current, stop), inside, after)
        builder.position_at_end(inside)
        body(current)
        builder.store(builder.add(builder.load(index), ir.Constant(I64, 1)), index)
        builder.branch(check)
        builder.position_at_end(after)

    def load(self, array: ir.Value, index: ir.Value) -> ir.Value:
        return self.builder.load(self.builder.gep(array, [index]))

    def store(self, value: ir.Value, array: ir.Value, index: ir.Value) -> None:
        self.builder.store(value, self.builder.gep(array, [index]))


_kernel = compiled_once(build_sweep, NAME, _SIGNATURE, "the diffusion sweep kernel")


class SweepKernel:
    """`bound._Diffusion`'s moves and moved vertex costs in flat buffers, swept by the
    compiled kernel (module docstring)."""

    def __init__(self, graph: CostGraph, edges: Sequence[tuple[int, int]],
                 incident: Sequence[Sequence[int]]) -> None:
        self.sizes = np.array(graph.sizes, dtype=np.int64)
        self.voff = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.start = np.concatenate([[0], np.cumsum([len(i) for i in incident])]
                                    ).astype(np.int64)
        self.incident = np.array([e for numbers in incident for e in numbers] or [0],
                                 dtype=np.int64)
        self.ends = np.array([end for edge in edges for end in edge] or [0], dtype=np.int64)
        self.tables = [graph.edge_costs[edge] for edge in edges]  # kept alive: addresses
        self.addresses = np.array([t.ctypes.data for t in self.tables] or [0], dtype=np.int64)
        self.strides = np.array([s // 8 for t in self.tables for s in t.strides] or [0],
                                dtype=np.int64)
        lengths = self.sizes[self.ends] if edges else np.zeros(1, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.edges = list(edges)
        scratch = max((len(numbers) * size for numbers, size in zip(incident, graph.sizes,
                                                                      strict=True)), default=0)
        self.scratch = np.empty(max(scratch, 1))
        self.pool = np.empty(max(int(self.voff[-1]), 1))
        self.flat_moves = np.zeros(max(int(lengths.sum()), 1))
        self.flat_unary = np.zeros(max(int(self.voff[-1]), 1))

    @staticmethod
    def fits(graph: CostGraph) -> bool:
        """Whether the kernel reads `graph`'s tables as they are (float64, finite: its
        minima need not propagate NaN as numpy's do) and llvmlite compiles here."""
        tables = [*graph.vertex_costs, *graph.edge_costs.values()]
        return all(table.dtype == np.float64 and bool(np.isfinite(table).all())
                   for table in tables) and jit_available()

    def load(self, moves: Sequence[tuple[np.ndarray, np.ndarray]],
             unary: Sequence[np.ndarray]) -> None:
        """Copy `moves` (per edge, its two ends) and `unary` into new buffers."""
        flat = np.empty_like(self.flat_moves)
        for number, (at_u, at_v) in enumerate(moves):
            first, second = self.offsets[2 * number], self.offsets[2 * number + 1]
            flat[first:first + at_u.size] = at_u
            flat[second:second + at_v.size] = at_v
        self.flat_moves = flat
        flat_unary = np.empty_like(self.flat_unary)
        for vertex, cost in enumerate(unary):
            flat_unary[self.voff[vertex]:self.voff[vertex + 1]] = cost
        self.flat_unary = flat_unary

    def moves(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per edge, views of its moves at its first and second end."""
        flat, offsets, sizes = self.flat_moves, self.offsets, self.sizes
        return [(flat[offsets[2 * n]:offsets[2 * n] + sizes[u]],
                 flat[offsets[2 * n + 1]:offsets[2 * n + 1] + sizes[v]])
                for n, (u, v) in enumerate(self.edges)]

    def unary(self) -> list[np.ndarray]:
        """Per vertex, a view of its moved cost."""
        return [self.flat_unary[self.voff[v]:self.voff[v + 1]]
                for v in range(len(self.sizes))]

    def run(self) -> None:
        """One sweep, into new buffers (the views handed out before keep their values)."""
        self.flat_moves = self.flat_moves.copy()
        self.flat_unary = self.flat_unary.copy()
        _kernel()(len(self.sizes), *(array.ctypes.data for array in (
            self.sizes, self.voff, self.flat_unary, self.start, self.incident, self.ends,
            self.addresses, self.strides, self.offsets, self.flat_moves, self.scratch,
            self.pool)))
