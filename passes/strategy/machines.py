"""Machines: the constants that turn FLOPs and words into seconds.

A `Machine` has a FLOP rate per device and two link bandwidths: within a node (NVLink,
PCIe) and between nodes (InfiniBand), with `devices_per_node` devices per node.
Canonical placement puts devices 0..n-1 on node 0, n..2n-1 on node 1, and so on; a
collective or redistribution whose devices span nodes runs at the inter-node
bandwidth.

Presets are fp32 peak rates and per-direction, per-device link bandwidths from vendor
datasheets (sources beside each), with the low-precision (bf16, fp16) dense tensor-core
peaks and the memory (HBM) bandwidth that the training options charge (0 where a
device has none: asking for that precision is an error). `pase-default` reproduces the
PaSE prototype's constants. Any other machine is a `Machine(...)`, or a TOML file read
by `pase.formats.machine_toml`.

The DGX presets (`a100-80gb-dgx`, `h100-80gb-dgx`) are clusters priced by where a
collective's devices sit (`hierarchical`): a group within one node runs at NVLink
speed; a group spanning nodes runs hierarchically, its members on one node reducing
over NVLink and the nodes exchanging 1/g_node of the data each over their own
InfiniBand adapters (docs/cost-model.md, "Machines as clusters"); a redistribution is
priced by where its words move, NVLink from the receiver's node and InfiniBand from other
nodes (`placed_redistribution.py`; "Redistribution on clusters").

    >>> preset("v100-nvlink").devices_per_node
    8
    >>> preset("a100-80gb-dgx").peak("bf16") / preset("a100-80gb-dgx").peak("fp32")
    16.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pase.passes.strategy.budget import over_gib

EXTRA_FIELDS = ("bf16_flops", "fp16_flops", "hbm_bandwidth", "hierarchical", "memory_gib")
"""The fields the training options added (`to_json`)."""


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
    bf16_flops: float = 0.0
    """Dense bf16 peak FLOP/s of one device (0: none)."""
    fp16_flops: float = 0.0
    """Dense fp16 peak FLOP/s of one device (0: none)."""
    hbm_bandwidth: float = 0.0
    """Bytes/s of one device's memory (0: unknown; the optimizer update is then free)."""
    hierarchical: bool = False
    """Collectives across nodes run hierarchically (NVLink within a node, each device's
    InfiniBand adapter between nodes) rather than as one flat ring at the inter-node
    bandwidth, and redistributions are priced by the links their words take."""
    memory_gib: float = 0.0
    """GiB of one device's memory, from its datasheet (0: unknown). Not a cap (that is
    `device-memory-gib`): a plan past it gets a warning naming the cap to give."""

    def over_memory(self, needed: float) -> str | None:
        """The warning for a plan that holds `needed` bytes per device, more than the
        device has (None: it fits, or the device's memory is unknown).

            >>> print(preset("a100-80gb-dgx").over_memory(100 * 2**30))
            the plan holds 100 GiB per device, more than the 80 GiB of a100-80gb-dgx; \
give device-memory-gib=80 for one that fits (recompute=auto and zero=auto let it trade \
time for memory)
            >>> preset("a100-80gb-dgx").over_memory(2**30), preset("pase-default").over_memory(1e15)
            (None, None)
        """
        if not self.memory_gib or needed <= self.memory_gib * 2**30:
            return None
        held, memory = over_gib(needed, self.memory_gib * 2**30)
        return (f"the plan holds {held} GiB per device, more than the "
                f"{memory} GiB of {self.name}; give device-memory-gib="
                f"{self.memory_gib:g} for one that fits (recompute=auto and zero=auto let "
                f"it trade time for memory)")

    def bandwidth(self, spans_nodes: bool) -> float:
        return self.inter_node_bandwidth if spans_nodes else self.intra_node_bandwidth

    def peak_or_zero(self, precision: str) -> float:
        """Peak FLOP/s at `precision`, 0 where the machine has none."""
        return {"fp32": self.flops, "bf16": self.bf16_flops,
                "fp16": self.fp16_flops}[precision]

    def peak(self, precision: str) -> float:
        """Peak FLOP/s at `precision` ("fp32", "bf16", "fp16"); raises ValueError where
        the machine has no such peak."""
        rate = self.peak_or_zero(precision)
        if not rate:
            having = ", ".join(name for name, machine in PRESETS.items()
                               if machine.peak_or_zero(precision))
            raise ValueError(f"machine '{self.name}' has no {precision} peak; use "
                             f"precision=fp32, a preset with one ({having}), or a machine "
                             f"file with {precision}_flops")
        return rate

    def to_json(self, full: bool = False) -> dict[str, object]:
        """The machine as JSON: its rates and links, and the training step's fields
        (`EXTRA_FIELDS`, those set) when `full` or on a hierarchical machine; so the
        files of searches without training options read as before."""
        fields = asdict(self)
        for name in EXTRA_FIELDS:
            if not fields[name] or not (full or self.hierarchical):
                del fields[name]
        return fields


