"""`pase-search` through the driver, in-process: what it attaches, against the Python API, and
the strategy files and deferred exports it writes. Its messages are pinned by lit
(tests/lit/passes/pase-search-*.dnn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import parse_ir, run_tool
from xdsl.context import Context
from xdsl.dialects.builtin import UnknownLoc

from pase.core.diagnostics import Diagnostic
from pase.dialect.dnn import GraphOp
from pase.dialect.pase import ConfigAttr, StrategyAttr
from pase.frontend import parse_file
from pase.passes.search import PaseSearchPass
from pase.passes.strategy import SearchOptions, build_problem, solve
from pase.passes.strategy.budget import SearchError
from pase.passes.strategy.memory import (
    GIB,
    gib_up,
    memory_vectors,
    solve_capped,
    strategy_memory,
)
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
    return run_tool(main, list(args), capsys)


def search(capsys: pytest.CaptureFixture[str], options: str, path: str = MLP) -> str:
    status, out, err = run(capsys, path, "-p", f"pase-search{{{options}}}")
    assert (status, err) == (0, ""), err
    return out



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
                            options=SearchOptions(min_shard=int(values.get("min-shard", 4)),
                                                  compat=values.get("compat", "")))
    assert strategy_of(graph).total.data == pytest.approx(solve(problem).cost, rel=1e-12)
    assert strategy_of(graph).machine.data == machine
    assert problem.cost(configs_of(graph)) == pytest.approx(strategy_of(graph).total.data,
                                                            rel=1e-12)


def test_every_graph_of_a_file_is_searched_and_its_export_reads_back(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "two.dnn"
    source.write_text(TWO_GRAPHS)
    export = tmp_path / "two.json"
    searched = search(capsys, f'devices=2 export="{export}"', str(source))
    graphs = [op for op in parse_ir(searched).walk() if isinstance(op, GraphOp)]
    assert [g.sym_name.data for g in graphs] == ["first", "second"]
    for graph in graphs:
        assert strategy_of(graph).devices.data == 2
        assert set(configs_of(graph)) == {"y"}
    data = json.loads(export.read_text())
    assert [entry["graph"] for entry in data] == ["first", "second"]
    # the multi-graph export reads back
    assert search(capsys, f'devices=2 strategy="{export}"', str(source)) == searched


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


def test_bounding_false_writes_the_same_ir(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Bounds on however small a graph, so that both paths really differ.
    from pase.passes.strategy import bound

    for name in ("MIN_DP_ENTRIES", "SWEEP_ENTRIES", "SWEEPS_WORTH"):
        monkeypatch.setattr(bound, name, 0)
    for path in (MLP, MLP.replace("mlp.dnn", "transformer.dnn")):
        assert search(capsys, "devices=8", path) == search(capsys, "devices=8 bounding=false",
                                                           path)


def test_memory_gib_takes_an_integer(capsys: pytest.CaptureFixture[str]) -> None:
    assert search(capsys, "devices=4 memory-gib=4") == search(capsys, "devices=4")


FAILING_LATER = "pase-search{{devices=8 export=\"{}\"}},pase-lower-spmd{{devices=4}}"


def test_a_deferred_export_is_dropped_when_a_later_pass_fails(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    export = tmp_path / "strategy.json"
    export.write_text("old")
    # pase-opt's main() defers the export to the end of the run, which exits 1
    status, _, err = run(capsys, MLP, "-p", FAILING_LATER.format(export))
    assert status == 1
    assert "error: pase-lower-spmd" in err
    assert export.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["strategy.json"]


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


def test_a_memory_cap_the_optimum_fits_changes_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert search(capsys, "devices=8 device-memory-gib=1") == search(capsys, "devices=8")
    assert search(capsys, "devices=8 device-memory-gib=0") == search(capsys, "devices=8")


def test_a_binding_memory_cap_gives_the_least_cost_strategy_that_fits(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    problem = build_problem(parse_file(MLP), 8)
    free = solve(problem)
    cap = (strategy_memory(problem, free.assignment) - 1) / GIB
    export = tmp_path / "capped.json"
    graph = graph_of(search(capsys, f'devices=8 device-memory-gib={cap!r} '
                                    f'export="{export}"'))
    assigned = configs_of(graph)
    assert strategy_memory(problem, assigned) <= cap * GIB
    assert problem.cost(assigned) > free.cost
    capped = solve_capped(problem, cap * GIB, "exhaustive")
    assert strategy_of(graph).total.data == pytest.approx(capped.cost, rel=1e-12)
    data = json.loads(export.read_text())
    assert data["memory"]["per_device"] == strategy_memory(problem, assigned)
    assert data["device_memory_cap"]["proven_optimal"] is True


def test_the_report_gives_memory_per_device(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, MLP, "-p", "pase-search{devices=8 report=true}")
    problem = build_problem(parse_file(MLP), 8)
    memory = strategy_memory(problem, solve(problem).assignment)
    assert status == 0
    assert f"\nmemory {memory / GIB:.4g} GiB per device = parameters and gradients " in err


def test_a_memory_cap_nothing_meets_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    problem = build_problem(parse_file(MLP), 8)
    least = sum(float(vector.min()) for vector in memory_vectors(problem))
    status, out, err = run(capsys, MLP, "-p", "pase-search{devices=8 device-memory-gib=1e-4}")
    assert (status, out) == (1, "")
    assert err == ("error: pase-search on @mlp: no strategy fits in device-memory-gib=0.0001; "
                   f"the least memory any strategy needs is {gib_up(least)} GiB per "
                   "device\n")


def test_the_design_documents_solve_call_takes_method_and_order() -> None:
    """DESIGN.md's stable call, `solve(problem, method=..., order=...)`: the keywords
    reach the search (the three orders and brute force agree on the optimum; an unknown
    method is the search's error, not a TypeError)."""
    problem = build_problem(parse_file(MLP), 4)
    optimum = solve(problem).cost
    for order in ("genseq", "bfs", "minfill"):
        assert solve(problem, method="dp", order=order).cost == pytest.approx(optimum,
                                                                            rel=1e-12)
    assert solve(problem, method="exhaustive").cost == pytest.approx(optimum, rel=1e-12)
    with pytest.raises(SearchError, match="unknown method 'bfs'"):
        solve(problem, method="bfs")
    # The method in the place of the options, as a reader of `solve(problem,
    # method="dp"|"exhaustive")` may write it; anything else there is one clear TypeError.
    assert solve(problem, "exhaustive").cost == pytest.approx(optimum, rel=1e-12)
    with pytest.raises(TypeError, match="solve takes SearchOptions .or the method. second"):
        solve(problem, 4)  # type: ignore[arg-type]


def test_solve_refuses_a_method_or_order_that_its_options_contradict() -> None:
    """`solve(problem, options, method=..., order=...)`: a keyword equal to the options'
    own is taken, one that differs from the options given is a TypeError naming both
    (it silently overrode them); the keywords alone, and the options alone, as before."""
    problem = build_problem(parse_file(MLP), 4)
    optimum = solve(problem).cost
    brute = SearchOptions(method="exhaustive")
    assert solve(problem, brute, method="exhaustive").cost == pytest.approx(optimum,
                                                                            rel=1e-12)
    assert solve(problem, SearchOptions(order="bfs"), order="bfs").cost == \
        pytest.approx(optimum, rel=1e-12)
    with pytest.raises(TypeError, match="solve got method='dp' and options whose method is "
                       "'exhaustive'; give the method once, in the options or as method= "
                       "alone"):
        solve(problem, brute, method="dp")
    with pytest.raises(TypeError, match="solve got order='minfill' and options whose order "
                       "is 'genseq'"):
        solve(problem, SearchOptions(), order="minfill")
    with pytest.raises(TypeError, match="solve got method='exhaustive' and options whose "
                       "method is 'dp'"):
        solve(problem, "dp", method="exhaustive")
