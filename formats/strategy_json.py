"""Strategy JSON: what `pase-search{export=FILE}` writes and `strategy=FILE` reads.

    {"graph": "mlp", "devices": 8, "machine": {...},
     "cost": {"total": .., "compute": .., "communication": .., "redistribution": ..},
     "data_parallel_cost": .., "speedup": ..,
     "layers": [{"name": "h", "op": "einsum", "config": {"b": 4, "h": 2}, "cost": ..}, ...],
     "memory": {"per_device": .., "parameters": .., "activations": ..},
     "device_memory_cap": {"bytes": .., "lower_bound": .., "proven_optimal": true}}

"memory" is in bytes per device (parameters with their gradients, and activations);
"device_memory_cap" under `device-memory-gib` (pase-search adds "data_parallel_fits":
whether data parallelism fits under it). Files without them still load.

Costs are seconds. A file holds one strategy object, or a list of them with a different
"graph" each (as `export=` writes for several graphs). Reading needs only "layers" (the
name and config of each listed layer); "graph" and "devices", when present, must match;
"machine" and "training", when present, must be what export writes (`strategy_fields`:
they say what the strategy was searched for, and the run that reads it evaluates it on its
own machine and step; given that step, `load_strategy` checks "training" and keeps each
layer's "recompute" and "zero"). The whole shape is checked before anything is used, and
an error names the JSON path and its line and column: `s.json:4:29: error: layers[1].config.b
must be a positive integer split factor, not the string "2"`.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pase.core.diagnostics import Diagnostic
from pase.core.files import shown_line, write_atomically
from pase.core.numbers import LONGEST_INTEGER, too_long_integer
from pase.formats.json_locations import JsonPath, long_integer
from pase.formats.json_locations import located as _located
from pase.formats.strategy_fields import (
    FieldError,
    check_layer_step,
    check_machine,
    check_training,
    other_step,
    with_choices,
)
from pase.formats.strategy_input import strategy_text
from pase.passes.strategy import (
    SCHEDULES,
    Assignment,
    Breakdown,
    CappedSolution,
    Layer,
    Memory,
    PlanSpec,
    Problem,
    TrainingOptions,
    microbatch_layers,
)

# Python's JSON reader recurses once per level; a strategy file nests five levels.
DEEPEST_SHOWN = 100


def strategy_json(problem: Problem, assignment: Assignment, breakdown: Breakdown,
                  data_parallel_cost: float, memory: Memory | None = None,
                  capped: CappedSolution | None = None) -> dict[str, Any]:
    """The strategy as JSON; `memory` adds "memory" (bytes per device), `capped` the
    "device_memory_cap" it was searched under and what is proven of it."""
    data: dict[str, Any] = {
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
    if memory is not None:
        data["memory"] = {"per_device": memory.total, "parameters": memory.parameters,
                          "activations": memory.activations}
    if capped is not None:
        data["device_memory_cap"] = {"bytes": capped.cap, "lower_bound": capped.lower_bound,
                                     "proven_optimal": capped.proven}
    return data


def dump_strategy(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def write_json(path: str, data: object) -> None:
    """Write the strategy JSON (or a plan's) atomically (`pase.core.files.write_atomically`;
    inside `deferred_writes()`, when the run succeeds)."""
    try:
        write_atomically(path, dump_strategy(data))  # type: ignore[arg-type]
    except OSError as error:
        raise Diagnostic(f"cannot write the strategy: {error.strerror}", path) from None


@dataclass(frozen=True)
class StrategyPins:
    """The configurations a strategy file pins for one graph, and where it says so."""

    path: str
    text: str
    configs: dict[str, dict[str, int]]
    """`{layer: {dim: factor}}`, as `build_problem(pinned=...)` takes them."""
    entries: dict[str, JsonPath]
    """The JSON path of each pinned layer's entry: `("layers", 3)`."""
    strategy: dict[str, Any] | None = None
    """The whole strategy object (a pipeline plan's "pipeline" and "stages" too)."""
    prefix: JsonPath = ()
    """The JSON path of the strategy object in the file (`(1,)` in a list)."""
    ops: dict[str, str] = field(default_factory=dict)
    """The "op" of each layer entry that says it (the op name without `dnn.`)."""

    def at(self, message: str, *where: str | int) -> Diagnostic:
        """A diagnostic at `where` inside the strategy object."""
        return _located(message, self.path, self.text, (*self.prefix, *where))

    def check_layers(self, ops: Mapping[str, str], graph: str) -> None:
        """Every pinned layer is one of the graph's, with the op its entry says: `ops`
        maps each layer's name to its op (without `dnn.`)."""
        for layer_name in self.configs:
            if layer_name not in ops:
                raise self.error(f"no layer '{layer_name}' in graph @{graph}", layer_name,
                                 "name")
            if self.ops.get(layer_name, ops[layer_name]) != ops[layer_name]:
                raise self.error(f"layer '{layer_name}' of @{graph} is dnn.{ops[layer_name]}, "
                                 f"but the strategy says op \"{self.ops[layer_name]}\"",
                                 layer_name, "op")

    def error(self, message: str, layer: str, *within: str | int, key: bool = False) -> Diagnostic:
        """A diagnostic at `layer`'s entry, or at `within` it (`"config", "b"`: the factor of
        b; with `key`, the key "b" itself)."""
        return _located(message, self.path, self.text, self.entries[layer] + within, key)


