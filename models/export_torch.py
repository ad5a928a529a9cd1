"""Export small versions of PyTorch architectures to ONNX, with both exporters, as a
user would: random (seeded) weights, eval mode, batch 8, static shapes.

    pip install -e '.[torch]'                        # torch, torchvision, transformers
    python models/export_torch.py models/onnx        # writes NAME.dynamo.onnx (+ .data)
                                                     # and NAME.torchscript.onnx per model
    python models/export_torch.py models/onnx resnet18 gpt2
    python models/export_torch.py --full ../full-exports resnet50 gpt2_s128 bert_mask
                                                     # the full-size architectures
                                                     # (never commit these: up to 0.5 GB)

The two calls are the ones docs/pytorch.md gives:

    torch.onnx.export(model, args, "m.dynamo.onnx")        # the default (dynamo) exporter,
                                                           # weights in m.dynamo.onnx.data
    torch.onnx.export(model, args, "m.torchscript.onnx", dynamo=False, opset_version=17)

The architectures are the real classes (torchvision's ResNet, MobileNetV2, VisionTransformer,
VGG; Hugging Face's GPT2LMHeadModel, BertForMaskedLM, T5ForConditionalGeneration) built from
small configurations, so that the files stay small (pase's tests import them; nothing is
downloaded). `classifier_loss` is a small classifier exported with its loss, as users export
a training module: `forward(image, labels)` returns `cross_entropy(model(image), labels)`;
`token_loss` a token classifier with its loss over labels some of which are ignored (-100).
`bert_mask` and `gpt2_mask` are BERT and GPT-2 exported as Hugging Face's default call
passes a padding mask, `(input_ids, attention_mask)` (row i keeps 16 - i tokens), with
weights of std 0.5 (`MASKED_INIT`) so that the mask changes the loss. `lenet` (LeakyReLU),
`mobilenet_v3` (torchvision's MobileNetV3-Small, its first blocks: Hardswish, Hardsigmoid)
and `unet` (nn.ConvTranspose2d and nn.Upsample) need the operators of branch onnx12;
`llama_fp16`, `llama_bf16` and `gpt_bf16` are LLaMA and export_layers.py's GPT-2-style
decoder in half precision (`model.half()`, `.to(torch.bfloat16)`), which pase reads as
their float32 master copy (the TorchScript exporter fails on LLaMA in bfloat16).
With `--full`, the architectures are exported at their real sizes instead (torchvision's
constructors as they are, 224x224 images; an LSTM language model of 10k words, 2 layers of
1024, 64 steps; `resnet18_loss`, ResNet-18 exported with its loss, cross-entropy against
`labels` with PyTorch's default ignore_index), for measuring pase on them (docs/pytorch.md,
benchmarks/RESULTS.md). Needs torch; pase itself
never imports this file.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

try:
    import torch
    from torch import nn
except ImportError:  # one line, exit 1, as every pase script's usage error
    print("export_torch.py: error: exporting needs torch: pip install -e '.[torch]'",
          file=sys.stderr)
    sys.exit(1)

import onnx  # noqa: E402  (after torch: without it, the error comes first and fast)

BATCH = 8
SEQUENCE = 16
VOCABULARY = 64
FULL_SEQUENCE = 64
FULL_VOCABULARY = 10_000


class LstmLanguageModel(nn.Module):
    """Embedding, a two-layer nn.LSTM (one ONNX LSTM node per layer), a linear head over
    the vocabulary; 64 words and 32 wide for the fixture, 10k words and 1024 wide (a
    realistic size) with `--full`."""

    def __init__(self, vocabulary: int = VOCABULARY, width: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, batch_first=True)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embedding(ids))
        return self.head(hidden)


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 32), nn.ReLU(),
                                    nn.Linear(32, 10))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.layers(image)


class FullMlp(nn.Module):
    """A CIFAR-sized perceptron: 3x32x32 images, two hidden layers of 4096."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 4096), nn.ReLU(),
                                    nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.layers(image)


