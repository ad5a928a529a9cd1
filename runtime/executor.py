"""Run a `Program` on one device: local blocks, kernels, collectives, redistribution.

Every worker calls `run_device` with its communicator and the same seeded global data;
it slices its own blocks of inputs and parameters, runs the steps in order (skipping the
layers of grids it is not part of), and returns the losses of every training step and
its blocks of the final parameters and last gradients.

Redistribution sends each device exactly the part of its new block it does not hold: the
old layout's distinct blocks partition the tensor, so a device receives, from one holder
of each other block (chosen round-robin among replicas), its intersection with the new
block. Collectives, statistics and gathers are tagged with their layer, redistributions
with their edge, so the communicator's counters compare with the cost model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from pase.core.shapes import ELEMENTS
from pase.runtime.communicator import DeviceComm
from pase.runtime.kernels import KERNELS, KernelContext
from pase.runtime.kernels.normalization import counts_labels
from pase.runtime.program import Box, Program, Sharded, Step, box, coordinates, group

DTYPES = {name: np.dtype(element.numpy) for name, element in ELEMENTS.items()}
UPDATES = ("dnn.sgd", "dnn.update")
"""The kernels of optimizer steps: their results are the next step's parameters and
optimizer states."""


@dataclass
class DeviceResult:
    """What one device reports after its training steps."""

    losses: list[float] = field(default_factory=list)
    params: dict[str, tuple[Box, np.ndarray]] = field(default_factory=dict)
    grads: dict[str, tuple[Box, np.ndarray]] = field(default_factory=dict)
    holds_loss: bool = True
    """Whether this device holds the loss (a pipeline's loss is on its last stage)."""
    spans: list[tuple[int, float, float]] = field(default_factory=list)
    """With `record`: (step index, start, end) of every program step this device took
    part in during the first training step, in `time.perf_counter` seconds."""


def _slices(block: Box) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in block)


UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11}
"""Half the spacing of the numbers near one (relative rounding error of round to nearest)
of the low-precision formats: bfloat16 keeps 8 significant bits, IEEE half 11."""


def to_precision(array: np.ndarray, precision: str) -> np.ndarray:
    """`array` rounded to `precision` ("bf16", "fp16"; "fp32": unchanged), kept in its own
    element type: the values a low-precision tensor holds. bf16 rounds the float32 bit
    pattern to its upper 16 bits, to nearest, ties to even (as hardware does).

        >>> to_precision(np.array([1 + 2**-9, 1 + 3 * 2**-9], np.float32), "bf16").tolist()
        [1.0, 1.0078125]
    """
    if precision == "fp32" or not np.issubdtype(array.dtype, np.floating):
        return array
    if precision == "fp16":
        return array.astype(np.float16).astype(array.dtype)
    bits = np.array(array, dtype=np.float32).view(np.uint32)  # (a copy, 0-d kept)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return rounded.view(np.float32).astype(array.dtype)


@dataclass(frozen=True)
class _Recompute:
    """In place of a recomputed layer's saved values: its step and the inputs it read,
    from which its backward runs the forward again."""

    step: Step
    inputs: list[Any]


