"""The `.dnn` statements: what each layer statement accepts (`STATEMENTS`, the frontend's
table, whose inverse is the `.dnn` target's), by keyword:

    >>> STATEMENTS["layernorm"].clauses
    ('over', 'epsilon')
    >>> STATEMENTS["pool2d"].required
    ('window',)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pase.dialect import dnn
from pase.dialect.dnn.epsilon import EpsilonLayer


@dataclass(frozen=True)
class Statement:
    """What one layer statement accepts. Its kinds and clauses are its op's (`KIND` and
    `CLAUSES`); a clause without a default is required."""

    op: type[dnn.LayerOp]
    operands: tuple[int, int] = (1, 1)
    result: bool = False
    defaults: dict[str, int] = field(default_factory=dict)

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.op.KIND[1] if self.op.KIND is not None else ()

    @property
    def forms(self) -> dict[str, tuple[str, str]]:
        """Each clause's property and form (`LayerOp.CLAUSES`); a norm's too takes
        `epsilon` (`pase.dialect.dnn.epsilon`)."""
        forms = {keyword: (prop, form) for keyword, prop, form in self.op.CLAUSES}
        if issubclass(self.op, EpsilonLayer):
            forms["epsilon"] = ("epsilon", "epsilon")
        return forms

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.forms)

    @property
    def required(self) -> tuple[str, ...]:
        """The clauses a statement must give: those with no default (a `count` clause's
        is 1; a `signed` clause, a cross-entropy's `ignore`, is absent by default)."""
        return tuple(keyword for keyword, _, form in self.op.CLAUSES
                     if keyword not in self.defaults and form not in ("count", "signed"))


_WINDOW_DEFAULTS = {"stride": 1, "padding": 0}
CLAUSE_EXAMPLES = {"over": "over [d]", "window": "window [2, 2]", "min": "min 0.0",
                    "max": "max 6.0", "along": "along d", "from": "from 0",
                    "fill": "fill -1.0e9", "exponent": "exponent 2.0", "ignore": "ignore -100",
                    "epsilon": "epsilon 1.0e-6"}
STATEMENTS: dict[str, Statement] = {
    "einsum": Statement(dnn.EinsumOp, (1, 3), result=True),
    "conv2d": Statement(dnn.Conv2dOp, (2, 2), result=True, defaults=_WINDOW_DEFAULTS),
    "pool2d": Statement(dnn.Pool2dOp, result=True, defaults=_WINDOW_DEFAULTS),
    "relu": Statement(dnn.ReluOp),
    "gelu": Statement(dnn.GeluOp),
    "tanh": Statement(dnn.TanhOp),
    "sigmoid": Statement(dnn.SigmoidOp),
    "exp": Statement(dnn.ExpOp),
    "add": Statement(dnn.AddOp, (2, 2)),
    "sub": Statement(dnn.SubOp, (2, 2)),
    "mul": Statement(dnn.MulOp, (2, 2)),
    "softmax": Statement(dnn.SoftmaxOp),
    "layernorm": Statement(dnn.LayerNormOp, (1, 3)),
    "batchnorm": Statement(dnn.BatchNormOp, (1, 3)),
    "reduce": Statement(dnn.ReduceOp),
    "embedding": Statement(dnn.EmbeddingOp, (2, 2)),
    "lstm": Statement(dnn.LstmOp, (2, 3)),
    "gru": Statement(dnn.GruOp, (2, 4)),
    "concat": Statement(dnn.ConcatOp, (2, 64), result=True),
    "reshape": Statement(dnn.ReshapeOp, result=True),
    "softmax_cross_entropy": Statement(dnn.SoftmaxCrossEntropyOp, (2, 2)),
    "clip": Statement(dnn.ClipOp),
    "slice": Statement(dnn.SliceOp, result=True),
    "pad": Statement(dnn.PadOp, result=True),
    "broadcast": Statement(dnn.BroadcastOp, result=True),
    "mask": Statement(dnn.MaskOp, (1, 2)),
    "div": Statement(dnn.DivOp, (2, 2)),
    "rmsnorm": Statement(dnn.RmsNormOp, (1, 2)),
    **{op.name[4:]: Statement(op) for op in (dnn.SqrtOp, dnn.NegOp, dnn.PowOp)},
}
DATA_STATEMENTS = ("input", "param")
