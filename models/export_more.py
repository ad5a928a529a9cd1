"""Export small models with the layers `export_torch.py`'s ten architectures lack, with both
exporters, as a user would (random seeded weights, eval mode, batch 8, static shapes):

    python models/export_more.py models/onnx            # pads, gru, swin (*.onnx)
    python models/export_more.py --full FOLDER          # their full sizes (never commit)

- `pads`: the explicit pads models export: `nn.ReflectionPad2d` before a convolution (as
  style-transfer and CycleGAN generators do), TensorFlow's "same" padding of a stride-2
  convolution (`F.pad(x, (0, 1, 0, 1))`, as timm's `Conv2dSame`), `nn.ZeroPad2d` before
  a max pool, `nn.ReplicationPad2d` and `nn.ZeroPad2d` before a convolution; 16x16
  images, 8 channels (`--full`: 224x224, 64).
- `gru`: a language model like `export_torch.py`'s LSTM one with `nn.GRU` (one ONNX
  `GRU` node per layer, `linear_before_reset=1`): 64 words, 2 layers of 32, 16 steps
  (`--full`: 10k words, 2 layers of 1024, 64 steps).
- `swin`: torchvision's Swin Transformer (window partition and reverse as Reshape and
  Transpose, `torch.roll` of the shifted windows as Slices and Concat, the shifted
  windows' attention mask, the relative position bias gathered from its table,
  PatchMerging's strided slices): a small config, 32x32 images, 16 wide, two stages of
  two blocks, windows of 4x4 (`--full`: `swin_t()`, 224x224, 28.3M parameters).

The two export calls are docs/pytorch.md's (and `export_torch.py`'s). Needs torch; pase
itself never imports this file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

try:
    import torch
    from torch import nn
    from torch.nn import functional
except ImportError:  # one line, exit 1, as every pase script's usage error
    print("export_more.py: error: exporting needs torch: pip install -e '.[torch]'",
          file=sys.stderr)
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torch import (  # noqa: E402
    BATCH,
    FULL_SEQUENCE,
    FULL_VOCABULARY,
    SEQUENCE,
    VOCABULARY,
    export_both,
    export_main,
)


class PaddedCnn(nn.Module):
    """Convolutions and a pool behind explicit pads of each kind PyTorch has."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.reflect = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, width, 3), nn.ReLU())
        self.same = nn.Conv2d(width, 2 * width, 3, stride=2)
        self.pool = nn.Sequential(nn.ZeroPad2d(1), nn.MaxPool2d(3, stride=2))
        self.replicate = nn.Sequential(nn.ReplicationPad2d(1), nn.Conv2d(2 * width, 2 * width, 3),
                                       nn.ReLU(), nn.ZeroPad2d(1),
                                       nn.Conv2d(2 * width, 2 * width, 3), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(2 * width, classes))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.reflect(image)
        x = torch.relu(self.same(functional.pad(x, (0, 1, 0, 1))))
        return self.head(self.replicate(self.pool(x)))


class GruLanguageModel(nn.Module):
    """Embedding, a two-layer nn.GRU (one ONNX GRU node per layer), a linear head over
    the vocabulary."""

    def __init__(self, vocabulary: int = VOCABULARY, width: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.gru = nn.GRU(width, width, num_layers=2, batch_first=True)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embedding(ids))
        return self.head(hidden)


def small_swin() -> nn.Module:
    from torchvision.models import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                           window_size=[4, 4], num_classes=10)


def swin_t() -> nn.Module:
    from torchvision.models import swin_t

    return swin_t()


Example = Callable[[], tuple[torch.Tensor, ...]]
MODELS: dict[str, tuple[Callable[[], nn.Module], Example]] = {
    "pads": (PaddedCnn, lambda: (torch.randn(BATCH, 3, 16, 16),)),
    "gru": (GruLanguageModel,
            lambda: (torch.randint(0, VOCABULARY, (BATCH, SEQUENCE)),)),
    "swin": (small_swin, lambda: (torch.randn(BATCH, 3, 32, 32),)),
}
FULL_MODELS: dict[str, tuple[Callable[[], nn.Module], Example]] = {
    "pads": (lambda: PaddedCnn(64, 1000), lambda: (torch.randn(BATCH, 3, 224, 224),)),
    "gru": (lambda: GruLanguageModel(FULL_VOCABULARY, 1024),
            lambda: (torch.randint(0, FULL_VOCABULARY, (BATCH, FULL_SEQUENCE)),)),
    "swin": (swin_t, lambda: (torch.randn(BATCH, 3, 224, 224),)),
}


def export(name: str, folder: str, full: bool) -> list[str]:
    """Both exports of one model; what each exporter said if it failed."""
    return export_both(name, *(FULL_MODELS if full else MODELS)[name], folder)


def main(argv: list[str]) -> int:
    return export_main(argv, __doc__ or "", MODELS, FULL_MODELS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