class _Device:
    def __init__(self, program: Program, comm: DeviceComm, float_type: str | None = None,
                 record: bool = False, precision: str = "fp32",
                 recompute: frozenset[str] = frozenset()):
        self.program = program
        self.precision = precision
        self.recompute = recompute
        self.comm = comm
        self.float_type = float_type
        self.record = record
        self.rank = comm.rank
        self.values: dict[int, np.ndarray | None] = {}
        self.saved: dict[int, Any] = {}
        self.holds_loss = True

    def grid(self, tensor: Sharded) -> tuple[int, ...]:
        return self.program.grids[tensor.grid]

    def first(self, tensor: Sharded) -> int:
        """The first device of the grid of `tensor`."""
        return self.program.first.get(tensor.grid, 0)

    def block(self, tensor: Sharded, rank: int | None = None) -> Box | None:
        """The block of `tensor` device `rank` (default: this one) holds, if any."""
        return box(tensor, self.grid(tensor), self.rank if rank is None else rank,
                   self.first(tensor))

    def members(self, tensor: Sharded) -> range:
        """The devices of the grid of `tensor`."""
        first = self.first(tensor)
        return range(first, first + prod(self.grid(tensor)))

    def offset(self, tensor: Sharded, dim: int) -> int:
        block = self.block(tensor)
        assert block is not None
        return block[dim][0]

    # -- steps --

    def run(self, data: dict[str, np.ndarray], steps: int) -> DeviceResult:
        result = DeviceResult()
        params = dict(data)
        for index in range(steps):
            self.values, self.saved = {}, {}
            loss, updates = self.run_once(params, result.spans if self.record and index == 0
                                          else None)
            result.losses.append(loss)
            result.holds_loss = self.holds_loss
            for name, (block, array, gradient) in updates.items():
                result.params[name] = (block, array)
                if gradient is not None:
                    result.grads[name] = (block, gradient)
                params[name] = _place(params[name], block, array)
        return result

    def run_once(self, data: dict[str, np.ndarray],
                 spans: list[tuple[int, float, float]] | None = None
                 ) -> tuple[float, dict[str, tuple[Box, np.ndarray, np.ndarray | None]]]:
        names: dict[int, str] = {}
        updates: dict[str, tuple[Box, np.ndarray, np.ndarray | None]] = {}
        loss = float("nan")
        for index, step in enumerate(self.program.steps):
            start = time.perf_counter() if spans is not None else 0.0
            match step.kind:
                case "input" | "param":
                    (tensor,) = step.result_types
                    block = self.block(tensor)
                    if block is not None and step.at:
                        block = tuple((lo + at, hi + at)
                                      for (lo, hi), at in zip(block, step.at, strict=True))
                    array = None if block is None else np.array(data[step.name][_slices(block)])
                    self.values[step.results[0]] = array
                    names[step.results[0]] = step.name
                case "layer":
                    outputs = self.layer(step)
                    for value, output in zip(step.results, outputs, strict=True):
                        self.values[value] = output
                    if step.kernel in UPDATES and outputs[0] is not None:
                        self.record_update(step, outputs, names, updates)
                case "all_reduce":
                    self.all_reduce(step)
                case "redistribute":
                    self.values[step.results[0]] = self.redistribute(step)
                case "accumulate":
                    lhs, rhs = (self.values[v] for v in step.operands)
                    self.values[step.results[0]] = None if lhs is None or rhs is None \
                        else lhs + rhs
                case "scale":
                    scaled = self.values[step.operands[0]]
                    self.values[step.results[0]] = None if scaled is None else \
                        (scaled * scaled.dtype.type(step.factor)).astype(scaled.dtype)
                case "return":
                    total = self.values[step.operands[0]]
                    loss = float(total) if total is not None else float("nan")
                    self.holds_loss = total is not None
            if spans is not None and self.took_part(step):
                spans.append((index, start, time.perf_counter()))
        return loss, updates

    def record_update(self, step: Step, outputs: list[np.ndarray | None],
                      names: dict[int, str],
                      updates: dict[str, tuple[Box, np.ndarray, np.ndarray | None]]) -> None:
        """Keep an optimizer step's updated parameter (with its gradient) and updated
        state tensors (operands 2.., without one) for the next training step."""
        gradient = self.values[step.operands[1]]
        assert gradient is not None
        read = [step.operands[0], *step.operands[2:]]
        for index, (value, output) in enumerate(zip(read, outputs, strict=True)):
            block = self.block(step.result_types[index])
            assert block is not None
            assert output is not None
            updates[names[value]] = (block, output, gradient if index == 0 else None)

    def took_part(self, step: Step) -> bool:
        """Whether this device holds a block of a value `step` reads or writes."""
        return any(self.block(tensor) is not None
                   for tensor in (*step.operand_types, *step.result_types))

    def all_reduce(self, step: Step) -> None:
        (tensor,) = step.operand_types
        value = self.values[step.operands[0]]
        if value is not None:
            members = group(self.rank, self.grid(tensor), step.axes, self.first(tensor))
            value = self.comm.all_reduce(value, members, "sum", step.tag)
        self.values[step.results[0]] = value
        if step.operands[0] in self.saved:
            self.saved[step.results[0]] = self.saved[step.operands[0]]

    def redistribute(self, step: Step) -> np.ndarray | None:
        (source,), (target,) = step.operand_types, step.result_types
        holders: dict[Box, list[int]] = {}
        for rank in self.members(source):
            held = self.block(source, rank)
            assert held is not None
            holders.setdefault(held, []).append(rank)
        mine = self.values[step.operands[0]]
        my_held = self.block(source)
        transfers: list[tuple[int, int, Box, Box]] = []
        for receiver in self.members(target):
            needed = self.block(target, receiver)
            assert needed is not None
            own = self.block(source, receiver)
            for held, ranks in holders.items():
                if held == own:
                    continue
                part = _intersect(held, needed)
                if part is not None:
                    transfers.append((ranks[receiver % len(ranks)], receiver, held, part))
        for sender, receiver, held, part in transfers:
            if sender == self.rank:
                assert mine is not None
                self.comm.send(mine[_relative(part, held)], receiver, step.tag)
        needed = self.block(target)
        if needed is None:
            return None
        element = target.element
        if self.float_type is not None and element in ("f32", "f64"):
            element = self.float_type
        result = np.empty(target.local, dtype=DTYPES[element])
        if my_held is not None and (overlap := _intersect(my_held, needed)) is not None:
            assert mine is not None
            result[_relative(overlap, needed)] = mine[_relative(overlap, my_held)]
        for sender, receiver, _, part in transfers:
            if receiver == self.rank:
                result[_relative(part, needed)] = self.comm.recv(sender, step.tag)
        return result

    # -- layers --

    def context(self, step: Step, operands: tuple[Sharded, ...],
                result: Sharded) -> KernelContext:
        """What the kernel of `step` needs: its properties, the forward op's operand and
        result layouts, this device's block offsets, and the collectives over the
        devices that share the layer's statistics (`step.axes`) and over those the
        result is partial over (`reduce_partial`)."""
        on = operands[0] if operands else result
        members = group(self.rank, self.grid(on), step.axes, self.first(on))

        def reduce(array: np.ndarray, op: str) -> np.ndarray:
            return self.comm.all_reduce(array, members, op, step.tag)

        def reduce_partial(array: np.ndarray, op: str) -> np.ndarray:
            partial = group(self.rank, self.grid(on), result.partial, self.first(on))
            return self.comm.all_reduce(array, partial, op, step.tag)

        def gather(array: np.ndarray) -> np.ndarray:
            return self.comm.all_gather(array, members, axis=array.ndim - 1, tag=step.tag)

        def offset(operand: int, dim: int) -> int:
            return self.offset(operands[operand], dim)

        return KernelContext(step.props, operands, result, reduce, gather, offset,
                             reduce_partial)

    def layer(self, step: Step) -> list[np.ndarray | None]:
        tensor = (step.result_types or step.operand_types)[0]
        if coordinates(self.rank, self.grid(tensor), self.first(tensor)) is None:
            return [None] * len(step.results)
        inputs = [self.values[v] for v in step.operands]
        if self.precision != "fp32" and step.kernel not in UPDATES:
            return self.low_precision_layer(step, inputs)
        if step.kernel == "dnn.vjp":
            return self.backward(step, inputs)
        return self.layer_forward(step, inputs)

    def layer_forward(self, step: Step, inputs: list[Any]) -> list[np.ndarray | None]:
        if step.kernel not in KERNELS:
            raise ValueError(f"no kernel for {step.kernel}")
        forward, _ = KERNELS[step.kernel]
        output, saved = forward(self.context(step, step.operand_types, step.result_types[0]),
                                inputs)
        if isinstance(output, tuple):  # an optimizer step: the parameter and its states
            return list(output)
        if saved is not None and step.tag in self.recompute and not step.axes \
                and not counts_labels(step.props, step.result_types[0].partial):
            saved = _Recompute(step, inputs)  # (a layer whose statistics need no collective)
        if saved is not None:
            self.saved[step.results[0]] = saved
        return [output]

    def low_precision_layer(self, step: Step, inputs: list[Any]) -> list[np.ndarray | None]:
        """A forward or gradient kernel under bf16/fp16 mixed precision: its tensors,
        read and written, hold low-precision values (params rounded as they are read: the
        fp32 master copy stays in the update), its arithmetic is the program's float
        type (fp32 accumulation, as tensor cores do), and a scalar result, the loss,
        stays fp32."""
        inputs = [None if x is None else to_precision(x, self.precision) for x in inputs]
        if step.kernel == "dnn.vjp":
            outputs = self.backward(step, inputs)
        else:
            outputs = self.layer_forward(step, inputs)
        return [y if y is None or y.ndim == 0 else to_precision(y, self.precision)
                for y in outputs]

    def backward(self, step: Step, inputs: list[Any]) -> list[np.ndarray | None]:
        props, forward = step.props, step.props["forward"]
        wrt = props["wrt"]
        seeded = step.seeded
        arity = len(inputs) - (1 if seeded else 2)
        operands, result = inputs[:arity], inputs[arity]
        # The loss's own layer has no incoming gradient: d loss / d loss is 1, whatever
        # op produces the loss (a partial sum's blocks add up to it, so 1 on each).
        dy = np.ones_like(result) if seeded else inputs[arity + 1]
        backward = KERNELS.get(forward, (None, None))[1]
        if backward is None:
            raise ValueError(f"no backward kernel for {forward}")
        ctx = self.context(step, step.operand_types[:arity], step.operand_types[arity])
        needs = [i in wrt for i in range(arity)]
        saved = self.saved.get(step.operands[arity])
        if isinstance(saved, _Recompute):  # its forward again, from the inputs it read
            forward_step = saved.step
            _, saved = KERNELS[forward_step.kernel][0](self.context(
                forward_step, forward_step.operand_types, forward_step.result_types[0]),
                saved.inputs)
        grads = backward(ctx, operands, result, dy, saved, needs)
        return [grads[i] for i in wrt]