def load_strategy(path: str, graph: str, devices: int, only_graph: bool = True,
                  pipeline: bool = False, training: TrainingOptions | None = None
                  ) -> StrategyPins:
    """The pins of a strategy file for `graph`; raises Diagnostic. With `training` (the
    run's step), "training" must be that step, and each layer keeps its entry's
    recompute=auto / zero=auto choices (`strategy_fields.with_choices`).

    When the module has several graphs (`only_graph` false), a graph the file does not
    mention is searched unpinned. A pipeline plan (pase-partition-stages export=, with
    "stages") is read only with `pipeline`: its configurations are for a micro-batch on
    one stage's devices, not a strategy for pase-search.
    """
    path, text = strategy_text(path)  # (`-`: the standard input, named `stdin`)
    data = _parse(path, text)
    try:
        _check_unique_keys(data, ())
        strategies = _checked(data)
    except _ShapeError as error:
        raise _located(error.message, path, text, error.where, error.key) from None
    prefix: JsonPath = () if isinstance(data, dict) else (0,)
    matching = [(index, s) for index, s in enumerate(strategies)
                if s.get("graph", graph) == graph]
    if not matching:
        if not only_graph:
            return StrategyPins(path, text, {}, {})
        if len(strategies) == 1:
            raise _located(f"the strategy is for graph @{strategies[0]['graph']}, not "
                           f"@{graph}", path, text, (*prefix, "graph"))
        names = ", ".join(f"@{s['graph']}" for s in strategies)
        raise Diagnostic(f"the strategy file has strategies for {names} but not for "
                         f"@{graph}", path)
    (index, strategy), = matching
    if isinstance(data, list):
        prefix = (index,)
    if "devices" in strategy and strategy["devices"] != devices:
        raise _located(f"the strategy is for {strategy['devices']} devices, but the search "
                       f"has devices={devices}", path, text, (*prefix, "devices"))
    if "stages" in strategy and not pipeline:
        raise _located("this is a pipeline plan (pase-partition-stages export=): its "
                       "configurations are for micro-batches on stages; load it with "
                       "pase-partition-stages{strategy=...} or pase-run --strategy",
                       path, text, (*prefix, "stages"), key=True)
    if training is not None and (other := other_step(strategy, training)):
        raise _located(other, path, text, (*prefix, "training"))
    configs, entries = {}, {}
    for position, entry in enumerate(strategy["layers"]):
        configs[entry["name"]] = with_choices(entry, training)
        entries[entry["name"]] = (*prefix, "layers", position)
    ops = {entry["name"]: entry["op"] for entry in strategy["layers"] if "op" in entry}
    return StrategyPins(path, text, configs, entries, strategy, prefix, ops)


def load_plan(path: str, graph: str, devices: int, only_graph: bool, layers: Sequence[Layer],
              batch: str, microbatch_problem: Callable[[int], str | None],
              training: TrainingOptions | None = None) -> PlanSpec:
    """The pipeline plan of the file at `path` (pase-partition-stages export=) for the
    graph `graph` of `layers` on `devices` devices under `training` (`load_strategy`),
    checked against it; raises a Diagnostic pointing into the file. `microbatch_problem(M)`
    says why the graph cannot run M micro-batches (None if it can: `microbatch`)."""
    pins = load_strategy(path, graph, devices, only_graph, pipeline=True, training=training)
    plan = pins.strategy or {}
    if "stages" not in plan:
        raise Diagnostic(f"pase-partition-stages on @{graph}: {pins.path} has no "
                         '"stages"; it is a pase-search strategy, not a pipeline plan '
                         "(pase-partition-stages export=)", pins.path)
    names = [layer.name for layer in layers]
    _check_plan_layers(pins, graph, layers)
    micro, schedule = _plan_pipeline(pins, plan)
    bounds = _plan_bounds(pins, plan, graph, devices, names)
    divides = all(d.size % micro == 0 for layer in layers for d in layer.space.dims
                  if d.name == batch)
    problem = microbatch_problem(micro)
    if not divides or problem:
        raise pins.at(problem or f"{micro} micro-batches do not divide the batch of @{graph}",
                      "pipeline", "microbatches")
    _check_plan_configs(pins, microbatch_layers(layers, batch, micro), devices // len(bounds))
    return PlanSpec(tuple(bounds), micro, schedule,
                    {name: config.copy() for name, config in pins.configs.items()})


def _check_plan_layers(pins: StrategyPins, graph: str, layers: Sequence[Layer]) -> None:
    """Every layer of the plan is one of the graph's `layers` (with its op), and every one
    has one."""
    pins.check_layers({layer.name: layer.kind for layer in layers}, graph)
    names = [layer.name for layer in layers]
    missing = [n for n in names if n not in pins.configs]
    if missing:
        raise pins.at(f"the plan has no configuration for layer '{missing[0]}' of @{graph}"
                      f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}",
                      "layers")


