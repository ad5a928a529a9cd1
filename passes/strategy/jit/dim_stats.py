"""`dim_stats.pair_stats`' walk over the devices of one period, compiled: per pair of one
dim's per-dim layouts, a sender's (s_a, f_a, l_a) and a receiver's (s_b, f_b, l_b), the
overlap of their blocks on devices 0, g, 2g, ..., (count - 1)·g (g = step), the
sender's block its node's bounding box (the closed form of `dim_stats._group_stats`)
where per_node > 0. Per pair: the overlap on device 0, the first device where it is 0,
the first where it differs from device 0's (`dim_stats.NEVER` where there is none), its
least value and the first device with it: the same integers as the numpy walk, with no
(pairs, devices) arrays.

    stats = pair_stats_jit(held, needed, step, count, per_node)   # (n, 3), (n, 3) -> (n, 5)
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
NAME = "pase_pair_stats"
NEVER = 1 << 62  # (dim_stats.NEVER, which imports this module)

_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 4, ctypes.c_int64, ctypes.c_int64,
                              ctypes.c_void_p)


def build_module() -> ir.Module:
    """`stats(held, needed, step, count, pairs, per_node, out)`, all int64: held and
    needed (pairs, 3), step and count (pairs,), out (pairs, 5)."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, pointer, I64, I64, pointer]), NAME)
    held, needed, steps, counts, pairs, per_node, out = function.args
    loops = Loops(function)
    builder, variable, smax, smin = loops.builder, loops.variable, loops.smax, loops.smin
    zero = loops.zero
    never = ir.Constant(I64, NEVER)
    largest = ir.Constant(I64, (1 << 63) - 1)
    boxed = builder.icmp_signed(">", per_node, zero)

    def load(array: ir.Value, index: ir.Value) -> ir.Value:
        return builder.load(builder.gep(array, [index]))

    def over_pairs(pair: ir.Value) -> None:
        at = builder.mul(pair, ir.Constant(I64, 3))
        s_a, f_a, l_a = (load(held, builder.add(at, ir.Constant(I64, k))) for k in range(3))
        s_b, f_b, l_b = (load(needed, builder.add(at, ir.Constant(I64, k))) for k in range(3))
        step = load(steps, pair)
        first_value = variable(zero)
        first_zero, first_change = variable(never), variable(never)
        least, least_at = variable(largest), variable(zero)
        # The walk's state: the device, each side's d // s as a coordinate and remainder
        # (step divides s_b, and s_a or per_node: each moves by at most one a step), and
        # the sender's block (its node's box, recomputed where a node starts).
        device, node_rest = variable(zero), variable(zero)
        coord_a, rest_a, coord_b, rest_b = (variable(zero) for _ in range(4))
        a_lo, a_hi = variable(zero), variable(zero)

        def sender_block() -> None:
            with builder.if_else(boxed) as (then, otherwise):
                with then:
                    box_lo, box_hi = _node_box(loops, per_node, builder.load(device), s_a,
                                               f_a, l_a)
                    builder.store(box_lo, a_lo)
                    builder.store(box_hi, a_hi)
                with otherwise:
                    low = builder.mul(builder.load(coord_a), l_a)
                    builder.store(low, a_lo)
                    builder.store(builder.add(low, l_a), a_hi)

        sender_block()

        def over_devices(index: ir.Value) -> None:
            here = builder.load(device)
            b_lo = builder.mul(builder.load(coord_b), l_b)
            value = smax(builder.sub(smin(builder.load(a_hi), builder.add(b_lo, l_b)),
                                     smax(builder.load(a_lo), b_lo)), zero)
            with builder.if_then(builder.icmp_signed("==", index, zero)):
                builder.store(value, first_value)
            with builder.if_then(builder.and_(
                    builder.icmp_signed("==", value, zero),
                    builder.icmp_signed("==", builder.load(first_zero), never))):
                builder.store(here, first_zero)
            with builder.if_then(builder.and_(
                    builder.icmp_signed("!=", value, builder.load(first_value)),
                    builder.icmp_signed("==", builder.load(first_change), never))):
                builder.store(here, first_change)
            with builder.if_then(builder.icmp_signed("<", value, builder.load(least))):
                builder.store(value, least)
                builder.store(here, least_at)
            builder.store(builder.add(here, step), device)
            _advance(loops, coord_b, rest_b, s_b, f_b, step)
            with builder.if_else(boxed) as (then, otherwise):
                with then:
                    rest = builder.add(builder.load(node_rest), step)
                    starts = builder.icmp_signed("==", rest, per_node)
                    builder.store(builder.select(starts, zero, rest), node_rest)
                    with builder.if_then(starts):
                        sender_block()
                with otherwise:
                    _advance(loops, coord_a, rest_a, s_a, f_a, step)
                    sender_block()

        # Once the least value is 0 (at the first 0) and the first change is known, the
        # rest of the period changes nothing.
        loops.loop(zero, load(counts, pair), over_devices, lambda: builder.not_(builder.and_(
            builder.icmp_signed("==", builder.load(least), zero),
            builder.icmp_signed("!=", builder.load(first_change), never))))
        row = builder.mul(pair, ir.Constant(I64, 5))
        for k, slot in enumerate((first_value, first_zero, first_change, least, least_at)):
            builder.store(builder.load(slot),
                          builder.gep(out, [builder.add(row, ir.Constant(I64, k))]))

    loops.loop(zero, pairs, over_pairs)
    builder.ret_void()
    return module


