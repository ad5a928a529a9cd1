"""The words each receiving device takes over NVLink and over InfiniBand, as a compiled loop
nest (llvmlite): `placed_redistribution.received_by_link`, the same integers.

For each pair k of a sender layout a = rows[k] and a receiver layout b = cols[k], and each
device d: whole = |N_b(d)|, own = |N_b(d) ∩ H_a(d)|, and, where d misses something,
local = the sum of |N_b(d) ∩ H_a(e)| over the devices e of d's node that first hold their
block (`placed_redistribution.first_holders`). intra[k] = max_d (local − own), inter[k] =
max_d (whole − local). It is compiled by the engine the DP kernel uses (`jit/compiler.py`).

    intra, inter = received_by_link_jit(senders, first, receivers, rows, cols, per_node)
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
F64 = ir.DoubleType()
NAME = "pase_received_by_link"

_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 5, *(ctypes.c_int64,) * 4,
                              ctypes.c_void_p, ctypes.c_void_p)


def build_module() -> ir.Module:
    """`links(senders, first, receivers, rows, cols, pairs, devices, rank, per_node,
    intra, inter)` over int64 [lo, hi) layouts (module docstring)."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, pointer, pointer, I64, I64, I64, I64,
        F64.as_pointer(), F64.as_pointer()]), NAME)
    (senders, first, receivers, rows, cols, pairs, devices, rank, per_node, intra_out,
     inter_out) = function.args
    loops = Loops(function)
    builder, variable, smax, smin = loops.builder, loops.variable, loops.smax, loops.smin
    zero, one, two = loops.zero, loops.one, ir.Constant(I64, 2)
    loop = loops.loop

    row = builder.mul(builder.mul(devices, rank), two)  # int64s per layout

    def block(layouts: ir.Value, layout: ir.Value, device: ir.Value) -> ir.Value:
        start = builder.add(builder.mul(layout, row),
                            builder.mul(builder.mul(device, rank), two))
        return builder.gep(layouts, [start])

    def overlap(held: ir.Value, needed: ir.Value) -> ir.Value:
        """Elements of the block at `needed` inside the block at `held`."""
        product = variable(one)

        def over_dims(dim: ir.Value) -> None:
            at = builder.mul(dim, two)
            after = builder.add(at, one)
            lo = smax(builder.load(builder.gep(held, [at])),
                      builder.load(builder.gep(needed, [at])))
            hi = smin(builder.load(builder.gep(held, [after])),
                      builder.load(builder.gep(needed, [after])))
            extent = smax(builder.sub(hi, lo), zero)
            builder.store(builder.mul(builder.load(product), extent), product)

        loop(zero, rank, over_dims)
        return builder.load(product)

    def over_pairs(pair: ir.Value) -> None:
        a = builder.load(builder.gep(rows, [pair]))
        b = builder.load(builder.gep(cols, [pair]))
        most_intra, most_inter = variable(zero), variable(zero)

        def over_devices(device: ir.Value) -> None:
            needed = block(receivers, b, device)
            whole = overlap(needed, needed)
            own = overlap(block(senders, a, device), needed)
            with builder.if_then(builder.icmp_signed(">", whole, own)):
                local = variable(zero)
                start = builder.sub(device, builder.srem(device, per_node))
                stop = smin(builder.add(start, per_node), devices)

                def over_mates(mate: ir.Value) -> None:
                    holds = builder.load(builder.gep(first, [
                        builder.add(builder.mul(a, devices), mate)]))
                    with builder.if_then(builder.icmp_signed("!=", holds, zero)):
                        part = overlap(block(senders, a, mate), needed)
                        builder.store(builder.add(builder.load(local), part), local)

                loop(start, stop, over_mates)
                record_maxima(loops, most_intra, most_inter, builder.load(local), own, whole)

        loop(zero, devices, over_devices)
        store_maxima(builder, most_intra, most_inter, intra_out, inter_out, pair)

    loop(zero, pairs, over_pairs)
    builder.ret_void()
    return module


def record_maxima(loops: Loops, most_intra: ir.Value, most_inter: ir.Value, local: ir.Value,
                  own: ir.Value, whole: ir.Value) -> None:
    """most_intra = max(most_intra, local − own), most_inter = max(most_inter, whole −
    local): one receiving device's words over NVLink and over InfiniBand."""
    builder = loops.builder
    builder.store(loops.smax(builder.load(most_intra), builder.sub(local, own)), most_intra)
    builder.store(loops.smax(builder.load(most_inter), builder.sub(whole, local)), most_inter)


def store_maxima(builder: ir.IRBuilder, most_intra: ir.Value, most_inter: ir.Value,
                 intra_out: ir.Value, inter_out: ir.Value, pair: ir.Value) -> None:
    """intra_out[pair], inter_out[pair] = the maxima, as float64."""
    builder.store(builder.sitofp(builder.load(most_intra), F64),
                  builder.gep(intra_out, [pair]))
    builder.store(builder.sitofp(builder.load(most_inter), F64),
                  builder.gep(inter_out, [pair]))


_compiled = compiled_once(build_module, NAME, _SIGNATURE, "the links kernel")


def received_by_link_jit(senders: np.ndarray, first: np.ndarray, receivers: np.ndarray,
                         rows: np.ndarray, cols: np.ndarray,
                         per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """Exactly `placed_redistribution.received_by_link` for the pairs (rows[k], cols[k]),
    `first` its `first_holders(senders, per_node)`, compiled."""
    senders, first, receivers, rows, cols = (
        np.ascontiguousarray(array, dtype=np.int64)
        for array in (senders, first, receivers, rows, cols))
    devices, rank = receivers.shape[1], receivers.shape[2]
    intra, inter = np.empty(len(rows)), np.empty(len(rows))
    _compiled()(senders.ctypes.data, first.ctypes.data, receivers.ctypes.data,
                rows.ctypes.data, cols.ctypes.data, len(rows), devices, rank, per_node,
                intra.ctypes.data, inter.ctypes.data)
    return intra, inter
