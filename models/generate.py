"""Write the repetitive models of the zoo as `.dnn` files.

Generates, next to this script:

- `inception_v3.dnn`: InceptionV3, torchvision layout (the PaSE benchmark);
- `resnet101.dnn`: ResNet-101;
- `transformer.dnn`: the Transformer base model (the PaSE benchmark);
- `gpt2_small.dnn`: GPT-2 small.

With arguments it writes one GPT- or LLaMA-shaped language model instead (`language_model`):
a preset of `LANGUAGE_MODELS` (GPT-3's family, Megatron-LM's scaling family up to 1T
parameters, LLaMA) or a shape given by `--layers --hidden --heads --sequence --vocabulary
--batch` (`python models/generate.py --help`); those are not committed (1T's file is 2,000
statements of the same block).

`gpt2_stack(blocks)` builds GPT-2 small with any number of blocks (`benchmarks/search.py
--deep` writes the 24-, 48- and 96-block stacks to a temporary folder; they are not
committed, being GPT-2 small's text repeated).

The generated files are committed so that users can read the models without running
anything; `python models/generate.py` rewrites them (the output is deterministic) and
prints each graph's layer count (every statement except input, param and return).
`mlp.dnn`, `alexnet.dnn` and `rnnlm.dnn` are short and written by hand.

No size is typed twice: every conv and pool computes its output size with
`pase.core.shapes.conv_output_size`, each statement's shape comes from the compiler's own
shape rule in `pase.core.shapes` (so a statement the compiler would reject raises here),
and the graph header declares exactly the dimensions the statements use, so the files
are consistent by construction. Run it with the project's Python (pase installed).

Value names never have a bare-number part (`layer1_b0`, not `layer1_0`): see
`graph_builder.py`, whose `Graph` writes the statements.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pase.core import shapes
from pase.core.files import WriteError, write_atomically
from pase.core.usage import UsageParser
from pase.models.graph_builder import BATCH, Graph
from pase.models.image_classifiers import inception_v3, resnet101

MODELS = Path(__file__).resolve().parent

# --- attention models -----------------------------------------------------------------


def attention(g: Graph, name: str, queries: str, keys: str) -> str:
    """Multi-head attention of `queries` [b, q, d] over `keys` [b, t, d], q != t.

    Heads are the named dim h with k features each; the linear maps have no bias and
    the 1/sqrt(k) score scale is left out (it folds into wq).
    """
    batch, query_seq, model = g.shape(queries)
    _, key_seq, _ = g.shape(keys)
    heads, head_features = "h", "k"
    wq = g.param(f"{name}_wq", [model, heads, head_features])
    q = g.einsum(f"{name}_q", [queries, wq], [batch, query_seq, heads, head_features])
    wk = g.param(f"{name}_wk", [model, heads, head_features])
    k = g.einsum(f"{name}_k", [keys, wk], [batch, key_seq, heads, head_features])
    wv = g.param(f"{name}_wv", [model, heads, head_features])
    v = g.einsum(f"{name}_v", [keys, wv], [batch, key_seq, heads, head_features])
    scores = g.einsum(f"{name}_scores", [q, k], [batch, heads, query_seq, key_seq])
    probs = g.softmax(f"{name}_probs", scores, key_seq)
    context = g.einsum(f"{name}_context", [probs, v], [batch, query_seq, heads, head_features])
    wo = g.param(f"{name}_wo", [heads, head_features, model])
    return g.einsum(f"{name}_out", [context, wo], [batch, query_seq, model])


def self_attention(g: Graph, name: str, x: str, key_seq: str) -> str:
    """Attention of x over itself; the keys' sequence dim is renamed to `key_seq`."""
    batch, _, model = g.shape(x)
    keys = g.reshape(f"{name}_keys", x, [batch, key_seq, model])
    return attention(g, name, x, keys)


def layernorm(g: Graph, name: str, x: str) -> str:
    model = g.shape(x)[-1]
    scale = g.param(f"{name}_scale", [model])
    bias = g.param(f"{name}_bias", [model])
    return g.norm(name, "layernorm", x, [model], (scale, bias))


def feed_forward(g: Graph, name: str, x: str, activation: str) -> str:
    batch, seq, model = g.shape(x)
    w1 = g.param(f"{name}_w1", [model, "f"])
    y = g.einsum(f"{name}_up", [x, w1], [batch, seq, "f"])
    y = g.unary(f"{name}_{activation}", activation, y)
    w2 = g.param(f"{name}_w2", ["f", model])
    return g.einsum(f"{name}_down", [y, w2], [batch, seq, model])


