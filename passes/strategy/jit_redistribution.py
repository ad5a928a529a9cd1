"""The redistribution volumes of an edge, as a compiled loop nest (llvmlite).

`cost.redistribution_words` needs, for every pair of block layouts (a, b), the maximum over
devices of the words a device needs and does not hold, forward and backward. numpy forms
that with a dozen passes over (A, B) arrays per device and dim; this kernel walks each pair
once, in integer arithmetic, so its results are exactly numpy's. It shares the DP kernel's
MCJIT engine (`jit.py`).

    forward, backward = redistribution_words_jit(held, needed)   # (A, P, R, 2), (B, P, R, 2)
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
from llvmlite import ir

from pase.passes.strategy import jit

I64 = ir.IntType(64)
F64 = ir.DoubleType()
NAME = "pase_redistribution_words"

_lock = threading.Lock()
_kernel: list[Any] = []
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                              ctypes.c_void_p)


def build_module() -> ir.Module:
    """`words(held, needed, A, B, P, R, forward, backward)` over int64 [lo, hi) layouts."""
    module = ir.Module(name=NAME)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, I64, I64, I64, I64, F64.as_pointer(), F64.as_pointer()]), NAME)
    held, needed, count_a, count_b, devices, rank, forward, backward = function.args
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    zero, one, two = ir.Constant(I64, 0), ir.Constant(I64, 1), ir.Constant(I64, 2)

    def variable(initial: ir.Value) -> ir.Value:
        slot = builder.alloca(I64)
        builder.store(initial, slot)
        return slot

    def loop(stop: ir.Value, body: Any) -> None:
        index = variable(zero)
        check = function.append_basic_block()
        inside = function.append_basic_block()
        after = function.append_basic_block()
        builder.branch(check)
        builder.position_at_end(check)
        current = builder.load(index)
        builder.cbranch(builder.icmp_signed("<", current, stop), inside, after)
        builder.position_at_end(inside)
        body(current)
        builder.store(builder.add(builder.load(index), one), index)
        builder.branch(check)
        builder.position_at_end(after)

    def smax(a: ir.Value, b: ir.Value) -> ir.Value:
        return builder.select(builder.icmp_signed(">", a, b), a, b)

    def smin(a: ir.Value, b: ir.Value) -> ir.Value:
        return builder.select(builder.icmp_signed("<", a, b), a, b)

    row = builder.mul(builder.mul(devices, rank), two)  # int64s per layout

    def over_a(a: ir.Value) -> None:
        def over_b(b: ir.Value) -> None:
            most_forward, most_backward = variable(zero), variable(zero)

            def over_devices(device: ir.Value) -> None:
                held_volume, needed_volume, overlap = variable(one), variable(one), \
                    variable(one)
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
                    for slot, extent in (
                            (held_volume, builder.sub(held_hi, held_lo)),
                            (needed_volume, builder.sub(needed_hi, needed_lo)),
                            (overlap, smax(builder.sub(smin(held_hi, needed_hi),
                                                       smax(held_lo, needed_lo)), zero))):
                        builder.store(builder.mul(builder.load(slot), extent), slot)

                loop(rank, over_dims)
                common = builder.load(overlap)
                builder.store(smax(builder.load(most_forward),
                                   builder.sub(builder.load(needed_volume), common)),
                              most_forward)
                builder.store(smax(builder.load(most_backward),
                                   builder.sub(builder.load(held_volume), common)),
                              most_backward)

            loop(devices, over_devices)
            at = builder.add(builder.mul(a, count_b), b)
            builder.store(builder.sitofp(builder.load(most_forward), F64),
                          builder.gep(forward, [at]))
            builder.store(builder.sitofp(builder.load(most_backward), F64),
                          builder.gep(backward, [at]))

        loop(count_b, over_b)

    loop(count_a, over_a)
    builder.ret_void()
    return module


def _compiled() -> Any:
    with _lock:
        if not _kernel:
            compiler = jit._compiler()
            if isinstance(compiler, str):
                raise RuntimeError(f"llvmlite cannot compile here ({compiler})")
            llvm = compiler.llvm
            module = llvm.parse_assembly(str(build_module()))
            module.triple = compiler.target_machine.triple
            module.data_layout = str(compiler.target_machine.target_data)
            module.verify()
            passes = llvm.create_pass_builder(compiler.target_machine, compiler.tuning)
            passes.getModulePassManager().run(module, passes)
            compiler.engine.add_module(module)
            compiler.engine.finalize_object()
            _kernel.append(_SIGNATURE(compiler.engine.get_function_address(NAME)))
        return _kernel[0]


def redistribution_words_jit(held: np.ndarray, needed: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Exactly `cost.redistribution_words(held, needed)`, compiled."""
    held = np.ascontiguousarray(held, dtype=np.int64)
    needed = np.ascontiguousarray(needed, dtype=np.int64)
    count_a, devices, rank, _ = held.shape
    count_b = needed.shape[0]
    forward = np.zeros((count_a, count_b), dtype=np.float64)
    backward = np.zeros_like(forward)
    _compiled()(held.ctypes.data, needed.ctypes.data, count_a, count_b, devices, rank,
                forward.ctypes.data, backward.ctypes.data)
    return forward, backward
