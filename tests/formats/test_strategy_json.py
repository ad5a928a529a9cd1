"""Strategy JSON: the export's shape (DESIGN.md) and the errors of reading one back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pase.core.diagnostics import Diagnostic
from pase.formats.json_locations import locate
from pase.formats.strategy_json import dump_strategy, load_strategy, strategy_json
from pase.frontend import parse_file, parse_text
from pase.passes.strategy import build_problem, solve
from pase.passes.strategy.memory import memory_parts, solve_capped

MLP = Path(__file__).resolve().parents[2] / "models" / "mlp.dnn"


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


def test_the_export_gives_memory_per_device_and_the_cap(tmp_path: Path) -> None:
    problem = build_problem(parse_file(str(MLP)), 8)
    free = solve(problem)
    memory = memory_parts(problem, free.assignment)
    capped = solve_capped(problem, memory.total - 1)
    data = json.loads(dump_strategy(strategy_json(
        problem, capped.assignment, problem.breakdown(capped.assignment),
        problem.cost(problem.data_parallel()), memory_parts(problem, capped.assignment),
        capped)))
    assert set(data["memory"]) == {"per_device", "parameters", "activations"}
    assert data["memory"]["per_device"] == capped.memory < memory.total
    assert data["memory"]["per_device"] == (data["memory"]["parameters"]
                                            + data["memory"]["activations"])
    assert data["device_memory_cap"] == {"bytes": memory.total - 1,
                                         "lower_bound": capped.lower_bound,
                                         "proven_optimal": True}
    # it reads back, and so does an export from before "memory" existed (no such keys)
    assert load_strategy(write(tmp_path, data), "mlp", 8).configs == capped.assignment
    assert "memory" not in exported()
    assert load_strategy(write(tmp_path, exported()), "mlp", 8).configs == free.assignment


def test_dump_is_indented_json_with_a_final_newline() -> None:
    text = dump_strategy({"graph": "g", "layers": []})
    assert text.endswith("}\n")
    assert '\n  "graph": "g"' in text


def test_an_export_reads_back_and_reproduces_the_cost(tmp_path: Path) -> None:
    data = exported()
    pins = load_strategy(write(tmp_path, data), "mlp", 8).configs
    assert pins == {layer["name"]: layer["config"] for layer in data["layers"]}
    problem = build_problem(parse_file(str(MLP)), 8, pinned=pins)
    assert all(len(problem.configs(name)) == 1 for name in problem.layers)
    assert solve(problem).cost == pytest.approx(data["cost"]["total"], rel=1e-12)


def test_only_layers_are_needed(tmp_path: Path) -> None:
    path = write(tmp_path, {"layers": [{"name": "h", "config": {"b": 2}},
                                       {"name": "a", "config": {}}]})
    assert load_strategy(path, "anything", 3).configs == {"h": {"b": 2}, "a": {}}


def diagnostic(path: str, graph: str = "mlp", devices: int = 8) -> Diagnostic:
    with pytest.raises(Diagnostic) as error:
        load_strategy(path, graph, devices)
    assert error.value.filename == path
    return error.value


@pytest.mark.parametrize(("data", "message", "caret"), [
    ({"layers": [{"name": "h", "config": {}}, {"name": "h", "config": {"b": 2}}]},
     'layer "h" appears twice (first at layers[0])', '"h"'),
    ({"layers": [{"name": "h", "config": {"b": 2.5}}]},
     "layers[0].config.b must be a positive integer split factor, not 2.5", "2.5"),
    ({"layers": [{"name": "h", "config": {"b": True}}]},
     "layers[0].config.b must be a positive integer split factor, not true", "true"),
    ({"layers": [{"name": "h", "config": {"b": 0}}]},
     "layers[0].config.b must be a positive integer split factor, not 0", "0"),
    ({"layers": [{"name": "h", "config": {"b": None}}]},
     "layers[0].config.b must be a positive integer split factor, not null", "null"),
    ({"layers": [{"name": "h", "config": [["b", 2]]}]},
     "layers[0].config must be an object of dimension: split factor, not a list", "["),
    ({"layers": [{"config": {"b": 2}}]},
     'layers[0] needs a "name" (the layer\'s name, a string)', "{"),
    # not silently unsplit: {} says that
    ({"layers": [{"name": "h"}]}, 'layers[0] needs a "config" (an object of dimension: split '
                                  'factor; {} for an unsplit layer)', "{"),
    ({"layers": [{"name": 3}]}, "layers[0].name must be a string, not 3", "3"),
    ({"layers": [{"name": "h", "op": []}]}, "layers[0].op must be a string, not a list",
     "["),
    ({"layers": [{"name": "h", "cost": "1"}]},
     'layers[0].cost must be a number, not the string "1"', '"1"'),
    ({"layers": ["h"]}, 'layers[0] must be a layer object ({"name": ..., "config": {...}}), '
                       'not the string "h"', '"h"'),
    ({"layers": {"h": {"b": 2}}}, "layers must be a list of layer objects, not an object",
     "{"),
    ({"graph": 7, "layers": []}, "graph must be a string (the graph's name), not 7", "7"),
    ({"devices": True, "layers": []}, "devices must be a positive integer, not true", "true"),
    ({"devices": 8.0, "layers": []}, "devices must be a positive integer, not 8.0", "8.0"),
    ({"machine": "v100", "layers": []}, 'machine must be an object, not the string "v100"',
     '"v100"'),
    # "machine" and "training" say what the strategy is for: checked, though not used
    ({"machine": {"name": "m", "flops": -1, "intra_node_bandwidth": 1,
                  "inter_node_bandwidth": 1}, "layers": []},
     "machine: 'flops' must be a number of at least 1, got -1", "-1"),
    ({"machine": {"flopz": 1}, "layers": []}, "machine: unknown key 'flopz'; expected name, "
     "flops, intra_node_bandwidth, inter_node_bandwidth, devices_per_node, source, "
     "bf16_flops, fp16_flops, hbm_bandwidth, hierarchical, memory_gib", '"flopz"'),
    ({"training": {"optimizer": "adamw"}, "layers": []},
     'training.optimizer must be sgd, momentum or adam, not "adamw"', '"adamw"'),
    ({"layers": [{"name": "h", "config": {}, "zero": 4}]},
     "layers[0].zero must be a ZeRO stage 0, 1, 2 or 3, not 4", "4"),
    ({"cost": {"total": None}, "layers": []}, "cost.total must be a number, not null",
     "null"),
    ({"speedup": [], "layers": []}, "speedup must be a number, not a list", "["),
    ('{"speedup": NaN, "layers": []}', "speedup must be a finite number, not NaN", "NaN"),
    ({"memory": 3, "layers": []}, "memory must be an object of numbers, not 3", "3"),
    ({"memory": {"per_device": "1"}, "layers": []},
     'memory.per_device must be a number, not the string "1"', '"1"'),
    ({}, 'the strategy needs a "layers" list', "{"),
    ([{"name": "h"}], '[0] needs a "layers" list', "{"),
    ([], "a strategy file holds a strategy object, or a list of them (one per graph), not "
         "an empty list", "["),
    ('"layers"', 'a strategy file holds a strategy object, or a list of them (one per '
                 'graph), not the string "layers"', '"layers"'),
    ([{"graph": "mlp", "layers": []}, 3], "[1] must be a strategy object, not 3", "3"),
    ([{"graph": "mlp", "layers": []}, {"layers": []}],
     '[1] needs a "graph" (the name of its graph): the file holds several strategies', "{"),
    ([{"graph": "a", "layers": []}, {"graph": "b", "layers": []}],
     "the strategy file has strategies for @a, @b but not for @mlp", None),
    ([{"graph": "mlp", "devices": 8, "layers": []}, {"graph": "b", "devices": 2,
                                                      "layers": []}], None, None),
    ([{"graph": "b", "layers": []}, {"graph": "mlp", "devices": 4, "layers": []}],
     "the strategy is for 4 devices, but the search has devices=8", "4"),
])
def test_load_errors(tmp_path: Path, data: object, message: str | None,
                     caret: str | None) -> None:
    """Each error names the JSON path, and the caret marks the value at fault."""
    path = write(tmp_path, data)
    if message is None:
        load_strategy(path, "mlp", 8)  # another graph's strategy need not fit
        return
    error = diagnostic(path)
    assert error.message == message
    if caret is None:
        assert str(error) == f"{path}: error: {message}"
        return
    first, source, marks = str(error).splitlines()
    assert first == f"{path}:1:{error.column}: error: {message}"
    assert source == Path(path).read_text()
    assert marks == " " * (error.column - 1) + "^" * len(caret)
    assert source[error.column - 1:].startswith(caret)


def test_a_key_twice_in_one_object_is_an_error_at_the_second(tmp_path: Path) -> None:
    # JSON readers keep the last silently; a strategy that says two things says neither.
    path = write(tmp_path, '{"devices": 8, "layers": [], "devices": "8"}')
    error = diagnostic(path)
    assert (error.message, error.column) == ('the key "devices" appears twice in one object',
                                             30)
    path = write(tmp_path, '{"layers": [{"name": "h", "config": {"b": 2, "b": 4}}]}')
    error = diagnostic(path)
    assert (error.message, error.column) == ('the key "b" appears twice in one object', 46)


@pytest.mark.parametrize(("where", "key", "expected"), [
    (("layers", 1, "config", "b"), False, (71, 1)),
    (("layers", 1, "config", "b"), True, (66, 3)),
    (("layers", 1, "config", "x"), False, (65, 1)),   # missing: its enclosing object
    (("layers", 5), False, (11, 1)),
    ((), False, (0, 1)),
])
def test_locate(where: tuple, key: bool, expected: tuple[int, int]) -> None:
    text = '{"layers": [{"name": "h", "config": {}}, {"name": "a", "config": {"b": 2}}]}'
    assert locate(text, where, key) == expected


def test_an_overlong_integer_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, '{"layers": [], "devices": ' + "9" * 5000 + "}")
    error = diagnostic(path)
    assert error.message == ("not a strategy file: an integer of 5,000 digits; pase reads "
                             "integers of at most 40 digits (a split factor or device count "
                             "is at most 2^53)")
    assert (error.line, error.column) == (1, 27)  # at the integer


def test_pins_know_where_each_layer_is(tmp_path: Path) -> None:
    path = write(tmp_path, [{"graph": "other", "layers": []},
                            {"graph": "mlp", "layers": [{"name": "h", "config": {"b": 2}}]}])
    pins = load_strategy(path, "mlp", 8)
    assert pins.entries == {"h": (1, "layers", 0)}
    error = pins.error("bad b", "h", "config", "b", key=True)
    assert (error.line, error.column, error.length) == (1, 89, 3)   # the key "b"


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
    ({"y": {"b": 0}}, "split factor 0 of 'b' in layer 'y' does not divide its size 8"),
    ({"y": {"b": -2}}, "split factor -2 of 'b' in layer 'y'"),
    ({"y": {"ho": 2}}, "dimension 'ho' of layer 'y' cannot be split"),
    ({"y": {"k": 2}}, "layer 'y' has no iteration dimension 'k' (its dimensions: b, co, ci, "
                      "ho, wo, r, s)"),
])
def test_invalid_pins_are_errors_of_build_problem(pinned: dict, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        build_problem(parse_text(CONV), 8, pinned=pinned)


def test_a_pin_may_break_min_shard() -> None:
    # min-shard limits the search, not what a user asks for
    problem = build_problem(parse_text(CONV), 8, pinned={"y": {"co": 8}})
    assert problem.configs("y") == [{"co": 8}]
    assert {"co": 8} not in build_problem(parse_text(CONV), 8).configs("y")


def test_a_plan_stage_past_the_graphs_end_says_how_many_layers_are_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A last stage listing a layer again said `must be the next 2 layers of @mlp in order
    (l)`: two layers, one named."""
    from cli import run_tool

    from pase.tools.pase_opt import main

    mlp = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")
    plan = tmp_path / "plan.json"
    stages = f'pase-partition-stages{{devices=4 stages=2 export="{plan}"}}'
    assert run_tool(main, [mlp, "-p", stages, "-o", "/dev/null"], capsys)[0] == 0
    data = json.loads(plan.read_text())
    last = data["stages"][-1]["layers"]
    last.append(data["stages"][0]["layers"][0])
    plan.write_text(json.dumps(data))
    status, out, err = run_tool(main, [mlp, "-p", f'pase-partition-stages{{devices=4 '
                                             f'strategy="{plan}"}}'], capsys)
    assert (status, out) == (1, "")
    assert err.split(": error: ")[1].splitlines()[0] == (
        f"stages[1].layers lists {len(last)} layers, but @mlp has {len(last) - 1} after the "
        f"stages before it ({', '.join(last[:-1])})")