def model_dims(g: Graph, sizes: dict[str, int]) -> str:
    """Declare d (model), h (heads), k (head features), f (feed-forward) and v (vocabulary)
    as one header group; returns d."""
    for dim, size in sizes.items():
        g.dim(dim, size, "model, heads, head features, feed-forward, vocabulary")
    return "d"


def transformer_stack(g: Graph, kind: str, side: str, ids: str, positions: str,
                      sublayers: Sequence[Callable[[str, str], str]]) -> str:
    """The Transformer's 6-layer encoder or decoder over embedded `ids` plus `positions`:
    each layer applies its `sublayers` (name, input -> output) as post-layernorm residual
    blocks."""
    g.blank()
    g.comment(kind)
    table = g.param(f"{side}_embedding", ["v", g.shape(positions)[1]])
    x = g.embedding(f"{side}_embedded", ids, table)
    x = g.add(f"{kind}_input", x, positions)
    for layer in range(6):
        name = f"{kind[:3]}{layer}"
        g.blank()
        g.comment(f"{kind} layer {layer}")
        for number, sublayer in enumerate(sublayers, start=1):
            x = layernorm(g, f"{name}_ln{number}",
                          g.add(f"{name}_res{number}", x, sublayer(name, x)))
    return x


def transformer() -> Graph:
    g = Graph("transformer", [
        "The Transformer base model (Vaswani et al. 2017), a PaSE benchmark: 6 encoder and",
        "6 decoder layers, d_model 512, 8 heads of 64, feed-forward 2048, a 50000-token",
        "vocabulary shared in size by source and target (separate embedding tables),",
        "sequences of 256, batch 64. Post-layernorm residual blocks; linear maps without",
        "bias; no dropout. The decoder's causal mask only changes values, not shapes or",
        "costs, and is left out. The sinusoidal position encodings are fixed, so they come",
        "in as data. Dims: s is the source sequence, u the target sequence; self-attention",
        "renames its keys' sequence to t (source) or r (target), cross-attention's keys",
        "are the encoder output over s.",
    ])
    batch = g.dim("b", 64, BATCH)
    source = g.dim("s", 256, "sequence")
    g.dim("t", g.size(source), "sequence")
    target = g.dim("u", 256, "sequence")
    g.dim("r", g.size(target), "sequence")
    model = model_dims(g, {"d": 512, "h": 8, "k": 64, "f": 2048, "v": 50000})

    source_ids = g.input("source_ids", [batch, source], "i32")
    source_positions = g.input("source_positions", [source, model])
    target_ids = g.input("target_ids", [batch, target], "i32")
    target_positions = g.input("target_positions", [target, model])
    labels = g.input("labels", [batch, target], "i32")

    memory = transformer_stack(g, "encoder", "source", source_ids, source_positions, [
        lambda name, x: self_attention(g, f"{name}_self", x, "t"),
        lambda name, x: feed_forward(g, f"{name}_ff", x, "relu")])
    y = transformer_stack(g, "decoder", "target", target_ids, target_positions, [
        lambda name, x: self_attention(g, f"{name}_self", x, "r"),
        lambda name, x: attention(g, f"{name}_cross", x, memory),
        lambda name, x: feed_forward(g, f"{name}_ff", x, "relu")])

    g.blank()
    g.comment("output projection to the vocabulary")
    w = g.param("output_w", [model, "v"])
    logits = g.einsum("logits", [y, w], [batch, target, "v"])
    g.ret(g.cross_entropy("loss", logits, labels, "v"))
    return g


def gpt2_small() -> Graph:
    return gpt2_stack(12)