class WithLoss(nn.Module):
    """A classifier as a training module: its loss, mean cross-entropy against `labels`."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, image: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.model(image), labels)


class TokenLoss(nn.Module):
    """A token classifier exported with its loss, as a masked LM's training module: an
    embedding, a linear layer to 10 classes per token, then `nll_loss(log_softmax(z))` of
    the flattened tokens against `labels` [batch, sequence] whose positions to skip are
    -100 (PyTorch's default `ignore_index`, as Hugging Face marks padding and unmasked
    tokens). The dynamo exporter writes LogSoftmax and NegativeLogLikelihoodLoss, the
    TorchScript exporter one SoftmaxCrossEntropyLoss, each with ignore_index=-100."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        scores = nn.functional.log_softmax(self.head(self.embedding(ids)), dim=-1)
        return nn.functional.nll_loss(scores.reshape(-1, 10), labels.reshape(-1),
                                      ignore_index=-100)


class Logits(nn.Module):
    """A Hugging Face model with its logits as the one output; with `masked`, its second
    input is the attention_mask (as users often pass it), else T5's decoder ids; with
    `ones`, an attention_mask of ones made inside the model (a constant the import folds:
    GPT-2 exports with the TorchScript exporter only so, which fails on `aten::diff`
    without an attention_mask)."""

    def __init__(self, model: nn.Module, masked: bool | str = False) -> None:
        super().__init__()
        self.model = model
        self.masked = masked

    def forward(self, *ids: torch.Tensor) -> torch.Tensor:
        if self.masked == "ones":
            return self.model(input_ids=ids[0], attention_mask=torch.ones_like(ids[0])).logits
        if self.masked:
            return self.model(input_ids=ids[0], attention_mask=ids[1]).logits
        if len(ids) == 2:
            return self.model(input_ids=ids[0], decoder_input_ids=ids[1]).logits
        return self.model(input_ids=ids[0]).logits


def narrow_resnet(block: str, layers: list[int], divisor: int = 16) -> nn.Module:
    """torchvision's ResNet with its widths divided by `divisor` (64 -> 4 at the stem)."""
    from torchvision.models import resnet

    block_class = resnet.BasicBlock if block == "basic" else resnet.Bottleneck

    class NarrowResNet(resnet.ResNet):
        def _make_layer(self, block: Any, planes: int, blocks: int, stride: int = 1,
                        dilate: bool = False) -> nn.Sequential:
            if planes == 64:
                self.inplanes = 64 // divisor
            return super()._make_layer(block, planes // divisor, blocks, stride, dilate)

    model = NarrowResNet(block_class, layers, num_classes=10)
    model.conv1 = nn.Conv2d(3, 64 // divisor, 7, 2, 3, bias=False)
    model.bn1 = nn.BatchNorm2d(64 // divisor)
    model.fc = nn.Linear(512 * block_class.expansion // divisor, 10)
    return model


def vgg11() -> nn.Module:
    """torchvision's VGG with the VGG11 layer list at 1/16 width and a small classifier."""
    from torchvision.models import vgg

    config = [c if c == "M" else c // 16 for c in vgg.cfgs["A"]]
    model = vgg.VGG(vgg.make_layers(config, batch_norm=False), num_classes=10)
    model.avgpool = nn.Identity()
    model.classifier = nn.Sequential(nn.Linear(32, 32), nn.ReLU(True), nn.Linear(32, 10))
    return model


def mobilenet_v2() -> nn.Module:
    """torchvision's MobileNetV2 at width 0.25, its last 1x1 convolution 64 wide (not 1280)."""
    from torchvision.models import mobilenet_v2
    from torchvision.ops import Conv2dNormActivation

    model = mobilenet_v2(width_mult=0.25, num_classes=10)
    last = model.features[-1][0]
    model.features[-1] = Conv2dNormActivation(last.in_channels, 64, kernel_size=1,
                                              activation_layer=nn.ReLU6)
    model.classifier[-1] = nn.Linear(64, 10)
    return model


def vit() -> nn.Module:
    """torchvision's VisionTransformer at a small size (2 layers, 32 wide, 32x32 images of
    four 16x16 patches), its head drawn at random instead of torchvision's zeros: with a
    zero head every other gradient is zero, and a check would see nothing of the rest."""
    from torchvision.models import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
    nn.init.normal_(model.heads.head.weight, std=0.5)
    nn.init.normal_(model.class_token, std=0.5)
    return model


def image(size: int = 32) -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, 3, size, size),)


def ids(count: int = 1) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randint(0, VOCABULARY, (BATCH, SEQUENCE)) for _ in range(count))


def image_and_labels() -> tuple[torch.Tensor, ...]:
    return (*image(16), torch.randint(0, 10, (BATCH,)))


def ids_and_labels() -> tuple[torch.Tensor, ...]:
    """Token ids and labels, the last 3 positions of each row ignored (-100)."""
    labels = torch.randint(0, 10, (BATCH, SEQUENCE))
    labels[:, -3:] = -100
    return (*ids(), labels)


def small_classifier() -> nn.Module:
    """A few-KB classifier (a 3x3 convolution, a pool, a linear layer) with its loss."""
    return WithLoss(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10)))


