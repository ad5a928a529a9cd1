"""`jit.links`' loop nest on per-dim layouts (`dim_pricing.DimLayouts`): the words each
receiving device takes over NVLink and over InfiniBand, the same integers, with no
per-device blocks built and only the devices that can change the result visited.

A layout's block on device d is, per tensor dim k, [c·l, c·l + l) with c = coords[i, d]
for its per-dim state i (`coords` (S, devices) holds (d // s) % f of every state the
layouts use): a few rows read by every pair, where the blocks were (layouts, devices,
rank + 1, 2) each. For pair k (sender a = rows[k], receiver b = cols[k]) the devices
visited are windows[k, 0] <= d < windows[k, 1] and windows[k, 2] <= d < windows[k, 3]
(`dim_pricing.received_by_link` says why those suffice); at each such d < q_b, whole =
|N_b(d)|, own = |N_b(d) ∩ H_a(d)| (0 where d >= q_a) and, where d misses something, local
= the sum of |N_b(d) ∩ H_a(e)| over the devices e of d's node that first hold their block
(`first[a, e]`). intra[k] = max_d (local − own), inter[k] = max_d (whole − local).

    intra, inter = received_by_link_dims(coords, held, first, needed, rows, cols, windows,
                                         per_node)
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once
from pase.passes.strategy.jit.links import record_maxima, store_maxima

I64 = ir.IntType(64)
I8 = ir.IntType(8)
F64 = ir.DoubleType()
NAME = "pase_received_by_link_dims"

_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 11, *(ctypes.c_int64,) * 4,
                              ctypes.c_void_p, ctypes.c_void_p)


def build_module() -> ir.Module:
    """`links(coords, held_state, held_length, held_q, first, needed_state, needed_length,
    needed_q, rows, cols, windows, pairs, devices, rank, per_node, intra, inter)`
    (module docstring; `first` int8, the rest int64)."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, pointer, I8.as_pointer(), pointer, pointer, pointer,
        pointer, pointer, pointer, I64, I64, I64, I64,
        F64.as_pointer(), F64.as_pointer()]), NAME)
    (coords, held_state, held_length, held_q, first, needed_state, needed_length, needed_q,
     rows, cols, windows, pairs, devices, rank, per_node, intra_out,
     inter_out) = function.args
    loops = Loops(function)
    builder, variable, smin = loops.builder, loops.variable, loops.smin
    zero, one, loop = loops.zero, loops.one, loops.loop
    # Per node, the blocks of its devices that first hold theirs (a slot of rank [lo, hi)
    # pairs each); per device, the receiver's block.
    holders = builder.alloca(I64, size=builder.mul(builder.mul(per_node, rank),
                                                   ir.Constant(I64, 2)))
    wanted = builder.alloca(I64, size=builder.mul(rank, ir.Constant(I64, 2)))
    own_block = builder.alloca(I64, size=builder.mul(rank, ir.Constant(I64, 2)))

    blocks = _Blocks(loops, coords, devices, rank, wanted)
    overlap, store_block = blocks.overlap, blocks.store

    def load(array: ir.Value, index: ir.Value) -> ir.Value:
        return builder.load(builder.gep(array, [index]))

    def over_pairs(pair: ir.Value) -> None:
        a, b = load(rows, pair), load(cols, pair)
        a_row, b_row = builder.mul(a, rank), builder.mul(b, rank)
        sender_q = load(held_q, a)
        whole = variable(one)
        loop(zero, rank, lambda dim: builder.store(builder.mul(
            builder.load(whole), load(needed_length, builder.add(b_row, dim))), whole))
        most_intra, most_inter = variable(zero), variable(zero)
        node, count = variable(ir.Constant(I64, -1)), variable(zero)

        def gather(start: ir.Value) -> None:
            """`holders` = the blocks of the first holders of the node from `start`."""
            builder.store(zero, count)

            def over_mates(mate: ir.Value) -> None:
                holds = load(first, builder.add(builder.mul(a, devices), mate))
                with builder.if_then(builder.icmp_signed("!=", holds, ir.Constant(I8, 0))):
                    slot = builder.load(count)
                    store_block(holders, slot, held_state, held_length, a_row, mate)
                    builder.store(builder.add(slot, one), count)

            loop(start, smin(builder.add(start, per_node), devices), over_mates)

        def over_devices(device: ir.Value) -> None:
            start = builder.sub(device, builder.srem(device, per_node))
            with builder.if_then(builder.icmp_signed("!=", start, builder.load(node))):
                gather(start)
                builder.store(start, node)
            store_block(wanted, zero, needed_state, needed_length, b_row, device)
            needed = builder.load(whole)
            own = variable(zero)
            with builder.if_then(builder.icmp_signed("<", device, sender_q)):
                store_block(own_block, zero, held_state, held_length, a_row, device)
                builder.store(overlap(own_block, zero), own)
            mine = builder.load(own)
            with builder.if_then(builder.icmp_signed(">", needed, mine)):
                local = variable(zero)
                loop(zero, builder.load(count), lambda slot: builder.store(
                    builder.add(builder.load(local), overlap(holders, slot)), local))
                record_maxima(loops, most_intra, most_inter, builder.load(local), mine, needed)

        window = builder.mul(pair, ir.Constant(I64, 4))
        for part in (0, 2):
            begin = load(windows, builder.add(window, ir.Constant(I64, part)))
            end = load(windows, builder.add(window, ir.Constant(I64, part + 1)))
            loop(begin, end, over_devices)
        store_maxima(builder, most_intra, most_inter, intra_out, inter_out, pair)

    loop(zero, pairs, over_pairs)
    builder.ret_void()
    return module