def gpt2_stack(blocks: int) -> Graph:
    """GPT-2 small with `blocks` identical blocks instead of 12: `gpt2_small` for 12,
    `gpt2_b<blocks>` otherwise (the deep stacks the search benchmark measures).

        >>> gpt2_stack(24).name, gpt2_stack(24).layers
        ('gpt2_b24', 366)
    """
    layers = blocks
    described = ("GPT-2 small (Radford et al. 2019): 12 pre-layernorm blocks," if blocks == 12
                 else f"GPT-2 small (Radford et al. 2019) deepened to {blocks} identical "
                      "pre-layernorm blocks,")
    g = Graph("gpt2_small" if blocks == 12 else f"gpt2_b{blocks}", [
        described + " d 768, 12 heads of 64,",
        "feed-forward 3072 with gelu, context 1024, vocabulary 50257. Batch 8 is our choice",
        "(the paper does not fix one). Linear maps without bias; no dropout; the causal mask",
        "only changes values and is left out. The output projection reuses the token",
        "embedding table, as GPT-2 ties them. Dims: s is the sequence, t the same positions",
        "as attention keys, p the rows of the position table.",
    ])
    batch = g.dim("b", 8, BATCH)
    seq = g.dim("s", 1024, "sequence")
    g.dim("t", g.size(seq), "sequence")
    positions_dim = g.dim("p", 1024, "sequence")
    model = model_dims(g, {"d": 768, "h": 12, "k": 64, "f": 3072, "v": 50257})

    ids = g.input("ids", [batch, seq], "i32")
    positions = g.input("positions", [seq], "i32")
    labels = g.input("labels", [batch, seq], "i32")

    g.blank()
    g.comment("token and position embeddings")
    wte = g.param("wte", ["v", model])
    tokens = g.embedding("tok", ids, wte)
    wpe = g.param("wpe", [positions_dim, model])
    placed = g.embedding("pos", positions, wpe)
    x = g.add("embedded", tokens, placed)
    for layer in range(layers):
        name = f"h{layer}"
        g.blank()
        g.comment(f"block {layer}")
        a = self_attention(g, f"{name}_attn", layernorm(g, f"{name}_ln1", x), "t")
        x = g.add(f"{name}_res1", x, a)
        m = feed_forward(g, f"{name}_mlp", layernorm(g, f"{name}_ln2", x), "gelu")
        x = g.add(f"{name}_res2", x, m)

    g.blank()
    g.comment("final layernorm, output projection with the tied token embedding")
    x = layernorm(g, "ln_f", x)
    logits = g.einsum("logits", [x, wte], [batch, seq, "v"])
    g.ret(g.cross_entropy("loss", logits, labels, "v"))
    return g


# --- GPT-3- and LLaMA-shaped language models at any size ---------------------------------


