"""Export small versions of models users train that `export_torch.py`'s fixtures lack, with
both exporters, as a user would (random seeded weights, batch 8, static shapes):

    pip install -e '.[torch]'
    python models/export_trained.py models/onnx              # every model, both exporters
    python models/export_trained.py models/onnx llama bart   # some of them

Each writes `NAME.dynamo.onnx` (+ `.data`) and `NAME.torchscript.onnx` where the exporter
succeeds (one stderr line per exporter that fails, exit status 1 if any did). The models:

- Hugging Face's decoder LMs from small configs (2 layers, 32 wide, 64 words, 16
  positions): `llama` (RMS norm, rotary embeddings, SiLU-gated MLP), `llama_tied`
  (grouped-query attention, 4 heads over 2 key-value heads, its head tied to the
  embedding), `mistral` (Llama's layers with a sliding window longer than the sequence),
  `qwen2` (biases on q, k and v), `gemma` (GELU-tanh gated MLP, RMS norm scaled by
  1 + w, the embedding scaled by sqrt(d)), `mixtral` (Mixtral's sparse MLP with one
  expert: its router's softmax and top-1 of one); each forward passes an attention_mask
  of ones made inside the model (the TorchScript exporter fails on `aten::diff`
  without one);
- encoder-decoders: `bart` (BartForConditionalGeneration: learned positions, post-norm,
  GELU), given input ids and decoder ids;
- `hf_vit`: Hugging Face's ViTForImageClassification (32x32 images, 8x8 patches);
- `cnn_bn` and `cnn_bn_train`: a Conv-BatchNorm-ReLU network exported in eval mode and
  in training mode (`model.train()`, and `training=TrainingMode.TRAINING` for the
  TorchScript exporter);
- `encoder_batch_first` and `encoder_seq_first`: nn.TransformerEncoder (2 layers, GELU,
  dropout 0.1) with batch_first=True and False;
- `dropout_train`: an MLP with nn.Dropout(0.5), exported in training mode;
- `rope_lm`: a hand-written pre-norm decoder as users write one: torch's nn.RMSNorm,
  rotary embeddings (rotate-half), GELU with the tanh approximation in a SwiGLU-style
  gated MLP, a head tied to the embedding.

The export calls are docs/pytorch.md's (`export_torch.py`'s `export_both`). Needs torch;
pase itself never imports this file.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torch import (  # noqa: E402  (torch from there: it says how to install it)
    SEQUENCE,
    VOCABULARY,
    Logits,
    export_main,
    ids,
    image,
    nn,
    torch,
)

F = nn.functional
WIDTH = 32

DECODER = {"vocab_size": VOCABULARY, "hidden_size": WIDTH, "intermediate_size": 64,
           "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
           "max_position_embeddings": SEQUENCE, "use_cache": False}
"""The small config of the Hugging Face decoder LMs (LlamaConfig's names, which Mistral,
Qwen2, Gemma and Mixtral share)."""


def hf_lm(config_name: str, model_name: str, **config: Any) -> Callable[[], nn.Module]:
    """A Hugging Face causal LM from `DECODER | config`, called with a ones
    attention_mask (`Logits(..., "ones")`)."""

    def build() -> nn.Module:
        import transformers

        made = getattr(transformers, config_name)(**(DECODER | config))
        return Logits(getattr(transformers, model_name)(made), "ones")

    return build


class HfLoss(nn.Module):
    """A Hugging Face model as its training step calls it, `model(input_ids=ids,
    labels=labels).loss` (a causal LM shifts the labels by one inside), with a ones
    attention_mask where `ones`."""

    def __init__(self, model: nn.Module, ones: bool = False) -> None:
        super().__init__()
        self.model, self.ones = model, ones

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        mask = {"attention_mask": torch.ones_like(ids)} if self.ones else {}
        return self.model(input_ids=ids, labels=labels, **mask).loss


def hf_loss(config_name: str, model_name: str, base: dict[str, Any],
            **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        made = getattr(transformers, config_name)(**(base | config))
        return HfLoss(getattr(transformers, model_name)(made), base is DECODER)

    return build


def ids_and_labels() -> tuple[torch.Tensor, ...]:
    """Ids and labels, the last 3 positions of each row ignored (-100)."""
    labels = torch.randint(0, VOCABULARY, (8, SEQUENCE))
    labels[:, -3:] = -100
    return (*ids(), labels)


def bart() -> nn.Module:
    from transformers import BartConfig, BartForConditionalGeneration

    return Logits(BartForConditionalGeneration(BartConfig(
        vocab_size=VOCABULARY, d_model=WIDTH, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=SEQUENCE, use_cache=False)))


class ImageLogits(nn.Module):
    """A Hugging Face image classifier with its logits as the one output."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).logits


