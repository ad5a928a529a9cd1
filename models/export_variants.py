"""Export variants a user plausibly makes: other export options of the fixtures' models and
architectures near the ten of `export_torch.py`, all small (seconds each), to one folder.

    python models/export_variants.py FOLDER              # every variant
    python models/export_variants.py FOLDER dynamo_densenet ts_opset13
    python models/export_variants.py --list

Each variant writes `FOLDER/NAME.onnx` (with `.data` beside it for the dynamo exporter) or
records the exporter's own failure in `FOLDER/NAME.export-failed`. docs/pytorch.md's
variant matrix is these files run through `pase-opt FILE -p 'pase-search{devices=8}'` and
`pase-run FILE --devices 4 --scale 0.125 --check` (`benchmarks/torch_exports.py
--matrix`). Needs torch; pase itself never imports this file.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_more as more  # noqa: E402
import export_torch as base  # noqa: E402

TS = {"dynamo": False, "opset_version": 17}


class Variant:
    """One export: a model, its example inputs, and the `torch.onnx.export` options."""

    def __init__(self, build: Callable[[], nn.Module],
                 example: Callable[[], tuple[torch.Tensor, ...]], train: bool = False,
                 **options: Any) -> None:
        self.build, self.example, self.train, self.options = build, example, train, options


class GruLanguageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(base.VOCABULARY, 32)
        self.gru = nn.GRU(32, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, base.VOCABULARY)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(self.embedding(ids))[0])


class EncoderClassifier(nn.Module):
    """nn.TransformerEncoder over embedded ids, mean-pooled, a linear head."""

    def __init__(self, batch_first: bool = True, norm_first: bool = False) -> None:
        super().__init__()
        self.embedding = nn.Embedding(base.VOCABULARY, 32)
        layer = nn.TransformerEncoderLayer(32, 2, 64, dropout=0.1, batch_first=batch_first,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 10)
        self.batch_first = batch_first

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids if self.batch_first else ids.t())
        x = self.encoder(x)
        return self.head(x.mean(1 if self.batch_first else 0))


def tv(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import torchvision

        return getattr(torchvision.models, name)(**kwargs)

    return build


def densenet() -> nn.Module:
    from torchvision.models import DenseNet

    return DenseNet(growth_rate=4, block_config=(2, 2, 2, 2), num_init_features=8,
                    bn_size=2, num_classes=10)


def convnext() -> nn.Module:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, 32, 1),
                     CNBlockConfig(32, None, 1)], num_classes=10)


def efficientnet() -> nn.Module:
    from torchvision.models import efficientnet_b0

    return efficientnet_b0(num_classes=10)


def hf(config_name: str, model_name: str, ones: bool = False,
       **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config))
        return base.Logits(model, "ones" if ones else False)

    return build


SMALL_BERT = {"vocab_size": base.VOCABULARY, "hidden_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": base.SEQUENCE + 2}
LLAMA = {"vocab_size": base.VOCABULARY, "hidden_size": 32, "intermediate_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
         "max_position_embeddings": base.SEQUENCE, "use_cache": False}


class Hidden(nn.Module):
    """A Hugging Face encoder without a head: its last hidden state as the output."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids).last_hidden_state


