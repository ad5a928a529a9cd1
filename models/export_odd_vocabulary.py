"""Export the fixture of a vocabulary that 8 devices do not divide: a one-layer
BertForMaskedLM (Hugging Face's class, 32 wide) over 510 words (2·3·5·17, as bert-base's
30,522 is 2·3·5087: split 2, 3 or 6 ways, never 4 or 8), with the TorchScript exporter.

    pip install -e '.[torch]'
    python models/export_odd_vocabulary.py models/onnx     # writes bert_v510.torchscript.onnx

On a machine whose compute is slow against its links (tests/lit/targets/Inputs/
compute-bound.toml) pase-search at 8 devices splits its output layer over a grid of 6
devices, as it splits bert-base's on pase-default: the case `one-mesh=true` exists for
(docs/jax.md). Needs torch; pase itself never imports this file.
"""

from __future__ import annotations

import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from export_torch import BATCH, SEQUENCE, Logits, without_stack_traces  # noqa: E402

VOCABULARY = 510
NAME = f"bert_v{VOCABULARY}"


def bert() -> torch.nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    return Logits(BertForMaskedLM(BertConfig(
        vocab_size=VOCABULARY, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=SEQUENCE)))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 1
    torch.manual_seed(0)
    model = bert().eval()
    ids = torch.randint(0, VOCABULARY, (BATCH, SEQUENCE))
    path = os.path.join(argv[0], f"{NAME}.torchscript.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), path, dynamo=False, opset_version=17)
    without_stack_traces(path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
