"""Machines: the constants that turn FLOPs and words into seconds.

A `Machine` has a FLOP rate per device and two link bandwidths: within a node (NVLink,
PCIe) and between nodes (InfiniBand), with `devices_per_node` devices per node.
Canonical placement puts devices 0..n-1 on node 0, n..2n-1 on node 1, and so on; a
collective or redistribution whose devices span nodes runs at the inter-node
bandwidth.

Presets are fp32 peak rates and per-direction, per-device link bandwidths from vendor
datasheets (sources beside each). `pase-default` reproduces the PaSE prototype's
constants. A TOML file gives any other machine:

    name = "my-cluster"
    flops = 19.5e12                  # FLOP/s per device
    intra_node_bandwidth = 300e9     # bytes/s per device, within a node
    inter_node_bandwidth = 25e9      # bytes/s per device, between nodes
    devices_per_node = 8
    source = "where the numbers come from"
"""

from __future__ import annotations

import math
import os
import re
import sys
import tomllib
from dataclasses import asdict, dataclass

from pase.core.diagnostics import Diagnostic, offset_to_line_column
from pase.core.files import read_text


@dataclass(frozen=True)
class Machine:
    """Per-device compute rate and link bandwidths."""

    name: str
    flops: float
    """Peak FLOP/s of one device."""
    intra_node_bandwidth: float
    """Bytes/s one device sends (and receives) within its node."""
    inter_node_bandwidth: float
    """Bytes/s one device sends (and receives) to other nodes."""
    devices_per_node: int
    source: str = ""

    def bandwidth(self, spans_nodes: bool) -> float:
        return self.inter_node_bandwidth if spans_nodes else self.intra_node_bandwidth

    def to_json(self) -> dict[str, object]:
        return asdict(self)


PRESETS: dict[str, Machine] = {
    machine.name: machine
    for machine in (
        # The PaSE prototype: 10 TFLOP/s counting a multiply-add as one FLOP (we count
        # two, so 20e12), and 16 "GB/s" that it divides by 8 into 2e9 words/s: one f32
        # word costs 5,000 of its FLOPs, as in the paper. One flat network.
        Machine("pase-default", 20e12, 8e9, 8e9, 1 << 30,
                "PaSE prototype constants (Elango, IPDPS 2021; github.com/baidu-research/PaSE)"),
        # V100 SXM2: 15.7 TFLOP/s fp32; NVLink 2.0 300 GB/s bidirectional per GPU;
        # DGX-1: 4 x 100 Gb/s EDR InfiniBand for 8 GPUs.
        Machine("v100-nvlink", 15.7e12, 150e9, 6.25e9, 8,
                "NVIDIA Tesla V100 datasheet; NVIDIA DGX-1 system architecture whitepaper"),
        # A100 SXM4: 19.5 TFLOP/s fp32; NVLink 3.0 600 GB/s bidirectional;
        # DGX A100: 8 x 200 Gb/s HDR InfiniBand, one per GPU.
        Machine("a100-nvlink", 19.5e12, 300e9, 25e9, 8,
                "NVIDIA A100 datasheet; NVIDIA DGX A100 system architecture whitepaper"),
        # H100 SXM5: 67 TFLOP/s fp32; NVLink 4.0 900 GB/s bidirectional;
        # DGX H100: 8 x 400 Gb/s NDR InfiniBand, one per GPU.
        Machine("h100-nvlink", 67e12, 450e9, 50e9, 8,
                "NVIDIA H100 datasheet; NVIDIA DGX H100 user guide"),
        # GTX 1080 Ti: 11.3 TFLOP/s fp32; PCIe 3.0 x16 ~16 GB/s per direction;
        # PaSE's cluster: 8 GPUs per node, 100 Gb/s EDR InfiniBand per node.
        Machine("1080ti-pcie", 11.3e12, 16e9, 1.5625e9, 8,
                "NVIDIA GTX 1080 Ti specifications; PCIe 3.0 x16; PaSE section VI"),
        # RTX 2080 Ti: 13.4 TFLOP/s fp32; PCIe 3.0 x16; same cluster shape.
        Machine("2080ti-pcie", 13.4e12, 16e9, 1.5625e9, 8,
                "NVIDIA RTX 2080 Ti specifications; PCIe 3.0 x16; PaSE section VI"),
    )
}