@dataclass(frozen=True)
class LanguageModel:
    """The shape of a decoder-only language model: `layers` blocks of width `hidden` with
    `heads` attention heads (hidden / heads features each), a feed-forward of `ffn`
    (when 0, `feed_forward`: 4 x hidden, or LLaMA's rule), `sequence` tokens of
    context, a vocabulary of `vocabulary`, a global batch of `batch` sequences; `llama`
    for LLaMA's block (RMS norm, SwiGLU, no position table, untied output) instead of
    GPT's."""

    layers: int
    hidden: int
    heads: int
    sequence: int
    vocabulary: int
    batch: int
    ffn: int = 0
    llama: bool = False
    source: str = ""

    @property
    def feed_forward(self) -> int:
        """`ffn`, or by default GPT's 4 x hidden, and LLaMA's rule for its three-matrix
        SwiGLU block (2/3 of 4 x hidden rounded up to a multiple of 256: 11,008 for
        4,096, LLaMA-7B's).

            >>> LanguageModel(32, 4096, 32, 2048, 32000, 8, llama=True).feed_forward
            11008
        """
        if self.ffn:
            return self.ffn
        return -(-8 * self.hidden // (3 * 256)) * 256 if self.llama else 4 * self.hidden

    def parameters(self) -> int:
        """The trainable parameters (norm scales and biases included).

            >>> LANGUAGE_MODELS["megatron-1.7b"].parameters()
            1651732992
        """
        d, f, v = self.hidden, self.feed_forward, self.vocabulary
        if self.llama:
            return self.layers * (4 * d * d + 3 * d * f + 2 * d) + 2 * v * d + d
        return self.layers * (4 * d * d + 2 * d * f + 4 * d) + (v + self.sequence) * d + 2 * d


GPT3 = "GPT-3 (Brown et al. 2020, Table 2.1)"
MEGATRON = "Megatron-LM's scaling study (Narayanan et al. 2021, Table 1)"
LLAMA = "LLaMA (Touvron et al. 2023, Table 2)"


def _gpt3(layers: int, hidden: int, heads: int, batch: int) -> LanguageModel:
    """A GPT-3 row: context 2048, GPT-2's vocabulary of 50,257, the paper's batch in
    tokens as sequences of 2048 (0.5M is 256, 3.2M is 1536, as Megatron-LM trains 175B)."""
    return LanguageModel(layers, hidden, heads, 2048, 50257, batch, source=GPT3)


def _megatron(layers: int, hidden: int, heads: int, batch: int) -> LanguageModel:
    """A Megatron-LM row: context 2048, vocabulary 51,200."""
    return LanguageModel(layers, hidden, heads, 2048, 51200, batch, source=MEGATRON)


def _llama(layers: int, hidden: int, heads: int, ffn: int) -> LanguageModel:
    """A LLaMA row: context 2048, vocabulary 32,000, a batch of 4M tokens (2048
    sequences)."""
    return LanguageModel(layers, hidden, heads, 2048, 32000, 2048, ffn, llama=True,
                         source=LLAMA)


LANGUAGE_MODELS: dict[str, LanguageModel] = {
    # GPT-3's family. Two rows of the paper's table are not self-consistent, and the
    # presets keep d_model and d_head: 1.3B lists 24 heads of 128 for d_model 2048 (16
    # heads here) and 13B d_model 5140 with 40 heads of 128 (5120 here).
    "gpt3-125m": _gpt3(12, 768, 12, 256),
    "gpt3-350m": _gpt3(24, 1024, 16, 256),
    "gpt3-760m": _gpt3(24, 1536, 16, 256),
    "gpt3-1.3b": _gpt3(24, 2048, 16, 512),
    "gpt3-2.7b": _gpt3(32, 2560, 32, 512),
    "gpt3-6.7b": _gpt3(32, 4096, 32, 1024),
    "gpt3-13b": _gpt3(40, 5120, 40, 1024),
    "gpt3-175b": _gpt3(96, 12288, 96, 1536),
    # Megatron-LM's weak-scaling family, 1.7B on 32 GPUs to 1T on 3,072 (its batch).
    "megatron-1.7b": _megatron(24, 2304, 24, 512),
    "megatron-3.6b": _megatron(30, 3072, 32, 512),
    "megatron-7.5b": _megatron(36, 4096, 32, 512),
    "megatron-18b": _megatron(40, 6144, 48, 1024),
    "megatron-39b": _megatron(48, 8192, 64, 1536),
    "megatron-76b": _megatron(60, 10240, 80, 1792),
    "megatron-146b": _megatron(80, 12288, 96, 2304),
    "megatron-310b": _megatron(96, 16384, 128, 2160),
    "megatron-530b": _megatron(105, 20480, 128, 2520),
    "megatron-1t": _megatron(128, 25600, 160, 3072),
    "llama-7b": _llama(32, 4096, 32, 11008),
    "llama-13b": _llama(40, 5120, 40, 13824),
    "llama-65b": _llama(80, 8192, 64, 22016),
}


def graph_name(preset: str) -> str:
    """A preset's graph name: `megatron-1.7b` is `megatron_1p7b`."""
    return preset.replace("-", "_").replace(".", "p")


def language_model(shape: LanguageModel, name: str = "gpt") -> Graph:
    """The `.dnn` graph of `shape` named `name`: GPT's pre-layernorm blocks (GPT-2/3,
    Megatron-LM) or LLaMA's.

        >>> tiny = LanguageModel(2, 64, 4, 16, 128, 8)
        >>> g = language_model(tiny, "tiny")
        >>> g.layers, language_model(replace(tiny, llama=True), "tiny").layers
        (36, 40)
    """
    if shape.hidden % shape.heads:
        raise ValueError(f"hidden {shape.hidden} is not a multiple of heads {shape.heads}")
    g = Graph(name, textwrap.wrap(_describe(shape), 88))
    batch = g.dim("b", shape.batch, BATCH)
    seq = g.dim("s", shape.sequence, "sequence")
    g.dim("t", shape.sequence, "sequence")
    if not shape.llama:
        g.dim("p", shape.sequence, "sequence")
    model = model_dims(g, {"d": shape.hidden, "h": shape.heads,
                           "k": shape.hidden // shape.heads, "f": shape.feed_forward,
                           "v": shape.vocabulary})
    ids = g.input("ids", [batch, seq], "i32")
    positions = "" if shape.llama else g.input("positions", [seq], "i32")
    labels = g.input("labels", [batch, seq], "i32")
    g.blank()
    g.comment("token embeddings" if shape.llama else "token and position embeddings")
    wte = g.param("wte", ["v", model])
    x = g.embedding("tok", ids, wte)
    if not shape.llama:
        wpe = g.param("wpe", ["p", model])
        x = g.add("embedded", x, g.embedding("pos", positions, wpe))
    norm = rms_norm if shape.llama else layernorm
    for layer in range(shape.layers):
        name = f"h{layer}"
        g.blank()
        g.comment(f"block {layer}")
        a = self_attention(g, f"{name}_attn", norm(g, f"{name}_ln1", x), "t")
        x = g.add(f"{name}_res1", x, a)
        mlp = swiglu if shape.llama else lambda g, n, y: feed_forward(g, n, y, "gelu")
        x = g.add(f"{name}_res2", x, mlp(g, f"{name}_mlp", norm(g, f"{name}_ln2", x)))
    g.blank()
    g.comment("final norm, output projection" +
              ("" if shape.llama else " with the tied token embedding"))
    x = norm(g, "ln_f", x)
    out = g.param("output_w", ["v", model]) if shape.llama else wte
    logits = g.einsum("logits", [x, out], [batch, seq, "v"])
    g.ret(g.cross_entropy("loss", logits, labels, "v"))
    return g


def _describe(shape: LanguageModel) -> str:
    """The graph's comment: its shape, its source and what it leaves out."""
    size = parameter_count(shape)
    source = f", the shape of {shape.source}" if shape.source else ""
    common = (f"{shape.layers} blocks, d {shape.hidden}, {shape.heads} heads of "
              f"{shape.hidden // shape.heads}, feed-forward {shape.feed_forward} with "
              f"{'SwiGLU' if shape.llama else 'gelu'}, context {shape.sequence}, vocabulary "
              f"{shape.vocabulary}, global batch {shape.batch}. Linear maps without bias; no "
              "dropout; the causal mask only changes values and is left out.")
    if shape.llama:
        block = ("RMS norm (a scale, no bias) before each sub-block; SwiGLU's silu is x times "
                 "sigmoid(x); an untied output projection. Rotary position embeddings rotate "
                 "q and k position by position (no parameters, a few elementwise FLOPs per "
                 "element) and are left out. Dims: s is the sequence, t the same positions "
                 "as attention keys.")
    else:
        block = ("Pre-layernorm blocks, learned positions; the output projection reuses the "
                 "token embedding table, as GPT-2/3 and Megatron-LM tie them. Dims: s is the "
                 "sequence, t the same positions as attention keys, p the rows of the "
                 "position table.")
    kind = "LLaMA" if shape.llama else "GPT"
    return (f"A {kind}-shaped language model of {size} parameters{source}: {common} {block} "
            "Written by `python models/generate.py` from its arguments or a preset.")


def rms_norm(g: Graph, name: str, x: str) -> str:
    model = g.shape(x)[-1]
    scale = g.param(f"{name}_scale", [model])
    dims = shapes.rms_norm_shape(g.named(x), [g.named(scale)], [model]).dims
    return g.layer(name, f"rmsnorm %{x}, %{scale} over {model}", dims)


def swiglu(g: Graph, name: str, x: str) -> str:
    """LLaMA's feed-forward: (silu(x w1) * (x w3)) w2, silu(y) = y * sigmoid(y)."""
    batch, seq, model = g.shape(x)
    w1 = g.param(f"{name}_w1", [model, "f"])
    gate = g.einsum(f"{name}_gate", [x, w1], [batch, seq, "f"])
    sigmoid = g.unary(f"{name}_sigmoid", "sigmoid", gate)
    silu = g.binary(f"{name}_silu", "mul", gate, sigmoid)
    w3 = g.param(f"{name}_w3", [model, "f"])
    up = g.einsum(f"{name}_up", [x, w3], [batch, seq, "f"])
    hidden = g.binary(f"{name}_glu", "mul", silu, up)
    w2 = g.param(f"{name}_w2", ["f", model])
    return g.einsum(f"{name}_down", [hidden, w2], [batch, seq, model])


MAX_LAYERS = 100_000
"""The most blocks a generated model has: GPT-3's has 96, Megatron-LM's 1T 128."""

GENERATED = {
    "inception_v3.dnn": inception_v3,
    "resnet101.dnn": resnet101,
    "transformer.dnn": transformer,
    "gpt2_small.dnn": gpt2_small,
}


def parameter_count(shape: LanguageModel) -> str:
    """The parameters in 3 digits: `125M`, `1.65B`, `1.01T`."""
    count = shape.parameters()
    for scale, unit in ((1e12, "T"), (1e9, "B")):
        if count >= scale:
            return f"{count / scale:.3g}{unit}"
    return f"{count / 1e6:.3g}M"


def preset_table() -> str:
    """`--help`'s list of the presets, a line each with its shape and parameter count.

        >>> preset_table().splitlines()[2].split()
        ['gpt3-125m', '12', '768', '12', '3072', '2048', '50257', '256', '125M']
    """
    rows = ["presets (then --layers/--hidden/... override a field):",
            f"  {'preset':<14} {'layers':>6} {'hidden':>6} {'heads':>5} {'ffn':>6} "
            f"{'seq':>5} {'vocab':>6} {'batch':>5} {'params':>6}"]
    for preset, shape in LANGUAGE_MODELS.items():
        size = parameter_count(shape)
        rows.append(f"  {preset:<14} {shape.layers:>6} {shape.hidden:>6} {shape.heads:>5} "
                    f"{shape.feed_forward:>6} {shape.sequence:>5} {shape.vocabulary:>6} "
                    f"{shape.batch:>5} {size:>6}")
    return "\n".join(rows) + ("\nsources: " + "; ".join(sorted({s.source for s in
                                                                LANGUAGE_MODELS.values()})))


def main(argv: Sequence[str] | None = None) -> int:
    """Without arguments, rewrite the zoo's generated files; with a preset or a shape,
    write that language model (to `-o FILE`, or stdout)."""
    parser = UsageParser(
        description="Without arguments: rewrite the generated models of models/. With a "
                    "preset or --layers/--hidden/...: write a GPT- or LLaMA-shaped model.",
        epilog=preset_table(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preset", nargs="?", choices=list(LANGUAGE_MODELS), metavar="PRESET",
                        help="a language model preset (below); the options override its shape")
    for option, what in (("layers", "blocks"), ("hidden", "model width d"),
                         ("heads", "attention heads"), ("sequence", "context length"),
                         ("vocabulary", "vocabulary size"), ("batch", "global batch"),
                         ("ffn", "feed-forward width (default 4 x hidden; with --llama, "
                                 "LLaMA's 8/3 x hidden rounded up to a multiple of 256)")):
        parser.add_argument(f"--{option}", type=int, help=what)
    parser.add_argument("--llama", action="store_true", help="LLaMA's block instead of GPT's")
    parser.add_argument("--name", help="the graph's name (default: the preset's, or gpt)")
    parser.add_argument("-o", "--output", type=Path, help="where to write (default stdout)")
    args = parser.parse_args(argv)
    sizes = {option: getattr(args, option) for option in
             ("layers", "hidden", "heads", "sequence", "vocabulary", "batch", "ffn")
             if getattr(args, option) is not None}
    if args.preset is None and not sizes and not args.llama:
        for filename, build in GENERATED.items():
            graph = build()
            (MODELS / filename).write_text(graph.render())
            print(f"models/{filename}: {graph.layers} layers")
        return 0
    if args.preset is None:
        missing = [option for option in ("layers", "hidden", "heads", "sequence", "vocabulary",
                                         "batch") if option not in sizes]
        if missing:
            parser.error("without a preset, give " + ", ".join(f"--{m}" for m in missing))
    bad = [f"--{option} {value}" for option, value in sizes.items() if value < 1]
    if bad:
        parser.error(f"{bad[0]}: must be at least 1")
    if sizes.get("layers", 0) > MAX_LAYERS:  # (else it writes until the disk is full)
        parser.error(f"--layers {sizes['layers']}: at most {MAX_LAYERS:,} blocks")
    shape = LANGUAGE_MODELS[args.preset] if args.preset else LanguageModel(**sizes)
    shape = replace(shape, **sizes, llama=shape.llama or args.llama)
    name = args.name or (graph_name(args.preset) if args.preset else "gpt")
    try:
        text = language_model(shape, name).render()
    except ValueError as error:
        parser.error(str(error))
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomically(str(args.output), text)  # all or nothing
    except WriteError as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
