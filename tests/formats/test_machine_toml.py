"""Machine files: presets by name, TOML files, and errors a user can act on."""

from __future__ import annotations

from pathlib import Path

import pytest

from pase.formats.machine_toml import MachineError, load_machine, machine_from_dict
from pase.passes.strategy import PRESETS, Machine

VALID = """\
name = "my-cluster"
flops = 19.5e12
intra_node_bandwidth = 300e9
inter_node_bandwidth = 25e9
devices_per_node = 8
source = "a datasheet"
"""


def write(tmp_path: Path, text: str, name: str = "machine.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_load_by_name(name: str) -> None:
    machine = load_machine(name)
    assert machine is PRESETS[name]
    assert machine.name == name
    assert machine.flops > 0
    assert machine.intra_node_bandwidth >= machine.inter_node_bandwidth > 0
    assert machine.devices_per_node >= 1
    assert machine.source


def test_pase_default_is_the_prototypes_constants() -> None:
    machine = load_machine("pase-default")
    # one f32 word costs 5,000 of the prototype's FLOPs (a multiply-add counted once)
    assert (machine.flops / 2) / (machine.intra_node_bandwidth / 4) == pytest.approx(5000)
    assert machine.intra_node_bandwidth == machine.inter_node_bandwidth


def test_a_toml_file_loads(tmp_path: Path) -> None:
    machine = load_machine(write(tmp_path, VALID))
    assert machine == Machine("my-cluster", 19.5e12, 300e9, 25e9, 8, "a datasheet")
    assert machine.bandwidth(spans_nodes=False) == 300e9
    assert machine.bandwidth(spans_nodes=True) == 25e9
    assert machine.to_json()["devices_per_node"] == 8


def test_optional_keys_default(tmp_path: Path) -> None:
    text = "flops = 1e12\nintra_node_bandwidth = 1e9\ninter_node_bandwidth = 5e8\n"
    machine = load_machine(write(tmp_path, text, "small.toml"))
    assert machine.name == "small.toml"
    assert machine.source == ""
    assert machine.devices_per_node >= 1 << 20      # one flat network
    # integers are fine where numbers are expected
    machine = load_machine(write(tmp_path, "flops = 1000\nintra_node_bandwidth = 10\n"
                                 "inter_node_bandwidth = 10\n"))
    assert machine.flops == 1000.0


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nowhere.toml")
    with pytest.raises(MachineError) as error:
        load_machine(path)
    assert (error.value.filename, error.value.line) == (path, 0)
    assert str(error.value) == f"{path}: cannot read the machine file: No such file or directory"


def malformed(path: str) -> MachineError:
    with pytest.raises(MachineError) as error:
        load_machine(path)
    assert error.value.filename == path
    return error.value


def test_a_toml_error_at_the_end_is_at_the_last_character(tmp_path: Path) -> None:
    error = malformed(write(tmp_path, "flops = 1e12\nsource = [1,\n"))
    assert (error.message, error.line, error.column) == ("not valid TOML: Invalid value", 2, 13)


@pytest.mark.parametrize(("text", "message"), [
    ("flops = " + "[" * 100000 + "]" * 100000 + "\n", "nest too deeply"),
    ("flops = " + "1" * 5000 + "\n", "an integer of 5,000 digits; pase reads integers of"),
])
def test_toml_python_cannot_read(tmp_path: Path, text: str, message: str) -> None:
    assert message in malformed(write(tmp_path, text)).message


def test_a_bad_value_is_at_its_key(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("flops = 19.5e12", "  'flops' = -1"))
    error = malformed(path)
    assert str(error) == f"{path}:2:3: 'flops' must be a number of at least 1, got -1"
    error = malformed(write(tmp_path, VALID + "[flop]\nx = 1\n"))
    assert (error.key, error.line, error.column) == ("flop", 7, 2)
    error = malformed(write(tmp_path, VALID.replace("flops = 19.5e12\n", "")))
    assert (error.message, error.line) == ("missing 'flops' (a positive number)", 0)


@pytest.mark.parametrize("missing", ["flops", "intra_node_bandwidth", "inter_node_bandwidth"])
def test_missing_key(tmp_path: Path, missing: str) -> None:
    lines = [line for line in VALID.splitlines() if not line.startswith(missing)]
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(MachineError, match=rf"machine.toml: missing '{missing}'"):
        load_machine(path)


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("flops", "-1e12", "'flops' must be a number of at least 1, got -1000000000000.0"),
    ("flops", "0", "'flops' must be a number of at least 1, got 0"),
    ("intra_node_bandwidth", "-5", "'intra_node_bandwidth' must be a number of at least 1"),
    ("inter_node_bandwidth", '"fast"', "'inter_node_bandwidth' must be a number of at least 1, "
                                       "got 'fast'"),
    ("flops", "true", "'flops' must be a number of at least 1, got True"),
    ("flops", "1e-320", "'flops' must be a number of at least 1, got 1e-320"),
    ("flops", "nan", "'flops' must be a number of at least 1, got nan"),
    ("name", "3", "'name' must be a string, got 3"),
    ("source", "5", "'source' must be a string, got 5"),
    ("devices_per_node", "0", "'devices_per_node' must be a positive integer, got 0"),
    ("devices_per_node", "-8", "'devices_per_node' must be a positive integer"),
    ("devices_per_node", "2.5", "'devices_per_node' must be a positive integer, got 2.5"),
    ("devices_per_node", "99999999999999999999",
     "'devices_per_node' must be at most 2\\^53, got 99,999,999,999,999,999,999"),
])
def test_invalid_values(tmp_path: Path, key: str, value: str, expected: str) -> None:
    lines = [f"{key} = {value}" if line.startswith(f"{key} ") else line
             for line in VALID.splitlines()]
    with pytest.raises(MachineError, match=expected):
        load_machine(write(tmp_path, "\n".join(lines) + "\n"))


@pytest.mark.parametrize(("key", "value"), [("bf16_flops", "1e-300"),
                                            ("hbm_bandwidth", "0.5"), ("fp16_flops", "-1")])
def test_an_optional_peak_is_0_or_at_least_1(tmp_path: Path, key: str, value: str) -> None:
    """A peak of 1e-300 FLOP/s overflowed a bf16 search's costs to inf, which the verifier
    then rejected, unlocated ("#pase.strategy total ... got inf")."""
    with pytest.raises(MachineError, match=rf"machine.toml:\d+:1: '{key}' must be 0 \(none\) "
                       rf"or a number of at least 1, got {value}"):
        load_machine(write(tmp_path, f"{VALID}{key} = {value}\n"))


def test_unknown_key(tmp_path: Path) -> None:
    with pytest.raises(MachineError, match="unknown key 'flop'; expected name, flops"):
        load_machine(write(tmp_path, VALID + "flop = 3\n"))


def test_a_table_is_an_unknown_key(tmp_path: Path) -> None:
    with pytest.raises(MachineError, match="unknown key 'machine'"):
        load_machine(write(tmp_path, "[machine]\n" + VALID))


def test_machine_from_dict_names_where_it_came_from() -> None:
    with pytest.raises(MachineError, match=r"^strategy.json: missing 'flops'"):
        machine_from_dict({"intra_node_bandwidth": 1.0, "inter_node_bandwidth": 1.0},
                          "strategy.json")
    machine = machine_from_dict(PRESETS["v100-nvlink"].to_json(full=True))
    assert machine == PRESETS["v100-nvlink"]
    assert machine_from_dict(PRESETS["a100-80gb-dgx"].to_json()) == PRESETS["a100-80gb-dgx"]
