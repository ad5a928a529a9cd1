"""Strategy JSON: the export's shape (DESIGN.md) and the errors of reading one back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pase.frontend import Diagnostic, parse_file, parse_text
from pase.passes.strategy import build_problem, solve
from pase.passes.strategy.strategy_file import dump_strategy, load_strategy, strategy_json

MLP = Path(__file__).resolve().parents[3] / "models" / "mlp.dnn"


def exported(devices: int = 8) -> dict:
    problem = build_problem(parse_file(str(MLP)), devices)
    solution = solve(problem)
    data = strategy_json(problem, solution.assignment, problem.breakdown(solution.assignment),
                         problem.cost(problem.data_parallel()))
    return json.loads(dump_strategy(data))


def write(tmp_path: Path, data: object, name: str = "strategy.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_export_shape() -> None:
    data = exported()
    assert data["graph"] == "mlp"
    assert data["devices"] == 8
    assert data["machine"]["name"] == "pase-default"
    assert {"flops", "intra_node_bandwidth", "inter_node_bandwidth",
            "devices_per_node"} <= set(data["machine"])
    cost = data["cost"]
    assert set(cost) == {"total", "compute", "communication", "redistribution"}
    assert cost["total"] == pytest.approx(
        cost["compute"] + cost["communication"] + cost["redistribution"], rel=1e-12)
    assert data["data_parallel_cost"] >= cost["total"]
    assert [layer["name"] for layer in data["layers"]] == ["h", "a", "z", "l"]
    assert [layer["op"] for layer in data["layers"]] == [
        "einsum", "relu", "einsum", "softmax_cross_entropy"]
    for layer in data["layers"]:
        assert set(layer) >= {"name", "op", "config", "cost"}
        assert all(isinstance(f, int) and f > 1 for f in layer["config"].values())
    assert sum(layer["cost"] for layer in data["layers"]) == pytest.approx(cost["total"],
                                                                           rel=1e-12)


def test_dump_is_indented_json_with_a_final_newline() -> None:
    text = dump_strategy({"graph": "g", "layers": []})
    assert text.endswith("}\n")
    assert '\n  "graph": "g"' in text


def test_an_export_reads_back_and_reproduces_the_cost(tmp_path: Path) -> None:
    data = exported()
    pins = load_strategy(write(tmp_path, data), "mlp", 8)
    assert pins == {layer["name"]: layer["config"] for layer in data["layers"]}
    problem = build_problem(parse_file(str(MLP)), 8, pinned=pins)
    assert all(len(problem.configs(name)) == 1 for name in problem.layers)
    assert solve(problem).cost == pytest.approx(data["cost"]["total"], rel=1e-12)


def test_only_layers_are_needed(tmp_path: Path) -> None:
    path = write(tmp_path, {"layers": [{"name": "h", "config": {"b": 2}}, {"name": "a"}]})
    assert load_strategy(path, "anything", 3) == {"h": {"b": 2}, "a": {}}


def diagnostic(path: str, graph: str = "mlp", devices: int = 8) -> Diagnostic:
    with pytest.raises(Diagnostic) as error:
        load_strategy(path, graph, devices)
    assert error.value.filename == path
    return error.value


def test_invalid_json_has_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '{"layers": [\n  {"name": "h",, "config": {}}\n]}\n')
    error = diagnostic(path)
    assert (error.line, error.column) == (2, 16)
    text = str(error)
    assert text.startswith(f"{path}:2:16: error: not valid JSON: Expecting property name")
    assert text.splitlines()[1:] == ['  {"name": "h",, "config": {}}', " " * 15 + "^"]


@pytest.mark.parametrize(("data", "message"), [
    ({"graph": "other", "layers": []}, "the strategy is for graph @other, not @mlp"),
    ({"devices": 4, "layers": []}, "the strategy is for 4 devices, but the search has "
                                   "devices=8"),
    ({"layers": [{"name": "h", "config": {}}, {"name": "h", "config": {"b": 2}}]},
     'layer "h" appears twice'),
    ({"layers": [{"name": "h", "config": {"b": 2.5}}]},
     'layers[0] ("h") needs a "config" object of dimension: integer factor'),
    ({"layers": [{"name": "a", "config": {}}, {"name": "h", "config": {"b": "2"}}]},
     'layers[1] ("h") needs a "config" object'),
    ({"layers": [{"name": "h", "config": {"b": True}}]}, 'needs a "config" object'),
    ({"layers": [{"name": "h", "config": [["b", 2]]}]}, 'needs a "config" object'),
    ({"layers": [{"config": {"b": 2}}]}, 'layers[0] needs a "name" string'),
    ({"layers": [{"name": 3}]}, 'layers[0] needs a "name" string'),
    ({"layers": {"h": {"b": 2}}}, 'a strategy file is a JSON object with a "layers" list'),
    ([{"name": "h"}], 'a strategy file is a JSON object with a "layers" list'),
])
def test_load_errors(tmp_path: Path, data: object, message: str) -> None:
    error = diagnostic(write(tmp_path, data))
    assert message in error.message
    assert str(error) == f"{error.filename}: error: {error.message}"


def test_missing_file(tmp_path: Path) -> None:
    error = diagnostic(str(tmp_path / "none.json"))
    assert error.message == "cannot read the strategy file: No such file or directory"


CONV = """
graph @conv(b = 8, ci = 4, co = 8, hi = 6, wi = 6, ho = 6, wo = 6, r = 3, s = 3) {
  %x = input [b, ci, hi, wi]
  %w = param [co, ci, r, s]
  %y = conv2d %x, %w padding 1 -> [b, co, ho, wo]
  %a = relu %y
  return %a
}
"""


@pytest.mark.parametrize(("pinned", "message"), [
    ({"nope": {}}, "no layer 'nope' in graph @conv"),
    ({"y": {"b": 3}}, "split factor 3 of 'b' in layer 'y' does not divide its size 8"),
    ({"y": {"b": 0}}, "split factor 0 of 'b' in layer 'y' does not divide its size 8"),
    ({"y": {"b": -2}}, "split factor -2 of 'b' in layer 'y'"),
    ({"y": {"ho": 2}}, "dimension 'ho' of layer 'y' cannot be split"),
    ({"y": {"k": 2}}, "layer 'y' has no iteration dimension 'k' (its dimensions: b, co, ci, "
                      "ho, wo, r, s)"),
    ({"a": {"b": 4, "co": 4}}, "layer 'a' is pinned to 16 devices but only 8 are available"),
])
def test_invalid_pins_are_errors_of_build_problem(pinned: dict, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        build_problem(parse_text(CONV), 8, pinned=pinned)


def test_a_pin_may_break_min_shard() -> None:
    # min-shard limits the search, not what a user asks for
    problem = build_problem(parse_text(CONV), 8, pinned={"y": {"co": 8}})
    assert problem.configs("y") == [{"co": 8}]
    assert {"co": 8} not in build_problem(parse_text(CONV), 8).configs("y")
