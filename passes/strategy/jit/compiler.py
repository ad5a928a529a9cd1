"""The one MCJIT engine the engine's kernels share, for the host CPU.

A kernel module builds its LLVM module with `llvmlite.ir`, hands it to `compile_function`
and calls the address it gets back through ctypes. The engine is created on first use,
once per process; where llvmlite cannot create it, `jit_available()` is false and
`unavailable_reason()` says why, so callers fall back to numpy.

    >>> jit_available()
    True
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from llvmlite import ir

_lock = threading.Lock()


def jit_available() -> bool:
    """Whether llvmlite can compile kernels here; tried once per process.

    >>> jit_available()
    True
    """
    return not isinstance(_locked_compiler(), str)


def unavailable_reason() -> str:
    """Why `jit_available()` is false, or "" when it is true."""
    compiler = _locked_compiler()
    return compiler if isinstance(compiler, str) else ""


def compile_function(module: ir.Module, name: str, what: str = "the kernel") -> int:
    """Optimize `module` (O3, host CPU), add it to the engine and return the address of its
    function `name`; raises RuntimeError naming `what` when llvmlite cannot compile here.

    Call once per module: the caller keeps the address (the engine keeps the code).
    """
    with _lock:
        compiler = _compiler()
        if isinstance(compiler, str):
            raise RuntimeError(f"llvmlite cannot compile {what} here ({compiler})")
        return compiler.compile(module, name)


def compiled_once(build: Callable[[], ir.Module], name: str, signature: Any,
                  what: str) -> Callable[[], Any]:
    """A function that returns `build()`'s function `name` as a ctypes function of type
    `signature`, compiled by `compile_function` on its first call and kept for the process.

        _kernel = compiled_once(build_module, "pase_least_overlap", SIGNATURE, "the overlap kernel")
        _kernel()(held.ctypes.data, ...)
    """
    lock = threading.Lock()
    kept: list[Any] = []

    def kernel() -> Any:
        with lock:
            if not kept:
                kept.append(signature(compile_function(build(), name, what)))
            return kept[0]

    return kernel


I64 = ir.IntType(64)


class Loops:
    """The int64 loop nests the engine's kernels are written in: a function's builder with
    mutable variables, `for` loops and signed min/max (`jit/overlap.py`, `jit/links.py`).

        loops = Loops(function)
        total = loops.variable(loops.zero)
        loops.loop(loops.zero, count, lambda i: loops.builder.store(
            loops.builder.add(loops.builder.load(total), i), total))
    """

    def __init__(self, function: ir.Function) -> None:
        self.function = function
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))
        self.zero, self.one = ir.Constant(I64, 0), ir.Constant(I64, 1)

    def variable(self, initial: ir.Value) -> ir.Value:
        """A stack slot holding `initial`."""
        slot = self.builder.alloca(I64)
        self.builder.store(initial, slot)
        return slot

    def loop(self, start: ir.Value, stop: ir.Value, body: Callable[[ir.Value], None],
             going: Callable[[], ir.Value] | None = None) -> None:
        """for index in range(start, stop), while `going()` (checked before each round)."""
        builder = self.builder
        index = self.variable(start)
        check = self.function.append_basic_block()
        inside = self.function.append_basic_block()
        after = self.function.append_basic_block()
        builder.branch(check)
        builder.position_at_end(check)
        current = builder.load(index)
        condition = builder.icmp_signed("<", current, stop)
        if going is not None:
            condition = builder.and_(condition, going())
        builder.cbranch(condition, inside, after)
        builder.position_at_end(inside)
        body(current)
        builder.store(builder.add(builder.load(index), self.one), index)
        builder.branch(check)
        builder.position_at_end(after)

    def smax(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.builder.select(self.builder.icmp_signed(">", a, b), a, b)

    def smin(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.builder.select(self.builder.icmp_signed("<", a, b), a, b)


def _locked_compiler() -> _Compiler | str:
    with _lock:
        return _compiler()


@functools.cache
def _compiler() -> _Compiler | str:
    """The process's compiler, or why there is none. Call with `_lock` held."""
    try:
        return _Compiler()
    except Exception as error:
        return f"{type(error).__name__}: {error}"


class _Compiler:
    """One MCJIT engine for the host CPU; each kernel's module is added to it."""

    def __init__(self) -> None:
        import llvmlite.binding as llvm

        # No `llvm.initialize()`: llvmlite 0.50 initializes itself, and the call raises.
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.llvm: Any = llvm
        self.target_machine = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)
        self.tuning = llvm.create_pipeline_tuning_options(speed_level=3)

    def compile(self, module: ir.Module, name: str) -> int:
        parsed = self.llvm.parse_assembly(str(module))
        parsed.triple = self.target_machine.triple
        parsed.data_layout = str(self.target_machine.target_data)
        parsed.verify()
        pass_builder = self.llvm.create_pass_builder(self.target_machine, self.tuning)
        pass_builder.getModulePassManager().run(parsed, pass_builder)
        self.engine.add_module(parsed)
        self.engine.finalize_object()
        address: int = self.engine.get_function_address(name)
        return address