class WithPositions(nn.Module):
    """RoBERTa given its position ids (constant: padding_idx + 1 on), not computed from
    the ids."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(2, ids.shape[1] + 2).expand(ids.shape)
        return self.model(input_ids=ids, position_ids=positions).logits


def roberta_with_positions() -> nn.Module:
    from transformers import RobertaConfig, RobertaForMaskedLM

    return WithPositions(RobertaForMaskedLM(RobertaConfig(**SMALL_BERT)))


def t5_encoder() -> nn.Module:
    from transformers import T5Config, T5EncoderModel

    return Hidden(T5EncoderModel(T5Config(vocab_size=base.VOCABULARY, d_model=32, d_kv=16,
                                          d_ff=64, num_layers=2, num_heads=2)))


def ids_at(batch: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randint(0, base.VOCABULARY, (batch, base.SEQUENCE)),)


def image_at(batch: int, size: int = 32) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(batch, 3, size, size),)


def half(build: Callable[[], nn.Module], dtype: torch.dtype) -> Callable[[], nn.Module]:
    return lambda: build().to(dtype)


def half_image(dtype: torch.dtype) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(base.BATCH, 3, 32, 32, dtype=dtype),)


RESNET = lambda: base.narrow_resnet("basic", [2, 2, 2, 2])  # noqa: E731
MLP_IMAGE = lambda: base.image(16)  # noqa: E731
DYNAMIC_AXES = {"input_names": ["image"], "output_names": ["logits"],
                "dynamic_axes": {"image": {0: "batch"}, "logits": {0: "batch"}}}

VARIANTS: dict[str, Variant] = {
    # export options, on the small ResNet-18 (and BERT where norms/attention matter)
    **{f"ts_opset{v}": Variant(RESNET, base.image, dynamo=False, opset_version=v)
       for v in (13, 14, 15, 16, 17, 18, 19, 20)},
    **{f"ts_opset{v}_bert": Variant(hf("BertConfig", "BertForMaskedLM", **SMALL_BERT),
                                    base.ids, dynamo=False, opset_version=v)
       for v in (13, 14, 16, 18)},
    "dynamo_opset18": Variant(RESNET, base.image, opset_version=18),
    "dynamo_opset20": Variant(RESNET, base.image, opset_version=20),
    "dynamo_optimize_false": Variant(RESNET, base.image, optimize=False),
    "dynamo_optimize_false_bert": Variant(hf("BertConfig", "BertForMaskedLM", **SMALL_BERT),
                                          base.ids, optimize=False),
    "dynamo_inline_weights": Variant(RESNET, base.image, external_data=False),
    "ts_no_constant_folding": Variant(RESNET, base.image, do_constant_folding=False, **TS),
    "ts_no_constant_folding_bert": Variant(hf("BertConfig", "BertForMaskedLM", **SMALL_BERT),
                                           base.ids, do_constant_folding=False, **TS),
    "ts_export_params_false": Variant(base.Mlp, MLP_IMAGE, export_params=False, **TS),
    "dynamo_export_params_false": Variant(base.Mlp, MLP_IMAGE, export_params=False),
    "ts_training_resnet": Variant(RESNET, base.image, train=True,
                                  training=torch.onnx.TrainingMode.TRAINING, **TS),
    "ts_training_bert": Variant(hf("BertConfig", "BertForMaskedLM", **SMALL_BERT), base.ids,
                                train=True, training=torch.onnx.TrainingMode.TRAINING, **TS),
    "dynamo_training_bert": Variant(hf("BertConfig", "BertForMaskedLM", **SMALL_BERT),
                                    base.ids, train=True),
    "ts_initializers_as_inputs": Variant(RESNET, base.image, keep_initializers_as_inputs=True,
                                         **TS),
    "ts_batch1": Variant(RESNET, image_at(1), **TS),
    "dynamo_batch1": Variant(RESNET, image_at(1)),
    "dynamo_batch32": Variant(RESNET, image_at(32)),
    "dynamo_batch1_gpt2": Variant(base.gpt2, ids_at(1)),
    "ts_fp16": Variant(half(RESNET, torch.float16), half_image(torch.float16), **TS),
    "dynamo_fp16": Variant(half(RESNET, torch.float16), half_image(torch.float16)),
    "dynamo_bf16": Variant(half(RESNET, torch.bfloat16), half_image(torch.bfloat16)),
    "ts_dynamic_axes": Variant(RESNET, base.image, **DYNAMIC_AXES, **TS),
    "dynamo_dynamic_axes": Variant(RESNET, base.image, **DYNAMIC_AXES),
    "dynamo_dynamic_shapes": Variant(RESNET, base.image, input_names=["image"],
                                     dynamic_shapes=({0: torch.export.Dim("batch")},)),
    "ts_renamed": Variant(RESNET, base.image, input_names=["pixels"],
                          output_names=["scores"], **TS),
    "dynamo_renamed": Variant(RESNET, base.image, input_names=["pixels"],
                              output_names=["scores"]),
    "ts_loss_renamed": Variant(base.small_classifier, base.image_and_labels,
                               input_names=["x", "y"], output_names=["loss"], **TS),
    "dynamo_loss_renamed": Variant(base.small_classifier, base.image_and_labels,
                                   input_names=["x", "y"], output_names=["loss"]),
    "ts_dynamic_batch_and_sequence_bert": Variant(
        hf("BertConfig", "BertForMaskedLM", **SMALL_BERT), base.ids, input_names=["ids"],
        dynamic_axes={"ids": {0: "batch", 1: "sequence"}}, **TS),
    "dynamo_dynamic_batch_and_sequence_gpt2": Variant(
        base.gpt2, base.ids, dynamic_shapes=({0: torch.export.Dim("batch"),
                                              1: torch.export.Dim("sequence", max=16)},)),
    "ts_llama_ones": Variant(hf("LlamaConfig", "LlamaForCausalLM", ones=True, **LLAMA),
                             base.ids, **TS),
    "ts_gpt_neo_ones": Variant(hf("GPTNeoConfig", "GPTNeoForCausalLM", ones=True,
                                  vocab_size=base.VOCABULARY, hidden_size=32, num_layers=2,
                                  num_heads=2, attention_types=[[["global"], 2]],
                                  max_position_embeddings=base.SEQUENCE, use_cache=False),
                               base.ids, **TS),
    "dynamo_llama_gqa_tied": Variant(hf("LlamaConfig", "LlamaForCausalLM", **(LLAMA | {
        "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": True})),
        base.ids),
    # nearby architectures (the default exporter; "ts_" the TorchScript one)
    **{f"{exporter}_{name}": Variant(build, example, **options)
       for name, (build, example) in {
           "resnet34": (lambda: base.narrow_resnet("basic", [3, 4, 6, 3]), base.image),
           "resnet101": (lambda: base.narrow_resnet("bottleneck", [3, 4, 23, 3]), base.image),
           "densenet": (densenet, base.image),
           "squeezenet1_0": (tv("squeezenet1_0", num_classes=10), image_at(8, 64)),
           "efficientnet_b0": (efficientnet, base.image),
           "mnasnet": (tv("mnasnet0_5", num_classes=10), base.image),
           "convnext": (convnext, base.image),
           "swin": (more.small_swin, base.image),
           "regnet_y_400mf": (tv("regnet_y_400mf", num_classes=10), base.image),
           "gru": (GruLanguageModel, base.ids),
           "pads": (more.PaddedCnn, base.image),
           "encoder": (EncoderClassifier, base.ids),
           "encoder_seq_first": (lambda: EncoderClassifier(False, True), base.ids),
           "distilbert": (hf("DistilBertConfig", "DistilBertForMaskedLM",
                             vocab_size=base.VOCABULARY, dim=32, n_layers=2, n_heads=2,
                             hidden_dim=64, max_position_embeddings=base.SEQUENCE), base.ids),
           "roberta": (hf("RobertaConfig", "RobertaForMaskedLM", **SMALL_BERT), base.ids),
           "roberta_positions": (roberta_with_positions, base.ids),
           "albert": (hf("AlbertConfig", "AlbertForMaskedLM", embedding_size=16,
                         **SMALL_BERT), base.ids),
           "gpt_neo": (hf("GPTNeoConfig", "GPTNeoForCausalLM", vocab_size=base.VOCABULARY,
                          hidden_size=32, num_layers=2, num_heads=2,
                          attention_types=[[["global", "local"], 1]], window_size=8,
                          max_position_embeddings=base.SEQUENCE, use_cache=False), base.ids),
           "gpt2_relu_noscale": (hf("GPT2Config", "GPT2LMHeadModel", vocab_size=base.VOCABULARY,
                                    n_positions=32, n_embd=48, n_layer=3, n_head=4,
                                    activation_function="relu", scale_attn_weights=False,
                                    tie_word_embeddings=False, use_cache=False), base.ids),
           "llama": (hf("LlamaConfig", "LlamaForCausalLM", **LLAMA), base.ids),
           "t5_encoder": (t5_encoder, base.ids),
           "t5_gated_gelu": (hf("T5Config", "T5ForConditionalGeneration",
                                vocab_size=base.VOCABULARY, d_model=32, d_kv=16, d_ff=64,
                                num_layers=2, num_heads=2, feed_forward_proj="gated-gelu",
                                use_cache=False), lambda: base.ids(2)),
       }.items()
       for exporter, options in (("dynamo", {}), ("ts", TS))},
}


def export(name: str, folder: str) -> str | None:
    """Write one variant; the exporter's failure, if it failed."""
    variant = VARIANTS[name]
    torch.manual_seed(0)
    model = variant.build()
    model = model.train() if variant.train else model.eval()
    args = variant.example()
    path = os.path.join(folder, f"{name}.onnx")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, args, path, **variant.options)
    except Exception as error:  # the exporter's own failure: recorded, not fatal
        message = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        with open(os.path.join(folder, f"{name}.export-failed"), "w") as file:
            file.write(message + "\n")
        return message
    if os.path.exists(path):
        base.without_stack_traces(path)
    return None


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 1
    if argv[0] == "--list":
        print("\n".join(VARIANTS))
        return 0
    folder, names = argv[0], argv[1:] or list(VARIANTS)
    os.makedirs(folder, exist_ok=True)
    for name in names:
        failure = export(name, folder)
        print(f"{name}: {'export failed: ' + failure if failure else 'ok'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
