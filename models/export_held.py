"""Export the small models pase refused at the end of branch onnx12, and a few more a
PyTorch user hands over, with both exporters, as a user would (random seeded weights,
eval mode, batch 8, static shapes):

    python models/export_held.py models/onnx               # the fixtures (bundled)
    python models/export_held.py FOLDER vit_nn t5_nn       # the others (not bundled)

- `bilstm` and `bigru`: token taggers (as for named entities) over a bidirectional
  `nn.LSTM` / `nn.GRU` (`bidirectional=True, batch_first=True`; 64 words, 32 wide, 16
  steps), its two directions' outputs concatenated (64 wide), a linear head to 10
  classes per token.
- `instnorm`: a CNN with `nn.InstanceNorm2d` with and without its affine params (16x16
  images, 8 channels), as style-transfer networks normalize.
- `groupnorm`: a CNN with `nn.GroupNorm(2, 8)` and `F.interpolate(scale_factor=2,
  mode="bilinear")` (an upsampling decoder's layers; 8x8 to 16x16).
- `bilstm2`, `bigru2` (branch onnx14): the taggers over `nn.LSTM`/`nn.GRU(16, 16,
  num_layers=2, bidirectional=True)`, whose second layer reads 32 features into 16 units.
- `upsample_ac`: `F.interpolate(mode="bilinear", align_corners=True)` by 2 and to 12x20.
- `ceilpool`: GoogLeNet's `nn.MaxPool2d(3, stride=2, ceil_mode=True)` where rounding up
  adds a window (16x16 to 8x8; padded by 1, 8x8 to 5x5).
- `gptj`: Hugging Face's GPT-J (interleaved rotary embedding, parallel attention and
  MLP): 2 layers, 32 wide, 2 heads, rotary over 8 of each head's 16 dims.

The others, exported by the same call and measured in benchmarks/RESULTS.md (branch
onnx13), not bundled: `vit_nn` (a ViT written with torch.nn: a patch convolution, a
class token, `nn.TransformerEncoder`), `bert_nn` (a BERT-like encoder from
`nn.TransformerEncoderLayer`, GELU, a padding mask of none), `t5_nn` (`nn.Transformer`
encoder-decoder with a causal target mask), torchvision's `squeezenet` (1.1),
`efficientnet` (B0, its first stages), `convnext` (ConvNeXt, small config), `regnet`,
`densenet` (a small DenseNet) and `googlenet` free of its auxiliary heads.

`tv_squeezenet1_0`, `tv_regnet_x_400mf`, `tv_efficientnet_b0`, `tv_vit_b_16`,
`tv_densenet121`, `tv_googlenet` (branch onnx14): torchvision's constructors as they are,
10 classes, 64x64 images (`TORCHVISION`); measured in benchmarks/RESULTS.md, not bundled.

The two export calls are docs/pytorch.md's (`export_torch.export_both`). Needs torch; pase
itself never imports this file.
"""

from __future__ import annotations

import os
import sys

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

functional = nn.functional


class BidirectionalTagger(nn.Module):
    """Embedding, a bidirectional one-layer LSTM or GRU, a linear head to 10 classes per
    step (each step's scores read both directions' outputs at that step)."""

    def __init__(self, kind: type[nn.Module], width: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, width)
        self.recurrent = kind(width, width, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.recurrent(self.embedding(tokens))
        return self.head(states)


class DeepBidirectionalTagger(nn.Module):
    """Embedding, a two-layer bidirectional LSTM or GRU (`num_layers=2, bidirectional=True`:
    the second layer reads both directions of the first, 2·width wide), a linear head to 10
    classes per step."""

    def __init__(self, kind: type[nn.Module], width: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, width)
        self.recurrent = kind(width, width, num_layers=2, batch_first=True,
                              bidirectional=True)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.recurrent(self.embedding(tokens))
        return self.head(states)


class AlignedUpsampling(nn.Module):
    """Convolutions around `F.interpolate(mode="bilinear", align_corners=True)` by 2 (8x8
    to 16x16, as U-Nets' up paths) and to a size of no whole factor (16x16 to 12x20), a
    global pool and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.head = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = functional.relu(self.conv1(x))
        x = functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        x = functional.relu(self.conv2(x))
        x = functional.interpolate(x, size=(12, 20), mode="bilinear", align_corners=True)
        return self.head(x.mean((2, 3)))


class CeilPoolCnn(nn.Module):
    """GoogLeNet's pooling (`nn.MaxPool2d(3, stride=2, ceil_mode=True)`) where rounding up
    adds a window: 16x16 to 8x8 (7x7 rounding down), then padded by 1, 8x8 to 5x5 (4x4
    rounding down), between convolutions; a global pool and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool2 = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(functional.relu(self.conv1(x)))
        x = self.pool2(functional.relu(self.conv2(x)))
        return self.head(x.mean((2, 3)))


class NormCnn(nn.Module):
    """Convolutions with instance norms (affine and not), or a group norm and a bilinear
    upsampling, a global pool and a linear head."""

    def __init__(self, group: bool) -> None:
        super().__init__()
        self.group = group
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.norm1 = nn.GroupNorm(2, 8) if group else nn.InstanceNorm2d(8, affine=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, 8) if group else nn.InstanceNorm2d(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = functional.relu(self.norm1(self.conv1(x)))
        if self.group:
            x = functional.interpolate(x, scale_factor=2, mode="bilinear")
        x = functional.relu(self.norm2(self.conv2(x)))
        return self.head(x.mean((2, 3)))


def gptj() -> nn.Module:
    from transformers import GPTJConfig, GPTJForCausalLM

    return Logits(GPTJForCausalLM(GPTJConfig(
        vocab_size=VOCABULARY, n_positions=SEQUENCE, n_embd=32, n_layer=2, n_head=2,
        rotary_dim=8, use_cache=False)), "ones")


class NnVit(nn.Module):
    """A ViT from torch.nn: 4x4 patches of 16x16 images by a convolution, a class token,
    learned positions, a pre-norm nn.TransformerEncoder (2 layers, 32 wide, 2 heads)."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.patches = nn.Conv2d(3, width, 4, stride=4)
        self.token = nn.Parameter(torch.randn(1, 1, width))
        self.positions = nn.Parameter(torch.randn(1, 17, width))
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patches(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.token.expand(x.shape[0], -1, -1), x], 1) + self.positions
        return self.head(self.norm(self.encoder(x))[:, 0])


class NnBert(nn.Module):
    """A BERT-like encoder from torch.nn: token and position embeddings, a LayerNorm,
    post-norm nn.TransformerEncoder layers with GELU, a token head over the words."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCABULARY, width)
        self.positions = nn.Embedding(SEQUENCE, width)
        self.norm = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, VOCABULARY)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1])
        return self.head(self.encoder(self.norm(self.tokens(tokens) + self.positions(positions))))