MASKED_INIT = 0.5
"""The weights' std of the fixtures exported with an attention_mask (Hugging Face's
default, 0.02, makes attention nearly uniform at init, so that a padding mask moves the
loss by only 1e-5 of itself; at 0.5 it is sharp and the mask matters)."""


def gpt2(masked: bool = False) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return Logits(GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCABULARY, n_positions=SEQUENCE, n_embd=32, n_layer=2, n_head=2,
        use_cache=False, **({"initializer_range": MASKED_INIT} if masked else {}))), masked)


def bert(masked: bool = False) -> nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    return Logits(BertForMaskedLM(BertConfig(
        vocab_size=VOCABULARY, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=SEQUENCE,
        **({"initializer_range": MASKED_INIT} if masked else {}))), masked)


def t5() -> nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    return Logits(T5ForConditionalGeneration(T5Config(
        vocab_size=VOCABULARY, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
        use_cache=False)))


class LeNet(nn.Module):
    """LeNet-5 on 28x28 digits: tanh and sigmoid convolutions, average and max pooling,
    a LeakyReLU (exported as the LeakyRelu node) in its head."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
                                      nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.LeakyReLU(0.1),
                                  nn.Linear(32, 10))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(image))


class SmallUnet(nn.Module):
    """A two-level U-Net for per-pixel classes (5): convolutions with batch norm, a max
    pool, the up path by nn.ConvTranspose2d(16, 8, 2, stride=2) (ConvTranspose) and by
    nn.Upsample(scale_factor=2) (Resize, nearest), the skip concatenated; its scores as
    `[b, h, w, classes]`."""

    def __init__(self) -> None:
        super().__init__()

        def block(inputs: int, outputs: int) -> nn.Module:
            return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1),
                                 nn.BatchNorm2d(outputs), nn.ReLU())

        self.down1, self.down2, self.pool = block(3, 8), block(8, 16), nn.MaxPool2d(2)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.upsample = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(16, 8, 1))
        self.merge, self.out = block(16, 8), nn.Conv2d(8, 5, 1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        skip = self.down1(image)
        low = self.down2(self.pool(skip))
        y = self.merge(torch.cat([skip, self.up(low) + self.upsample(low)], 1))
        return self.out(y).permute(0, 2, 3, 1)


def mobilenet_v3() -> nn.Module:
    """torchvision's MobileNetV3-Small at width 0.25, its first four blocks (squeeze-and-
    excitation with Hardsigmoid, Hardswish), a 64-wide classifier drawn at std 0.5 (at
    torchvision's 0.01 the logits are all but equal)."""
    from torchvision.models import mobilenetv3

    blocks, _ = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    model = mobilenetv3.MobileNetV3(blocks[:4], last_channel=64, num_classes=10)
    for layer in (model.classifier[0], model.classifier[-1]):
        nn.init.normal_(layer.weight, std=0.5)
    return model


def llama_half(dtype: torch.dtype) -> nn.Module:
    """Hugging Face's LLaMA (2 layers, 32 wide) in `dtype` (model.half(), or
    .to(torch.bfloat16)), called with a ones attention_mask (the TorchScript exporter
    fails on `aten::diff` without one)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    return Logits(LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCABULARY, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=SEQUENCE,
        use_cache=False)), "ones").to(dtype)


def gpt_half(dtype: torch.dtype) -> nn.Module:
    """export_layers.py's GPT-2-style decoder (scaled_dot_product_attention with
    is_causal, GELU-tanh, a tied head) in `dtype`."""
    import export_layers

    return export_layers.TinyGpt(sdpa=True).to(dtype)


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "lstm": (LstmLanguageModel, ids),
    "mlp": (Mlp, lambda: image(16)),
    "vgg11": (vgg11, image),
    "resnet18": (lambda: narrow_resnet("basic", [2, 2, 2, 2]), image),
    "resnet50": (lambda: narrow_resnet("bottleneck", [3, 4, 6, 3]), image),
    "mobilenet_v2": (mobilenet_v2, image),
    "vit_b_16": (vit, image),
    "gpt2": (gpt2, ids),
    "bert": (bert, ids),
    "gpt2_mask": (lambda: gpt2(True), lambda: full_ids(VOCABULARY, SEQUENCE, masked=True)),
    "bert_mask": (lambda: bert(True), lambda: full_ids(VOCABULARY, SEQUENCE, masked=True)),
    "t5": (t5, lambda: ids(2)),
    "classifier_loss": (small_classifier, image_and_labels),
    "token_loss": (TokenLoss, ids_and_labels),
    "lenet": (LeNet, lambda: (torch.randn(BATCH, 1, 28, 28),)),
    "mobilenet_v3": (mobilenet_v3, image),
    "unet": (SmallUnet, lambda: image(16)),
    "llama_fp16": (lambda: llama_half(torch.float16), ids),
    "llama_bf16": (lambda: llama_half(torch.bfloat16), ids),
    "gpt_bf16": (lambda: gpt_half(torch.bfloat16), ids),
}


def torchvision_model(name: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import torchvision

        return getattr(torchvision.models, name)()

    return build


VISION_AND_LSTM: dict[str, tuple[Callable[[], nn.Module],
                                 Callable[[], tuple[torch.Tensor, ...]]]] = {
    "lstm": (lambda: LstmLanguageModel(FULL_VOCABULARY, 1024),
             lambda: (torch.randint(0, FULL_VOCABULARY, (BATCH, FULL_SEQUENCE)),)),
    "mlp": (FullMlp, image),
    **{name: (torchvision_model(name), lambda: image(224))
       for name in ("vgg11", "resnet18", "resnet50", "mobilenet_v2", "vit_b_16")},
    "resnet18_loss": (lambda: WithLoss(torchvision_model("resnet18")()),  # its own loss
                      lambda: (*image(224), torch.randint(0, 1000, (BATCH,)))),
}


def full_ids(vocabulary: int, sequence: int, count: int = 1,
             masked: bool = False) -> tuple[torch.Tensor, ...]:
    """`count` batches of ids; with `masked`, then an attention_mask whose rows end in
    padding of different lengths (row i keeps sequence - i positions)."""
    batches = tuple(torch.randint(0, vocabulary, (BATCH, sequence)) for _ in range(count))
    if not masked:
        return batches
    mask = (torch.arange(sequence)[None, :] < sequence - torch.arange(BATCH)[:, None])
    return (*batches, mask.long())


def full_gpt2(masked: bool | str = False) -> nn.Module:
    """gpt2 (124M: 12 layers, 768 wide, 50257 words, 1024 positions)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    return Logits(GPT2LMHeadModel(GPT2Config(use_cache=False)), masked)