class _Blocks:
    """Blocks as rank [lo, hi) pairs in stack arrays: one layout's block on a device, from
    the coordinate table, and its overlap with the receiver's block in `wanted`."""

    def __init__(self, loops: Loops, coords: ir.Value, devices: ir.Value, rank: ir.Value,
                 wanted: ir.Value) -> None:
        self.loops, self.coords, self.devices, self.rank = loops, coords, devices, rank
        self.wanted = wanted

    def _load(self, array: ir.Value, index: ir.Value) -> ir.Value:
        return self.loops.builder.load(self.loops.builder.gep(array, [index]))

    def overlap(self, blocks: ir.Value, slot: ir.Value) -> ir.Value:
        """|N_b(d) ∩ the block at slot `slot` of `blocks`| (`wanted` holds N_b(d))."""
        loops, load, two = self.loops, self._load, ir.Constant(I64, 2)
        builder, smax, smin, one = loops.builder, loops.smax, loops.smin, loops.one
        product = loops.variable(one)

        def over_dims(dim: ir.Value) -> None:
            at = builder.mul(builder.add(builder.mul(slot, self.rank), dim), two)
            mine = builder.mul(dim, two)
            extent = builder.sub(smin(load(blocks, builder.add(at, one)),
                                      load(self.wanted, builder.add(mine, one))),
                                 smax(load(blocks, at), load(self.wanted, mine)))
            builder.store(builder.mul(builder.load(product), smax(extent, loops.zero)),
                          product)

        loops.loop(loops.zero, self.rank, over_dims)
        return builder.load(product)

    def store(self, blocks: ir.Value, slot: ir.Value, state: ir.Value, lengths: ir.Value,
              row: ir.Value, device: ir.Value) -> None:
        """blocks[slot] = the block of `device` in the layout whose row starts at `row`
        (`state` and `lengths` its (layouts, rank) arrays)."""
        loops, load, two = self.loops, self._load, ir.Constant(I64, 2)
        builder = loops.builder

        def over_dims(dim: ir.Value) -> None:
            at = builder.add(row, dim)
            lo = builder.mul(load(self.coords, builder.add(
                builder.mul(load(state, at), self.devices), device)), load(lengths, at))
            place = builder.mul(builder.add(builder.mul(slot, self.rank), dim), two)
            builder.store(lo, builder.gep(blocks, [place]))
            builder.store(builder.add(lo, load(lengths, at)),
                          builder.gep(blocks, [builder.add(place, loops.one)]))

        loops.loop(loops.zero, self.rank, over_dims)


_compiled = compiled_once(build_module, NAME, _SIGNATURE, "the per-dim links kernel")


def received_by_link_dims(coords: np.ndarray, held: tuple[np.ndarray, np.ndarray, np.ndarray],
                          first: np.ndarray,
                          needed: tuple[np.ndarray, np.ndarray, np.ndarray],
                          rows: np.ndarray, cols: np.ndarray, windows: np.ndarray,
                          per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """intra and inter (float64 over the pairs) of the module docstring: `held` and
    `needed` each (state (L, rank) rows of `coords`, length (L, rank), working (L,)),
    `first` (senders, devices) bool, `windows` (pairs, 4)."""
    devices = coords.shape[1]
    ints = [np.ascontiguousarray(array, dtype=np.int64) for array in (
        coords, *held, needed[0], needed[1], needed[2], rows, cols, windows)]
    coords_, held_state, held_length, held_q, needed_state, needed_length, needed_q, \
        rows_, cols_, windows_ = ints
    first_ = np.ascontiguousarray(first, dtype=np.int8)
    rank = held_length.shape[1]
    intra, inter = np.empty(len(rows_)), np.empty(len(rows_))
    _compiled()(coords_.ctypes.data, held_state.ctypes.data, held_length.ctypes.data,
                held_q.ctypes.data, first_.ctypes.data, needed_state.ctypes.data,
                needed_length.ctypes.data, needed_q.ctypes.data, rows_.ctypes.data,
                cols_.ctypes.data, windows_.ctypes.data, len(rows_),
                devices, rank, per_node, intra.ctypes.data, inter.ctypes.data)
    return intra, inter
