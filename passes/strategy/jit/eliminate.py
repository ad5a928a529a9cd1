"""The DP's per-vertex min-plus step as a native loop nest, compiled with llvmlite.

`eliminate` is a drop-in for `dp.eliminate` with bit-identical results: each entry adds the
factors in the order given, one float64 `fadd` at a time and without fast-math flags, and the
scan over the vertex runs upwards with a strict `<`, so the lowest index wins a tie, as in
`np.argmin`.

A kernel is specialized on a `Signature` (the number of loops, how each factor is read along
the lane axis, how the output is written, the argmin width) and compiled once per process;
pointers, shapes and strides are runtime arguments, so one kernel serves every table of its
signature. Tables are read in place through their strides (transposed and broadcast views
too). The loops run over the dependent set, the lane axis innermost and cut into vectors of
`LANES` entries; for each group of `UNROLL` vectors the vertex is scanned once, keeping a
running minimum and argmin per lane. A factor without the lane axis is read as a broadcast
scalar, one contiguous along it as vector loads, any other as scalar loads into a vector.
The outer loops are nested so that big factors stay in cache (see `_loop_order`).

>>> vertex_cost = ((0,), np.array([1.0, 0.0]))
>>> edge_cost = ((0, 1), np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 5.0]]))
>>> axes, minimum, argmin = eliminate([vertex_cost, edge_cost], 0)
>>> axes, minimum.tolist(), argmin.tolist()
((1,), [1.0, 0.0, 1.0], [0, 1, 0])
"""

from __future__ import annotations

import ctypes
import enum
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from pase.passes.strategy.factors import Axes, Factor, argmin_dtype, axis_sizes
from pase.passes.strategy.jit.compiler import compile_function

LANES = 8
UNROLL = 4
MIN_LOOPS = 4

# void kernel(double **tables, i64 *factor_strides, i64 *shape, i64 *output_strides,
#             double *minimum, iN *argmin)
Kernel = Callable[..., None]
_KERNEL_TYPE = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 6)


class Access(enum.Enum):
    """How a table is read, or the output written, along the lane axis."""

    BROADCAST = "b"
    CONTIGUOUS = "c"
    STRIDED = "s"

    @classmethod
    def of(cls, stride: int) -> Access:
        return {0: cls.BROADCAST, 1: cls.CONTIGUOUS}.get(stride, cls.STRIDED)


@dataclass(frozen=True)
class Signature:
    """What a kernel is specialized on; `loops` (at least `MIN_LOOPS`) counts the loops over
    the dependent set."""

    loops: int
    factors: tuple[Access, ...]
    output: Access
    argmin_bits: int

    @property
    def name(self) -> str:
        """The kernel's symbol, for example `eliminate_l3_bbc_c_u8`."""
        reads = "".join(access.value for access in self.factors)
        return f"eliminate_l{self.loops}_{reads}_{self.output.value}_u{self.argmin_bits}"


def eliminate(factors: Sequence[Factor], vertex: int) -> tuple[Axes, np.ndarray, np.ndarray]:
    """`dp.eliminate(factors, vertex)`, computed by a compiled kernel.

    Raises `RuntimeError` if llvmlite cannot compile here (see `compiler.jit_available`).
    """
    dependent_set, run = prepare(factors, vertex)
    minimum, argmin = run([table for _, table in factors])
    return dependent_set, minimum, argmin


Prepared = Callable[[Sequence[np.ndarray]], tuple[np.ndarray, np.ndarray]]


