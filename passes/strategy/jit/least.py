"""`dim_pricing.least_overlap`'s per-entry steps, compiled: the shortcut over each pair of
layouts from the per-dim statistics (`least_rows`, where numpy gathered five statistics
per dim into (A, B) matrices), and the walk of the pairs it leaves open over the devices
of one period (`walk_least`, where numpy built each pair's blocks per device). The same
integers, hence the same floats.

    least, walked = least_rows_jit(tables, index_a, index_b, full, needed_q)
    least = walk_least_jit(held, needed, rows, cols, stop, dims, per_node)
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
I8 = ir.IntType(8)
F64 = ir.DoubleType()
ROWS = "pase_least_rows"
WALK = "pase_walk_least"
NEVER = 1 << 62  # (dim_stats.NEVER)

_ROWS_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 7, *(ctypes.c_int64,) * 3,
                                   ctypes.c_void_p, ctypes.c_void_p)
_WALK_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 12, *(ctypes.c_int64,) * 3,
                                   ctypes.c_void_p)


def build_rows() -> ir.Module:
    """`rows(tables, offsets, widths, index_a, index_b, full, needed_q, A, B, rank, least,
    walked)`: per entry (a, b), from dim k's statistics at tables[offsets[k] + 5·(index_a[a,
    k]·widths[k] + index_b[b, k])], `dim_pricing._least_rows`' shortcut over the devices
    d < min(full[a], needed_q[b]): least (A, B) float64 and walked (A, B) int8."""
    module = ir.Module(name=ROWS)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        *(pointer,) * 7, I64, I64, I64, F64.as_pointer(), I8.as_pointer()]), ROWS)
    (tables, offsets, widths, index_a, index_b, full, needed_q, count_a, count_b, rank,
     least_out, walked_out) = function.args
    loops = Loops(function)
    builder, variable, smin = loops.builder, loops.variable, loops.smin
    zero, one = loops.zero, loops.one

    def load(array: ir.Value, index: ir.Value) -> ir.Value:
        return builder.load(builder.gep(array, [index]))

    def over_a(a: ir.Value) -> None:
        full_a, row_a = load(full, a), builder.mul(a, rank)

        def over_b(b: ir.Value) -> None:
            shared = smin(full_a, load(needed_q, b))
            first_zero, changing = variable(ir.Constant(I64, NEVER)), variable(zero)
            value, reached = variable(one), variable(one)

            def over_dims(dim: ir.Value) -> None:
                pair = builder.add(builder.mul(load(index_a, builder.add(row_a, dim)),
                                               load(widths, dim)),
                                   load(index_b, builder.add(builder.mul(b, rank), dim)))
                at = builder.add(load(offsets, dim), builder.mul(pair, ir.Constant(I64, 5)))

                def stat(k: int) -> ir.Value:
                    return load(tables, builder.add(at, ir.Constant(I64, k)))

                builder.store(smin(builder.load(first_zero), stat(1)), first_zero)
                changes = builder.icmp_signed("<", stat(2), shared)
                builder.store(builder.add(builder.load(changing), builder.zext(changes, I64)),
                              changing)
                builder.store(builder.mul(builder.load(value),
                                          builder.select(changes, stat(3), stat(0))), value)
                settles = builder.or_(builder.not_(changes),
                                      builder.icmp_signed("<", stat(4), shared))
                builder.store(builder.and_(builder.load(reached), builder.zext(settles, I64)),
                              reached)

            loops.loop(zero, rank, over_dims)
            nowhere = builder.icmp_signed("<", builder.load(first_zero), shared)
            least = builder.sitofp(builder.select(nowhere, zero, builder.load(value)), F64)
            least = builder.select(builder.icmp_signed("==", shared, zero),
                                   ir.Constant(F64, float("inf")), least)
            entry = builder.add(builder.mul(a, count_b), b)
            builder.store(least, builder.gep(least_out, [entry]))
            open_ = builder.and_(builder.not_(nowhere), builder.or_(
                builder.icmp_signed(">", builder.load(changing), one),
                builder.icmp_signed("==", builder.load(reached), zero)))
            builder.store(builder.zext(open_, I8), builder.gep(walked_out, [entry]))

        loops.loop(zero, count_b, over_b)

    loops.loop(zero, count_a, over_a)
    builder.ret_void()
    return module


_rows = compiled_once(build_rows, ROWS, _ROWS_SIGNATURE, "the least-overlap rows kernel")


def least_rows_jit(tables: list[np.ndarray], index_a: np.ndarray, index_b: np.ndarray,
                   full: np.ndarray, needed_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """least (A, B) float64 and walked (A, B) bool (`build_rows`): `tables` per dim the
    (S_a, S_b, 5) statistics, `index_a` (A, rank) and `index_b` (B, rank) each layout's
    row and column in them."""
    flat = np.ascontiguousarray(np.concatenate([table.ravel() for table in tables]),
                                dtype=np.int64)
    sizes = np.array([table.size for table in tables], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    widths = np.array([table.shape[1] for table in tables], dtype=np.int64)
    ints = [np.ascontiguousarray(array, dtype=np.int64)
            for array in (index_a, index_b, full, needed_q)]
    count_a, count_b = len(ints[2]), len(ints[3])
    least = np.empty((count_a, count_b))
    walked = np.empty((count_a, count_b), dtype=np.int8)
    _rows()(flat.ctypes.data, offsets.ctypes.data, widths.ctypes.data,
            *(array.ctypes.data for array in ints), count_a, count_b, len(tables),
            least.ctypes.data, walked.ctypes.data)
    return least, walked.view(bool)


def build_walk() -> ir.Module:
    """`walk(held_stride, held_factor, held_length, held_q, needed_stride, needed_factor,
    needed_length, rows, cols, stop, dims, scratch, pairs, rank, per_node, out)`: per pair
    (a = rows[i], b = cols[i]), the least over devices 0 <= d < stop[i] of the product over
    the dims with dims[i, k] of the overlap of b's block and a's (its node's box over the
    node's devices d' < held_q[a] where per_node > 0), float64. `scratch` holds 2·rank
    int64."""
    module = ir.Module(name=WALK)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        *(pointer,) * 10, I8.as_pointer(), pointer, I64, I64, I64, F64.as_pointer()]), WALK)
    (a_stride, a_factor, a_length, a_q, b_stride, b_factor, b_length, rows, cols, stops,
     dims, box, pairs, rank, per_node, out) = function.args
    loops = Loops(function)
    builder, variable, smax, smin = loops.builder, loops.variable, loops.smax, loops.smin
    zero, one, loop = loops.zero, loops.one, loops.loop
    largest = ir.Constant(I64, (1 << 63) - 1)
    boxed = builder.icmp_signed(">", per_node, zero)

    def load(array: ir.Value, index: ir.Value) -> ir.Value:
        return builder.load(builder.gep(array, [index]))

    def coordinate(stride: ir.Value, factor: ir.Value, at: ir.Value,
                   device: ir.Value) -> ir.Value:
        return builder.srem(builder.sdiv(device, load(stride, at)), load(factor, at))

    def over_pairs(pair: ir.Value) -> None:
        a, b = load(rows, pair), load(cols, pair)
        row_a, row_b = builder.mul(a, rank), builder.mul(b, rank)
        sender_q = load(a_q, a)
        least = variable(largest)

        def node_box(device: ir.Value) -> None:
            """box[2k], box[2k + 1] = the coordinates' least and most on `device`'s
            node's working devices, per dim."""
            first = builder.sub(device, builder.srem(device, per_node))
            stop = smin(builder.add(first, per_node), sender_q)

            def per_dim(dim: ir.Value) -> None:
                at = builder.add(row_a, dim)
                low, high = variable(largest), variable(ir.Constant(I64, -1))

                def widen(mate: ir.Value) -> None:
                    value = coordinate(a_stride, a_factor, at, mate)
                    builder.store(smin(builder.load(low), value), low)
                    builder.store(smax(builder.load(high), value), high)

                loop(first, stop, widen)
                slot = builder.mul(dim, ir.Constant(I64, 2))
                # (A node that holds nothing: the box [0, 0).)
                empty = builder.icmp_signed("<", builder.load(high), zero)
                builder.store(builder.select(empty, zero, builder.load(low)),
                              builder.gep(box, [slot]))
                builder.store(builder.load(high), builder.gep(box, [builder.add(slot, one)]))

            loop(zero, rank, per_dim)

        def over_devices(device: ir.Value) -> None:
            with builder.if_then(builder.and_(boxed, builder.icmp_signed(
                    "==", builder.srem(device, smax(per_node, one)), zero))):
                node_box(device)
            product = variable(one)

            def over_dims(dim: ir.Value) -> None:
                with builder.if_then(builder.icmp_signed("!=", load(dims, builder.add(
                        builder.mul(pair, rank), dim)), ir.Constant(I8, 0))):
                    at_a, at_b = builder.add(row_a, dim), builder.add(row_b, dim)
                    length_a, length_b = load(a_length, at_a), load(b_length, at_b)
                    own = builder.mul(coordinate(a_stride, a_factor, at_a, device), length_a)
                    slot = builder.mul(dim, ir.Constant(I64, 2))
                    lo_a = builder.select(boxed, builder.mul(load(box, slot), length_a), own)
                    hi_a = builder.select(boxed, builder.mul(builder.add(load(
                        box, builder.add(slot, one)), one), length_a), builder.add(own, length_a))
                    lo_b = builder.mul(coordinate(b_stride, b_factor, at_b, device), length_b)
                    extent = builder.sub(smin(hi_a, builder.add(lo_b, length_b)),
                                         smax(lo_a, lo_b))
                    builder.store(builder.mul(builder.load(product), smax(extent, zero)),
                                  product)

            loop(zero, rank, over_dims)
            builder.store(smin(builder.load(least), builder.load(product)), least)

        loop(zero, load(stops, pair), over_devices)
        builder.store(builder.sitofp(builder.load(least), F64), builder.gep(out, [pair]))

    loop(zero, pairs, over_pairs)
    builder.ret_void()
    return module


_walk = compiled_once(build_walk, WALK, _WALK_SIGNATURE, "the least-overlap walk kernel")


def walk_least_jit(held: tuple[np.ndarray, ...], needed: tuple[np.ndarray, ...],
                   rows: np.ndarray, cols: np.ndarray, stop: np.ndarray, dims: np.ndarray,
                   per_node: int) -> np.ndarray:
    """(pairs,) float64 of `build_walk`: `held` (stride, factor, length (L, rank),
    working (L,)), `needed` (stride, factor, length), `dims` (pairs, rank) bool. Each
    window starts at device 0, on a node boundary."""
    ints = [np.ascontiguousarray(array, dtype=np.int64)
            for array in (*held, *needed, rows, cols, stop)]
    rank = ints[2].shape[1]
    mask = np.ascontiguousarray(dims, dtype=np.int8)
    box = np.empty(2 * max(1, rank), dtype=np.int64)
    least = np.empty(len(rows))
    _walk()(*(array.ctypes.data for array in ints), mask.ctypes.data, box.ctypes.data,
            len(rows), rank, per_node, least.ctypes.data)
    return least
