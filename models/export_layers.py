"""Export the layers a demanding PyTorch user hands over, each a small model on its own,
with the options people use (both exporters, opsets 17 to 20, dynamic batch axes, a
training-mode export), to one folder:

    python models/export_layers.py FOLDER                  # every case
    python models/export_layers.py FOLDER mha_causal_ts conv1d_dynamo
    python models/export_layers.py --list

Each case writes `FOLDER/NAME.onnx` (with `.data` beside it for the dynamo exporter) or
records the exporter's own failure in `FOLDER/NAME.export-failed`; `benchmarks/
torch_exports.py --matrix FOLDER/*` runs them through `pase-opt FILE -p
'pase-search{devices=8}'`, `pase-run FILE --devices 4 --scale 0.125 --check` and pase's
first loss against `onnx.reference`'s (benchmarks/RESULTS.md, branch torchx). The cases
named in `FIXTURES` are committed in models/onnx/ (`python models/export_layers.py
models/onnx --fixtures`, TorchScript exports: one self-contained file each) and tested by
tests/frontend/test_layer_exports.py. Needs torch; pase itself never imports this file.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch as base  # noqa: E402

B, S, D, V = 8, 16, 32, 64
F = nn.functional


class Block(nn.Module):
    """A GPT-2-style pre-norm decoder block: causal self-attention written out or by SDPA,
    an MLP with GELU (`approximate`: "tanh" as GPT-2, "none" the erf form)."""

    def __init__(self, approximate: str = "tanh", sdpa: bool = False) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.up, self.down = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.approximate, self.sdpa, self.heads = approximate, sdpa, 2
        self.register_buffer("causal", torch.tril(torch.ones(S, S, dtype=torch.bool)))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
            scores = scores.masked_fill(~self.causal[:s, :s], float("-inf"))
            y = scores.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, s, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate=self.approximate))


class TinyGpt(nn.Module):
    """Embedding and positions, two `Block`s, a final norm, the output layer tied to the
    embedding (`tied`) or its own."""

    def __init__(self, tied: bool = True, **block: Any) -> None:
        super().__init__()
        self.embedding, self.positions = nn.Embedding(V, D), nn.Embedding(S, D)
        self.blocks = nn.Sequential(Block(**block), Block(**block))
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        if tied:
            self.head.weight = self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids) + self.positions(torch.arange(ids.shape[1]))
        return self.head(self.norm(self.blocks(x)))


class HandNorms(nn.Module):
    """LayerNorm and RMSNorm written by hand, as nanoGPT/LLaMA code does, around linears."""

    def __init__(self, rms: bool) -> None:
        super().__init__()
        self.rms, self.eps = rms, 1e-5
        self.weight, self.bias = nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D))
        self.inner, self.head = nn.Linear(D, D), nn.Linear(D, 10)

    def norm(self, x: torch.Tensor) -> torch.Tensor:
        if self.rms:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(F.relu(self.inner(x))))


class Mlp(nn.Module):
    def __init__(self, activation: nn.Module, dropout: float = 0.0) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(D, 64), activation, nn.Dropout(dropout),
                                    nn.Linear(64, 64), activation, nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class SwiGlu(nn.Module):
    """LLaMA's MLP: down(silu(gate(x)) * up(x))."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(D, 64), nn.Linear(D, 64), nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Encoder(nn.Module):
    """One nn.TransformerEncoderLayer over `[b, s, d]` (transposed in and out when the
    layer is not batch_first), a linear head per token."""

    def __init__(self, batch_first: bool = True, **layer: Any) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(D, 2, 64, dropout=0.1, batch_first=batch_first,
                                                **layer)
        self.batch_first, self.head = batch_first, nn.Linear(D, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer(x) if self.batch_first else self.layer(x.transpose(0, 1)).transpose(0, 1)
        return self.head(y)


class Attention(nn.Module):
    """nn.MultiheadAttention self-attention, `mask`: None, "causal" (a bool attn_mask),
    "float" (an additive float attn_mask), "padding" (a key_padding_mask input: True where
    a key is padding), "keep" (an attention_mask input, 1 where a key is kept, turned into
    the key_padding_mask in `forward`)."""

    def __init__(self, batch_first: bool = True, mask: str | None = None,
                 need_weights: bool = False) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(D, 4, batch_first=batch_first)
        self.batch_first, self.mask, self.need_weights = batch_first, mask, need_weights
        causal = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
        self.register_buffer("causal", causal)
        self.register_buffer("additive", torch.zeros(S, S).masked_fill(causal, float("-inf")))
        self.head = nn.Linear(D, 10)

    def forward(self, x: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        x = x if self.batch_first else x.transpose(0, 1)
        mask = {"causal": self.causal, "float": self.additive}.get(self.mask or "")
        if self.mask == "keep":  # attention_mask's convention, 1 = keep: inverted here
            padding = (padding[0] == 0,)
        y, _ = self.attention(x, x, x, attn_mask=mask, need_weights=self.need_weights,
                              key_padding_mask=padding[0] if padding else None)
        return self.head(y if self.batch_first else y.transpose(0, 1))


class Recurrent(nn.Module):
    def __init__(self, kind: str, **options: Any) -> None:
        super().__init__()
        self.embedding = nn.Embedding(V, D)
        self.rnn = getattr(nn, kind)(D, options.pop("hidden", D), **options)
        width = self.rnn.hidden_size * (2 if self.rnn.bidirectional else 1)
        self.head, self.batch_first = nn.Linear(width, V), self.rnn.batch_first

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids if self.batch_first else ids.t())
        y = self.rnn(x)[0]
        return self.head(y if self.batch_first else y.transpose(0, 1))


class Conv1d(nn.Module):
    """Conv1d with padding, stride and groups, BatchNorm1d, pooling, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv1d(4, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 16, 3, stride=2, padding=1, groups=4), nn.ReLU(),
            nn.MaxPool1d(2), nn.Conv1d(16, 16, 3, padding="same", groups=16),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Conv2d(nn.Module):
    """Conv2d with padding, stride and groups, BatchNorm2d, max and average pooling."""

    def __init__(self, **conv: Any) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1), nn.Conv2d(16, 16, 3, **({"padding": 1} | conv)),
            nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Shapes(nn.Module):
    """flatten / reshape / permute / transpose chains between linears (a patch embedding
    by reshape and permute, a head over the flattened tokens)."""

    def __init__(self) -> None:
        super().__init__()
        self.patch, self.mix = nn.Linear(3 * 4 * 4, D), nn.Linear(D, D)
        self.head = nn.Linear(D * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        x = x.reshape(b, 3, 4, 4, 4, 4).permute(0, 2, 4, 1, 3, 5).reshape(b, 16, 48)
        x = self.patch(x).transpose(1, 2)                    # [b, d, tokens]
        x = self.mix(x.transpose(-1, -2)).permute(0, 2, 1)   # [b, d, tokens]
        return self.head(torch.flatten(x.transpose(1, 2), 1))


class Einsum(nn.Module):
    """Attention and a bilinear layer written with torch.einsum."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (nn.Parameter(torch.randn(D, 2, 16) / D**0.5) for _ in "qkv")
        self.out = nn.Parameter(torch.randn(2, 16, 10) / 32**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (torch.einsum("bsd,dhe->bhse", x, w) for w in (self.q, self.k, self.v))
        a = torch.einsum("bhse,bhte->bhst", q, k).softmax(-1)
        return torch.einsum("bhst,bhte,hec->bsc", a, v, self.out)


def features(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(B, *shape),)


def with_padding() -> tuple[torch.Tensor, ...]:
    return (torch.randn(B, S, D), torch.arange(S)[None, :] >= torch.arange(S - B, S)[:, None])


def with_keep() -> tuple[torch.Tensor, ...]:
    return (torch.randn(B, S, D), (torch.arange(S)[None, :] < torch.arange(S, S - B, -1)[:, None])
            .long())


def small_resnet() -> nn.Module:
    return base.narrow_resnet("basic", [1, 1, 1, 1], divisor=8)


def resnet_block() -> nn.Module:
    """torchvision's BasicBlock with a stride-2 downsample (1x1 conv and BatchNorm), a head."""
    from torchvision.models.resnet import BasicBlock

    down = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
    return nn.Sequential(BasicBlock(8, 16, stride=2, downsample=down),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


IDS = lambda: (torch.randint(0, V, (B, S)),)  # noqa: E731
TOKENS = features(S, D)
TS17 = {"dynamo": False, "opset_version": 17}
CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple], dict[str, Any]]] = {
    "resnet_block": (resnet_block, features(8, 16, 16), {}),
    "small_resnet": (small_resnet, features(3, 32, 32), {}),
    "encoder": (Encoder, TOKENS, {}),
    "encoder_seq_first": (lambda: Encoder(False), TOKENS, {}),
    "encoder_gelu_norm_first": (lambda: Encoder(activation="gelu", norm_first=True),
                                TOKENS, {}),
    "mha": (Attention, TOKENS, {}),
    "mha_seq_first": (lambda: Attention(False), TOKENS, {}),
    "mha_weights": (lambda: Attention(need_weights=True), TOKENS, {}),
    "mha_causal": (lambda: Attention(mask="causal"), TOKENS, {}),
    "mha_causal_seq_first": (lambda: Attention(False, "causal"), TOKENS, {}),
    "mha_float_mask": (lambda: Attention(mask="float"), TOKENS, {}),
    "mha_padding": (lambda: Attention(mask="padding"), with_padding, {}),
    "mha_keep": (lambda: Attention(mask="keep"), with_keep, {}),
    "gpt_tanh": (TinyGpt, IDS, {}),
    "gpt_erf": (lambda: TinyGpt(approximate="none"), IDS, {}),
    "gpt_sdpa_untied": (lambda: TinyGpt(tied=False, sdpa=True), IDS, {}),
    "layernorm_by_hand": (lambda: HandNorms(False), TOKENS, {}),
    "rmsnorm_by_hand": (lambda: HandNorms(True), TOKENS, {}),
    "mlp_silu": (lambda: Mlp(nn.SiLU()), features(D), {}),
    "mlp_gelu": (lambda: Mlp(nn.GELU()), features(D), {}),
    "swiglu": (SwiGlu, TOKENS, {}),
    "lstm": (lambda: Recurrent("LSTM", batch_first=True), IDS, {}),
    "lstm_seq_first": (lambda: Recurrent("LSTM"), IDS, {}),
    "lstm_bidirectional": (lambda: Recurrent("LSTM", batch_first=True, bidirectional=True),
                           IDS, {}),
    "lstm_hidden16": (lambda: Recurrent("LSTM", batch_first=True, hidden=16), IDS, {}),
    "gru": (lambda: Recurrent("GRU", batch_first=True), IDS, {}),
    "rnn_tanh": (lambda: Recurrent("RNN", batch_first=True), IDS, {}),
    "conv1d": (Conv1d, features(4, 32), {}),
    "conv2d": (Conv2d, features(3, 16, 16), {}),
    "conv2d_dilated": (lambda: Conv2d(dilation=2, padding=2), features(3, 16, 16), {}),
    "shapes": (Shapes, features(3, 16, 16), {}),
    "einsum": (Einsum, TOKENS, {}),
}
"""name: (model, example inputs, extra export options); each is exported by both
exporters (`_dynamo`: its default opset, 20 in torch 2.14; `_ts`: `dynamo=False,
opset_version=17`)."""

OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "gpt_tanh_ts_opset18": ("gpt_tanh", {"dynamo": False, "opset_version": 18}),
    "gpt_tanh_ts_opset20": ("gpt_tanh", {"dynamo": False, "opset_version": 20}),
    "gpt_tanh_dynamo_opset18": ("gpt_tanh", {"opset_version": 18}),
    "encoder_ts_opset20": ("encoder", {"dynamo": False, "opset_version": 20}),
    "encoder_dynamo_opset18": ("encoder", {"opset_version": 18}),
    "conv2d_ts_opset18": ("conv2d", {"dynamo": False, "opset_version": 18}),
    "conv2d_dynamo_opset18": ("conv2d", {"opset_version": 18}),
    "encoder_ts_dynamic_axes": ("encoder", {**TS17, "input_names": ["x"],
                                            "dynamic_axes": {"x": {0: "batch"}}}),
    "encoder_dynamo_dynamic_shapes": ("encoder", {"dynamic_shapes": (
        {0: torch.export.Dim("batch")},)}),
    "gpt_tanh_ts_dynamic_axes": ("gpt_tanh", {**TS17, "input_names": ["ids"],
                                              "dynamic_axes": {"ids": {0: "batch"}}}),
    "gpt_tanh_dynamo_dynamic_shapes": ("gpt_tanh", {"dynamic_shapes": (
        {0: torch.export.Dim("batch")},)}),
    "mlp_gelu_ts_dynamic_axes": ("mlp_gelu", {**TS17, "input_names": ["x"],
                                              "dynamic_axes": {"x": {0: "batch"}}}),
    "dropout_ts_training": ("dropout", {**TS17, "training": torch.onnx.TrainingMode.TRAINING}),
    "dropout_dynamo_training": ("dropout", {}),
    "dropout_ts_eval": ("dropout", TS17),
    "dropout_dynamo_eval": ("dropout", {}),
}
"""More export options of some cases: name: (case, options); "training" exports the
model in train mode (its dropout, and batch norm's batch statistics), "eval" in eval mode."""