def _plan_pipeline(pins: StrategyPins, plan: dict[str, Any]) -> tuple[int, str]:
    """The plan's "pipeline": its micro-batches and schedule."""
    pipeline = plan.get("pipeline")
    if not isinstance(pipeline, dict):
        raise pins.at('a pipeline plan needs a "pipeline" object with "microbatches" and '
                      '"schedule"', "pipeline" if "pipeline" in plan else "stages")
    micro = pipeline.get("microbatches")
    if isinstance(micro, bool) or not isinstance(micro, int) or micro < 1:
        raise pins.at("pipeline.microbatches must be a positive integer", "pipeline",
                      "microbatches")
    schedule = pipeline.get("schedule")
    if schedule not in SCHEDULES:
        raise pins.at(f"pipeline.schedule must be {' or '.join(SCHEDULES)}", "pipeline",
                      "schedule")
    return micro, schedule


def _plan_bounds(pins: StrategyPins, plan: dict[str, Any], graph: str, devices: int,
                 names: list[str]) -> list[int]:
    """The first layer of each of the plan's "stages", checked: each holds the next
    layers of the graph in order, all of them together, and as many stages as
    "pipeline" says (where it says) that divide the devices."""
    stages = plan["stages"]
    if not isinstance(stages, list) or not stages:
        raise pins.at("stages must be a list of stage objects, each with its \"layers\"",
                      "stages")
    count = plan["pipeline"].get("stages", len(stages))
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise pins.at("pipeline.stages must be a positive integer", "pipeline", "stages")
    if count != len(stages):
        raise pins.at(f"pipeline.stages is {count}, but the plan lists {len(stages)} "
                      f"stage{'s' if len(stages) != 1 else ''}", "pipeline", "stages")
    if devices % len(stages):
        raise pins.at(f"the plan has {len(stages)} stages, which do not divide the "
                      f"{devices} devices", "stages")
    bounds, position = [], 0
    group = devices // len(stages)
    for index, stage in enumerate(stages):
        layers = stage.get("layers") if isinstance(stage, dict) else None
        if not isinstance(layers, list) or not layers:
            raise pins.at(f"stages[{index}] needs a non-empty \"layers\" list", "stages",
                          index)
        for key, value in (("stage", index), ("offset", index * group), ("devices", group)):
            if key in stage and stage[key] != value:  # as export= writes them, or absent
                raise pins.at(f"stages[{index}].{key} must be {value} (stage {index} of "
                              f"{len(stages)} on {devices} devices), not {stage[key]!r}",
                              "stages", index, key)
        expected = names[position:position + len(layers)]
        if len(expected) < len(layers):  # (past the graph's end: "the next N" is no list)
            shown = ", ".join(expected) if expected else "none"
            raise pins.at(f"stages[{index}].layers lists {len(layers)} layers, but @{graph} "
                          f"has {len(expected)} after the stages before it ({shown})",
                          "stages", index, "layers")
        if layers != expected:
            raise pins.at(f"stages[{index}].layers must be the next {len(layers)} layers "
                          f"of @{graph} in order ({', '.join(expected[:3])}"
                          f"{', ...' if len(expected) > 3 else ''})", "stages", index,
                          "layers")
        bounds.append(position)
        position += len(layers)
    if position != len(names):
        raise pins.at(f"the stages hold {position} of the {len(names)} layers of @{graph}",
                      "stages")
    return bounds