def hf_image(config_name: str, model_name: str, **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        made = getattr(transformers, config_name)(**config)
        return ImageLogits(getattr(transformers, model_name)(made))

    return build


hf_vit = hf_image("ViTConfig", "ViTForImageClassification", hidden_size=WIDTH,
                  num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                  image_size=32, patch_size=8, num_labels=10)

ENCODER = {"vocab_size": VOCABULARY, "hidden_size": WIDTH, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 64,
           "max_position_embeddings": SEQUENCE}


def hf_encoder(config_name: str, model_name: str, **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        made = getattr(transformers, config_name)(**(ENCODER | config))
        return Logits(getattr(transformers, model_name)(made))

    return build


class ClipVision(nn.Module):
    """CLIP's vision tower and projection: the image embeddings as the output."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

        self.model = CLIPVisionModelWithProjection(CLIPVisionConfig(
            hidden_size=WIDTH, intermediate_size=64, projection_dim=16, num_hidden_layers=2,
            num_attention_heads=2, image_size=32, patch_size=8))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).image_embeds


def clip_vision() -> nn.Module:
    return ClipVision()


MELS, FRAMES = 8, 32


class Whisper(nn.Module):
    """Whisper (its Conv1d/GELU audio stem, encoder and decoder): log-mel frames and
    decoder ids in, the logits out."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import WhisperConfig, WhisperForConditionalGeneration

        self.model = WhisperForConditionalGeneration(WhisperConfig(
            vocab_size=VOCABULARY, num_mel_bins=MELS, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=2, decoder_attention_heads=2, d_model=WIDTH,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=FRAMES // 2,
            max_target_positions=SEQUENCE, pad_token_id=0, bos_token_id=1, eos_token_id=2,
            decoder_start_token_id=1, use_cache=False))

    def forward(self, features: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_features=features, decoder_input_ids=ids).logits


def whisper() -> nn.Module:
    return Whisper()


def whisper_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(8, MELS, FRAMES), *ids())


def cnn_bn() -> nn.Module:
    """Two Conv-BatchNorm-ReLU stages, a pool and a linear head."""
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                         nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
                         nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 10))


class Encoder(nn.Module):
    """nn.TransformerEncoder (2 GELU layers, dropout 0.1) over embedded ids, a linear
    head over the vocabulary per token; `batch_first` as given."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 2, 64, dropout=0.1, activation="gelu",
                                           batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCABULARY)
        self.batch_first = batch_first

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.batch_first:
            return self.head(self.encoder(self.embedding(ids)))
        return self.head(self.encoder(self.embedding(ids.t()))).transpose(0, 1)


def dropout_mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(64, 10))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class RopeBlock(nn.Module):
    """A pre-norm decoder block: nn.RMSNorm, causal attention (SDPA) on rotary-embedded
    q and k, a gated MLP down(gelu_tanh(gate(x)) * up(x))."""

    def __init__(self, heads: int = 2) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(WIDTH, eps=1e-5), nn.RMSNorm(WIDTH, eps=1e-5)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.gate, self.up = nn.Linear(WIDTH, 64, bias=False), nn.Linear(WIDTH, 64, bias=False)
        self.down = nn.Linear(64, WIDTH, bias=False)
        self.heads = heads

    def attention(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(d, dim=-1))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), cos, sin)
        h = self.norm2(x)
        return x + self.down(F.gelu(self.gate(h), approximate="tanh") * self.up(h))


class RopeLm(nn.Module):
    """An embedding, two `RopeBlock`s with rotary tables of `SEQUENCE` positions, a final
    nn.RMSNorm and a head tied to the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.blocks = nn.ModuleList([RopeBlock(), RopeBlock()])
        self.norm = nn.RMSNorm(WIDTH, eps=1e-5)
        self.head = nn.Linear(WIDTH, VOCABULARY, bias=False)
        self.head.weight = self.embedding.weight
        half = WIDTH // 2 // 2
        frequencies = 1.0 / (10000 ** (torch.arange(half).float() / half))
        angles = torch.outer(torch.arange(SEQUENCE).float(), frequencies)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids) * math.sqrt(WIDTH)
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        return self.head(self.norm(x))