def full_bert(masked: bool = False) -> nn.Module:
    """bert-base (110M: 12 layers, 768 wide, 30522 words, 512 positions)."""
    from transformers import BertConfig, BertForMaskedLM

    return Logits(BertForMaskedLM(BertConfig()), masked)


def full_t5() -> nn.Module:
    """t5-small (60M: 6 + 6 layers, 512 wide, 32128 words)."""
    from transformers import T5Config, T5ForConditionalGeneration

    return Logits(T5ForConditionalGeneration(T5Config(use_cache=False)))


FULL_MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "gpt2": (full_gpt2, lambda: full_ids(50257, 1024)),
    "gpt2_s128": (full_gpt2, lambda: full_ids(50257, 128)),
    "gpt2_mask": (lambda: full_gpt2(True), lambda: full_ids(50257, 1024, masked=True)),
    "gpt2_s128_mask": (lambda: full_gpt2(True), lambda: full_ids(50257, 128, masked=True)),
    "gpt2_ones": (lambda: full_gpt2("ones"), lambda: full_ids(50257, 1024)),
    "gpt2_s128_ones": (lambda: full_gpt2("ones"), lambda: full_ids(50257, 128)),
    "bert": (full_bert, lambda: full_ids(30522, 512)),
    "bert_s128": (full_bert, lambda: full_ids(30522, 128)),
    "bert_mask": (lambda: full_bert(True), lambda: full_ids(30522, 512, masked=True)),
    "t5": (full_t5, lambda: full_ids(32128, 512, 2)),
    "t5_s128": (full_t5, lambda: full_ids(32128, 128, 2)),
    **VISION_AND_LSTM,
}
"""The architectures at their real sizes (gpt2, bert-base, t5-small; torchvision's at
224x224; the MLP and LSTM language model above), batch 8, random init: `--full`. Hundreds
of megabytes each, never committed."""