def prepare(factors: Sequence[Factor], vertex: int) -> tuple[Axes, Prepared]:
    """`eliminate(factors, vertex)` set up once, for steps repeated on other numbers: the
    dependent set, and a function that eliminates `vertex` from tables of the same shapes,
    strides and order as `factors`' and returns its minimum and argmin tables (the same two
    arrays every call, overwritten).

    >>> edge_cost = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 5.0]])
    >>> axes, run = prepare([((0,), np.zeros(2)), ((0, 1), edge_cost)], 0)
    >>> run([np.array([1.0, 0.0]), edge_cost])[0].tolist()
    [1.0, 0.0, 1.0]
    """
    sizes, dependent_set = axis_sizes(factors, vertex)
    if sizes[vertex] > np.iinfo(np.int32).max:
        raise ValueError(f"vertex {vertex} has {sizes[vertex]} configurations, over 2**31 - 1")
    minimum = np.empty(tuple(sizes[axis] for axis in dependent_set), dtype=np.float64)
    argmin = np.empty(minimum.shape, dtype=argmin_dtype(sizes[vertex]))
    tables = [_readable(table) for _, table in factors]
    factor_strides = [_element_strides(axes, table)
                      for (axes, _), table in zip(factors, tables, strict=True)]
    output_strides = _element_strides(dependent_set, minimum)
    loop_axes = _loop_order(dependent_set, sizes, factor_strides, [t.nbytes for t in tables])
    # Loops of extent 1 in front make small dependent sets share kernels.
    padding = [0] * max(0, MIN_LOOPS - len(loop_axes))
    shape = np.array([1] * len(padding) + [sizes[axis] for axis in (*loop_axes, vertex)])
    strides = np.array([padding + [strides.get(axis, 0) for axis in (*loop_axes, vertex)]
                        for strides in factor_strides])
    output_lane_stride = output_strides.get(loop_axes[-1], 0) if loop_axes else 0
    signature = Signature(
        loops=len(shape) - 1,
        factors=tuple(Access.of(int(stride)) for stride in strides[:, -2]),
        # A stride of 0 means one entry, which the kernel's short-row path stores lane by lane.
        output=Access.STRIDED if output_lane_stride > 1 else Access.CONTIGUOUS,
        argmin_bits=argmin.itemsize * 8,
    )
    kernel = compile_kernel(signature)
    pointers = np.zeros(len(tables), dtype=np.uintp)
    arguments = [
        pointers,
        np.ascontiguousarray(strides, dtype=np.int64),
        np.ascontiguousarray(shape, dtype=np.int64),
        np.array(padding + [output_strides[axis] for axis in loop_axes], dtype=np.int64),
        minimum,
        argmin,
    ]
    layouts = [(table.shape, table.strides) for table in tables]

    def run(step_tables: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        readable = [_readable(table) for table in step_tables]
        if [(table.shape, table.strides) for table in readable] != layouts:
            raise ValueError("a prepared elimination needs tables of the shapes and strides "
                             "it was prepared for")
        pointers[:] = [table.ctypes.data for table in readable]
        # (`arguments` is read here, so the closure keeps the arrays the kernel reads alive.)
        kernel(*(argument.ctypes.data for argument in arguments))
        return minimum, argmin

    return dependent_set, run


def _readable(table: np.ndarray) -> np.ndarray:
    """`table` itself when the kernel can read it in place (aligned float64), else a copy."""
    table = np.asarray(table, dtype=np.float64)
    if table.ctypes.data % 8 or any(stride % 8 for stride in table.strides):
        return np.ascontiguousarray(table)
    return table


def _element_strides(axes: Axes, table: np.ndarray) -> dict[int, int]:
    """The stride of each axis in elements; 0 for an axis of length 1, which only reads index 0."""
    return {axis: stride // table.itemsize if size > 1 else 0
            for axis, size, stride in zip(axes, table.shape, table.strides, strict=True)}


def _loop_order(dependent_set: Axes, sizes: dict[int, int],
                factor_strides: Sequence[dict[int, int]], factor_bytes: Sequence[int]) -> Axes:
    """The dependent axes in the order the kernel nests its loops, the lane axis last.

    The lane axis is the one the fewest factors must gather along, then one that fills a
    vector, then the output's contiguous axis. The other loops are ordered so that an axis the
    big factors lack runs inside the axes they have: their slices then stay in cache while the
    inner loop reuses them. (Eliminating v from a table over (v, b, c) and an edge (v, a) runs
    b outside a and reads the big table once, not once per value of a: 1.1e9 -> 6e9 entries/s.)
    """
    if not dependent_set:
        return ()

    def lane_cost(axis: int) -> tuple[int, bool, bool]:
        gathers = sum(strides.get(axis, 0) not in (0, 1) for strides in factor_strides)
        return gathers, sizes[axis] < LANES, axis != dependent_set[-1]

    def reused_bytes(axis: int) -> int:
        return sum(size for strides, size in zip(factor_strides, factor_bytes, strict=True)
                   if strides.get(axis, 0) == 0)

    lane_axis = min(dependent_set, key=lane_cost)
    others = sorted((axis for axis in dependent_set if axis != lane_axis), key=reused_bytes)
    return (*others, lane_axis)


# --- compilation ---------------------------------------------------------------------------

_lock = threading.Lock()
_kernels: dict[Signature, Kernel] = {}


def compile_kernel(signature: Signature) -> Kernel:
    """The kernel for `signature`, compiled on first use and kept for the process."""
    kernel = _kernels.get(signature)
    if kernel is not None:
        return kernel
    with _lock:
        if signature not in _kernels:
            address = compile_function(build_module(signature), signature.name, "the DP kernel")
            _kernels[signature] = _KERNEL_TYPE(address)
        return _kernels[signature]


# --- code generation -----------------------------------------------------------------------

F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F64_VECTOR = ir.VectorType(F64, LANES)
I32_VECTOR = ir.VectorType(I32, LANES)


def build_module(signature: Signature) -> ir.Module:
    """The LLVM module of the kernel for `signature`, unoptimized.

    >>> signature = Signature(2, (Access.BROADCAST, Access.CONTIGUOUS), Access.CONTIGUOUS, 8)
    >>> "define void @\\"eliminate_l2_bc_c_u8\\"" in str(build_module(signature))
    True
    """
    module = ir.Module(name=signature.name)
    argmin_type = ir.IntType(signature.argmin_bits)
    arguments = [F64.as_pointer().as_pointer(), *[I64.as_pointer()] * 3, F64.as_pointer(),
                 argmin_type.as_pointer()]
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), arguments), signature.name)
    for argument in function.args:
        argument.add_attribute("noalias")
    _KernelBuilder(signature, function).build()
    return module


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