class MachineError(ValueError):
    """An unknown preset or a malformed machine file; `filename`, `line` and `column`
    (1-based, 0 when unknown) say where, and `key` names the machine key at fault.

    Its text is `m.toml:3:1: 'flops' must be a number of at least 1, got -1.0`."""

    def __init__(self, message: str, filename: str = "", line: int = 0, column: int = 0,
                 key: str | None = None):
        super().__init__(message)
        self.message, self.filename, self.line, self.column = message, filename, line, column
        self.key = key

    def __str__(self) -> str:
        if not self.filename:
            return self.message
        where = f"{self.filename}:{self.line}:{self.column}" if self.line else self.filename
        return f"{where}: {self.message}"


def load_machine(name_or_path: str) -> Machine:
    """A preset by name, or a machine described by a TOML file."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    if not name_or_path.endswith(".toml") and not os.path.exists(name_or_path):
        raise MachineError(f"unknown machine '{name_or_path}'; presets are "
                           + ", ".join(PRESETS) + ", or give a .toml file")
    try:
        text = read_text(name_or_path, "machine file")
    except Diagnostic as error:
        raise MachineError(error.message, name_or_path, error.line, error.column) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message, line, column = _toml_error(str(error), text)
        raise MachineError(f"not valid TOML: {message}", name_or_path, line,
                           column) from None
    except RecursionError:
        raise MachineError("not a machine file: its arrays and tables nest too deeply",
                           name_or_path) from None
    except ValueError:  # the only other: an integer longer than Python converts
        raise MachineError(f"not a machine file: an integer has more than "
                           f"{sys.get_int_max_str_digits()} digits", name_or_path) from None
    try:
        return machine_from_dict(data, name_or_path)
    except MachineError as error:
        if error.key is None:
            raise
        line, column = _key_location(text, error.key)
        raise MachineError(error.message, name_or_path, line, column, error.key) from None


def _toml_error(text: str, document: str) -> tuple[str, int, int]:
    """tomllib's `message (at line L, column C)` as (message, L, C); the end of the document
    is its last character."""
    match = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", text, re.DOTALL)
    if match:
        return match.group(1), int(match.group(2)), int(match.group(3))
    match = re.fullmatch(r"(.*) \(at end of document\)", text, re.DOTALL)
    if match:
        line, column = offset_to_line_column(document, max(len(document) - 1, 0))
        return match.group(1), line, column
    return text, 0, 0


def _key_location(document: str, key: str) -> tuple[int, int]:
    """Line and column of the key `key = ...` (bare or quoted) or the table `[key]`; (0, 0)
    if it is not written as either."""
    names = "|".join(re.escape(name) for name in (key, f'"{key}"', f"'{key}'"))
    pattern = rf"^[ \t]*(?:\[+[ \t]*)?({names})[ \t]*[=\]]"
    match = re.search(pattern, document, re.MULTILINE)
    return offset_to_line_column(document, match.start(1)) if match else (0, 0)


def machine_from_dict(data: dict[str, object], where: str = "machine") -> Machine:
    """Build a Machine from a TOML table or a strategy file's "machine" object."""
    required = {"flops": float, "intra_node_bandwidth": float, "inter_node_bandwidth": float}
    values: dict[str, object] = {}
    for key in data:
        if key not in ("name", "source", "devices_per_node", *required):
            raise MachineError(f"unknown key '{key}'; expected name, flops, "
                               "intra_node_bandwidth, inter_node_bandwidth, "
                               "devices_per_node, source", where, key=key)
    for key in required:
        value = data.get(key)
        if value is None:
            raise MachineError(f"missing '{key}' (a positive number)", where)
        # At least 1 (FLOP/s, bytes/s): smaller positive values overflow costs to inf.
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value < 1:
            raise MachineError(f"'{key}' must be a number of at least 1, got {value!r}", where,
                               key=key)
        values[key] = float(value)
    for key in ("name", "source"):
        if key in data and not isinstance(data[key], str):
            raise MachineError(f"'{key}' must be a string, got {data[key]!r}", where, key=key)
    per_node = data.get("devices_per_node", 1 << 30)
    if isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1:
        raise MachineError(f"'devices_per_node' must be a positive integer, got {per_node!r}",
                           where, key="devices_per_node")
    return Machine(name=str(data.get("name", os.path.basename(where))),
                   flops=values["flops"],  # type: ignore[arg-type]
                   intra_node_bandwidth=values["intra_node_bandwidth"],  # type: ignore[arg-type]
                   inter_node_bandwidth=values["inter_node_bandwidth"],  # type: ignore[arg-type]
                   devices_per_node=per_node, source=str(data.get("source", "")))
