"""The engine's native kernels, compiled with llvmlite at run time.

`compiler` owns the process's one MCJIT engine (`jit_available()`, `compile_function`);
`eliminate` is the DP's min-plus step and `overlap` the least block overlap behind the
redistribution volumes. Each kernel gives exactly numpy's results, so the compiled path is
a speed-up only.
"""