class _Builder:
    """A function's builder with locals and counted loops.

    Loop counters and accumulators are allocas in the entry block, which mem2reg promotes.
    """

    def __init__(self, function: ir.Function) -> None:
        self.function = function
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))

    def _local(self, initial: ir.Value) -> ir.Value:
        with self.builder.goto_entry_block():
            slot = self.builder.alloca(initial.type)
        self.builder.store(initial, slot)
        return slot

    def _loop(self, start: ir.Value, stop: ir.Value, step: int,
              body: Callable[[ir.Value], None]) -> ir.Value:
        """`for (i = start; i + step <= stop; i += step) body(i);` returns the final `i`."""
        builder = self.builder
        counter = self._local(start)
        condition, loop_body, done = (self.function.append_basic_block(f"loop.{part}")
                                      for part in ("test", "body", "done"))
        builder.branch(condition)
        builder.position_at_end(condition)
        fits = builder.icmp_signed("<=", builder.add(builder.load(counter), _i64(step)), stop)
        builder.cbranch(fits, loop_body, done)
        builder.position_at_end(loop_body)
        body(builder.load(counter))
        builder.store(builder.add(builder.load(counter), _i64(step)), counter)
        builder.branch(condition)
        builder.position_at_end(done)
        return builder.load(counter)

    def _splat(self, scalar: ir.Value, vector_type: ir.VectorType) -> ir.Value:
        undefined = ir.Constant(vector_type, ir.Undefined)
        single = self.builder.insert_element(undefined, scalar, _i32(0))
        return self.builder.shuffle_vector(single, undefined, ir.Constant(I32_VECTOR, [0] * LANES))