class NnT5(nn.Module):
    """A T5-like encoder-decoder from torch.nn: a shared embedding, nn.Transformer (2 + 2
    layers, 32 wide) with a causal target mask, a head over the words."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, width)
        self.transformer = nn.Transformer(width, 2, 2, 2, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, VOCABULARY)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(target.shape[1])
        y = self.transformer(self.embedding(source), self.embedding(target), tgt_mask=mask)
        return self.head(y)


def vision(name: str) -> nn.Module:
    """torchvision's `name` at a small size, 10 classes."""
    from torchvision import models

    if name == "squeezenet":
        return models.squeezenet1_1(num_classes=10)
    if name == "efficientnet":
        model = models.efficientnet_b0(num_classes=10)
        model.features = model.features[:4]
        model.classifier[-1] = nn.Linear(40, 10)
        return model
    if name == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt

        return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)],
                        num_classes=10)
    if name == "regnet":
        from torchvision.models.regnet import BlockParams, RegNet

        return RegNet(BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0,
                                                   group_width=8), num_classes=10)
    if name == "densenet":
        from torchvision.models.densenet import DenseNet

        return DenseNet(8, (2, 2), 16, num_classes=10)
    return models.googlenet(num_classes=10, aux_logits=False, init_weights=True)


TORCHVISION = {"tv_squeezenet1_0": 64, "tv_regnet_x_400mf": 64, "tv_efficientnet_b0": 64,
               "tv_vit_b_16": 64, "tv_densenet121": 64, "tv_googlenet": 64}
"""torchvision's constructors as they are (10 classes), and the image size each is exported
at (vit_b_16 built for it: `image_size=64`, 16 patches): measured, never bundled."""


def torchvision_model(name: str) -> nn.Module:
    from torchvision import models

    if name == "tv_vit_b_16":
        return models.vit_b_16(num_classes=10, image_size=TORCHVISION[name])
    if name == "tv_googlenet":
        return models.googlenet(num_classes=10, aux_logits=False, init_weights=True)
    return getattr(models, name.removeprefix("tv_"))(num_classes=10)


MODELS = {
    "bilstm": (lambda: BidirectionalTagger(nn.LSTM), ids),
    "bigru": (lambda: BidirectionalTagger(nn.GRU), ids),
    "instnorm": (lambda: NormCnn(False), lambda: image(16)),
    "groupnorm": (lambda: NormCnn(True), lambda: image(8)),
    "gptj": (gptj, ids),
    "bilstm2": (lambda: DeepBidirectionalTagger(nn.LSTM), ids),
    "bigru2": (lambda: DeepBidirectionalTagger(nn.GRU), ids),
    "upsample_ac": (AlignedUpsampling, lambda: image(8)),
    "ceilpool": (CeilPoolCnn, lambda: image(16)),
    "vit_nn": (NnVit, lambda: image(16)),
    "bert_nn": (NnBert, ids),
    "t5_nn": (NnT5, lambda: ids(2)),
    **{name: (lambda name=name: vision(name), image)
       for name in ("squeezenet", "efficientnet", "convnext", "regnet", "densenet",
                    "googlenet")},
}
MODELS.update({name: (lambda name=name: torchvision_model(name),
                      lambda name=name: image(TORCHVISION[name])) for name in TORCHVISION})
BUNDLED = ("bilstm", "bigru", "instnorm", "groupnorm", "gptj", "bilstm2", "bigru2", "upsample_ac",
           "ceilpool")
"""The models of `models/onnx/` (the others are only measured)."""

def main(argv: list[str]) -> int:
    """`FOLDER [NAME...]`: the bundled models when no name is given."""
    if len(argv) == 1:
        argv = [*argv, *BUNDLED]
    return export_main(argv, __doc__ or "", MODELS, MODELS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
