"""models/generate.py's language models: presets with the papers' sizes, and small
generated GPT- and LLaMA-shaped graphs that parse, verify, search and partition."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from xdsl.context import Context

from pase.dialect.dnn import GraphOp
from pase.dialect.pase import ConfigAttr
from pase.frontend import parse_file
from pase.passes.partition_stages import PartitionStagesPass
from pase.passes.search import PaseSearchPass

GENERATE = Path(__file__).resolve().parents[2] / "models" / "generate.py"


def generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", GENERATE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def test_presets_have_the_papers_parameter_counts() -> None:
    # Narayanan et al. 2021, Table 1, in billions; GPT-3's 175B.
    presets = generate().LANGUAGE_MODELS
    table = {"megatron-39b": 39.1, "megatron-146b": 145.6, "megatron-530b": 529.6,
             "megatron-1t": 1008.0, "gpt3-175b": 174.6}
    assert {name: round(presets[name].parameters() / 1e9, 1) for name in table} == table


def test_help_lists_every_preset_with_its_shape(capsys: pytest.CaptureFixture[str]) -> None:
    # A user picks a preset from --help: each row gives the shape the model will have.
    with pytest.raises(SystemExit):
        generate().main(["--help"])
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()
            if line.startswith("  ") and line.split()[0] in generate().LANGUAGE_MODELS}
    assert len(rows) == len(generate().LANGUAGE_MODELS)
    assert rows["megatron-1.7b"] == ["24", "2304", "24", "9216", "2048", "51200", "512", "1.65B"]
    assert rows["megatron-1t"][-1] == "1.01T"


def test_a_llama_shape_gets_llamas_feed_forward_by_default() -> None:
    # LLaMA's rule (2/3 of 4 d, up to a multiple of 256) gives its presets' widths.
    presets = generate().LANGUAGE_MODELS
    for name in ("llama-7b", "llama-13b", "llama-65b"):
        preset = presets[name]
        shape = generate().LanguageModel(preset.layers, preset.hidden, preset.heads, 2048,
                                         32000, 8, llama=True)
        assert shape.feed_forward == preset.ffn


@pytest.mark.parametrize("llama", [False, True], ids=["gpt", "llama"])
def test_a_small_generated_model_searches_and_partitions(tmp_path: Path, llama: bool) -> None:
    path = tmp_path / "tiny.dnn"
    generate().main(["--layers", "2", "--hidden", "64", "--heads", "4", "--sequence", "16",
                     "--vocabulary", "128", "--batch", "8", "--name", "tiny",
                     *(["--llama"] if llama else []), "-o", str(path)])
    for apply in (PaseSearchPass(devices=4, machine="a100-nvlink"),
                  PartitionStagesPass(devices=4, stages=2, microbatches=2,
                                      machine="a100-nvlink")):
        module = parse_file(str(path))
        apply.apply(Context(), module)
        graph = next(op for op in module.walk() if isinstance(op, GraphOp))
        assert all(isinstance(op.attributes["pase.config"], ConfigAttr) for op in graph.layers)
        assert sum(op.name == "dnn.rmsnorm" for op in graph.layers) == (5 if llama else 0)


def test_a_shape_that_does_not_divide_is_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        generate().main(["gpt3-125m", "--heads", "5"])
    assert exit_.value.code == 1
    assert "hidden 768 is not a multiple of heads 5" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "missing/model.dnn"], "cannot write missing/model.dnn: No such file or directory"),
    (["--layers", "10000000000", "-o", "model.dnn"], "--layers 10000000000: at most 100,000"),
])
def test_an_unwritable_output_or_a_huge_model_is_one_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        generate().main(["gpt3-125m", *args])
    assert exit_.value.code == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