class _KernelBuilder(_Builder):
    """Emits one kernel: the loops over the dependent set, the lane blocks, the vertex scan."""

    def __init__(self, signature: Signature, function: ir.Function) -> None:
        super().__init__(function)
        self.signature = signature
        self.lane_axis = signature.loops - 1

    def build(self) -> None:
        builder, loops, factors = self.builder, self.signature.loops, len(self.signature.factors)
        (tables, factor_strides, shape, output_strides, self.minimum,
         self.argmin) = self.function.args
        body = self.function.append_basic_block("body")
        builder.branch(body)
        builder.position_at_end(body)

        def element(array: ir.Value, index: int) -> ir.Value:
            return builder.load(builder.gep(array, [_i64(index)]))

        self.shape = [element(shape, axis) for axis in range(loops + 1)]
        self.tables = [element(tables, factor) for factor in range(factors)]
        self.strides = [[element(factor_strides, factor * (loops + 1) + axis)
                         for axis in range(loops + 1)] for factor in range(factors)]
        self.output_strides = [element(output_strides, axis) for axis in range(loops)]
        self._loops(0, [])
        builder.ret_void()

    def _loops(self, axis: int, indices: list[ir.Value]) -> None:
        if axis == self.lane_axis:
            self._row(indices)
            return
        self._loop(_i64(0), self.shape[axis], 1,
                   lambda index: self._loops(axis + 1, [*indices, index]))

    def _row(self, indices: list[ir.Value]) -> None:
        """One row of the lane axis: groups of vectors, then single vectors.

        A row shorter than a vector has its own block; in a longer one, a vector that would run
        past the end starts LANES before it instead, recomputing a few entries identically.
        """
        builder = self.builder
        self.row_offsets = [self._dot(indices, strides) for strides in self.strides]
        self.output_offset = self._dot(indices, self.output_strides)
        extent = self.shape[self.lane_axis]
        with builder.if_else(builder.icmp_signed("<", extent, _i64(LANES))) as (short, long):
            with short:
                self._block(_i64(0), 1, short_row=extent)
            with long:
                grouped = self._loop(_i64(0), extent, LANES * UNROLL,
                                     lambda lane: self._block(lane, UNROLL))
                last = builder.sub(extent, _i64(LANES))
                self._loop(grouped, builder.add(extent, _i64(LANES - 1)), LANES,
                           lambda lane: self._block(
                               builder.select(builder.icmp_signed("<", lane, last), lane, last),
                               1))

    def _dot(self, indices: list[ir.Value], strides: list[ir.Value]) -> ir.Value:
        total: ir.Value = _i64(0)
        for index, stride in zip(indices, strides, strict=False):
            total = self.builder.add(total, self.builder.mul(index, stride))
        return total

    def _block(self, lane: ir.Value, vectors: int, short_row: ir.Value | None = None) -> None:
        """`vectors` vectors of entries from `lane` on: scan the vertex, store min and argmin.

        In a row shorter than a vector (`short_row` entries), the lanes past its end repeat
        its last entry: they read what it reads and store what it stores, at its address.
        """
        builder, signature = self.builder, self.signature
        lanes = [builder.add(lane, _i64(position)) for position in range(vectors * LANES)]
        if short_row is not None:
            last = builder.sub(short_row, _i64(1))
            lanes = [builder.select(builder.icmp_signed("<", index, last), index, last)
                     for index in lanes]
        # Per factor: the row's start, and for gathered reads each lane's offset from it.
        starts: list[ir.Value] = []
        gathers: list[list[ir.Value] | None] = []
        for factor, access in enumerate(signature.factors):
            start = builder.gep(self.tables[factor], [self.row_offsets[factor]])
            gathered = access is Access.STRIDED or (access is Access.CONTIGUOUS
                                                    and short_row is not None)
            if access is Access.CONTIGUOUS and not gathered:
                start = builder.gep(start, [lane])
            starts.append(start)
            stride = self.strides[factor][self.lane_axis]
            gathers.append([builder.mul(index, stride) for index in lanes] if gathered else None)
        best = [self._local(ir.Constant(F64_VECTOR, [math.inf] * LANES)) for _ in range(vectors)]
        best_at = [self._local(ir.Constant(I32_VECTOR, [0] * LANES)) for _ in range(vectors)]

        def scan(vertex: ir.Value) -> None:
            at_vertex = [builder.gep(start, [builder.mul(vertex, strides[-1])])
                         for start, strides in zip(starts, self.strides, strict=True)]
            broadcasts = {factor: self._splat(builder.load(at_vertex[factor]), F64_VECTOR)
                          for factor, access in enumerate(signature.factors)
                          if access is Access.BROADCAST}
            vertex_lanes = self._splat(builder.trunc(vertex, I32), I32_VECTOR)
            for vector in range(vectors):
                total = None
                for factor, at in enumerate(at_vertex):
                    offsets = gathers[factor]
                    if factor in broadcasts:
                        value = broadcasts[factor]
                    elif offsets is None:
                        at = builder.gep(at, [_i64(vector * LANES)])
                        value = builder.load(builder.bitcast(at, F64_VECTOR.as_pointer()), align=8)
                    else:
                        value = ir.Constant(F64_VECTOR, ir.Undefined)
                        for position in range(LANES):
                            offset = offsets[vector * LANES + position]
                            scalar = builder.load(builder.gep(at, [offset]))
                            value = builder.insert_element(value, scalar, _i32(position))
                    # The numpy path's order: ((f0 + f1) + f2) + ...
                    total = value if total is None else builder.fadd(total, value)
                current = builder.load(best[vector])
                lower = builder.fcmp_ordered("<", total, current)
                builder.store(builder.select(lower, total, current), best[vector])
                current_at = builder.load(best_at[vector])
                builder.store(builder.select(lower, vertex_lanes, current_at), best_at[vector])

        self._loop(_i64(0), self.shape[-1], 1, scan)
        for vector in range(vectors):
            self._store(builder.load(best[vector]), builder.load(best_at[vector]),
                        lanes[vector * LANES:(vector + 1) * LANES],
                        contiguous=signature.output is Access.CONTIGUOUS and short_row is None)

    def _store(self, values: ir.Value, argmins: ir.Value, lanes: list[ir.Value],
               contiguous: bool) -> None:
        builder, bits = self.builder, self.signature.argmin_bits
        argmin_vector = ir.VectorType(ir.IntType(bits), LANES)
        if bits < 32:
            argmins = builder.trunc(argmins, argmin_vector)
        elif bits > 32:
            argmins = builder.zext(argmins, argmin_vector)
        if contiguous:
            offset = builder.add(self.output_offset, lanes[0])
            # Aligned to an element only: rows start anywhere.
            for table, data, align in ((self.minimum, values, 8),
                                       (self.argmin, argmins, bits // 8)):
                at = builder.bitcast(builder.gep(table, [offset]), data.type.as_pointer())
                builder.store(data, at, align=align)
            return
        stride = self.output_strides[self.lane_axis]
        for position, index in enumerate(lanes):
            offset = builder.add(self.output_offset, builder.mul(index, stride))
            for table, data in ((self.minimum, values), (self.argmin, argmins)):
                builder.store(builder.extract_element(data, _i32(position)),
                              builder.gep(table, [offset]))


# --- minima alone ----------------------------------------------------------------------------


def minima(table: np.ndarray, added: np.ndarray, axis: int) -> np.ndarray:
    """`np.min(table + added, axis=axis)` for a 2-D `table` and `added` along `axis` (the axis
    minimized over), without the argmin `eliminate` keeps and without the sum's temporary:
    the entries are the same float64 `fadd`s, and a minimum is the same number in whatever
    order its entries are compared (only the sign of a zero minimum could differ, where
    +0.0 and -0.0 tie), so the same values as numpy's.

    A table is read in its memory order: along a row for the minimum over the contiguous
    axis (8 lanes per vector, reduced at the row's end), row after row for the other (each
    row folded into the running minima). Raises `RuntimeError` if llvmlite cannot compile.

    >>> table = np.array([[0.0, 3.0, 1.0], [2.0, 0.0, 5.0]])
    >>> minima(table, np.array([1.0, 0.0, 0.5]), 1).tolist()
    [1.0, 0.0]
    >>> minima(table, np.array([1.0, 0.0]), 0).tolist()
    [1.0, 0.0, 2.0]
    """
    table = _readable(table)
    if table.shape[1] > 1 and table.strides[1] != 8 and table.strides[0] == 8:
        table, axis = table.T, 1 - axis
    if table.strides[1] != 8 and table.shape[1] > 1:
        table = np.ascontiguousarray(table)
    rows, columns = table.shape
    added = np.ascontiguousarray(added, dtype=np.float64)
    row_stride = table.strides[0] // 8 if rows > 1 else 0
    if axis == 1:
        minimum = np.empty(rows)
        kernel = _along_kernel()
    else:
        minimum = np.full(columns, math.inf)
        kernel = _across_kernel()
    if table.size:
        kernel(table.ctypes.data, rows, columns, row_stride, added.ctypes.data,
               minimum.ctypes.data)
    return minimum


# void minima(double *table, i64 rows, i64 columns, i64 row_stride, double *added,
#             double *minimum)
_MINIMA_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


def _minima_module(name: str, along: bool) -> ir.Module:
    module = ir.Module(name=name)
    pointer = F64.as_pointer()
    function = ir.Function(module, ir.FunctionType(
        ir.VoidType(), [pointer, I64, I64, I64, pointer, pointer]), name)
    for number in (0, 4, 5):
        function.args[number].add_attribute("noalias")
    _MinimaBuilder(function).build(along)
    return module


def _along_kernel() -> Kernel:
    return _minima_kernel("pase_minima_along", True)


def _across_kernel() -> Kernel:
    return _minima_kernel("pase_minima_across", False)


def _minima_kernel(name: str, along: bool) -> Kernel:
    kernel = _minima_kernels.get(name)
    if kernel is None:
        with _lock:
            if name not in _minima_kernels:
                address = compile_function(_minima_module(name, along), name, "the minima kernel")
                _minima_kernels[name] = _MINIMA_TYPE(address)
            kernel = _minima_kernels[name]
    return kernel


_minima_kernels: dict[str, Kernel] = {}


class _MinimaBuilder(_Builder):
    """Emits `minima`'s kernels: `along` (the minimum over the contiguous axis) or across."""

    def build(self, along: bool) -> None:
        builder = self.builder
        body = self.function.append_basic_block("body")
        builder.branch(body)
        builder.position_at_end(body)
        table, rows, self.columns, row_stride, self.added, self.minimum = self.function.args
        self._loop(_i64(0), rows, 1, lambda row: (self._along if along else self._across)(
            row, builder.gep(table, [builder.mul(row, row_stride)])))
        builder.ret_void()

    def _vector(self, base: ir.Value, index: ir.Value) -> ir.Value:
        at = self.builder.bitcast(self.builder.gep(base, [index]), F64_VECTOR.as_pointer())
        return self.builder.load(at, align=8)

    def _least(self, value: ir.Value, current: ir.Value) -> ir.Value:
        return self.builder.select(self.builder.fcmp_ordered("<", value, current), value,
                                   current)

    def _along(self, row: ir.Value, start: ir.Value) -> None:
        """minimum[row] = min_j table[row, j] + added[j]: UNROLL running vectors, then one,
        then the last entries one by one, then the vectors' lanes."""
        builder = self.builder
        best = [self._local(ir.Constant(F64_VECTOR, [math.inf] * LANES)) for _ in range(UNROLL)]

        def block(column: ir.Value, vectors: int) -> None:
            for vector in range(vectors):
                at = builder.add(column, _i64(vector * LANES))
                total = builder.fadd(self._vector(start, at), self._vector(self.added, at))
                builder.store(self._least(total, builder.load(best[vector])), best[vector])

        grouped = self._loop(_i64(0), self.columns, LANES * UNROLL, lambda j: block(j, UNROLL))
        single = self._loop(grouped, self.columns, LANES, lambda j: block(j, 1))
        least = self._local(ir.Constant(F64, math.inf))

        def one(column: ir.Value) -> None:
            total = builder.fadd(builder.load(builder.gep(start, [column])),
                                 builder.load(builder.gep(self.added, [column])))
            builder.store(self._least(total, builder.load(least)), least)

        self._loop(single, self.columns, 1, one)
        vectors = [builder.load(slot) for slot in best]
        for position in range(LANES):
            for vector in vectors:
                lane = builder.extract_element(vector, _i32(position))
                builder.store(self._least(lane, builder.load(least)), least)
        builder.store(builder.load(least), builder.gep(self.minimum, [row]))

    def _across(self, row: ir.Value, start: ir.Value) -> None:
        """minimum[j] = min(minimum[j], table[row, j] + added[row]) for every j."""
        builder = self.builder
        scalar = builder.load(builder.gep(self.added, [row]))
        splat = self._splat(scalar, F64_VECTOR)

        def block(column: ir.Value, vectors: int) -> None:
            for vector in range(vectors):
                at = builder.add(column, _i64(vector * LANES))
                total = builder.fadd(self._vector(start, at), splat)
                slot = builder.bitcast(builder.gep(self.minimum, [at]), F64_VECTOR.as_pointer())
                builder.store(self._least(total, builder.load(slot, align=8)), slot, align=8)

        grouped = self._loop(_i64(0), self.columns, LANES * UNROLL, lambda j: block(j, UNROLL))
        single = self._loop(grouped, self.columns, LANES, lambda j: block(j, 1))

        def one(column: ir.Value) -> None:
            total = builder.fadd(builder.load(builder.gep(start, [column])), scalar)
            slot = builder.gep(self.minimum, [column])
            builder.store(self._least(total, builder.load(slot)), slot)

        self._loop(single, self.columns, 1, one)