def _intersect(a: Box, b: Box) -> Box | None:
    result = tuple((max(lo1, lo2), min(hi1, hi2)) for (lo1, hi1), (lo2, hi2) in zip(a, b,
                                                                                    strict=True))
    return None if any(lo >= hi for lo, hi in result) else result


def _relative(part: Box, within: Box) -> tuple[slice, ...]:
    return tuple(slice(lo - base, hi - base) for (lo, hi), (base, _) in zip(part, within,
                                                                             strict=True))


def _place(array: np.ndarray, block: Box, values: np.ndarray) -> np.ndarray:
    updated = np.array(array)
    updated[_slices(block)] = values
    return updated


def with_optimizer_states(program: Program, data: dict[str, np.ndarray],
                          float_type: str | None = None) -> dict[str, np.ndarray]:
    """`data` and, for every param of `program` it lacks (the optimizer's state tensors
    pase-autodiff adds: `w_m`, `w_v`, `w_t`), zeros of the param's global shape: every
    optimizer state starts at zero."""
    states = {}
    for step in program.steps:
        if step.kind == "param" and step.name not in data and step.name not in states:
            (tensor,) = step.result_types
            element = tensor.element
            if float_type is not None and element in ("f32", "f64"):
                element = float_type
            states[step.name] = np.zeros(tensor.sizes, dtype=DTYPES[element])
    return data | states if states else data


def run_device(comm: DeviceComm, program: Program, data: dict[str, np.ndarray],
               steps: int, float_type: str | None = None,
               record: bool = False, precision: str = "fp32",
               recompute: frozenset[str] = frozenset()) -> DeviceResult:
    """Run `steps` training steps of `program` on this device; `float_type` ("f64")
    overrides the floating-point type of the program (the data must match); `record`
    keeps the start and end of each program step of the first training step
    (`DeviceResult.spans`); `precision` "bf16" or "fp16" runs the forward and gradient
    kernels on low-precision values (`_Device.low_precision_layer`); the layers named in
    `recompute` keep no saved values but their inputs, and their backward runs their
    forward kernel again (a layer whose kernel all-reduces statistics keeps its saved
    values: recomputing them would move words the plan does not). Overflow raises no
    numpy warning: its inf and nan reach the results, and the report."""
    with np.errstate(all="ignore"):
        return _Device(program, comm, float_type, record, precision, recompute).run(data,
                                                                                     steps)
