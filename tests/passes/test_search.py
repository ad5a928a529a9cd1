"""`pase-search` through the driver, in-process: attributes, strategy files, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, UnknownLoc
from xdsl.parser import Parser

from pase.core.files import deferred_writes
from pase.dialect import get_all_dialects
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import ConfigAttr, StrategyAttr
from pase.frontend import Diagnostic, parse_file
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import build_problem, solve
from pase.tools.pase_opt import main

MLP = str(Path(__file__).resolve().parents[2] / "models" / "mlp.dnn")

TWO_GRAPHS = """
graph @first(b = 8, d = 16, h = 8) {
  %x = input [b, d]
  %w = param [d, h]
  %y = einsum %x, %w -> [b, h]
  return %y
}
graph @second(b = 8, d = 16) {
  %x = input [b, d]
  %y = relu %x
  return %y
}
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run pase-opt; its exit status, stdout and stderr."""
    try:
        main(list(args))
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


def search(capsys: pytest.CaptureFixture[str], options: str, path: str = MLP) -> str:
    status, out, err = run(capsys, path, "-p", f"pase-search{{{options}}}")
    assert (status, err) == (0, ""), err
    return out


def parse_ir(text: str) -> ModuleOp:
    context = Context()
    context.load_dialect(Builtin)
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    return Parser(context, text).parse_module()


def graph_of(text: str) -> GraphOp:
    (graph,) = [op for op in parse_ir(text).walk() if isinstance(op, GraphOp)]
    return graph


def strategy_of(graph: GraphOp) -> StrategyAttr:
    attr = graph.attributes["pase.strategy"]
    assert isinstance(attr, StrategyAttr)
    return attr


def configs_of(graph: GraphOp) -> dict[str, dict[str, int]]:
    configs = {}
    for layer, name in graph.layer_names().items():
        attr = layer.attributes["pase.config"]
        assert isinstance(attr, ConfigAttr)
        configs[name] = attr.splits
    return configs


def write_strategy(tmp_path: Path, layers: list[dict], **fields: object) -> str:
    path = tmp_path / "strategy.json"
    path.write_text(json.dumps({**fields, "layers": layers}))
    return str(path)


def test_every_layer_gets_a_config_and_the_graph_a_strategy(
        capsys: pytest.CaptureFixture[str]) -> None:
    graph = graph_of(search(capsys, "devices=4"))
    problem = build_problem(parse_file(MLP), 4)
    optimum = solve(problem)
    assert configs_of(graph) == optimum.assignment
    strategy = strategy_of(graph)
    breakdown = problem.breakdown(optimum.assignment)
    assert strategy.devices.data == 4
    assert strategy.machine.data == "pase-default"
    assert strategy.total.data == pytest.approx(optimum.cost, rel=1e-12)
    assert strategy.compute.data == pytest.approx(breakdown.compute, rel=1e-12)
    assert strategy.communication.data == pytest.approx(breakdown.communication, rel=1e-12)
    assert strategy.redistribution.data == pytest.approx(breakdown.redistribution, rel=1e-12)
    assert strategy.data_parallel.data == pytest.approx(
        problem.cost(problem.data_parallel()), rel=1e-12)


@pytest.mark.parametrize("options", [
    "devices=8 machine=\"v100-nvlink\"", "devices=8 order=bfs", "devices=8 order=minfill",
    "devices=2 min-shard=16", "devices=8 compat=pase", "devices=8 method=exhaustive",
])
def test_options_reach_the_search(capsys: pytest.CaptureFixture[str], options: str) -> None:
    graph = graph_of(search(capsys, options))
    values = dict(item.split("=") for item in options.split())
    machine = values.get("machine", "pase-default").strip('"')
    problem = build_problem(parse_file(MLP), int(values["devices"]), machine,
                            int(values.get("min-shard", 4)),
                            compat=values.get("compat", ""))
    assert strategy_of(graph).total.data == pytest.approx(solve(problem).cost, rel=1e-12)
    assert strategy_of(graph).machine.data == machine
    assert problem.cost(configs_of(graph)) == pytest.approx(strategy_of(graph).total.data,
                                                            rel=1e-12)


def test_exhaustive_matches_dp(capsys: pytest.CaptureFixture[str]) -> None:
    dp = strategy_of(graph_of(search(capsys, "devices=4")))
    exhaustive = strategy_of(graph_of(search(capsys, "devices=4 method=exhaustive")))
    assert exhaustive.total.data == pytest.approx(dp.total.data, rel=1e-12)


def test_every_graph_of_a_file_is_searched(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    source = tmp_path / "two.dnn"
    source.write_text(TWO_GRAPHS)
    export = tmp_path / "two.json"
    module = parse_ir(search(capsys, f'devices=2 export="{export}"', str(source)))
    graphs = [op for op in module.walk() if isinstance(op, GraphOp)]
    assert [g.sym_name.data for g in graphs] == ["first", "second"]
    for graph in graphs:
        assert strategy_of(graph).devices.data == 2
        assert set(configs_of(graph)) == {"y"}
    data = json.loads(export.read_text())
    assert [entry["graph"] for entry in data] == ["first", "second"]


def test_a_multi_graph_export_reads_back(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    source = tmp_path / "two.dnn"
    source.write_text(TWO_GRAPHS)
    export = tmp_path / "two.json"
    first = search(capsys, f'devices=2 export="{export}"', str(source))
    assert search(capsys, f'devices=2 strategy="{export}"', str(source)) == first


def test_export_reads_back_with_the_same_cost(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    export = tmp_path / "mlp.json"
    first = search(capsys, f'devices=8 export="{export}"')
    data = json.loads(export.read_text())
    assert data["graph"] == "mlp"
    assert data["devices"] == 8
    assert set(data["cost"]) == {"total", "compute", "communication", "redistribution"}
    assert [layer["name"] for layer in data["layers"]] == ["h", "a", "z", "l"]
    assert data["cost"]["total"] == strategy_of(graph_of(first)).total.data
    second = search(capsys, f'devices=8 strategy="{export}"')
    assert second == first


def test_a_pinned_layer_raises_the_total(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    optimum = graph_of(search(capsys, "devices=4"))
    assert configs_of(optimum)["h"] != {"b": 4}
    path = write_strategy(tmp_path, [{"name": "h", "config": {"b": 4}}], graph="mlp",
                          devices=4)
    pinned = graph_of(search(capsys, f'devices=4 strategy="{path}"'))
    assert configs_of(pinned)["h"] == {"b": 4}
    assert strategy_of(pinned).total.data > strategy_of(optimum).total.data
    # the other layers are searched around the pin
    problem = build_problem(parse_file(MLP), 4, pinned={"h": {"b": 4}})
    assert strategy_of(pinned).total.data == pytest.approx(solve(problem).cost, rel=1e-12)
    assert configs_of(pinned) == solve(problem).assignment


def test_a_config_in_the_input_is_kept(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    source = tmp_path / "pinned.dnn"
    source.write_text(Path(MLP).read_text().replace("-> [b, h]", "-> [b, h] config {b = 2}"))
    graph = graph_of(search(capsys, "devices=4", str(source)))
    assert configs_of(graph)["h"] == {"b": 2}
    # a strategy file overrides the input's pin
    path = write_strategy(tmp_path, [{"name": "h", "config": {"h": 2}}])
    graph = graph_of(search(capsys, f'devices=4 strategy="{path}"', str(source)))
    assert configs_of(graph)["h"] == {"h": 2}


def test_searching_a_searched_module_changes_nothing(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    once = search(capsys, "devices=4")
    twice = run(capsys, MLP, "-p", "pase-search{devices=4},pase-search{devices=4}")
    assert twice == (0, once, "")
    printed = tmp_path / "searched.mlir"
    printed.write_text(once)
    assert search(capsys, "devices=4", str(printed)) == once


def test_runs_are_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outputs, exports = [], []
    for index in range(2):
        export = tmp_path / f"run{index}.json"
        status, out, err = run(capsys, MLP, "-p",
                               f'pase-search{{devices=8 report=true export="{export}"}}')
        assert status == 0
        outputs.append((out, err))
        exports.append(export.read_bytes())
    assert outputs[0] == outputs[1]
    assert exports[0] == exports[1]


def test_report_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, MLP, "-p", "pase-search{devices=4 report=true}")
    assert status == 0
    assert out == search(capsys, "devices=4")
    lines = err.splitlines()
    assert lines[0] == "strategy for @mlp on 4 devices (machine pase-default)"
    assert lines[1].split() == ["layer", "op", "config", "cost", "(s)"]
    configs = configs_of(graph_of(out))
    for line, name in zip(lines[2:6], ["h", "a", "z", "l"], strict=True):
        cells = line.split()
        assert cells[0] == name
        expected = "{" + ", ".join(f"{d}={f}" for d, f in configs[name].items()) + "}"
        assert line.split(None, 2)[2].startswith(expected)
        float(cells[-1])
    assert lines[6].startswith("total ")
    assert "= compute " in lines[6]
    assert "+ collectives " in lines[6]
    assert "+ redistribution " in lines[6]
    assert lines[7].startswith("data parallel ")
    assert "predicted speedup" in lines[7]
    assert re.fullmatch(r"search: 4 layers, largest dependent set 1, [\d,]+ table entries",
                        lines[8])
    assert len(lines) == 9


def error_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    """One diagnostic: a line, or a located line, its source line and a caret line."""
    status, out, err = run(capsys, *args)
    assert status == 1
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 or (len(lines) == 3 and set(lines[2]) == {" ", "^"}), err
    return lines


def error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    return error_lines(capsys, *args)[0]


def test_unknown_layer_in_strategy_file(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    path = write_strategy(tmp_path, [{"name": "h2", "config": {"b": 2}}])
    lines = error_lines(capsys, MLP, "-p", f'pase-search{{devices=4 strategy="{path}"}}')
    assert lines == [f"{path}:1:22: error: no layer 'h2' in graph @mlp",
                     '{"layers": [{"name": "h2", "config": {"b": 2}}]}',
                     " " * 21 + "^^^^"]


@pytest.mark.parametrize(("layers", "fields", "message"), [
    ([{"name": "h", "config": {"b": 3}}], {},
     "split factor 3 of 'b' in layer 'h' does not divide its size 64"),
    ([{"name": "h", "config": {"b": 8}}], {},
     "layer 'h' is pinned to 8 devices but only 4 are available"),
    ([], {"devices": 8}, "the strategy is for 8 devices, but the search has devices=4"),
    ([], {"graph": "other"}, "the strategy is for graph @other, not @mlp"),
])
def test_invalid_strategy_files(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                layers: list[dict], fields: dict, message: str) -> None:
    path = write_strategy(tmp_path, layers, **fields)
    line = error_line(capsys, MLP, "-p", f'pase-search{{devices=4 strategy="{path}"}}')
    assert re.fullmatch(rf"{re.escape(path)}:1:[0-9]+: error: {re.escape(message)}", line)


def test_strategy_file_with_invalid_json(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"layers": [}\n')
    status, _, err = run(capsys, MLP, "-p", f'pase-search{{devices=4 strategy="{path}"}}')
    assert status == 1
    assert err.startswith(f"{path}:1:13: error: not valid JSON")


@pytest.mark.parametrize(("options", "message"), [
    ("devices=0", "error: pase-search needs devices=P with P at least 1"),
    ("", "error: pase-search needs devices=P with P at least 1"),
    ("devices=-2", "error: pase-search needs devices=P with P at least 1"),
    ("devices=4 order=dfs", "error: pase-search: unknown order 'dfs'; use genseq, bfs or "
                            "minfill"),
    ("devices=4 method=greedy", "error: pase-search: unknown method 'greedy'; use dp or "
                                "exhaustive"),
    ("devices=4 compat=flexflow", "error: pase-search: unknown compat 'flexflow'; the only "
                                  "mode is compat=pase"),
    ("devices=4 machine=tpu", "error: pase-search: unknown machine 'tpu'; presets are "
                              "pase-default, "),
    ("devices=4 min-shard=0", "error: pase-search: min-shard must be at least 1, got 0"),
    ("devices=4 memory-gib=0.0",
     "error: pase-search: memory-gib must be a positive number, got 0.0"),
    ("devices=4 memory-gib=inf",
     "error: pase-search: memory-gib must be a positive number, got inf"),
    ("devices=4 memory-gib=nan",
     "error: pase-search: memory-gib must be a positive number, got nan"),
    ("devices=4 memory-gib=0.000000001",
     "error: pase-search on @mlp: the cost tables of @mlp on 4 devices would take "),
])
def test_invalid_options(capsys: pytest.CaptureFixture[str], options: str,
                         message: str) -> None:
    line = error_line(capsys, MLP, "-p", f"pase-search{{{options}}}")
    assert message in line


def test_exhaustive_refuses_large_graphs(capsys: pytest.CaptureFixture[str]) -> None:
    alexnet = str(Path(MLP).with_name("alexnet.dnn"))
    line = error_line(capsys, alexnet, "-p", "pase-search{devices=8 method=exhaustive}")
    assert "exhaustive search would try" in line
    assert line.endswith("use method=dp")


def test_export_to_a_missing_directory(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    path = tmp_path / "missing" / "out.json"
    line = error_line(capsys, MLP, "-p", f'pase-search{{devices=4 export="{path}"}}')
    assert line == f"{path}: error: cannot write the strategy: No such file or directory"


def test_a_machine_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    machine = tmp_path / "cluster.toml"
    machine.write_text('name = "cluster"\nflops = 1e12\nintra_node_bandwidth = 1e9\n'
                       'inter_node_bandwidth = 1e8\ndevices_per_node = 2\n')
    graph = graph_of(search(capsys, f'devices=4 machine="{machine}"'))
    assert strategy_of(graph).machine.data == "cluster"
    broken = tmp_path / "broken.toml"
    broken.write_text("name = 'x'\nflops = [1,\n")
    lines = error_lines(capsys, MLP, "-p", f'pase-search{{devices=4 machine="{broken}"}}')
    assert lines == [f"{broken}:2:12: error: not valid TOML: Invalid value", "flops = [1,",
                     " " * 11 + "^"]


def test_memory_gib_takes_an_integer(capsys: pytest.CaptureFixture[str]) -> None:
    assert search(capsys, "devices=4 memory-gib=4") == search(capsys, "devices=4")


def test_a_pin_in_the_source_is_reported_at_its_layer(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    source = Path(MLP).read_text().replace("relu %h", "relu %h config {h = 16}")
    path = tmp_path / "pinned.dnn"
    path.write_text(source)
    lines = error_lines(capsys, str(path), "-p", "pase-search{devices=8}")
    assert lines == [f"{path}:7:9: error: layer 'a' is pinned to 16 devices but only 8 are "
                     "available",
                     "  %a  = relu %h config {h = 16}",
                     " " * 8 + "^"]


def test_a_pin_in_ir_is_reported_at_its_op(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    status, ir, _ = run(capsys, MLP)
    assert status == 0
    path = tmp_path / "pinned.mlir"
    path.write_text(ir.replace("dnn.relu %h", "dnn.relu %h {pase.config = #pase.config<h = 16>}"))
    line = error_line(capsys, str(path), "-p", "pase-search{devices=8}")
    assert re.fullmatch(rf"{re.escape(str(path))}:[0-9]+:[0-9]+: error: layer 'a' is pinned "
                        "to 16 devices but only 8 are available", line)


def test_an_error_without_a_place_names_no_file(capsys: pytest.CaptureFixture[str]) -> None:
    alexnet = str(Path(MLP).with_name("alexnet.dnn"))
    line = error_line(capsys, alexnet, "-p", "pase-search{devices=8 method=exhaustive}")
    assert line.startswith("error: pase-search on @alexnet: exhaustive search would try ")


@pytest.mark.parametrize(("data", "message"), [
    (b"[" * 100000 + b"]" * 100000, ":1:101: error: not a strategy file: its arrays and "
                                    "objects nest more than 100 levels deep (a strategy nests "
                                    "five)"),
    (b'{"layers":[{"name":"h\xe9"}]}', ":1:22: error: the strategy file is not UTF-8 text "
                                       "(invalid continuation byte at byte 21)"),
    (b'{"devices": "8", "layers": []}', ':1:13: error: devices must be a positive integer, '
                                        'not the string "8"'),
])
def test_unreadable_strategy_files(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   data: bytes, message: str) -> None:
    path = tmp_path / "strategy.json"
    path.write_bytes(data)
    line = error_line(capsys, MLP, "-p", f'pase-search{{devices=8 strategy="{path}"}}')
    assert line == f"{path}{message}"


FAILING_LATER = "pase-search{{devices=8 export=\"{}\"}},pase-lower-spmd{{devices=4}}"


def test_a_deferred_export_is_dropped_when_a_later_pass_fails(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    export = tmp_path / "strategy.json"
    export.write_text("old")
    # what pase-opt does with the whole run: main() exits 1, so the export is dropped
    with pytest.raises(SystemExit), deferred_writes():
        main([MLP, "-p", FAILING_LATER.format(export)])
    assert "error: pase-lower-spmd" in capsys.readouterr().err
    assert export.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["strategy.json"]


def test_pase_opt_writes_no_export_when_a_later_pass_fails(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    export = tmp_path / "strategy.json"
    status, _, _ = run(capsys, MLP, "-p", FAILING_LATER.format(export))
    assert status == 1
    assert not export.exists()


def test_the_pass_called_directly_writes_the_export_at_once(tmp_path: Path) -> None:
    export = tmp_path / "strategy.json"
    PaseSearchPass(devices=8, export=str(export)).apply(Context(), parse_file(MLP))
    assert json.loads(export.read_text())["devices"] == 8


def test_a_pin_without_a_place_names_its_graph() -> None:
    module = parse_file(MLP)
    (graph,) = [op for op in module.walk() if isinstance(op, GraphOp)]
    relu = graph.layers[1]
    relu.attributes["pase.config"] = ConfigAttr({"h": 16})
    relu.location = UnknownLoc()
    with pytest.raises(Diagnostic) as error:
        PaseSearchPass(devices=8).apply(Context(), module)
    assert str(error.value) == ("error: pase-search on @mlp: layer 'a' is pinned to 16 devices "
                                "but only 8 are available")
