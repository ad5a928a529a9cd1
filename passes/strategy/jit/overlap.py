"""The least block overlap of an edge's layout pairs, as a compiled loop nest (llvmlite).

`cost.redistribution_words` needs, for every pair of canonical block layouts (a, b), the
least overlap (in elements) between a's and b's blocks over the devices both work on,
0..min(q_a, q_b)-1. numpy forms it with a dozen passes over (A, B, devices) arrays per dim;
this kernel walks each pair once, in integer arithmetic, and stops at the first device
with no overlap, so its results are exactly numpy's. It is compiled by the engine the DP
kernel uses (`jit/compiler.py`).

    least = least_overlap_jit(held, needed, held_q, needed_q)   # (A, P, R, 2), (B, P, R, 2)
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
F64 = ir.DoubleType()
NAME = "pase_least_overlap"

_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_void_p)


def build_module() -> ir.Module:
    """`least(held, needed, A, B, P, R, held_q, needed_q, out)` over int64 [lo, hi)
    layouts: out[a, b] = min over devices d < min(held_q[a], needed_q[b]) of the product
    over dims of the overlap of the two blocks."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, I64, I64, I64, I64, pointer, pointer, F64.as_pointer()]), NAME)
    held, needed, count_a, count_b, devices, rank, held_q, needed_q, out = function.args
    loops = Loops(function)
    builder, variable, smax, smin = loops.builder, loops.variable, loops.smax, loops.smin
    zero, one, two = loops.zero, loops.one, ir.Constant(I64, 2)
    largest = ir.Constant(I64, (1 << 63) - 1)

    def loop(stop: ir.Value, body: Any, going: Any = None) -> None:
        """for index in range(stop), while `going()` (checked before each round)."""
        loops.loop(zero, stop, body, going)

    row = builder.mul(builder.mul(devices, rank), two)  # int64s per layout

    def over_a(a: ir.Value) -> None:
        working_a = builder.load(builder.gep(held_q, [a]))

        def over_b(b: ir.Value) -> None:
            shared = smin(working_a, builder.load(builder.gep(needed_q, [b])))
            least = variable(largest)

            def over_devices(device: ir.Value) -> None:
                overlap = variable(one)
                base_held = builder.add(builder.mul(a, row),
                                        builder.mul(builder.mul(device, rank), two))
                base_needed = builder.add(builder.mul(b, row),
                                          builder.mul(builder.mul(device, rank), two))

                def over_dims(dim: ir.Value) -> None:
                    at_held = builder.add(base_held, builder.mul(dim, two))
                    at_needed = builder.add(base_needed, builder.mul(dim, two))
                    held_lo = builder.load(builder.gep(held, [at_held]))
                    held_hi = builder.load(builder.gep(held, [builder.add(at_held, one)]))
                    needed_lo = builder.load(builder.gep(needed, [at_needed]))
                    needed_hi = builder.load(builder.gep(needed, [builder.add(at_needed, one)]))
                    extent = smax(builder.sub(smin(held_hi, needed_hi),
                                              smax(held_lo, needed_lo)), zero)
                    builder.store(builder.mul(builder.load(overlap), extent), overlap)

                loop(rank, over_dims)
                builder.store(smin(builder.load(least), builder.load(overlap)), least)

            # No overlap at all on some device: nothing can be less.
            loop(shared, over_devices,
                 lambda: builder.icmp_signed(">", builder.load(least), zero))
            at = builder.add(builder.mul(a, count_b), b)
            builder.store(builder.sitofp(builder.load(least), F64), builder.gep(out, [at]))

        loop(count_b, over_b)

    loop(count_a, over_a)
    builder.ret_void()
    return module


_compiled = compiled_once(build_module, NAME, _SIGNATURE, "the overlap kernel")


def least_overlap_jit(held: np.ndarray, needed: np.ndarray, held_q: np.ndarray,
                      needed_q: np.ndarray) -> np.ndarray:
    """Exactly `cost._least_overlap(held, needed, held_q, needed_q)`, compiled."""
    held, needed, held_q, needed_q = (np.ascontiguousarray(array, dtype=np.int64)
                                      for array in (held, needed, held_q, needed_q))
    count_a, devices, rank, _ = held.shape
    count_b = needed.shape[0]
    least = np.empty((count_a, count_b), dtype=np.float64)
    _compiled()(held.ctypes.data, needed.ctypes.data, count_a, count_b, devices, rank,
                held_q.ctypes.data, needed_q.ctypes.data, least.ctypes.data)
    return least