def _advance(loops: Loops, coord: ir.Value, rest: ir.Value, stride: ir.Value,
             factor: ir.Value, step: ir.Value) -> None:
    """d += step for one side's (d // stride) % factor and d % stride (step divides
    stride)."""
    builder = loops.builder
    moved = builder.add(builder.load(rest), step)
    wraps = builder.icmp_signed("==", moved, stride)
    builder.store(builder.select(wraps, loops.zero, moved), rest)
    with builder.if_then(wraps):
        next_coord = builder.add(builder.load(coord), loops.one)
        builder.store(builder.select(builder.icmp_signed("==", next_coord, factor),
                                     loops.zero, next_coord), coord)


def _node_box(loops: Loops, per_node: ir.Value, device: ir.Value, s_a: ir.Value,
              f_a: ir.Value, l_a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The box of the node of `device`, along one dim, in closed form
    (`dim_stats._group_stats`)."""
    builder, zero, one = loops.builder, loops.zero, loops.one
    safe = loops.smax(per_node, one)
    start_device = builder.mul(builder.sdiv(device, safe), safe)
    low = builder.sdiv(start_device, s_a)
    start = builder.srem(low, f_a)
    end = builder.add(start, builder.sub(builder.sdiv(
        builder.sub(builder.add(start_device, safe), one), s_a), low))
    wraps = builder.icmp_signed(">=", end, f_a)
    return (builder.mul(builder.select(wraps, zero, start), l_a),
            builder.mul(builder.add(builder.select(wraps, builder.sub(f_a, one), end), one),
                        l_a))


_compiled = compiled_once(build_module, NAME, _SIGNATURE, "the per-dim statistics kernel")


def pair_stats_jit(held: np.ndarray, needed: np.ndarray, step: np.ndarray, count: np.ndarray,
                   per_node: int) -> np.ndarray:
    """(n, 5) int64: the module docstring's statistics of pairs (held[i], needed[i]), each
    over devices 0, step[i], ..., (count[i] - 1)·step[i] (count[i] >= 1)."""
    held_, needed_, step_, count_ = (np.ascontiguousarray(array, dtype=np.int64)
                                     for array in (held, needed, step, count))
    stats = np.empty((len(held_), 5), dtype=np.int64)
    _compiled()(held_.ctypes.data, needed_.ctypes.data, step_.ctypes.data,
                count_.ctypes.data, len(held_), per_node, stats.ctypes.data)
    return stats