CASES["dropout"] = (lambda: Mlp(nn.GELU(), dropout=0.5), features(D), {})

FIXTURES = {"einsum": "einsum_ts", "mha_keep": "mha_keep_ts", "mha_padding": "mha_padding_ts",
            "conv1d": "conv1d_ts", "encoder_dynamic_batch": "encoder_ts_dynamic_axes"}
"""The exports committed in models/onnx/ as `STEM.torchscript.onnx` (small, self-contained
TorchScript exports), each once refused by pase's import: torch.einsum; nn.Conv1d,
MaxPool1d and AdaptiveAvgPool1d; an nn.TransformerEncoderLayer exported with a symbolic
batch (`dynamic_axes`), whose shape computations read it; nn.MultiheadAttention given an
attention_mask (1 = keep) turned into its key_padding_mask, and given the
key_padding_mask itself (true = padding), one error saying how to export it."""


def export(name: str, folder: str, path: str | None = None) -> str | None:
    """Write one export (to `path`, else `FOLDER/NAME.onnx`); the exporter's own failure,
    if it failed."""
    if name in OPTIONS:
        case, options = OPTIONS[name]
    else:
        case, exporter = name.rsplit("_", 1)
        options = dict(TS17) if exporter == "ts" else {}
    build, example, extra = CASES[case]
    torch.manual_seed(0)
    model = build()
    model = model.train() if name.endswith("_training") else model.eval()
    path = path or os.path.join(folder, f"{name}.onnx")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, example(), path, **extra, **options)
    except Exception as error:  # the exporter's own failure: recorded, not fatal
        message = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        with open(os.path.join(folder, f"{name}.export-failed"), "w") as file:
            file.write(message + "\n")
        return message
    base.without_stack_traces(path)
    return None


NAMES = [f"{case}_{exporter}" for case in CASES if case != "dropout"
         for exporter in ("dynamo", "ts")] + list(OPTIONS)


def main(argv: list[str]) -> int:
    """Export the cases named (all by default), or `--fixtures`, or `--list` them."""
    if argv[:1] == ["--list"] or not argv:
        print("\n".join(NAMES) if argv else __doc__)
        return 0 if argv else 1
    folder = argv[0]
    os.makedirs(folder, exist_ok=True)
    if argv[1:] == ["--fixtures"]:
        paths = {name: os.path.join(folder, f"{stem}.torchscript.onnx")
                 for stem, name in FIXTURES.items()}
    else:
        paths = {name: os.path.join(folder, f"{name}.onnx") for name in argv[1:] or NAMES}
    failed = 0
    for name, path in paths.items():
        failure = export(name, folder, path)
        failed += failure is not None
        print(f"{os.path.basename(path)}: {failure or 'ok'}", flush=True)
    return 1 if failed and argv[1:] == ["--fixtures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
