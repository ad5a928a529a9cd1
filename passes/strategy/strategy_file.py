"""Strategy JSON: what `pase-search{export=FILE}` writes and `strategy=FILE` reads.

    {"graph": "mlp", "devices": 8, "machine": {...},
     "cost": {"total": .., "compute": .., "communication": .., "redistribution": ..},
     "data_parallel_cost": .., "speedup": ..,
     "layers": [{"name": "h", "op": "einsum", "config": {"b": 4, "h": 2}, "cost": ..}, ...]}

Costs are seconds. Reading needs only "layers" (name and config of each listed
layer); "graph" and "devices", when present, must match.
"""

from __future__ import annotations

import json
from typing import Any

from pase.frontend.diagnostics import Diagnostic
from pase.passes.strategy.problem import Assignment, Breakdown, Problem


def strategy_json(problem: Problem, assignment: Assignment, breakdown: Breakdown,
                  data_parallel_cost: float) -> dict[str, Any]:
    return {
        "graph": problem.graph,
        "devices": problem.devices,
        "machine": problem.machine.to_json(),
        "cost": {"total": breakdown.total, "compute": breakdown.compute,
                 "communication": breakdown.communication,
                 "redistribution": breakdown.redistribution},
        "data_parallel_cost": data_parallel_cost,
        "speedup": data_parallel_cost / breakdown.total if breakdown.total > 0 else 1.0,
        "layers": [{"name": layer.name, "op": layer.kind,
                    "config": assignment[layer.name],
                    "cost": breakdown.per_layer[layer.name]}
                   for layer in problem.layer_data],
    }


def dump_strategy(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def load_strategy(path: str, graph: str, devices: int,
                  only_graph: bool = True) -> dict[str, dict[str, int]]:
    """The `{layer: {dim: factor}}` pins of a strategy file for `graph`; raises Diagnostic.

    The file holds one strategy object, or a list of them (one per graph, as `export=`
    writes for a file of several graphs). When the module has several graphs
    (`only_graph` false), a graph the file does not mention is searched unpinned.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as error:
        raise Diagnostic(f"cannot read the strategy file: {error.strerror}", path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise Diagnostic(f"not valid JSON: {error.msg}", path, error.lineno, error.colno,
                         text) from None
    strategies = data if isinstance(data, list) else [data]
    for strategy in strategies:
        if not isinstance(strategy, dict) or not isinstance(strategy.get("layers"), list):
            raise Diagnostic('a strategy file is a JSON object with a "layers" list, or a '
                             'list of them', path)
    matching = [s for s in strategies if s.get("graph", graph) == graph]
    if not matching:
        if not only_graph:
            return {}
        names = ", ".join(f"@{s.get('graph')}" for s in strategies)
        raise Diagnostic(f"the strategy is for graph {names}, not @{graph}", path)
    data = matching[0]
    if "devices" in data and data["devices"] != devices:
        raise Diagnostic(f"the strategy is for {data['devices']} devices, but the search "
                         f"has devices={devices}", path)
    pins: dict[str, dict[str, int]] = {}
    for position, entry in enumerate(data["layers"]):
        where = f"layers[{position}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise Diagnostic(f'{where} needs a "name" string', path)
        config = entry.get("config", {})
        if not isinstance(config, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in config.items()):
            raise Diagnostic(f'{where} ("{entry["name"]}") needs a "config" object of '
                             f'dimension: integer factor', path)
        if entry["name"] in pins:
            raise Diagnostic(f'layer "{entry["name"]}" appears twice', path)
        pins[entry["name"]] = config
    return pins