def _check_plan_configs(pins: StrategyPins, layers: Sequence[Layer], group: int) -> None:
    """Every layer's configuration fits the layer at micro-batch shapes (`layers`) on
    the `group` devices of its stage."""
    for layer in layers:
        config = pins.configs[layer.name]
        sizes = {d.name: d.size for d in layer.space.dims}
        for dim, factor in config.items():
            if dim not in sizes:
                raise pins.error(f"layer '{layer.name}' has no dim {dim}", layer.name,
                                 "config", dim, key=True)
            if sizes[dim] % factor:
                raise pins.error(f"{factor} does not divide {dim} = {sizes[dim]} of "
                                 f"layer '{layer.name}' in a micro-batch", layer.name,
                                 "config", dim)
        if math.prod(config.values()) > group:
            raise pins.error(f"layer '{layer.name}' needs {math.prod(config.values())} "
                             f"devices, more than the {group} of its stage", layer.name,
                             "config")


def is_pipeline_plan(path: str) -> bool:
    """Whether the file at `path` is a pipeline plan (a JSON object with "stages");
    False for anything else, which the loaders then report on."""
    try:
        data = json.loads(strategy_text(path)[1])
    except (Diagnostic, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "stages" in data


def _parse(path: str, text: str) -> Any:
    if (long := long_integer(text)) is not None:  # (refused as pase's other readers do)
        raise _too_long(path, text, long)
    try:
        return json.loads(text, object_pairs_hook=_Object.of)
    except json.JSONDecodeError as error:
        raise Diagnostic(f"not valid JSON: {error.msg}", path, error.lineno, error.colno,
                         source_line=shown_line(text, error.lineno)) from None
    except RecursionError:
        deepest = _too_deep(text)
        message = ("not a strategy file: its arrays and objects nest more than "
                   f"{DEEPEST_SHOWN} levels deep (a strategy nests five)")
        if deepest is None:
            raise Diagnostic(message, path) from None
        raise _located(message, path, text, deepest) from None
    except ValueError:  # the only other: an integer literal longer than Python converts
        raise _too_long(path, text, too_long_integer(text, sys.get_int_max_str_digits())
                        ) from None


def _too_long(path: str, text: str, where: tuple[int, int] | None) -> Diagnostic:
    """The diagnostic at the integer literal too long to read (offset and length)."""
    count = sum(c.isdigit() for c in text[where[0]:sum(where)]) if where else 0
    digits = f"of {count:,} digits" if where else "too long to read"
    message = (f"not a strategy file: an integer {digits}; pase reads integers of at most "
               f"{LONGEST_INTEGER} digits (a split factor or device count is at most 2^53)")
    return _located(message, path, text, where[0]) if where else Diagnostic(message, path)


def _too_deep(text: str) -> int | None:
    """The offset of the first bracket more than DEEPEST_SHOWN levels deep."""
    depth = 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > DEEPEST_SHOWN:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


# -- shape --


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys it had more than once (json keeps the last)."""

    repeated: tuple[str, ...] = ()

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _Object:
        obj = cls(pairs)
        if len(obj) < len(pairs):
            keys = [key for key, _ in pairs]
            obj.repeated = tuple(key for index, key in enumerate(keys) if key in keys[:index])
        return obj


def _check_unique_keys(data: Any, where: JsonPath) -> None:
    """Raise `_ShapeError` at the first key some object of `data` has twice."""
    if isinstance(data, _Object):
        if data.repeated:
            raise _ShapeError(f'the key "{data.repeated[0]}" appears twice in one object',
                              (*where, data.repeated[0]), key=True)
        for key, value in data.items():
            _check_unique_keys(value, (*where, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_unique_keys(value, (*where, index))


class _ShapeError(Exception):
    def __init__(self, message: str, where: JsonPath, key: bool = False):
        super().__init__(message)
        self.message, self.where, self.key = message, where, key


def _checked(data: Any) -> list[dict[str, Any]]:
    """The strategy objects of a strategy file, after checking every field pase reads."""
    if isinstance(data, dict):
        _check_strategy(data, ())
        return [data]
    if not isinstance(data, list) or not data:
        found = _describe(data) if data != [] else "an empty list"
        raise _ShapeError("a strategy file holds a strategy object, or a list of them (one "
                          f"per graph), not {found}", ())
    first_of: dict[str, int] = {}
    for index, strategy in enumerate(data):
        if not isinstance(strategy, dict):
            raise _ShapeError(f"[{index}] must be a strategy object, not "
                              f"{_describe(strategy)}", (index,))
        _check_strategy(strategy, (index,))
        if len(data) == 1:
            break
        if "graph" not in strategy:
            raise _ShapeError(f'[{index}] needs a "graph" (the name of its graph): the file '
                              "holds several strategies", (index,))
        graph = strategy["graph"]
        if graph in first_of:
            raise _ShapeError(f"[{index}] is a second strategy for graph @{graph} (the first "
                              f"is [{first_of[graph]}])", (index, "graph"))
        first_of[graph] = index
    return data


def _check_strategy(strategy: dict[str, Any], where: JsonPath) -> None:
    name = _path_name(where) or "the strategy"
    if "graph" in strategy and not isinstance(strategy["graph"], str):
        raise _wrong(strategy["graph"], (*where, "graph"), "a string (the graph's name)")
    if "devices" in strategy:
        _check_positive_integer(strategy["devices"], (*where, "devices"), "positive integer")
    for part, check in (("machine", check_machine), ("training", check_training)):
        if part in strategy:
            if not isinstance(strategy[part], dict):
                raise _wrong(strategy[part], (*where, part), "an object")
            _check_fields(strategy[part], (*where, part), check)
    for key in ("data_parallel_cost", "speedup"):
        if key in strategy:
            _check_number(strategy[key], (*where, key))
    for part in ("cost", "memory"):  # (files written before "memory" existed lack it)
        if part in strategy:
            if not isinstance(strategy[part], dict):
                raise _wrong(strategy[part], (*where, part), "an object of numbers")
            for key, value in strategy[part].items():
                _check_number(value, (*where, part, key))
    if "layers" not in strategy:
        raise _ShapeError(f'{name} needs a "layers" list', where)
    layers = strategy["layers"]
    if not isinstance(layers, list):
        raise _wrong(layers, (*where, "layers"), "a list of layer objects")
    first_of: dict[str, int] = {}
    for index, entry in enumerate(layers):
        _check_layer(entry, (*where, "layers", index))
        if entry["name"] in first_of:
            first = _path_name((*where, "layers", first_of[entry["name"]]))
            raise _ShapeError(f'layer "{entry["name"]}" appears twice (first at {first})',
                              (*where, "layers", index, "name"))
        first_of[entry["name"]] = index


def _check_layer(entry: Any, where: JsonPath) -> None:
    if not isinstance(entry, dict):
        raise _wrong(entry, where, 'a layer object ({"name": ..., "config": {...}})')
    if "name" not in entry:
        raise _ShapeError(f'{_path_name(where)} needs a "name" (the layer\'s name, a string)',
                          where)
    if not isinstance(entry["name"], str):
        raise _wrong(entry["name"], (*where, "name"), "a string")
    if "op" in entry and not isinstance(entry["op"], str):
        raise _wrong(entry["op"], (*where, "op"), "a string")
    if "cost" in entry:
        _check_number(entry["cost"], (*where, "cost"))
    _check_fields(entry, where, check_layer_step)
    if "config" not in entry:
        raise _ShapeError(f'{_path_name(where)} needs a "config" (an object of dimension: '
                          'split factor; {} for an unsplit layer)', where)
    config = entry["config"]
    if not isinstance(config, dict):
        raise _wrong(config, (*where, "config"), "an object of dimension: split factor")
    for dim, factor in config.items():
        _check_positive_integer(factor, (*where, "config", dim), "positive integer split factor")


def _check_fields(data: dict[str, Any], where: JsonPath,
                  check: Callable[[dict[str, Any]], None]) -> None:
    """`check` (of `strategy_fields`) on the object at `where`; its error at the field."""
    try:
        check(data)
    except FieldError as error:
        if error.key is None or error.names_key:
            message = f"{_path_name(where)}: {error.message}"
        else:
            message = f"{_path_name((*where, error.key))} {error.message}"
        at = where if error.key is None else (*where, error.key)
        raise _ShapeError(message, at, error.at_key) from None


def _check_positive_integer(value: Any, where: JsonPath, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _wrong(value, where, f"a {what}")


def _check_number(value: Any, where: JsonPath) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(value, where, "a number")
    if isinstance(value, float) and not math.isfinite(value):  # not JSON: Python's NaN
        raise _wrong(value, where, "a finite number")


def _wrong(value: Any, where: JsonPath, expected: str) -> _ShapeError:
    return _ShapeError(f"{_path_name(where)} must be {expected}, not {_describe(value)}", where)


def _describe(value: Any) -> str:
    """A JSON value as a message shows it: `the string "8"`, `true`, `2.5`, `a list`."""
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return "the string " + (text if len(text) <= 40 else text[:36] + '..."')
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value)


def _path_name(where: JsonPath) -> str:
    """`layers[3].config.b`; keys that are not plain names are quoted: `config["a b"]`."""
    text = ""
    for part in where:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
    return text
