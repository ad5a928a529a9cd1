"""The dialects of pase: `dnn` (layers), `pase` (strategy attributes), `dist` (SPMD).

`get_all_dialects()` maps names to closures that import on demand, as xDSL's own
registry does, so a driver pays only for the dialects a file uses.
"""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_dnn() -> Dialect:
        from pase.dialect.dnn import Dnn

        return Dnn

    def get_pase() -> Dialect:
        from pase.dialect.pase import Pase

        return Pase

    def get_dist() -> Dialect:
        from pase.dialect.dist import Dist

        return Dist

    return {"dnn": get_dnn, "pase": get_pase, "dist": get_dist}