PRESETS: dict[str, Machine] = {
    machine.name: machine
    for machine in (
        # The PaSE prototype: 10 TFLOP/s counting a multiply-add as one FLOP (we count
        # two, so 20e12), and 16 "GB/s" that it divides by 8 into 2e9 words/s: one f32
        # word costs 5,000 of its FLOPs, as in the paper. One flat network.
        Machine("pase-default", 20e12, 8e9, 8e9, 1 << 30,
                "PaSE prototype constants (Elango, IPDPS 2021; github.com/baidu-research/PaSE)"),
        # V100 SXM2: 15.7 TFLOP/s fp32, 125 TFLOP/s fp16 tensor (no bf16); HBM2 900 GB/s
        # (16 or 32 GB, both sold: its memory is left unknown);
        # NVLink 2.0 300 GB/s bidirectional per GPU; DGX-1: 4 x 100 Gb/s EDR InfiniBand
        # for 8 GPUs.
        Machine("v100-nvlink", 15.7e12, 150e9, 6.25e9, 8,
                "NVIDIA Tesla V100 datasheet; NVIDIA DGX-1 system architecture whitepaper",
                fp16_flops=125e12, hbm_bandwidth=900e9),
        # A100 SXM4 40GB: 19.5 TFLOP/s fp32, 312 TFLOP/s bf16/fp16 dense tensor; HBM2
        # 1,555 GB/s; NVLink 3.0 600 GB/s bidirectional; DGX A100: 8 x 200 Gb/s HDR
        # InfiniBand, one per GPU.
        Machine("a100-nvlink", 19.5e12, 300e9, 25e9, 8,
                "NVIDIA A100 datasheet; NVIDIA DGX A100 system architecture whitepaper",
                bf16_flops=312e12, fp16_flops=312e12, hbm_bandwidth=1555e9, memory_gib=40),
        # H100 SXM5: 67 TFLOP/s fp32, 989 TFLOP/s bf16/fp16 dense tensor; HBM3 80 GB,
        # 3.35 TB/s;
        # NVLink 4.0 900 GB/s bidirectional; DGX H100: 8 x 400 Gb/s NDR InfiniBand, one
        # per GPU.
        Machine("h100-nvlink", 67e12, 450e9, 50e9, 8,
                "NVIDIA H100 datasheet; NVIDIA DGX H100 user guide",
                bf16_flops=989e12, fp16_flops=989e12, hbm_bandwidth=3.35e12, memory_gib=80),
        # GTX 1080 Ti: 11.3 TFLOP/s fp32 (no fast fp16 or bf16); GDDR5X 11 GB, 484 GB/s;
        # PCIe 3.0 x16 ~16 GB/s per direction; PaSE's cluster: 8 GPUs per node,
        # 100 Gb/s EDR InfiniBand per node.
        Machine("1080ti-pcie", 11.3e12, 16e9, 1.5625e9, 8,
                "NVIDIA GTX 1080 Ti specifications; PCIe 3.0 x16; PaSE section VI",
                hbm_bandwidth=484e9, memory_gib=11),
        # RTX 2080 Ti: 13.4 TFLOP/s fp32; GDDR6 11 GB, 616 GB/s; PCIe 3.0 x16; same cluster
        # shape.
        Machine("2080ti-pcie", 13.4e12, 16e9, 1.5625e9, 8,
                "NVIDIA RTX 2080 Ti specifications; PCIe 3.0 x16; PaSE section VI",
                hbm_bandwidth=616e9, memory_gib=11),
        # DGX A100 (80 GB): 8 A100 SXM4 80GB per node: 19.5 TFLOP/s fp32 (156 TF32),
        # 312 TFLOP/s bf16/fp16 dense tensor; HBM2e 2,039 GB/s; NVLink 3.0 through
        # NVSwitch, 600 GB/s bidirectional = 300e9 B/s each way; 8 single-port
        # ConnectX-6 HDR InfiniBand 200 Gb/s = 25e9 B/s, one per GPU.
        Machine("a100-80gb-dgx", 19.5e12, 300e9, 25e9, 8,
                "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column); NVIDIA DGX A100 "
                "datasheet and system architecture whitepaper",
                bf16_flops=312e12, fp16_flops=312e12, hbm_bandwidth=2039e9,
                hierarchical=True, memory_gib=80),
        # DGX H100: 8 H100 SXM5 80GB per node: 67 TFLOP/s fp32 (494.7 TF32), 989.4
        # TFLOP/s bf16/fp16 dense tensor; HBM3 3.35 TB/s; NVLink 4.0 through NVSwitch,
        # 900 GB/s bidirectional = 450e9 B/s each way; 8 ConnectX-7 NDR InfiniBand
        # 400 Gb/s = 50e9 B/s, one per GPU.
        Machine("h100-80gb-dgx", 67e12, 450e9, 50e9, 8,
                "NVIDIA H100 Tensor Core GPU datasheet (SXM column); NVIDIA DGX H100 "
                "datasheet and user guide",
                bf16_flops=989.4e12, fp16_flops=989.4e12, hbm_bandwidth=3.35e12,
                hierarchical=True, memory_gib=80),
    )
}


def preset(name: str) -> Machine:
    """The preset called `name`; raises ValueError naming the presets if there is none."""
    if name not in PRESETS:
        raise ValueError(f"unknown machine '{name}'; presets are " + ", ".join(PRESETS)
                         + " (pase.formats.machine_toml.load_machine reads a TOML file)")
    return PRESETS[name]
