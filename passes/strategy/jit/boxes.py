"""`dim_pricing.exact_boxes`, compiled: whether, in each layout, every node's blocks fill
their bounding box exactly (`placed_redistribution.node_boxes`' second result), from the
per-dim numbers, over the nodes whose blocks can differ only.

A node's blocks fill their box where the distinct grid-coordinate tuples of its working
devices are as many as the box's cells (the product over dims of max - min + 1 of the
coordinates), or where it holds nothing, or where some dim's blocks are empty. A device's
coordinates (d // s) % f repeat with period T = lcm(s·f of every dim, per_node), a
multiple of a node, so the nodes whose devices all work repeat with period T / per_node:
the kernel visits nodes n < min(q // per_node, T / per_node) and the node q // per_node
where q (the working devices) ends within it; nodes past it hold nothing.

    exact = exact_boxes_jit(stride, factor, length, working, period, per_node)   # (L,) bool
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
NAME = "pase_exact_boxes"

_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 5, *(ctypes.c_int64,) * 3,
                              ctypes.c_void_p)


def build_module() -> ir.Module:
    """`exact(stride, factor, length, working, period, layouts, rank, per_node, out)`,
    all int64: stride, factor, length (layouts, rank), working and period (layouts,),
    out (layouts,) 1 or 0."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, pointer, pointer, I64, I64, I64, pointer]), NAME)
    stride, factor, length, working, periods, layouts, rank, per_node, out = function.args
    loops = Loops(function)
    builder, variable, smax, smin = loops.builder, loops.variable, loops.smax, loops.smin
    zero, one, loop = loops.zero, loops.one, loops.loop
    keys = builder.alloca(I64, size=per_node)   # each slot's coordinate tuple as one key
    largest = ir.Constant(I64, (1 << 63) - 1)

    def load(array: ir.Value, index: ir.Value) -> ir.Value:
        return builder.load(builder.gep(array, [index]))

    def coordinate(row: ir.Value, dim: ir.Value, device: ir.Value) -> ir.Value:
        at = builder.add(row, dim)
        return builder.srem(builder.sdiv(device, load(stride, at)), load(factor, at))

    def over_layouts(layout: ir.Value) -> None:
        row = builder.mul(layout, rank)
        q = load(working, layout)
        exact = variable(one)
        empty = variable(zero)
        loop(zero, rank, lambda dim: builder.store(builder.or_(builder.load(empty), builder.zext(
            builder.icmp_signed("==", load(length, builder.add(row, dim)), zero), I64)), empty))

        def node_exact(node: ir.Value) -> None:
            """exact &= node `node`'s blocks fill their box."""
            first = builder.mul(node, per_node)
            alive = smin(per_node, smax(builder.sub(q, first), zero))
            distinct = variable(zero)

            def key_of(slot: ir.Value) -> None:
                key = variable(zero)
                device = builder.add(first, slot)
                loop(zero, rank, lambda dim: builder.store(builder.add(builder.mul(
                    builder.load(key), load(factor, builder.add(row, dim))),
                    coordinate(row, dim, device)), key))
                mine = builder.load(key)
                builder.store(mine, builder.gep(keys, [slot]))
                fresh = variable(one)
                loop(zero, slot, lambda earlier: builder.store(builder.and_(
                    builder.load(fresh), builder.zext(builder.icmp_signed(
                        "!=", load(keys, earlier), mine), I64)), fresh))
                builder.store(builder.add(builder.load(distinct), builder.load(fresh)),
                              distinct)

            loop(zero, alive, key_of)
            cells = variable(one)

            def span(dim: ir.Value) -> None:
                low, high = variable(largest), variable(ir.Constant(I64, -1))

                def widen(slot: ir.Value) -> None:
                    value = coordinate(row, dim, builder.add(first, slot))
                    builder.store(smin(builder.load(low), value), low)
                    builder.store(smax(builder.load(high), value), high)

                loop(zero, alive, widen)
                builder.store(builder.mul(builder.load(cells), builder.add(
                    builder.sub(builder.load(high), builder.load(low)), one)), cells)

            loop(zero, rank, span)
            filled = builder.or_(builder.icmp_signed("==", alive, zero), builder.icmp_signed(
                "==", builder.load(distinct), builder.load(cells)))
            builder.store(builder.and_(builder.load(exact), builder.zext(filled, I64)), exact)

        whole = builder.sdiv(q, per_node)
        loop(zero, smin(whole, builder.sdiv(load(periods, layout), per_node)), node_exact)
        with builder.if_then(builder.icmp_signed(">", builder.srem(q, per_node), zero)):
            node_exact(whole)
        builder.store(builder.or_(builder.load(exact), builder.load(empty)),
                      builder.gep(out, [layout]))

    loop(zero, layouts, over_layouts)
    builder.ret_void()
    return module


_compiled = compiled_once(build_module, NAME, _SIGNATURE, "the exact-boxes kernel")


def exact_boxes_jit(stride: np.ndarray, factor: np.ndarray, length: np.ndarray,
                    working: np.ndarray, period: np.ndarray, per_node: int) -> np.ndarray:
    """(L,) bool of the module docstring; `period` (L,) each layout's T."""
    stride_, factor_, length_, working_, period_ = (
        np.ascontiguousarray(array, dtype=np.int64)
        for array in (stride, factor, length, working, period))
    exact = np.empty(len(working_), dtype=np.int64)
    _compiled()(stride_.ctypes.data, factor_.ctypes.data, length_.ctypes.data,
                working_.ctypes.data, period_.ctypes.data, len(working_), length_.shape[1],
                per_node, exact.ctypes.data)
    return exact.astype(bool)
