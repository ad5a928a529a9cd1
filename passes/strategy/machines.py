"""Machines: the constants that turn FLOPs and words into seconds.

A `Machine` has a FLOP rate per device and two link bandwidths: within a node (NVLink,
PCIe) and between nodes (InfiniBand), with `devices_per_node` devices per node.
Canonical placement puts devices 0..n-1 on node 0, n..2n-1 on node 1, and so on; a
collective or redistribution whose devices span nodes runs at the inter-node
bandwidth.

Presets are fp32 peak rates and per-direction, per-device link bandwidths from vendor
datasheets (sources beside each). `pase-default` reproduces the PaSE prototype's
constants. Any other machine is a `Machine(...)`, or a TOML file read by
`pase.formats.machine_toml`.

    >>> preset("v100-nvlink").devices_per_node
    8
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


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


def preset(name: str) -> Machine:
    """The preset called `name`; raises ValueError naming the presets if there is none."""
    if name not in PRESETS:
        raise ValueError(f"unknown machine '{name}'; presets are " + ", ".join(PRESETS)
                         + " (pase.formats.machine_toml.load_machine reads a TOML file)")
    return PRESETS[name]
