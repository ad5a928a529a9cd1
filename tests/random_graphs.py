"""Random small `.dnn` graphs for property tests (shared by several test files).

`RandomGraph(rng)` writes statements one by one over small dims (chains, diamonds, skip
connections, multi-input layers); the tests turn its lines into a graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DIMS = {"b": 8, "d": 16, "h": 8, "e": 4, "d2": 32, "h2": 16, "e2": 8, "v": 16, "c": 8}
"""The dims of every random graph; `c` is a class dim no layer picks as a feature."""
FEATURES = ("d", "h", "e", "d2", "h2", "e2")
DOUBLED = {"d": "d2", "h": "h2", "e": "e2"}
SAME_SIZE = {"d": "h2", "h2": "d", "h": "e2", "e2": "h"}
LAYER_KINDS = ("linear", "linear", "unary", "bias", "add", "einsum2", "gram", "concat",
               "softmax", "layernorm", "reshape", "embedding")


@dataclass
class RandomGraph:
    """A random `.dnn` graph, built statement by statement."""

    rng: np.random.Generator
    lines: list[str] = field(default_factory=list)
    values: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    layers: int = 0
    names: int = 0

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def pick(self, candidates: list[tuple[str, tuple[str, ...]]],
             chain: bool) -> tuple[str, tuple[str, ...]]:
        # A chain mostly extends the latest value; otherwise any earlier value will do,
        # which makes diamonds and skip connections.
        if chain and self.rng.random() < 0.8:
            return candidates[-1]
        return candidates[int(self.rng.integers(len(candidates)))]

    def emit(self, text: str, dims: tuple[str, ...], *operands: str) -> str:
        name = self.fresh("l")
        self.lines.append(f"  %{name} = {text}")
        self.values.append((name, dims))
        self.used.update(operands)
        self.layers += 1
        return name

    def param(self, dims: tuple[str, ...]) -> str:
        name = self.fresh("p")
        self.lines.append(f"  %{name} = param [{', '.join(dims)}]")
        return name

    def feature_not_in(self, dims: tuple[str, ...]) -> str | None:
        options = [f for f in FEATURES if f not in dims]
        return str(self.rng.choice(options)) if options else None

    def add_layer(self, kind: str, chain: bool) -> bool:
        """Add one layer of `kind`; False when no operand fits."""
        with_batch = [v for v in self.values if v[1][:1] == ("b",) and len(v[1]) == 2]
        any_value = self.values
        match kind:
            case "linear":
                name, dims = self.pick(any_value, chain)
                contracted = str(self.rng.choice([d for d in dims if d != "b"] or dims))
                new = self.feature_not_in(dims)
                if new is None or contracted == "b":
                    return False
                weight = self.param((contracted, new))
                result = tuple(new if d == contracted else d for d in dims)
                self.emit(f"einsum %{name}, %{weight} -> [{', '.join(result)}]", result, name)
            case "unary":
                name, dims = self.pick(any_value, chain)
                op = str(self.rng.choice(["relu", "tanh", "gelu", "sigmoid", "exp"]))
                self.emit(f"{op} %{name}", dims, name)
            case "bias":
                name, dims = self.pick(any_value, chain)
                bias = self.param((dims[-1],))
                self.emit(f"add %{name}, %{bias}", dims, name)
            case "add" | "einsum2" | "concat":
                name, dims = self.pick(any_value, chain)
                partners = [v for v in self.values if v[1] == dims and v[0] != name]
                if not partners:
                    return False
                other, _ = partners[int(self.rng.integers(len(partners)))]
                if kind == "add":
                    op = str(self.rng.choice(["add", "sub", "mul"]))
                    self.emit(f"{op} %{name}, %{other}", dims, name, other)
                elif kind == "einsum2":
                    self.emit(f"einsum %{name}, %{other} -> [{', '.join(dims)}]", dims,
                              name, other)
                else:
                    if dims[-1] not in DOUBLED:
                        return False
                    result = (*dims[:-1], DOUBLED[dims[-1]])
                    self.emit(f"concat %{name}, %{other} -> [{', '.join(result)}]", result,
                              name, other)
            case "gram":
                # two activations contracted over the batch: [b, X] x [b, Y] -> [X, Y]
                if len(with_batch) < 2:
                    return False
                (first, first_dims), (second, second_dims) = (
                    with_batch[i] for i in self.rng.choice(len(with_batch), 2, replace=False))
                if first_dims[1] == second_dims[1]:
                    return False
                result = (first_dims[1], second_dims[1])
                self.emit(f"einsum %{first}, %{second} -> [{', '.join(result)}]", result,
                          first, second)
            case "softmax":
                name, dims = self.pick(any_value, chain)
                over = str(self.rng.choice(dims))
                self.emit(f"softmax %{name} over {over}", dims, name)
            case "layernorm":
                name, dims = self.pick(any_value, chain)
                if self.rng.random() < 0.5:
                    scale, shift = self.param((dims[-1],)), self.param((dims[-1],))
                    text = f"layernorm %{name}, %{scale}, %{shift} over {dims[-1]}"
                else:
                    text = f"layernorm %{name} over {dims[-1]}"
                self.emit(text, dims, name)
            case "reshape":
                name, dims = self.pick(any_value, chain)
                renamed = SAME_SIZE.get(dims[-1])
                if renamed is None or renamed in dims:
                    return False
                result = (*dims[:-1], renamed)
                self.emit(f"reshape %{name} -> [{', '.join(result)}]", result, name)
            case "embedding":
                ids = self.fresh("ids")
                self.lines.append(f"  %{ids} = input [b] : i32")
                feature = str(self.rng.choice(["d", "h", "e"]))
                table = self.param(("v", feature))
                self.emit(f"embedding %{ids}, %{table}", ("b", feature))
        return True