def export(name: str, folder: str, full: bool = False) -> list[str]:
    """Both exports of one model; what each exporter said if it failed."""
    build, example = (FULL_MODELS if full else MODELS)[name]
    return export_both(name, build, example, folder)


def export_both(name: str, build: Callable[[], nn.Module],
                example: Callable[[], tuple[torch.Tensor, ...]], folder: str,
                training: bool = False) -> list[str]:
    """`FOLDER/NAME.dynamo.onnx` and `FOLDER/NAME.torchscript.onnx` of the model `build()`
    makes (seed 0, eval mode; with `training`, training mode, and the TorchScript exporter
    told so) on the inputs `example()` makes; what each exporter said if it failed
    (export_more.py's and export_trained.py's models too)."""
    torch.manual_seed(0)
    model = build().train(training)
    args = example()
    failures = []
    script: dict[str, Any] = {"dynamo": False, "opset_version": 17}
    if training:
        script["training"] = torch.onnx.TrainingMode.TRAINING
    for exporter, options in (("dynamo", {}), ("torchscript", script)):
        path = os.path.join(folder, f"{name}.{exporter}.onnx")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, args, path, **options)
        except Exception as error:  # the exporter's own failure: reported, not fatal
            failures.append(f"{name} ({exporter}): {type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''}")
            continue
        without_stack_traces(path)
    return failures


def without_stack_traces(path: str) -> None:
    """Drop the nodes' metadata (the dynamo exporter records each node's Python stack
    trace there, with this machine's paths), keeping the weights where they are."""
    model = onnx.load(path, load_external_data=False)
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            del node.metadata_props[:]
            graphs += [a.g for a in node.attribute if a.HasField("g")]
            graphs += [g for a in node.attribute for g in a.graphs]
    for function in model.functions:
        for node in function.node:
            del node.metadata_props[:]
    onnx.save(model, path)


Models = dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]]


def main(argv: list[str]) -> int:
    return export_main(argv, __doc__ or "", MODELS, FULL_MODELS)


def export_main(argv: list[str], usage: str, models: Models, full_models: Models,
                training: tuple[str, ...] = ()) -> int:
    """`[--full] FOLDER [NAME...]` (every model when no name is given): both exports of
    each of `models` (`full_models` with `--full`; those named in `training` in training
    mode), one stderr line per exporter that failed; 1 if any did (export_more.py's and
    export_trained.py's command line too)."""
    if not argv:
        print(usage)
        return 1
    full = argv[0] == "--full"
    argv = argv[1:] if full else argv
    chosen = full_models if full else models
    folder, names = argv[0], argv[1:] or list(chosen)
    os.makedirs(folder, exist_ok=True)
    failures = [failure for name in names
                for failure in export_both(name, *chosen[name], folder)]
    for failure in failures:
        print(f"export failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