def pixels(size: int = 16) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: image(size)


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "llama": (hf_lm("LlamaConfig", "LlamaForCausalLM"), ids),
    "llama_tied": (hf_lm("LlamaConfig", "LlamaForCausalLM", num_attention_heads=4,
                         tie_word_embeddings=True), ids),
    "mistral": (hf_lm("MistralConfig", "MistralForCausalLM", sliding_window=4 * SEQUENCE),
                ids),
    "qwen2": (hf_lm("Qwen2Config", "Qwen2ForCausalLM"), ids),
    "gemma": (hf_lm("GemmaConfig", "GemmaForCausalLM", head_dim=16), ids),
    "mixtral": (hf_lm("MixtralConfig", "MixtralForCausalLM", num_local_experts=1,
                      num_experts_per_tok=1), ids),
    "qwen3": (hf_lm("Qwen3Config", "Qwen3ForCausalLM", head_dim=16), ids),
    "gemma2": (hf_lm("Gemma2Config", "Gemma2ForCausalLM", head_dim=16,
                     sliding_window=4 * SEQUENCE), ids),
    "phi3": (hf_lm("Phi3Config", "Phi3ForCausalLM", pad_token_id=0, bos_token_id=1,
                   eos_token_id=2), ids),
    "gpt_neox": (hf_lm("GPTNeoXConfig", "GPTNeoXForCausalLM", rotary_pct=0.5), ids),
    "olmo": (hf_lm("OlmoConfig", "OlmoForCausalLM", pad_token_id=0, bos_token_id=1,
                   eos_token_id=2), ids),
    "llama_loss": (hf_loss("LlamaConfig", "LlamaForCausalLM", DECODER), ids_and_labels),
    "bert_loss": (hf_loss("BertConfig", "BertForMaskedLM", ENCODER), ids_and_labels),
    "bart": (bart, lambda: ids(2)),
    "whisper": (whisper, whisper_inputs),
    "electra": (hf_encoder("ElectraConfig", "ElectraForMaskedLM", embedding_size=16), ids),
    "deberta_v2": (hf_encoder("DebertaV2Config", "DebertaV2ForMaskedLM"), ids),
    "hf_resnet": (hf_image("ResNetConfig", "ResNetForImageClassification",
                           embedding_size=4, hidden_sizes=[4, 8, 16, 32], depths=[1, 1, 1, 1],
                           layer_type="basic", num_labels=10), pixels(32)),
    "deit": (hf_image("DeiTConfig", "DeiTForImageClassification", hidden_size=WIDTH,
                      num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      image_size=32, patch_size=8, num_labels=10), image),
    "clip_vision": (clip_vision, image),
    "hf_vit": (hf_vit, image),
    "cnn_bn": (cnn_bn, pixels()),
    "cnn_bn_train": (cnn_bn, pixels()),
    "encoder_batch_first": (lambda: Encoder(True), ids),
    "encoder_seq_first": (lambda: Encoder(False), ids),
    "dropout_train": (dropout_mlp, pixels(8)),
    "rope_lm": (RopeLm, ids),
}
"""name: (model, example inputs); names ending in `_train` are exported in training mode."""

TRAINING = tuple(name for name in MODELS if name.endswith("_train"))

if __name__ == "__main__":
    sys.exit(export_main(sys.argv[1:], __doc__ or "", MODELS, {}, TRAINING))
